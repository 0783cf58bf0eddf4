"""A lesson a workshop can follow in one sitting: every chapter page is at
most MAX_LINES long, and a chapter split into parts lists each part in its
README with its length, which stays true."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800     # about an afternoon's reading, with the commands run
PAGES = sorted(p for p in ROOT.glob("[0-9][0-9]-*/*.md"))
PART_ROW = re.compile(r"^\| \[(lesson-[^\]]+)\]\(\1\) \| .*? \| (\d+) \|$", re.M)


@pytest.mark.parametrize("page", PAGES, ids=[f"{p.parent.name}/{p.name}" for p in PAGES])
def test_a_page_can_be_read_in_one_sitting(page):
    lines = len(page.read_text().splitlines())
    assert lines <= MAX_LINES, f"{page.relative_to(ROOT)} is {lines} lines: split it into lesson-N-*.md parts"


@pytest.mark.parametrize("chapter", sorted({p.parent for p in PAGES}), ids=lambda c: c.name)
def test_the_readme_lists_every_part_with_its_length(chapter):
    parts = sorted(p.name for p in chapter.glob("lesson-*.md"))
    listed = {name: int(lines) for name, lines in PART_ROW.findall((chapter / "README.md").read_text())}
    assert sorted(listed) == parts, f"{chapter.name}/README.md lists {sorted(listed)}, the folder has {parts}"
    for name, lines in listed.items():
        actual = len((chapter / name).read_text().splitlines())
        assert lines == actual, f"{chapter.name}/README.md says {name} is {lines} lines; it is {actual}"
