"""Chapter 04's stages: a ReplicaSet controller, graded one capability at a time.

Each stage gets a fresh API server, starts the learner's controller with
`--apiserver URL`, creates ReplicaSets and watches the pods they get. No
kubelet and no Docker: a pod is only an object, and where a stage needs
one ready or finished it writes the status a kubelet would report. A
check that something does *not* happen (no extra pod) always waits for
something that does first (another ReplicaSet's pod made after it), so a
controller that does nothing never passes one.

The reference runs as `04-controllers/controller_manager.py
--controllers replicaset`: the context adds that flag for it.
"""
from __future__ import annotations

import itertools
import time

from stage_runner import Hint, Stage, StageFailure, WithAPIServer

PART1 = "04-controllers/lesson-1-run-the-controllers.md"
CODE = "04-controllers/build-it.md"

A_REPLICASET = Hint("5. A ReplicaSet", PART1)       # the walk-through
THE_REPLICASET = Hint("The ReplicaSet", CODE)       # the rules every stage grades

NAMESPACE = "default"
RS_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"


class WithController(WithAPIServer):
    """A fresh API server; the reference controller manager runs only its
    ReplicaSet controller, so no other controller's work shows."""

    def mine_args(self) -> list[str]:
        extra = ["--controllers", "replicaset"] if self.mine.name == "controller_manager.py" else []
        return [*super().mine_args(), *extra]


CONTEXT = WithController


# ---------------------------------------------------------------- objects

def replicaset_object(name: str, replicas: int, **template_spec) -> dict:
    """A ReplicaSet selecting app=<name>; its pods also get tier: front."""
    labels = {"app": name, "tier": "front"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels, "annotations": {"note": "from the template"}},
                                  "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}],
                                           **template_spec}}}}


def create_replicaset(ctx: WithAPIServer, name: str, replicas: int, **template_spec) -> dict:
    response = ctx.api.post(RS_PATH, replicaset_object(name, replicas, **template_spec))
    assert response.status_code == 201, response.text
    return response.json()


def scale(ctx: WithAPIServer, name: str, replicas: int) -> None:
    response = ctx.api.patch(f"{RS_PATH}/{name}", {"spec": {"replicas": replicas}})
    assert response.status_code == 200, response.text


def pods_of(ctx: WithAPIServer, app: str, *, active_only: bool = True) -> list[dict]:
    """The pods labelled app=<app>, oldest first; active_only leaves out
    the ones finished or being deleted."""
    items = ctx.api.get(PODS_PATH).json()["items"]
    pods = [p for p in items if (p["metadata"].get("labels") or {}).get("app") == app]
    if active_only:
        pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    return sorted(pods, key=lambda p: int(p["metadata"]["resourceVersion"]))


def names(pods: list[dict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def set_pod_status(ctx: WithAPIServer, pod: dict, status: dict) -> None:
    response = ctx.api.patch(f"{PODS_PATH}/{pod['metadata']['name']}/status", {"status": status})
    assert response.status_code == 200, response.text


def mark_ready(ctx: WithAPIServer, pod: dict) -> None:
    """What a kubelet reports for a started pod: Running and Ready."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    set_pod_status(ctx, pod, {"phase": "Running",
                              "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]})


def wait_for_pods(ctx: WithAPIServer, app: str, count: int, *, why: str, timeout: float = 10,
                  hint: Hint | None = None) -> list[dict]:
    """Wait until exactly `count` active pods of app=<app> exist."""
    return ctx.wait_until(lambda: len(pods_of(ctx, app)) == count and pods_of(ctx, app),
                          expected=f"{count} pods of ReplicaSet {app} ({why})",
                          happened=lambda: counted(ctx, app), timeout=timeout, hint=hint)


def counted(ctx: WithAPIServer, app: str) -> str:
    """What the stage sees: the active pods, and the others named with why they do not count."""
    active = pods_of(ctx, app)
    others = [p for p in pods_of(ctx, app, active_only=False) if p not in active]
    why = [f"{p['metadata']['name']}: " + ("being deleted" if p["metadata"].get("deletionTimestamp")
                                           else f"{p['status']['phase']}, not counted") for p in others]
    return f"there are {len(active)} active: {names(active)}" + (f" ({'; '.join(why)})" if why else "")


_markers = itertools.count(1)


def then_no_more(ctx: WithAPIServer, app: str, count: int, why: str) -> None:
    """A check that nothing more happens must wait for something that does:
    a second ReplicaSet's pod, made after anything the controller was
    going to do for the first."""
    marker = f"marker-{next(_markers)}"
    create_replicaset(ctx, marker, 1)
    wait_for_pods(ctx, marker, 1, why="a second ReplicaSet, made to see that the first has settled")
    have = pods_of(ctx, app)
    if len(have) != count:
        raise StageFailure(f"{count} pods of ReplicaSet {app}, and no more ({why})",
                           counted(ctx, app))


# ---------------------------------------------------------------- the stages

def stage_creates(ctx: WithAPIServer) -> None:
    rs = create_replicaset(ctx, "web", 3)
    ctx.start_mine()
    pods = wait_for_pods(ctx, "web", 3, why="spec.replicas is 3")
    for pod in pods:
        meta = pod["metadata"]
        if not meta["name"].startswith("web-"):
            raise StageFailure('pods named after their ReplicaSet (generateName "web-")', f"one is {meta['name']}")
        if meta.get("labels") != {"app": "web", "tier": "front"} or pod["spec"]["containers"][0]["image"] != \
                "busybox:1.35":
            raise StageFailure("pods made from the template: labels app: web, tier: front, image busybox:1.35",
                               f"{meta['name']} has labels {meta.get('labels')} and "
                               f"{[c['image'] for c in pod['spec']['containers']]}")
        owners = [ref for ref in meta.get("ownerReferences") or [] if ref.get("controller")]
        wanted = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
                  "controller": True, "blockOwnerDeletion": True}
        if len(owners) != 1 or {k: owners[0].get(k) for k in wanted} != wanted:
            raise StageFailure(f"each pod owned by its ReplicaSet: one owner reference {wanted}",
                               f"{meta['name']} has {meta.get('ownerReferences')}")
    then_no_more(ctx, "web", 3, "spec.replicas is 3")


def stage_replaces(ctx: WithAPIServer) -> None:
    create_replicaset(ctx, "web", 2)
    ctx.start_mine()
    victim = names(wait_for_pods(ctx, "web", 2, why="spec.replicas is 2"))[0]
    assert ctx.api.delete(f"{PODS_PATH}/{victim}").status_code == 200
    ctx.wait_until(lambda: len(pods_of(ctx, "web")) == 2 and victim not in names(pods_of(ctx, "web")),
                   expected=f"a new pod in place of {victim}, which someone else deleted (its delete is an "
                            "event about a pod: it must wake up the pod's ReplicaSet)",
                   happened=lambda: f"the pods are {names(pods_of(ctx, 'web'))}")
    then_no_more(ctx, "web", 2, "one replacement for one deleted pod")


def stage_scales_down(ctx: WithAPIServer) -> None:
    create_replicaset(ctx, "web", 8)
    mine = ctx.start_mine()
    pods = wait_for_pods(ctx, "web", 8, why="spec.replicas is 8")
    # Ready: four of the eight, neither the oldest nor the newest four, so
    # "oldest first" and "newest first" fail; and list order (by the pods'
    # random names) keeps exactly these four one time in 70.
    ready = {pods[i]["metadata"]["name"] for i in (1, 3, 4, 6)}
    for pod in pods:
        if pod["metadata"]["name"] in ready:
            mark_ready(ctx, pod)
    # Scaled while the controller is down: when it starts it lists first,
    # so it sees which pods are ready before it picks (and it must cope
    # with a restart anyway).
    mine.kill()
    scale(ctx, "web", 4)
    ctx.start_mine()
    left = wait_for_pods(ctx, "web", 4, why="scaled from 8 to 4")
    if set(names(left)) != ready:
        raise StageFailure(f"the ready pods {sorted(ready)} kept: the least useful go first, and a pod "
                           "that is not ready serves nobody", f"the pods left are {names(left)}")
    then_no_more(ctx, "web", 4, "scaled to 4")


def stage_active(ctx: WithAPIServer) -> None:
    # On a node (which no kubelet watches), so a delete only marks a pod,
    # as it does while its kubelet stops its containers.
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert ctx.api.post("/api/v1/nodes", node).status_code == 201
    create_replicaset(ctx, "web", 3, nodeName="node1")
    ctx.start_mine()
    pods = wait_for_pods(ctx, "web", 3, why="spec.replicas is 3")
    failed, done, stopping = (pod["metadata"]["name"] for pod in pods)
    set_pod_status(ctx, pods[0], {"phase": "Failed", "reason": "Evicted"})
    wait_for_pods(ctx, "web", 3, why=f"a new pod beside {failed}, whose status.phase is Failed (evicted): "
                                     "a finished pod does not count")
    set_pod_status(ctx, pods[1], {"phase": "Succeeded"})
    wait_for_pods(ctx, "web", 3, why=f"a new pod beside {done}, whose status.phase is Succeeded (its containers "
                                     "exited 0): finished well is finished too")
    assert ctx.api.delete(f"{PODS_PATH}/{stopping}").status_code == 200
    if not ctx.api.get(f"{PODS_PATH}/{stopping}").json()["metadata"].get("deletionTimestamp"):
        raise AssertionError("the API server deleted a pod on a node at once")
    wait_for_pods(ctx, "web", 3, why=f"a new pod beside {stopping}, which is being deleted "
                                     "(metadata.deletionTimestamp): a pod on its way out does not count")
    then_no_more(ctx, "web", 3, "3 active, beside one Failed, one Succeeded and one being deleted")


def owner_of(ctx: WithAPIServer, pod: str) -> str | None:
    refs = ctx.api.get(f"{PODS_PATH}/{pod}").json()["metadata"].get("ownerReferences") or []
    return next((f"{r['kind']}/{r['name']}" for r in refs if r.get("controller")), None)


def stage_claims(ctx: WithAPIServer) -> None:
    for name, app in (("orphan", "web"), ("stranger", "db")):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
               "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}
        assert ctx.api.post(PODS_PATH, pod).status_code == 201
    create_replicaset(ctx, "web", 2)
    ctx.start_mine()
    ctx.wait_until(lambda: owner_of(ctx, "orphan") == "ReplicaSet/web",
                   expected="pod orphan (app: web, no owner) adopted by ReplicaSet web, whose selector picks it",
                   happened=lambda: f"its owner is {owner_of(ctx, 'orphan')}; web's selector picks "
                                    f"{names(pods_of(ctx, 'web'))}")
    then_no_more(ctx, "web", 2, "spec.replicas is 2, and the adopted orphan is one of them")
    if owner_of(ctx, "stranger"):
        raise StageFailure("pod stranger (app: db) left alone", f"its owner is {owner_of(ctx, 'stranger')}")
    response = ctx.api.patch(f"{PODS_PATH}/orphan", {"metadata": {"labels": {"app": "debug"}}})
    assert response.status_code == 200, response.text
    ctx.wait_until(lambda: owner_of(ctx, "orphan") is None,
                   expected="pod orphan, relabelled app: debug, released by ReplicaSet web (its owner "
                            "reference removed): the selector no longer picks it",
                   happened=lambda: f"its owner is {owner_of(ctx, 'orphan')}")
    wait_for_pods(ctx, "web", 2, why="a new pod in place of the released one")


def status_of(ctx: WithAPIServer, name: str) -> dict:
    status = ctx.api.get(f"{RS_PATH}/{name}").json().get("status") or {}
    return {k: status.get(k) for k in ("replicas", "readyReplicas", "availableReplicas", "observedGeneration")}


def wait_for_status(ctx: WithAPIServer, name: str, wanted: dict, why: str) -> None:
    ctx.wait_until(lambda: status_of(ctx, name) == wanted,
                   expected=f"ReplicaSet {name}'s status {wanted} ({why})",
                   happened=lambda: f"it is {status_of(ctx, name)}")


def stage_status(ctx: WithAPIServer) -> None:
    create_replicaset(ctx, "web", 3)
    ctx.start_mine()
    pods = wait_for_pods(ctx, "web", 3, why="spec.replicas is 3")
    for pod in pods[:2]:
        mark_ready(ctx, pod)
    wait_for_status(ctx, "web", {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
                                 "observedGeneration": 1}, "3 pods, 2 of them ready")
    scale(ctx, "web", 4)
    wait_for_status(ctx, "web", {"replicas": 4, "readyReplicas": 2, "availableReplicas": 2,
                                 "observedGeneration": 2},
                    "scaled to 4 (a new spec: metadata.generation 2), 2 of them ready")


STAGES = [
    Stage(1, "creates pods from the template, owned", stage_creates, THE_REPLICASET,
          terms=("template's labels", "no more", "generateName: web-", "owner reference", "controller: true",
                 "blockOwnerDeletion: true")),
    Stage(2, "replaces a pod someone else deleted", stage_replaces, THE_REPLICASET,
          terms=("watches pods", "wakes its owner's key", "makes another")),
    Stage(3, "scales down, the least useful pods first", stage_scales_down, THE_REPLICASET,
          terms=("least useful first", "not yet scheduled", "not ready", "the newest")),
    Stage(4, "finished pods and pods being deleted do not count", stage_active, THE_REPLICASET,
          terms=("active pods", "`Succeeded`", "`Failed`", "metadata.deletionTimestamp", "replacement")),
    Stage(5, "adopts orphans, releases relabelled pods", stage_claims, THE_REPLICASET,
          terms=("no controller owner", "adopted", "released", "owner reference removed", "left alone")),
    Stage(6, "status: replicas, ready, available, observedGeneration", stage_status, THE_REPLICASET,
          terms=("`replicas`", "`readyReplicas`", "`availableReplicas`", "minReadySeconds", "`observedGeneration`",
                 "metadata.generation")),
]
