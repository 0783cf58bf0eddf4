"""Chapter 01's stages keep both ends honest.

- The reference kubelet (01-kubelet/kubelet.py) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from solutions/kubelet.py)
  passes every stage: a learner can get there by filling them.
- Leave out the part a stage grades, and that stage fails: no stage
  passes a kubelet that skips what it is about.

Each run is black-box, as `make stage-01` runs it: the kubelet as a
process, under a node name of its own, on this computer's Docker (so
this file is in conftest.py's DOCKER group, and needs the docker_client
fixture: it skips without Docker, and fails in CI).
"""
from __future__ import annotations

import pytest

import kubelet_stages
from honesty import EXPECTED_TO_FAIL, report, solved
from kubelet_stages import STAGES
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "01-kubelet" / "kubelet.py"
STARTER = ROOT / "01-kubelet" / "build-it-yourself" / "kubelet.py"


def grade(stage, mine, patience: float = 1.0):
    return run_stage(stage, mine, kubelet_stages.CONTEXT, patience)


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: f"stage-{s.number}")
def test_the_reference_kubelet_passes_every_stage(docker_client, stage):
    result = grade(stage, REFERENCE)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why(docker_client):
    result = grade(STAGES[0], STARTER)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected == "one running container of pod hello, labelled io.kubernetes.container.name=app"
    # At once: waiting out the deadline would tell the learner nothing more.
    assert result.failure.happened == ("your program raised NotImplementedError: "
                                      "run_container() is yours to write: see TODO(stage 1)")
    assert result.failure.hint == kubelet_stages.PAUSE         # where run_container() is explained
    assert "NotImplementedError: run_container() is yours to write: see TODO(stage 1)" in result.log


def test_the_starter_with_its_todos_filled_passes_every_stage(docker_client, tmp_path):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    for stage in STAGES:
        result = grade(stage, mine)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


@pytest.mark.parametrize("number", range(2, len(STAGES) + 1), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_kubelet_without_what_it_grades(docker_client, tmp_path, number):
    result = grade(STAGES[number - 1], solved(STARTER, tmp_path, set(range(1, number))), EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a kubelet without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (1, "runs command and args as Docker's CMD", 'entrypoint=spec.get("command"), command=spec.get("args")',
     'command=(spec.get("command") or []) + (spec.get("args") or [])'),
    (2, "starts the apps beside the pause container, not in its network",
     'network_mode=f"container:{sandbox.id}" if sandbox else None', "network_mode=None"),
    (5, "restarts under OnFailure whatever the exit code",
     'return policy == "Always" or (policy == "OnFailure" and exit_code(container) != 0)',
     'return policy in ("Always", "OnFailure")'),
    (6, "backs off without doubling", "delay = min(self.backoff_initial * 2 ** (restarts - 1), self.backoff_max)",
     "delay = self.backoff_initial"),
    # Two that AI learners' mistaken copies showed passing the stage before it had upper bounds:
    (6, "backs off one step late (6 s, then 12 s)", "self.backoff_initial * 2 ** (restarts - 1)",
     "self.backoff_initial * 2 ** restarts"),
    (6, "waits before the first restart too",
     "if restarts == 0:\n            return True\n        delay = min(self.backoff_initial * 2 ** (restarts - 1)",
     "delay = min(self.backoff_initial * 2 ** max(restarts - 1, 0)"),
    # Forgets "container:" and so finds every app container in a changed
    # sandbox: replaces them all at every sync, the untouched pod's too.
    (8, "compares the network mode with the bare sandbox id",
     '!= f"container:{sandbox.id}"', "!= sandbox.id"),
    # Docker's stop without a timeout waits its own default, 10 s, not the pod's grace period.
    (9, "stops with Docker's default timeout, not the pod's grace period",
     'container.stop(timeout=int(container.labels.get(GRACE_PERIOD, "30")))', "container.stop()"),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(docker_client, tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    source = mine.read_text()
    assert right in source, f"the solution no longer has {right!r}"
    mine.write_text(source.replace(right, wrong))
    result = grade(STAGES[number - 1], mine, EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a kubelet that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == {stage.number for stage in STAGES}, marked
