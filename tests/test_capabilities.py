"""The capability tables of tests/capabilities.py hold to the chapters: a new
test cannot silently fall out of a chapter's summary, a renamed one leaves
no stale entry behind, and every section a learner is sent to read exists."""
from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

from capabilities import CHAPTERS, ROOT, CapabilitySummary, Chapter, anchors, chapters_named, print_chapter, where

CHAPTER_LIST = list(CHAPTERS.values())


def functions_in(path: Path) -> list[str]:
    """The test functions of a file as pytest finds them: module level, and
    in Test classes (a parametrized one counts once)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [item.name for item in node.body
                      if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test")]
    return found


def chapter_tests(chapter: Chapter) -> list[tuple[str, str]]:
    return [(path.name, function) for path in sorted((ROOT / chapter.folder).glob("test_*.py"))
            for function in functions_in(path)]


@pytest.mark.parametrize("chapter", CHAPTER_LIST, ids=lambda c: c.number)
def test_every_test_of_a_chapter_is_on_a_capabilitys_line(chapter):
    astray = [f"{file}::{function}" for file, function in chapter_tests(chapter)
              if chapter.capability_of(file, function) is None]
    assert not astray, f"add these to a capability of chapter {chapter.number} in tests/capabilities.py: {astray}"


@pytest.mark.parametrize("chapter", CHAPTER_LIST, ids=lambda c: c.number)
def test_every_entry_of_a_capability_still_names_a_test(chapter):
    tests = chapter_tests(chapter)
    for capability in chapter.capabilities:
        for entry in capability.tests:
            probe = type(capability)(capability.name, capability.read, (entry,))
            assert any(probe.has(file, function) for file, function in tests), \
                f"{capability.name!r}: {entry} matches no test in {chapter.folder}"


@pytest.mark.parametrize("capability", [c for chapter in CHAPTER_LIST for c in chapter.capabilities],
                         ids=lambda c: c.read)
def test_the_section_to_read_exists(capability):
    page, _, section = capability.read.partition("#")
    assert (ROOT / page).is_file(), f"{capability.name!r}: there is no {page}"
    assert section in anchors(ROOT / page), f"{capability.name!r}: {page} has no heading whose anchor is #{section}"


def test_a_test_id_names_its_chapter_file_and_function():
    chapter, file, function = where("tests/kubelet/test_pods.py::test_tcp_and_http_probes[http]")
    assert (chapter.number, file, function) == ("01", "test_pods.py", "test_tcp_and_http_probes")
    assert chapter.capability_of(file, function).name == "probes"
    assert where("tests/test_snippets.py::test_x") is None


def test_chapters_are_named_by_number_or_all():
    assert [c.number for c in chapters_named("1,03")] == ["01", "03"]
    assert len(chapters_named("all")) == len(CHAPTERS)
    with pytest.raises(ValueError, match="no chapter 09"):
        chapters_named("9")


class Report:
    """What pytest_runtest_logreport is given, as far as the summary reads it."""

    def __init__(self, nodeid: str, when: str, outcome: str):
        self.nodeid, self.when, self.outcome = nodeid, when, outcome
        self.passed, self.failed, self.skipped = (outcome == o for o in ("passed", "failed", "skipped"))


def test_the_summary_counts_each_test_once_and_names_the_section_of_a_failure():
    summary = CapabilitySummary([CHAPTERS["03"]])
    filters = "tests/scheduler/test_scheduler_filters.py::test_x"
    scores = "tests/scheduler/test_scheduler_scores.py::test_y"
    for nodeid, outcomes in ((f"{filters}[a]", ("passed", "passed", "passed")),
                             (f"{filters}[b]", ("passed", "passed", "failed")),     # its teardown failed
                             (f"{scores}[c]", ("skipped",))):
        for when, outcome in zip(("setup", "call", "teardown"), outcomes):
            summary.pytest_runtest_logreport(Report(nodeid, when, outcome))
    buffer = io.StringIO()
    print_chapter(Console(file=buffer, width=200), CHAPTERS["03"], summary.lines(CHAPTERS["03"]))
    text = buffer.getvalue()
    assert "✗ filters: does the pod fit?  1 passed, 1 failed" in text
    assert "    read 03-scheduler/lesson-1-how-it-schedules.md#a-filter-does-the-pod-fit" in text
    assert "- scores and ties" in text and "1 skipped" in text      # skipped only: nothing shown to hold
    assert "1 of 2 capabilities have a failing test" in text
