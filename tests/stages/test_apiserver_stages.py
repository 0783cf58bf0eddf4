"""Chapter 02's stages keep both ends honest (as test_scheduler_stages.py
does for chapter 03): the reference API server passes every stage, the
untouched starter fails stage 1 saying why, the starter with its TODOs
filled passes every stage, and each stage fails a server without its part.
Stage 7 runs the real kubectl: without it on PATH, that stage's tests skip
(unless GROUNDUP_REQUIRE_KUBECTL=1, as in CI)."""
from __future__ import annotations

import pytest

import apiserver_stages
from apiserver_stages import CONTEXT, STAGES
from honesty import EXPECTED_TO_FAIL, report, solved
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "02-apiserver" / "apiserver.py"
STARTER = ROOT / "02-apiserver" / "build-it-yourself" / "apiserver.py"
KUBECTL_STAGE = 7


@pytest.fixture
def stages(request):
    """The stages this machine can run: all, once kubectl is there."""
    if any(stage.number == KUBECTL_STAGE for stage in request.param):
        request.getfixturevalue("kubectl")
    return request.param


@pytest.mark.parametrize("stages", [[stage] for stage in STAGES], ids=lambda s: f"stage-{s[0].number}",
                         indirect=True)
def test_the_reference_api_server_passes_every_stage(stages):
    result = run_stage(stages[0], REFERENCE, CONTEXT)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why():
    result = run_stage(STAGES[0], STARTER, CONTEXT)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected == "GET of pod web to answer 200"
    assert "Store.get is yours to write: see TODO(stage 1)" in result.failure.happened
    assert result.failure.hint == apiserver_stages.ONE_PATH


@pytest.mark.parametrize("stages", [STAGES], ids=["all"], indirect=True)
def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path, stages):
    mine = solved(STARTER, tmp_path, {stage.number for stage in stages})
    for stage in stages:
        result = run_stage(stage, mine, CONTEXT)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


# Stage 7 has no TODO of its own: kubectl needs what stages 1-6 built.
@pytest.mark.parametrize("number", range(2, KUBECTL_STAGE), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_server_without_what_it_grades(tmp_path, number):
    result = run_stage(STAGES[number - 1], solved(STARTER, tmp_path, set(range(1, number))), CONTEXT,
                       patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a server without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
CEILING = "self.version = int(self.ceiling_file.read_text())"
MISTAKES = [
    (3, "loads the pods but not the version", CEILING, "pass"),
    (4, "never checks the version sent", 'if sent and sent != current["metadata"]["resourceVersion"]:', "if False:"),
    (4, "refuses a PUT without a resourceVersion (Kubernetes allows it for pods)", "if sent and sent != ",
     "if sent != "),
    (4, "drops the uid and creationTimestamp a PUT leaves out", 'for field in ("namespace", "uid", "creationTimestamp"):',
     'for field in ("namespace",):'),
    (4, "never saves an update: kill -9 loses it", 'self.next_version()\n            self.save(pod)',
     "self.next_version()"),
    (4, "starts the counter from the number of pods", CEILING, "self.version = len(self.pods)"),
    (5, "starts the counter from the pods' highest version (a deleted pod's is lost)", CEILING,
     'self.version = max([int(p["metadata"]["resourceVersion"]) for p in self.pods.values()] or [0])'),
    (5, "leaves the file behind", "self.remove_file(namespace, name)", "pass"),
    (6, "sends the whole history", 'if int(meta["resourceVersion"]) > since', "if True"),
    (6, "ignores the namespace", ' and namespace in (None, meta["namespace"])', ""),
    (6, "records DELETED at the pod's old version", '"resourceVersion": self.next_version()}}',
     '"resourceVersion": pod["metadata"]["resourceVersion"]}}'),
    (6, "changes the stored pod in place, rewriting the history", "self.pods[namespace, name] = pod",
     "current.update(pod); pod = current"),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, set(range(1, KUBECTL_STAGE)))
    source = mine.read_text()
    assert source.count(right) == 1, f"the solved starter has {source.count(right)} of {right!r}, not one"
    mine.write_text(source.replace(right, wrong))
    result = run_stage(STAGES[number - 1], mine, CONTEXT, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a server that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == set(range(1, KUBECTL_STAGE)), marked
