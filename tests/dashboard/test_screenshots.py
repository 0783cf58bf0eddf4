"""Every screenshot a page of the tutorial shows exists, and came from the
dashboard's browser tests (they write dashboard/screenshots/ when run with
--update-screenshots): a picture no test makes could go stale unseen."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "dashboard" / "screenshots"
TESTS = Path(__file__).resolve().parent


def shown() -> dict[Path, list[str]]:
    """Each screenshot a Markdown page links to, with the pages that show it."""
    found: dict[Path, list[str]] = {}
    for page in ROOT.rglob("*.md"):
        if any(part.startswith(".") for part in page.relative_to(ROOT).parts):
            continue
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]*screenshots/[^)\s]+\.png)\)", page.read_text()):
            found.setdefault((page.parent / target).resolve(), []).append(str(page.relative_to(ROOT)))
    return found


def test_every_screenshot_shown_exists_and_a_test_makes_it():
    pictures = shown()
    assert len(pictures) >= 5, pictures
    made = "".join(path.read_text() for path in TESTS.glob("test_*.py"))
    for picture, pages in pictures.items():
        assert picture.parent == SCREENSHOTS, f"{pages} show {picture}, outside dashboard/screenshots/"
        assert picture.is_file(), f"{pages} show {picture.name}, which no run made: pytest tests/dashboard --update-screenshots"
        assert f'"{picture.stem}")' in made, f"no test in tests/dashboard writes {picture.name}"


def test_no_screenshot_is_left_unshown():
    unshown = {p.name for p in SCREENSHOTS.glob("*.png")} - {p.name for p in shown()}
    assert not unshown, f"dashboard/screenshots/ holds pictures no page shows: {sorted(unshown)}"
