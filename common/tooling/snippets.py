"""Snippet regions: code that a README (or a blog post) quotes.

In the source, a region is marked with two comments::

    # [START <name>]
    ...code...
    # [END <name>]

A README quotes it with an HTML comment (invisible on any forge) right
before a fenced block::

    <!-- snippet: 01-kubelet/kubelet.py#<name> -->
    ```python
    ...the region's lines, common indentation removed...
    ```

`tests/test_snippets.py` checks every such quote against the code, so a
lesson can never show code that no longer exists. For a blog post:

    make snippet NAME=sync-loop        # or: python -m common.tooling.snippets sync-loop
"""
from __future__ import annotations

import difflib
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^\s*(?:#|//)\s*\[(START|END) ([A-Za-z0-9_.-]+)\]\s*$")   # Python and shell, JavaScript
QUOTE = re.compile(r"^<!--\s*snippet:\s*(\S+?)#([A-Za-z0-9_.-]+)\s*-->\s*$")
SOURCE_SUFFIXES = {".py", ".sh", ".js"}
MAX_QUOTED_LINES = 40   # a quoted region longer than this is split: a reader takes it in at once


class SnippetError(Exception):
    pass


@dataclass
class Quote:
    readme: Path
    line: int       # line of the <!-- snippet: --> comment
    source: str     # path relative to the repository root
    region: str
    text: str       # what the README shows


def regions_in(path: Path) -> dict[str, str]:
    """Every region in one source file, dedented, marker lines left out."""
    open_regions: dict[str, list[str]] = {}
    done: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marker = MARKER.match(line)
        if marker:
            kind, name = marker.groups()
            if kind == "START":
                if name in open_regions or name in done:
                    raise SnippetError(f"{path}:{number}: region {name!r} starts twice")
                open_regions[name] = []
            else:
                if name not in open_regions:
                    raise SnippetError(f"{path}:{number}: region {name!r} ends but never started")
                done[name] = textwrap.dedent("\n".join(open_regions.pop(name))) + "\n"
            continue
        for lines in open_regions.values():
            lines.append(line)
    if open_regions:
        raise SnippetError(f"{path}: region(s) never end: {', '.join(open_regions)}")
    return done


def all_regions(root: Path = ROOT) -> dict[str, tuple[Path, str]]:
    """Region name -> (file, text) across the repository's sources."""
    found: dict[str, tuple[Path, str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or _skipped(path, root):
            continue
        for name, text in regions_in(path).items():
            if name in found:
                raise SnippetError(f"region {name!r} is in both {found[name][0]} and {path}")
            found[name] = (path, text)
    return found


def quotes_in(readme: Path) -> list[Quote]:
    """Every fenced block that a README marks as quoting a region."""
    lines = readme.read_text().splitlines()
    quotes = []
    for index, line in enumerate(lines):
        match = QUOTE.match(line)
        if not match:
            continue
        if index + 1 >= len(lines) or not lines[index + 1].startswith("```"):
            raise SnippetError(f"{readme}:{index + 1}: a snippet comment must be followed by a ``` block")
        body = []
        for inner in lines[index + 2:]:
            if inner.startswith("```"):
                break
            body.append(inner)
        else:
            raise SnippetError(f"{readme}:{index + 2}: the ``` block never closes")
        quotes.append(Quote(readme, index + 1, match.group(1), match.group(2), "\n".join(body) + "\n"))
    return quotes


def check_quote(quote: Quote, root: Path = ROOT) -> str | None:
    """None if the README shows exactly the region, else a readable diff."""
    where = f"{quote.readme.relative_to(root)}:{quote.line}"
    source = root / quote.source
    if not source.is_file():
        return f"{where}: quotes {quote.source}, which does not exist"
    regions = regions_in(source)
    if quote.region not in regions:
        return f"{where}: {quote.source} has no region {quote.region!r}"
    expected = regions[quote.region]
    if quote.text == expected:
        return None
    diff = difflib.unified_diff(expected.splitlines(), quote.text.splitlines(),
                                f"{quote.source}#{quote.region} (the code)",
                                f"{where} (the README)", lineterm="")
    return f"{where}: snippet {quote.source}#{quote.region} differs from the code\n" + "\n".join(diff)


def readmes(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if not _skipped(p, root))


def _skipped(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    # A symbolic link is another file under a second name (tests/stages/solutions/
    # links a chapter's module): its regions are that file's.
    return path.is_symlink() or any(part.startswith(".") or part in ("__pycache__", "node_modules") for part in parts)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m common.tooling.snippets NAME | --list | --check", file=sys.stderr)
        return 2
    if argv[0] == "--list":
        for name, (path, _) in sorted(all_regions().items()):
            print(f"{name:28} {path.relative_to(ROOT)}")
        return 0
    if argv[0] == "--check":
        problems = [p for readme in readmes() for q in quotes_in(readme) if (p := check_quote(q))]
        print("\n\n".join(problems) or "every quoted snippet matches the code")
        return 1 if problems else 0
    regions = all_regions()
    if argv[0] not in regions:
        print(f"no region named {argv[0]!r}; `python -m common.tooling.snippets --list` shows them", file=sys.stderr)
        return 1
    sys.stdout.write(regions[argv[0]][1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
