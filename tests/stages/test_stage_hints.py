"""Every hint a stage gives names a heading that exists in its lesson page,
and every TODO in a starter names one: a learner sent to read a section
must find it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import apiserver_stages
import controller_stages
import dns_stages
import kubelet_stages
import scheduler_stages
from splice import functions
from stage_runner import ROOT, Hint

STAGE_MODULES = [kubelet_stages, apiserver_stages, scheduler_stages, controller_stages, dns_stages]
STARTERS = [ROOT / "01-kubelet" / "build-it-yourself" / "kubelet.py",
            ROOT / "02-apiserver" / "build-it-yourself" / "apiserver.py",
            ROOT / "03-scheduler" / "build-it-yourself" / "scheduler.py",
            ROOT / "04-controllers" / "build-it-yourself" / "replicaset_controller.py",
            ROOT / "05-proxy-dns" / "build-it-yourself" / "cluster_dns.py"]
HEADING = re.compile(r"^#+ (.+?)\s*$", re.M)


def headings(page: Path) -> set[str]:
    return set(HEADING.findall(page.read_text()))


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
