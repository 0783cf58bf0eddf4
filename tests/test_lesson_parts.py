"""A lesson a workshop can follow in one sitting: every chapter page is at
most MAX_LINES long, and a chapter split into parts lists each part in its
README with its length, which stays true. So do the other figures the
READMEs state about our code: module lengths, a component's size, the
number of parts, stages and controllers, the lines a learner writes."""
from __future__ import annotations

import ast
import re
import sys
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


# A module's length as a README states it, in the three forms the chapters
# use: "| `file.py` | N |", "- `file.py` (N lines)" and
# "| [file.py](path) | ... | N |". A learner plans a reading by them.
MODULE_COUNTS = (
    re.compile(r"^\| `(?P<file>[\w/.]+\.py)` \| (?P<lines>[\d,]+) \|", re.M),
    re.compile(r"^- `(?P<file>[\w/.]+\.py)` \((?P<lines>[\d,]+) lines\)", re.M),
    re.compile(r"^\| \[[^\]]+\.py\]\((?P<file>[^)]+)\) \|.*\| (?P<lines>[\d,]+) \|$", re.M),
)
READMES = sorted(ROOT.glob("[0-9][0-9]-*/README.md"))


def _stated_lengths(readme: Path) -> list[tuple[str, int]]:
    text = readme.read_text()
    return [(m["file"], int(m["lines"].replace(",", ""))) for pattern in MODULE_COUNTS for m in pattern.finditer(text)]


@pytest.mark.parametrize("readme", READMES, ids=lambda r: r.parent.name)
def test_the_module_lengths_a_readme_states_are_true(readme):
    wrong = []
    for name, lines in _stated_lengths(readme):
        path = readme.parent / name
        assert path.is_file(), f"{readme.relative_to(ROOT)} lists {name}, which does not exist"
        actual = len(path.read_text().splitlines())
        if actual != lines:
            wrong.append(f"{name}: says {lines}, is {actual}")
    assert not wrong, f"{readme.relative_to(ROOT)}: " + "; ".join(wrong)


def test_chapter_02_states_the_length_of_its_core_path_truly():
    """The core path is the first table of chapter 02's Build it; the README
    states its total in two places, and the issue that shaped the chapter
    asked for about 2,500 lines at most."""
    readme = ROOT / "02-apiserver" / "README.md"
    text = readme.read_text()
    table = text.split("\n## Build it\n", 1)[1].split("\n\n", 2)[1]     # not "## Build it yourself"
    rows = MODULE_COUNTS[0].findall(table)
    total = sum(len((readme.parent / name).read_text().splitlines()) for name, _ in rows)
    stated = re.search(r"The core of the server is ([\d,]+) lines in (\d+) small modules", text)
    assert stated, "the Build it section no longer states the core's size"
    assert (int(stated[1].replace(",", "")), int(stated[2])) == (total, len(rows)), \
        f"it says {stated[1]} lines in {stated[2]} modules; the table has {total} in {len(rows)}"
    assert f"the core is {stated[1]} lines" in text.replace("\n", " "), "the introduction's figure differs"
    # 2,600 when the core was cut to size; 50 lines of room for the registry's
    # table, which grows by one row per served kind (Ingress, storage and
    # StatefulSets each add rows), never for path logic.
    assert total <= 2650, f"the core path has grown to {total} lines: about 2,500 is the chapter's promise"


# -- Figures the chapters state in prose about our code -----------------------
# "a kubelet of about 3,500 lines", "Nine stages grade it", "the lesson, in
# eight parts", "the code to write is about 45 lines": each is measured
# here from what it describes, so that the prose cannot go stale as the
# code moves. A figure given as "about" may be this share off:
ABOUT = 0.05

NUMBER_WORDS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
STAGES = ROOT / "tests" / "stages"


def _number(text: str) -> int:
    return NUMBER_WORDS.get(text.lower()) or int(text.replace(",", ""))


def _prose(readme: Path) -> str:
    """The page with its lines joined, so a figure wrapped over two lines is found."""
    return " ".join(readme.read_text().split())


def _lines(paths) -> int:
    return sum(len(path.read_text().splitlines()) for path in paths)


def _build_it_table(readme: Path) -> list[Path]:
    """The modules the first table of the chapter's `## Build it` lists, in its first column."""
    section = readme.read_text().split("\n## Build it\n", 1)[1].split("\n## ", 1)[0]
    table = next(block for block in section.split("\n\n") if block.strip().startswith("|"))
    return [readme.parent / name for name in re.findall(r"^\| `([\w/]+\.py)`", table, re.M)]


def stage_counts() -> dict[str, int]:
    """Chapter number -> how many stages grade its starter (tests/stages/run.py's CHAPTERS)."""
    chapters = re.findall(r'"(\d\d)": \("[^"]*", "(\w+)"', (STAGES / "run.py").read_text())
    return {number: len(re.findall(r"^\s+Stage\(\d+,", (STAGES / f"{module}.py").read_text(), re.M))
            for number, module in chapters}


def _lines_to_write(starter: Path) -> int:
    """The code lines (no blank line, comment or docstring) of the solution's
    versions of the functions the starter marks TODO(stage N)."""
    sys.path.insert(0, str(STAGES))
    from splice import functions, todo_stages
    solution = (STAGES / "solutions" / starter.name).read_text()
    lines, found = solution.splitlines(), functions(solution)
    total = 0
    for name in todo_stages(starter.read_text()):
        body = found[name].body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]                                   # the docstring
        code = lines[body[0].lineno - 1:found[name].end_lineno]
        total += sum(1 for line in code if line.strip() and not line.strip().startswith("#"))
    return total


@pytest.mark.parametrize("readme", READMES, ids=lambda r: r.parent.name)
def test_the_number_of_parts_a_readme_states_is_true(readme):
    stated = re.search(r"^## The lesson, in (\w+) parts$", readme.read_text(), re.M)
    if stated is None:
        pytest.skip("no count of parts in its headings")
    parts = len(list(readme.parent.glob("lesson-*.md")))
    assert _number(stated[1]) == parts, f"{readme.parent.name}: the heading says {stated[1]} parts; there are {parts}"


@pytest.mark.parametrize("readme", READMES, ids=lambda r: r.parent.name)
def test_the_stages_a_readme_counts_are_its_stages(readme):
    stages = stage_counts()[readme.parent.name[:2]]
    text = _prose(readme)
    stated = (re.findall(r"\b(\w+) stages grade it\b", text) + re.findall(r"\bAll (\w+) (?:stages )?take\b", text)
              + re.findall(r"\bOnce stage (\d+) passes\b", text))
    assert stated, f"{readme.parent.name}: its Build it yourself no longer says how many stages grade it"
    wrong = [word for word in stated if _number(word) != stages]
    assert not wrong, f"{readme.parent.name}: says {wrong}; {stages} stages grade it"


@pytest.mark.parametrize("readme", READMES, ids=lambda r: r.parent.name)
def test_the_lines_to_write_are_as_many_as_stated(readme):
    # One figure per starting file, in the order of their names (chapter 05
    # has two: cluster_dns.py, then ingress_match.py, as its README tells them).
    stated = re.findall(r"(?:code to write is|TODO\(stage N\)`:) about (\d+) lines", _prose(readme))
    assert stated, f"{readme.parent.name}: its Build it yourself no longer says how much code there is to write"
    starters = sorted((readme.parent / "build-it-yourself").glob("*.py"))
    assert len(stated) == len(starters), \
        f"{readme.parent.name}: states {len(stated)} figures of lines to write for {len(starters)} starting files"
    for figure, starter in zip(stated, starters):
        actual = _lines_to_write(starter)
        # A small count, rounded to a five: a few lines either way is "about".
        assert abs(int(figure) - actual) <= max(5, 0.15 * actual), \
            f"{readme.parent.name}: says about {figure} lines to write in {starter.name}; the solution's are {actual}"


def _everything_but_the_starter(chapter: Path) -> list[Path]:
    return [path for path in chapter.rglob("*.py") if "build-it-yourself" not in path.parts]


# (chapter, what the README says, what it measures)
SIZES = [
    ("01-kubelet", r"a kubelet of about ([\d,]+) lines of Python", _build_it_table),
    ("03-scheduler", r"in about ([\d,]+) lines of Python", _build_it_table),
    ("02-apiserver", r"etcd and the benchmarks, about ([\d,]+)\)",
     lambda readme: _everything_but_the_starter(readme.parent)),
]


@pytest.mark.parametrize("chapter, phrase, measure", SIZES, ids=[s[0] for s in SIZES])
def test_a_component_is_the_size_its_readme_says(chapter, phrase, measure):
    readme = ROOT / chapter / "README.md"
    stated = re.search(phrase, _prose(readme))
    assert stated, f"{chapter}/README.md no longer says '{phrase}'"
    actual = _lines(measure(readme))
    assert abs(_number(stated[1]) - actual) <= ABOUT * actual, \
        f"{chapter}/README.md says about {stated[1]} lines; they are {actual:,}"


def test_chapter_02_states_the_gauntlet_s_length_truly():
    text = (ROOT / "02-apiserver" / "README.md").read_text()
    stated = re.search(r"^Part 3 adds the gauntlet, ([\d,]+) lines:\n\n(.*?)\n\n", text, re.M | re.S)
    assert stated, "chapter 02 no longer states the gauntlet's length above its table"
    rows = MODULE_COUNTS[0].findall(stated[2])
    total = _lines(ROOT / "02-apiserver" / name for name, _ in rows)
    assert _number(stated[1]) == total, f"it says {stated[1]} lines; the table's modules are {total}"


def test_chapter_04_counts_its_controllers_truly():
    stated = re.search(r"ours starts the (\w+) this cluster needs", _prose(ROOT / "04-controllers" / "README.md"))
    assert stated, "chapter 04 no longer counts its controllers"
    manager = ast.parse((ROOT / "04-controllers" / "controller_manager.py").read_text())
    table = next(node.value for node in manager.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "CONTROLLERS" for t in node.targets))
    assert _number(stated[1]) == len(table.keys), f"it says {stated[1]}; the controller manager has {len(table.keys)}"


def test_chapter_02_counts_the_core_modules_part_1_quotes():
    readme = ROOT / "02-apiserver" / "README.md"
    stated = re.search(r"it quotes the heart of (\w+) of them", _prose(readme))
    assert stated, "chapter 02 no longer counts the core modules part 1 quotes"
    core = {path.name for path in _build_it_table(readme)}
    quoted = set(re.findall(r"<!-- snippet: 02-apiserver/([\w.]+\.py)#", (readme.parent / "lesson-1-store-rest-watch.md").read_text()))
    assert _number(stated[1]) == len(core & quoted), \
        f"it says {stated[1]}; part 1 quotes {len(core & quoted)} of the core's modules: {sorted(core & quoted)}"


@pytest.mark.parametrize("readme", READMES, ids=lambda r: r.parent.name)
def test_a_readme_gives_the_idea_before_the_grading(readme):
    """The learner's order: the problem (the opening), the idea, and only
    then the starter and the stages that grade it."""
    sections = re.findall(r"^## (.+)$", readme.read_text(), re.M)
    assert sections[:2] == ["The idea", "Build it yourself"], \
        f"{readme.parent.name}/README.md opens with {sections[:2]}, not the idea and then Build it yourself"
