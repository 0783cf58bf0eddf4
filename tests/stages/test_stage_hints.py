"""Every hint a stage gives names a heading that exists in its lesson page,
and every TODO in a starter names one: a learner sent to read a section
must find it. And the section a stage links to states the rules the stage
grades: each of the stage's key terms (Stage.terms) is in its text."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import apiserver_stages
import controller_stages
import dns_stages
import ingress_stages
import kubelet_stages
import scheduler_stages
import statefulset_stages
from splice import functions
from stage_runner import ROOT, Hint

STAGE_MODULES = [kubelet_stages, apiserver_stages, scheduler_stages, controller_stages, statefulset_stages,
                 dns_stages, ingress_stages]
STARTERS = [ROOT / "01-kubelet" / "build-it-yourself" / "kubelet.py",
            ROOT / "02-apiserver" / "build-it-yourself" / "apiserver.py",
            ROOT / "03-scheduler" / "build-it-yourself" / "scheduler.py",
            ROOT / "04-controllers" / "build-it-yourself" / "replicaset_controller.py",
            ROOT / "04-controllers" / "build-it-yourself" / "stateful_pods.py",
            ROOT / "05-proxy-dns" / "build-it-yourself" / "cluster_dns.py",
            ROOT / "05-proxy-dns" / "build-it-yourself" / "ingress_match.py"]
HEADING = re.compile(r"^#+ (.+?)\s*$", re.M)
LEVELLED_HEADING = re.compile(r"^(#+) (.+?)\s*$", re.M)
FENCED = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)


def headings(page: Path) -> set[str]:
    return set(HEADING.findall(page.read_text()))


def section_text(hint: Hint) -> str:
    """The prose under the hint's heading, up to the next heading of the
    same or a higher level: without its code blocks (a rule stated only in
    a quoted function or a command's output is not stated), its lines
    joined by spaces (a term may wrap)."""
    text = FENCED.sub("", (ROOT / hint.page).read_text())
    found = [m for m in LEVELLED_HEADING.finditer(text) if m[2] == hint.section]
    assert found, f"{hint}: {hint.page} has no such heading"
    level = len(found[0][1])
    end = next((m.start() for m in LEVELLED_HEADING.finditer(text, found[0].end()) if len(m[1]) <= level),
               len(text))
    return " ".join(text[found[0].end():end].split())


def every_stage() -> list:
    return [stage for module in STAGE_MODULES for stage in module.STAGES]


def every_hint() -> list[Hint]:
    hints = set()
    for module in STAGE_MODULES:
        hints |= {value for value in vars(module).values() if isinstance(value, Hint)}
        hints |= {stage.hint for stage in module.STAGES}
    return sorted(hints, key=str)


@pytest.mark.parametrize("hint", every_hint(), ids=str)
def test_a_hint_names_a_heading_of_its_lesson(hint):
    page = ROOT / hint.page
    assert page.is_file(), f"{hint}: there is no {hint.page}"
    assert hint.section in headings(page), f"{hint}: {hint.page} has no such heading"


@pytest.mark.parametrize("starter", STARTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_todo_names_a_section_of_the_lesson(starter):
    chapter = starter.parent.parent
    sections = set().union(*(headings(page) for page in chapter.glob("*.md")))
    source = starter.read_text()
    lines = source.splitlines()
    for name, node in functions(source).items():
        body = "\n".join(lines[node.lineno - 1:node.end_lineno])
        if "TODO(stage" not in body:
            continue
        quoted = set(re.findall(r'"([^"]+)"', re.sub(r"\n\s*#\s*", " ", body)))
        assert quoted & sections, f"{name}()'s TODO names no section of {chapter.name}'s lesson"


@pytest.mark.parametrize("stage", every_stage(), ids=lambda s: f"{s.hint.page.split('/')[0]}-stage-{s.number}")
def test_the_linked_section_states_what_the_stage_grades(stage):
    assert stage.terms, f"stage {stage.number} ({stage.title}) declares no terms: name the words of its rules"
    text = section_text(stage.hint)
    missing = [term for term in stage.terms if term not in text]
    assert not missing, f"stage {stage.number} ({stage.title}): {stage.hint} never says {missing}"


# A chapter's table of stages: "| N | what it checks | [section](page#anchor) |".
STAGE_ROW = re.compile(r"^\| (\d+) \| .* \| \[([^\]]+)\]\(([^)#]*)(?:#[^)]*)?\) \|$", re.M)


@pytest.mark.parametrize("module", STAGE_MODULES, ids=lambda m: m.__name__)
def test_the_chapters_table_of_stages_links_what_each_stage_hints(module):
    """The learner reads the table before running a stage, and the hint
    after one fails: both send to the same section. A chapter with two
    programs to write (05: cluster DNS, the ingress match) has a table for
    each: the stages' own is the one that lists their numbers and sections."""
    chapter = ROOT / module.STAGES[0].hint.page.split("/")[0]
    wanted = {stage.number: (stage.hint.section, (ROOT / stage.hint.page).resolve()) for stage in module.STAGES}
    tables = []
    for page in chapter.glob("*.md"):
        for block in page.read_text().split("\n\n"):
            rows = {int(number): (section, (page.parent / (target or page.name)).resolve())
                    for number, section, target in STAGE_ROW.findall(block)}
            if rows:
                tables.append(rows)
    assert tables, f"{chapter.name} has no table of stages"
    if wanted in tables:
        return
    same_numbers = [rows for rows in tables if set(rows) == set(wanted)]
    assert same_numbers, f"{chapter.name}'s tables list stages {[sorted(rows) for rows in tables]}"
    for rows in same_numbers:
        for stage in module.STAGES:
            assert rows[stage.number] == wanted[stage.number], \
                f"{chapter.name}'s table sends stage {stage.number} to {rows[stage.number][0]!r}; its hint is {stage.hint}"
