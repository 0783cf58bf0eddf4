"""`make stage-NN` (and `make stage-04-statefulset`, `make stage-05-ingress`) as a learner runs it:
tests/stages/run.py, its exit code and what it prints (chapter 02's
stages, which take a second)."""
from __future__ import annotations

import subprocess
import sys

from stage_runner import ROOT

RUN = ROOT / "tests" / "stages" / "run.py"


def grade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "PYTHONPATH": str(ROOT)})


def test_the_starter_stops_at_stage_1_with_what_to_read():
    run = grade("02")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "✗ stage 1  create a pod and read it back" in run.stdout
    assert "expected GET of pod web to answer 200" in run.stdout
    assert 'hint     see "One path for every request" in 02-apiserver/lesson-1-store-rest-watch.md' in run.stdout
    assert "0 of 7 stages pass; fix stage 1 and run again" in run.stdout
    assert "stage 2" not in run.stdout                     # the first failure ends the run


def test_one_stage_of_the_reference_passes():
    run = grade("02", "--stage", "4", "--mine", "02-apiserver/apiserver.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "✓ stage 4  optimistic concurrency" in run.stdout
    assert "stage 1" not in run.stdout


def test_a_stage_that_does_not_exist_is_an_error():
    run = grade("03", "--stage", "12")
    assert run.returncode != 0
    assert "there is no stage 12: the stages are 1 to 9" in run.stdout + run.stderr


def test_chapter_05s_second_program_has_its_own_stages():
    """make stage-05-ingress: the ingress match's three stages, not the DNS's five."""
    run = grade("05-ingress", "--stage", "4")
    assert run.returncode != 0
    assert "there is no stage 4: the stages are 1 to 3" in run.stdout + run.stderr


def test_chapter_05s_readme_counts_the_ingress_stages():
    """tests/test_lesson_parts.py holds a chapter's first program to the
    count its README states; the second program's part is checked here."""
    import ingress_stages
    readme = (ROOT / "05-proxy-dns" / "README.md").read_text()
    part = " ".join(readme.split("\n### The ingress routing rules\n", 1)[1].split("\n## ", 1)[0].split())
    words = "zero one two three four five six seven eight nine ten".split()
    count = words[len(ingress_stages.STAGES)]
    assert f"{count.capitalize()} stages grade the match" in part
    assert f"The {count} take about" in part
    assert f"make stage-05-ingress STAGE={len(ingress_stages.STAGES) - 1}" in part


def test_chapter_04s_second_program_has_its_own_stages():
    """make stage-04-statefulset: the StatefulSet plan's five stages, not the ReplicaSet's six."""
    run = grade("04-statefulset", "--stage", "6")
    assert run.returncode != 0
    assert "there is no stage 6: the stages are 1 to 5" in run.stdout + run.stderr


def test_the_statefulset_starter_stops_at_stage_1_with_what_to_read():
    run = grade("04-statefulset")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "✗ stage 1  OrderedReady: web-0 first" in run.stdout
    assert ("happened your plan() raised NotImplementedError: make_and_mend() is yours to write: "
            "see TODO(stage 1)") in run.stdout
    assert 'hint     see "What comes next" in 04-controllers/lesson-4-state-that-keeps-its-name.md' in run.stdout
    assert "0 of 5 stages pass; fix stage 1 and run again" in run.stdout


def test_chapter_04s_pages_count_the_statefulset_stages():
    """tests/test_lesson_parts.py holds a chapter's first program to the
    count its README states; the second program's are checked here: part
    4's Build it yourself, and the README's paragraph that points to it."""
    import statefulset_stages
    words = "zero one two three four five six seven eight nine ten".split()
    count = words[len(statefulset_stages.STAGES)]
    part = (ROOT / "04-controllers" / "lesson-4-state-that-keeps-its-name.md").read_text()
    part = " ".join(part.split("\n## Build it yourself\n", 1)[1].split("\n## ", 1)[0].split())
    assert f"{count.capitalize()} stages grade the plan" in part
    assert f"The {count} take about" in part
    assert f"Once all {count} pass" in part
    readme = " ".join((ROOT / "04-controllers" / "README.md").read_text().split())
    assert f"{count.capitalize()} stages grade the plan" in readme
    assert "make stage-04-statefulset" in readme
