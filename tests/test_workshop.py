"""WORKSHOP.md stays true to the repository: every chapter page has a place
in it, every link and anchor it gives resolves, every `make` target and
variable it names exists, every file and flag its commands name exists,
its blocks are 45 to 90 minutes, and the reading each day states is what
the sections it links to hold (`wc -w`, at 200 words a minute)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "WORKSHOP.md"
TEXT = WORKSHOP.read_text()

WORDS_PER_MINUTE = 200
# Other work adds and trims prose in the sections the days link to; a
# figure a teacher plans by may be this far off before it must be restated.
TOLERANCE = 0.10
LONGEST_DAY = 390                    # minutes of blocks: six and a half hours

HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


# -- a Markdown page as a forge shows it -------------------------------------

def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped
    (hyphens and underscores kept), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, anchor) of every heading outside code blocks; a
    repeated anchor gets -1, -2, ... as on a forge."""
    found, seen, fenced = [], {}, False
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            anchor = slug(match[2])
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.append((index, len(match[1]), anchor if count == 0 else f"{anchor}-{count}"))
    return found


def anchors(page: Path) -> set[str]:
    return {anchor for _, _, anchor in headings(page.read_text().splitlines())}


def words(page: Path, anchor: str | None) -> int:
    """`wc -w` of what a link asks to read: the whole page without an anchor;
    a section from its heading to the next heading of its level or above;
    for the page's title, its opening, up to the first heading after it."""
    lines = page.read_text().splitlines()
    if anchor is None:
        return len(" ".join(lines).split())
    marks = headings(lines)
    for position, (start, level, name) in enumerate(marks):
        if name == anchor:
            end = next((index for index, other, _ in marks[position + 1:] if other <= level or level == 1),
                       len(lines))
            return len(" ".join(lines[start:end]).split())
    raise AssertionError(f"{page.relative_to(ROOT)} has no heading #{anchor}")


# -- WORKSHOP.md's own shape --------------------------------------------------

def sections(text: str) -> dict[str, str]:
    """Each `## ` section's text, by its heading."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


SECTIONS = sections(TEXT)
DAYS = {title: body for title, body in SECTIONS.items() if re.search(r"^Reading: about", body, re.M)}
GOING_FURTHER = SECTIONS["Going further"]


def bullets(body: str, label: str) -> list[str]:
    """The text of every `- **Label:**` bullet, its wrapped lines included."""
    return re.findall(rf"^- \*\*{label}:\*\*(.*?)(?=^- |^#|^\*|\Z)", body, re.M | re.S)


def target(link: str) -> tuple[Path, str | None]:
    path, _, anchor = link.partition("#")
    return (ROOT / path if path else WORKSHOP), anchor or None


def relative_links(text: str) -> list[str]:
    return [link for link in LINK.findall(text) if not re.match(r"[a-z]+:", link)]


def reading(body: str) -> int:
    """The words of every section a day's Read bullets link to, each once."""
    links = {link for bullet in bullets(body, "Read") for link in relative_links(bullet)}
    return sum(words(*target(link)) for link in links)


def stated(body: str) -> tuple[int, int]:
    match = re.search(r"^Reading: about ([\d,]+) words, (\d+) minutes", body, re.M)
    assert match, "a day states its reading as 'Reading: about N words, M minutes'"
    return int(match[1].replace(",", "")), int(match[2])


def make_targets() -> dict[str, str]:
    """Each Makefile target with its recipe (the lines up to the next target)."""
    makefile = (ROOT / "Makefile").read_text()
    parts = re.split(r"^([a-z0-9-]+):", makefile, flags=re.M)
    return {name: recipe for name, recipe in zip(parts[1::2], parts[2::2])}


# -- the tests ----------------------------------------------------------------

CHAPTER_PAGES = sorted(ROOT.glob("[0-9][0-9]-*/*.md"))
CHAPTER_READMES = sorted(ROOT.glob("[0-9][0-9]-*/README.md"))


@pytest.mark.parametrize("page", CHAPTER_PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_chapter_page_has_a_place(page):
    """In a day's timetable or in Going further: a page nobody is sent to
    is a page nobody reads."""
    name = str(page.relative_to(ROOT))
    placed = [title for title, body in {**DAYS, "Going further": GOING_FURTHER}.items()
              if any(target(link)[0] == page for link in relative_links(body))]
    assert placed, f"WORKSHOP.md places {name} in no day and not in Going further"


def test_every_link_and_anchor_resolves():
    broken = []
    for link in relative_links(TEXT):
        path, anchor = target(link)
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in anchors(path):
            broken.append(f"{link}: {path.name} has no such heading")
    assert not broken, "WORKSHOP.md: " + "; ".join(broken)


@pytest.mark.parametrize("day", sorted(DAYS))
def test_a_day_states_its_reading_truly(day):
    said_words, said_minutes = stated(DAYS[day])
    actual = reading(DAYS[day])
    assert abs(said_words - actual) <= TOLERANCE * actual, \
        f"{day}: says about {said_words:,} words; its Read links hold {actual:,}"
    assert abs(said_minutes - said_words / WORDS_PER_MINUTE) <= 1, \
        f"{day}: {said_words:,} words are {said_words / WORDS_PER_MINUTE:.0f} minutes, not {said_minutes}"
    assert said_minutes <= 0.4 * LONGEST_DAY, f"{day}: {said_minutes} minutes of reading is not well under half the day"


def test_the_summary_table_agrees_with_the_days():
    for day, body in DAYS.items():
        said_words, said_minutes = stated(body)
        row = f"about {said_words:,} words, {said_minutes} minutes |"
        assert any(line.endswith(row) and f"#{slug(day)})" in line for line in TEXT.splitlines()), \
            f"the table at the top does not say '{row}' for {day}"


@pytest.mark.parametrize("day", sorted(DAYS))
def test_blocks_are_45_to_90_minutes_and_fit_the_day(day):
    blocks = re.findall(r"^### (\d\d):(\d\d)-(\d\d):(\d\d) ", DAYS[day], re.M)
    assert blocks, f"{day} has no blocks"
    lengths = [(int(h2) * 60 + int(m2)) - (int(h1) * 60 + int(m1)) for h1, m1, h2, m2 in blocks]
    assert all(45 <= length <= 90 for length in lengths), f"{day}: blocks of {lengths} minutes"
    assert sum(lengths) <= LONGEST_DAY, f"{day}: {sum(lengths)} minutes of blocks"
    for label in ("Read", "Build", "Run", "Checkpoint"):
        assert len(bullets(DAYS[day], label)) == len(blocks), f"{day}: a block without its {label}"


def test_every_make_target_and_variable_exists():
    targets = make_targets()
    wrong = []
    for span in CODE_SPAN.findall(TEXT):
        for name, variables in re.findall(r"(?:^|&& |; )make ([a-z0-9-]+)((?: [A-Z_]+=\S+)*)", span):
            if name not in targets:
                wrong.append(f"make {name}: no such target")
                continue
            for variable in re.findall(r"([A-Z_]+)=", variables):
                if f"$({variable})" not in targets[name]:
                    wrong.append(f"make {name} {variable}=: the target does not read {variable}")
    assert not wrong, "WORKSHOP.md: " + "; ".join(wrong)


def test_every_file_and_flag_a_command_names_exists():
    wrong = []
    for span in CODE_SPAN.findall(TEXT):
        for token in re.findall(r"(?:^|[\s=])((?:0\d-[\w-]+|common|tests)/[\w./-]*)", span):
            if not (ROOT / token).exists():
                wrong.append(f"{token}: no such file")
        program = re.match(r"python (\S+\.py)(.*)", span)
        if program and (ROOT / program[1]).is_file():
            source = (ROOT / program[1]).read_text()
            wrong += [f"{program[1]} has no {flag}" for flag in re.findall(r"(--[\w-]+)", program[2])
                      if f'"{flag}"' not in source]
    assert not wrong, "WORKSHOP.md: " + "; ".join(wrong)


FRACTIONS = {"": 0, "¼": 0.25, "½": 0.5, "¾": 0.75}


def _hours(text: str) -> float:
    whole, fraction = re.fullmatch(r"(\d*)([¼½¾]?)", text).groups()
    return int(whole or 0) + FRACTIONS[fraction]


def _block_minutes(day: str) -> dict[int, int]:
    """Block number -> its minutes, in the day whose heading starts with `day`."""
    body = next(text for title, text in DAYS.items() if title.startswith(day))
    return {int(n): (int(h2) * 60 + int(m2)) - (int(h1) * 60 + int(m1))
            for h1, m1, h2, m2, n in re.findall(r"^### (\d\d):(\d\d)-(\d\d):(\d\d) · (\d+)\.", body, re.M)}


ESTIMATE_ROW = re.compile(r"^\| \[[^\]]+\]\((\d\d-[\w-]+/README\.md)#build-it-yourself\) \| (.+?) hours \| (.*) \|$", re.M)


def test_the_builds_time_is_the_chapters_estimate_and_the_blocks_length():
    rows = ESTIMATE_ROW.findall(TEXT)
    assert len(rows) == len(CHAPTER_READMES), "the instructor notes give each chapter's build a row"
    for readme, estimate, blocks in rows:
        prose = " ".join((ROOT / readme).read_text().split())
        assert f"expect {estimate} hours" in prose, f"{readme} no longer says 'expect {estimate} hours'"
        for day, first, last, hours in re.findall(r"(Day \d|One day), blocks (\d)-(\d): ([\d¼½¾]+) hours", blocks):
            minutes = _block_minutes(day)
            total = sum(minutes[n] for n in range(int(first), int(last) + 1))
            assert total == _hours(hours) * 60, f"{day}, blocks {first}-{last} are {total} minutes, not {hours} hours"



def test_the_stage_counts_it_prints_are_the_chapters():
    """`all 9 stages pass`, `5 of 9 stages pass`: what make stage-NN prints
    today, for the chapter the bullet names."""
    from test_lesson_parts import stage_counts
    counts, wrong = stage_counts(), []
    for day in DAYS.values():
        for bullet in bullets(day, "Checkpoint"):
            chapters = set(re.findall(r"make stage-(\d\d)", bullet))
            for total in re.findall(r"all (\d+) stages pass|\d+ of (\d+) stages pass", bullet):
                stated = int(total[0] or total[1])
                wrong += [f"stage-{c}: says {stated}, has {counts[c]}" for c in chapters if counts[c] != stated]
    assert not wrong, "WORKSHOP.md: " + "; ".join(wrong)


def _stage_sections(readme: Path) -> set[str]:
    """The sections a chapter's table of stages sends the learner to, as WORKSHOP.md links them."""
    table = re.search(r"^\| stage \| what it checks \| read \|\n(.*?)\n\n", readme.read_text(), re.M | re.S)
    assert table, f"{readme.relative_to(ROOT)} has no table of stages"
    chapter = readme.parent.relative_to(ROOT)
    return {(f"{chapter}/{link}" if not link.startswith("#") else f"{chapter}/README.md{link}")
            for link in relative_links(table[1])}


@pytest.mark.parametrize("day", sorted(DAYS))
def test_a_day_that_builds_a_chapter_reads_what_its_stages_grade(day):
    """The section a stage's failure names is one the day has already sent
    the learner to (by itself, or with its whole page)."""
    body = DAYS[day]
    read = {link for bullet in bullets(body, "Read") for link in relative_links(bullet)}
    built = set(re.findall(r"make stage-(\d\d)", "".join(bullets(body, "Checkpoint"))))
    for readme in CHAPTER_READMES:
        if readme.parent.name[:2] in built:
            missing = {link for link in _stage_sections(readme) - read if link.partition("#")[0] not in read}
            assert not missing, f"{day} builds {readme.parent.name} but does not read {sorted(missing)}"
