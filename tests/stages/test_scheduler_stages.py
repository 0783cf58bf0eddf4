"""Chapter 03's stages keep both ends honest.

- The reference scheduler (03-scheduler/scheduler.py) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from solutions/scheduler.py)
  passes every stage: a learner can get there by filling them.
- Leave out the part a stage grades, and that stage fails: no stage
  passes a scheduler that skips what it is about.

Each run is black-box, as `make stage-03` runs it: a fresh API server
and the scheduler as a process; no Docker.
"""
from __future__ import annotations

import pytest

import scheduler_stages
from honesty import EXPECTED_TO_FAIL, report, solved
from scheduler_stages import STAGES
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "03-scheduler" / "scheduler.py"
STARTER = ROOT / "03-scheduler" / "build-it-yourself" / "scheduler.py"


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: f"stage-{s.number}")
def test_the_reference_scheduler_passes_every_stage(stage):
    result = run_stage(stage, REFERENCE)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why():
    result = run_stage(STAGES[0], STARTER)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected == scheduler_stages.ONLY_NODE
    # At once: waiting out the deadline would tell the learner nothing more.
    assert result.failure.happened == ("your program raised NotImplementedError: "
                                      "pick() is yours to write: see TODO(stage 1)")
    assert result.failure.hint == scheduler_stages.ROUND_ROBIN     # where pick() is explained
    assert "NotImplementedError: pick() is yours to write: see TODO(stage 1)" in result.log


def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    for stage in STAGES:
        result = run_stage(stage, mine)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


# The starter solved up to the stage before, and what it lacks for this one.
# Stage 7 (fair ties) has no TODO of its own: pick() from stage 1 takes
# the first of the best instead of the next in turn.
WITHOUT = {number: ({*range(1, number)}, {}) for number in range(2, len(STAGES) + 1)}
WITHOUT[7] = ({*range(1, 7)}, {"Scheduler.pick": "Scheduler.pick_first"})


@pytest.mark.parametrize("number", sorted(WITHOUT), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_scheduler_without_what_it_grades(tmp_path, number):
    stages, instead = WITHOUT[number]
    result = run_stage(STAGES[number - 1], solved(STARTER, tmp_path, stages, instead), patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a scheduler without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (2, "checks cpu only", "for resource, wanted in pod_requests(pod).items():",
     "for resource, wanted in [(r, w) for r, w in pod_requests(pod).items() if r == 'cpu']:"),
    (2, "forgets the pod's own request", "if wanted > allocatable.get(resource, 0) - used:",
     "if used > allocatable.get(resource, 0):"),
    (5, "treats Exists as Equal", 'if toleration.get("operator") == "Exists":', "if False:"),
    # Rules the TODOs state that a learner playing the stages found ungraded:
    (4, "takes a node with no Ready condition for ready", 'conditions.get("Ready") == "True"',
     'conditions.get("Ready", "True") == "True"'),
    (5, "ignores a toleration's effect", 'if toleration.get("effect") and toleration["effect"] != taint["effect"]:',
     "if False:"),
    (5, "lets Exists match any key", 'return not toleration.get("key") or toleration["key"] == taint["key"]',
     "return True"),
    (5, "refuses PreferNoSchedule too", 'if taint["effect"] in ("NoSchedule", "NoExecute") and',
     "if True and"),
    (8, "does not sort the reasons", "sorted(f'{n} {r}' for r, n in counts.items())",
     "(f'{n} {r}' for r, n in counts.items())"),
    # Found by a learner trying the stages (issue 37):
    (1, "compares Ready with Python's True, not the string", 'conditions.get("Ready") == "True"',
     'conditions.get("Ready") is True'),
    (5, "takes Exists with an empty key for no match", 'return not toleration.get("key") or toleration["key"] == taint["key"]',
     'return toleration.get("key") == taint["key"]'),
    (8, "counts only a node's first reason", "for reason in node_reasons:", "for reason in node_reasons[:1]:"),
    (8, "stops at the first resource a node lacks", 'reasons.append(f"Insufficient {resource}")',
     'return [f"Insufficient {resource}"]'),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    source = mine.read_text()
    assert right in source, f"the solution no longer has {right!r}"
    mine.write_text(source.replace(right, wrong))
    result = run_stage(STAGES[number - 1], mine, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a scheduler that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_a_pod_left_pending_in_stage_1_is_told_why(tmp_path):
    """A filter that turns the only node away (here a Ready compared with
    Python's True) is not pick()'s fault: the hint is the cycle's rules,
    and the starter's log names the node and its reason."""
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    mine.write_text(mine.read_text().replace('conditions.get("Ready") == "True"', 'conditions.get("Ready") is True'))
    result = run_stage(STAGES[0], mine, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None and result.failure.hint == scheduler_stages.CYCLE, report(result)
    assert 'the string "True"' in result.failure.expected
    assert "no node fits" in result.log and "node1: node(s) were not ready" in result.log, result.log


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == {stage.number for stage in STAGES} - {7}, marked
