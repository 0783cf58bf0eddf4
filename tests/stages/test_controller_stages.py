"""Chapter 04's stages keep both ends honest.

- The reference (04-controllers/controller_manager.py, its ReplicaSet
  controller only) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from
  solutions/replicaset_controller.py) passes every stage.
- Leave out the part a stage grades, and that stage fails.

Each run is black-box, as `make stage-04` runs it: a fresh API server and
the controller as a process; no kubelet, no Docker.
"""
from __future__ import annotations

import pytest

import controller_stages
from controller_stages import CONTEXT, STAGES
from honesty import EXPECTED_TO_FAIL, report, solved
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "04-controllers" / "controller_manager.py"
STARTER = ROOT / "04-controllers" / "build-it-yourself" / "replicaset_controller.py"


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: f"stage-{s.number}")
def test_the_reference_controller_passes_every_stage(stage):
    result = run_stage(stage, REFERENCE, CONTEXT)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why():
    result = run_stage(STAGES[0], STARTER, CONTEXT)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected == "3 pods of ReplicaSet web (spec.replicas is 3)"
    # At once: waiting out the deadline would tell the learner nothing more.
    assert result.failure.happened == ("your program raised NotImplementedError: "
                                      "manage_replicas() is yours to write: see TODO(stage 1)")
    assert result.failure.hint == controller_stages.THE_REPLICASET
    assert "NotImplementedError: manage_replicas() is yours to write:" in result.log.replace("\n", " ")


def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    for stage in STAGES:
        result = run_stage(stage, mine, CONTEXT)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


@pytest.mark.parametrize("number", range(2, len(STAGES) + 1), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_controller_without_what_it_grades(tmp_path, number):
    result = run_stage(STAGES[number - 1], solved(STARTER, tmp_path, {*range(1, number)}), CONTEXT,
                       patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a controller without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (1, "leaves out blockOwnerDeletion", '"controller": True, "blockOwnerDeletion": True}\n    return',
     '"controller": True}\n    return'),
    # Deleting in list order is caught only by chance (the list is sorted by
    # the pods' random names: 1 time in 70 it deletes the four not ready),
    # so the mistake graded here is its sure-to-fail cousin: the ready ones first.
    (3, "deletes the ready pods first",
     "return sorted(newest_first, key=lambda pod: (bool(pod[\"spec\"].get(\"nodeName\")), "
     "is_ready(pod)))[:count]",
     "return sorted(pods, key=lambda pod: not is_ready(pod))[:count]"),
    (4, "counts pods being deleted", 'and not pod["metadata"].get("deletionTimestamp")', ""),
    (4, "counts a Succeeded pod", 'phase not in ("Succeeded", "Failed")', 'phase != "Failed"'),
    (5, "never releases",
     'self.set_owners(pod, [ref for ref in refs if ref.get("uid") != rs["metadata"]["uid"]])', "ours.append(pod)"),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    source = mine.read_text()
    assert right in source, f"the solution no longer has {right!r}"
    mine.write_text(source.replace(right, wrong))
    result = run_stage(STAGES[number - 1], mine, CONTEXT, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a controller that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == {stage.number for stage in STAGES}, marked
