"""Chapter 04's StatefulSet stages keep both ends honest.

- The reference (04-controllers/stateful_pods.py, the module the
  StatefulSet controller calls) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from solutions/stateful_pods.py,
  a link to the reference) passes every stage.
- Leave out a stage's own part, and that stage fails; make a typical
  mistake in a part, and the stage that grades it fails too (stages 2
  and 4 grade rules of parts that stages 1 and 3 ask for first, so the
  mistakes are what keep them honest).
- The starter, solved, is the StatefulSet controller: run against an API
  server, it makes web-0 with its claim, and web-1 only once web-0 is Ready.

Each stage run is as `make stage-04-statefulset` runs it: the file behind
plan_server.py in a process of its own, asked over loopback HTTP; no
API server, no Docker.
"""
from __future__ import annotations

import subprocess
import sys

import statefulset_stages
from both_ends import FirstStage, both_ends
from honesty import solved
from splice import functions, todo_stages
from stage_runner import ROOT
from statefulset_stages import CONTEXT, STAGES

REFERENCE = ROOT / "04-controllers" / "stateful_pods.py"
STARTER = ROOT / "04-controllers" / "build-it-yourself" / "stateful_pods.py"
FIRST = FirstStage("plan() to answer for no pods",
                   "your plan() raised NotImplementedError: make_and_mend() is yours to write: see TODO(stage 1)",
                   statefulset_stages.WHAT_COMES_NEXT)


# The stages with a part of their own in the starter (2 and 4 grade more
# of the parts of 1 and 3: MISTAKES below holds them).
OWN_PARTS = sorted(set(todo_stages(STARTER.read_text()).values()) - {1})


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (1, "makes every missing pod at once in OrderedReady",
     'if ordered:\n                return wait_for(result, f"pod {ordinal} to be created")',
     "pass"),
    (1, "does not wait for the pod before to be Running and Ready", "elif ordered and not healthy(pod):",
     "elif False:"),
    (1, "numbers the pods from 0 whatever spec.ordinals.start says", "for ordinal in wanted:\n        pod = pods.get",
     "for ordinal in range(len(wanted)):\n        pod = pods.get"),
    (2, "makes the next number instead of the missing one",
     "result.create.append((ordinal, revision_for(ordinal,",
     "result.create.append((wanted.start + len(pods), revision_for(ordinal,"),
    (2, "leaves a Failed pod in place", "elif has_finished(pod) and not is_terminating(pod):", "elif False:"),
    (2, "counts a pod being deleted as healthy", "and not is_terminating(pod)\n", "\n"),
    (3, "removes the lowest extra ordinal first", "for ordinal in sorted((o for o in pods if o not in wanted), "
     "reverse=True):", "for ordinal in sorted(o for o in pods if o not in wanted):"),
    (3, "removes every extra pod at once in OrderedReady",
     'if ordered:\n            return wait_for(result, f"{pod[\'metadata\'][\'name\']} to be terminated")', "pass"),
    (3, "deletes the next pod while the last is still terminating",
     "if not is_terminating(pod):\n            result.delete.append(pod)\n        if ordered:",
     "if is_terminating(pod):\n            continue\n        result.delete.append(pod)\n        if ordered:"),
    (4, "waits for readiness in Parallel too", "elif ordered and not healthy(pod):", "elif not healthy(pod):"),
    (4, "makes one pod at a time in Parallel",
     'if ordered:\n                return wait_for(result, f"pod {ordinal} to be created")',
     'return wait_for(result, f"pod {ordinal} to be created")'),
    (4, "removes one pod at a time in Parallel",
     'if ordered:\n            return wait_for(result, f"{pod[\'metadata\'][\'name\']} to be terminated")',
     'return wait_for(result, f"{pod[\'metadata\'][\'name\']} to be terminated")'),
    (4, "makes a pod again while its old self is still being deleted, in Parallel", "pod = pods.get(ordinal)",
     "pod = pods.get(ordinal)\n        pod = None if pod and is_terminating(pod) and not ordered else pod"),
    (5, "updates the lowest ordinal first", "for ordinal in reversed(wanted):", "for ordinal in wanted:"),
    (5, "ignores the partition", "if ordinal < wanted.start + revisions.partition:", "if False:"),
    (5, "does not wait for the updated pod to be Ready",
     'if not healthy(pod):\n            return wait_for(result, f"{pod[\'metadata\'][\'name\']} to be Running',
     'if False:\n            return wait_for(result, f"{pod[\'metadata\'][\'name\']} to be Running'),
    (5, "makes a pod below the partition from the new template",
     "if revisions.rolling and ordinal < start + revisions.partition:", "if False:"),
    (5, "rolls under OnDelete too", "if not revisions.rolling:\n        return False", "pass"),
]


globals().update(both_ends(STAGES, CONTEXT, REFERENCE, STARTER, FIRST, MISTAKES, "a plan", OWN_PARTS))


def test_the_starters_plan_is_the_references_line_for_line():
    """The order of the steps is given, not graded: so it must stay the
    reference's own (docstring aside), or the two would drift apart."""
    import ast
    def body(path):
        source = path.read_text()
        node = functions(source)["plan"]
        node.body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
        return ast.unparse(node)
    assert body(STARTER) == body(REFERENCE)


def test_the_starters_todos_are_the_four_functions_of_the_plan():
    assert set(todo_stages(STARTER.read_text())) == {"make_and_mend", "revision_for", "scale_down", "roll"}


def test_the_solved_starter_runs_as_the_statefulset_controller(tmp_path):
    """The starter's promise: run as a program, it is part 4's controller
    deciding with the learner's plan. Against a fresh API server: web-0 and
    its claim www-web-0 are made, web-1 only once web-0 is Running and Ready
    (no kubelet: the test writes the status one would)."""
    sys.path.insert(0, str(ROOT / "tests" / "controllers"))
    from controllers_harness import APIServer, Client, mark_ready, wait_for
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    server = APIServer(tmp_path / "data").start()
    log_path = tmp_path / "controller.log"
    controller = None
    try:
        api = Client(server.url)
        response = api.post("/apis/apps/v1/namespaces/default/statefulsets", {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}]}})
        assert response.status_code == 201, response.text
        with open(log_path, "wb") as log:
            controller = subprocess.Popen([sys.executable, str(mine), "--apiserver", server.url], stdout=log,
                                          stderr=subprocess.STDOUT, cwd=ROOT)

        def pods() -> list[dict]:
            items = api.get("/api/v1/namespaces/default/pods").json()["items"]
            return sorted(items, key=lambda p: p["metadata"]["name"])
        names = lambda: [p["metadata"]["name"] for p in pods()]    # noqa: E731
        wait_for(lambda: names() == ["web-0"], timeout=30, what=f"pod web-0 alone (log: {log_path})")
        claims = api.get("/api/v1/namespaces/default/persistentvolumeclaims").json()["items"]
        assert [c["metadata"]["name"] for c in claims] == ["www-web-0"], log_path.read_text()
        # web-1 waits for web-0: the marker is the status update of the set
        # that follows, which the controller writes after its plan.
        wait_for(lambda: (api.get("/apis/apps/v1/namespaces/default/statefulsets/web").json().get("status")
                          or {}).get("replicas") == 1, timeout=30, what="the set's status to count web-0")
        assert names() == ["web-0"], f"web-1 was made before web-0 was Ready: {names()}"
        mark_ready(api, pods()[0])
        wait_for(lambda: names() == ["web-0", "web-1"], timeout=30, what=f"web-1 once web-0 is Ready (log: {log_path})")
    finally:
        if controller is not None:
            controller.terminate()
            controller.wait(10)
        server.stop()
