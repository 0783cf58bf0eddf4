"""Chapter 03's stages: a scheduler, graded one capability at a time.

Each stage gets a fresh API server, registers Node objects through it (no
kubelet: a Node is only an object, with the capacity and Ready condition a
kubelet would report, which is all a scheduler reads), starts the
learner's scheduler with `--apiserver URL`, creates pods and watches where
they land. A check that something does *not* happen (no pod on the full
node) always waits for something that does (the pod bound elsewhere), so
a scheduler that does nothing never passes one.
"""
from __future__ import annotations

import time

from stage_runner import Hint, Stage, StageFailure, WithAPIServer

CONTEXT = WithAPIServer      # every stage: a fresh API server of ours, the learner's scheduler

PART1 = "03-scheduler/lesson-1-how-it-schedules.md"
PART2 = "03-scheduler/lesson-2-run-the-scheduler.md"

CYCLE = Hint("The scheduling cycle", PART1)
FILTER = Hint("A filter: does the pod fit?", PART1)
SCORE = Hint("A score: the emptiest node", PART1)
ROUND_ROBIN = Hint("Picking among equals: round robin", PART1)
NOTHING_FITS = Hint("When nothing fits", PART1)
TOO_BIG = Hint("9. A pod too big for any node", PART2)
CORDON = Hint("8. Cordon a node", PART2)
SELECTOR = Hint("10. A nodeSelector", PART2)
TAINTS = Hint("11. A taint and a toleration", PART2)
ANOTHER = Hint("12. Another scheduler", PART2)

NAMESPACE = "default"


# ---------------------------------------------------------------- objects

def node_object(name: str, cpu: str = "2", memory: str = "4Gi", *, labels: dict | None = None,
                taints: list | None = None, unschedulable: bool = False, ready: str | None = "True") -> dict:
    """A Node as a kubelet would register it (ready None: no Ready condition
    at all, a Node no kubelet has reported on)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    spec: dict = {"taints": taints} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"capacity": dict(allocatable), "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": ready}] if ready else []}}


def pod_object(name: str, *, cpu: str | None = None, memory: str | None = None, node: str | None = None,
               **spec) -> dict:
    """A one-container pod; cpu and memory become its requests."""
    requests = {resource: value for resource, value in (("cpu", cpu), ("memory", memory)) if value}
    container = {"name": "app", "image": "busybox:1.35", **({"resources": {"requests": requests}} if requests else {})}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [container], **spec}}


def add_nodes(ctx: WithAPIServer, *nodes: dict) -> None:
    for node in nodes:
        response = ctx.api.post("/api/v1/nodes", node)
        assert response.status_code == 201, response.text


def create_pod(ctx: WithAPIServer, name: str, **kwargs) -> None:
    response = ctx.api.post(f"/api/v1/namespaces/{NAMESPACE}/pods", pod_object(name, **kwargs))
    assert response.status_code == 201, response.text


def node_of(ctx: WithAPIServer, pod: str) -> str:
    """The pod's spec.nodeName, "" while it is pending."""
    return ctx.api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}").json()["spec"].get("nodeName", "")


def placement(ctx: WithAPIServer) -> dict[str, str]:
    """pod name -> node name ("" while pending), for every pod."""
    items = ctx.api.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json()["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def wait_bound(ctx: WithAPIServer, pod: str, *, expected: str | None = None, timeout: float = 10,
               hint: Hint | None = None, late_hint: Hint | None = None) -> str:
    """The node the pod gets bound to; a StageFailure if it stays pending."""
    return ctx.wait_until(lambda: node_of(ctx, pod), expected=expected or f"pod {pod} bound to a node",
                          happened=lambda: f"{pod} is still Pending (no spec.nodeName): your scheduler found "
                                           f"no node for it, or never tried (its log below says which)",
                          timeout=timeout, hint=hint, late_hint=late_hint)


def place_one_by_one(ctx: WithAPIServer, pods: list[str], allowed: set[str], why: str, **kwargs) -> None:
    """Create each pod, wait for its binding, and fail at the first one
    bound outside `allowed`, saying `why` the other nodes were wrong."""
    for pod in pods:
        create_pod(ctx, pod, **kwargs)
        expected = f"pod {pod} bound to {' or '.join(sorted(allowed))} ({why})"
        node = wait_bound(ctx, pod, expected=expected)    # a pod left Pending is told the same story
        if node not in allowed:
            raise StageFailure(expected, f"it was bound to {node}")


# ---------------------------------------------------------------- the stages

ONLY_NODE = ('pod web bound to node1, the only node (Ready: its condition\'s status is the string "True"; '
             'not cordoned, no taints, 2 cpu and 4Gi free)')


def stage_binds(ctx: WithAPIServer) -> None:
    """One node, one pod: the pod is bound to it. A pod left Pending here
    means a filter turned node1 away: the hint is then the filters' rules,
    not pick()."""
    add_nodes(ctx, node_object("node1"))
    ctx.start_mine()
    create_pod(ctx, "web")
    node = wait_bound(ctx, "web", expected=ONLY_NODE, late_hint=CYCLE)
    if node != "node1":
        raise StageFailure(ONLY_NODE, f"it was bound to {node!r}")


# The wrong nodes' names sort first: a scheduler that skips a filter and
# takes the first of its equals, or the next in turn, lands on one.

def stage_requests(ctx: WithAPIServer) -> None:
    """node-1 is full by requests (not by use: nothing runs), node-2 has room."""
    add_nodes(ctx, node_object("node-1", cpu="2", memory="4Gi"), node_object("node-2", cpu="2", memory="4Gi"))
    create_pod(ctx, "big", cpu="1500m", node="node-1")          # bound by hand, as in chapter 02
    ctx.start_mine()
    place_one_by_one(ctx, ["cpu-1", "cpu-2", "cpu-3"], {"node-2"},
                     "node-1 has 2 cpu and its pods request 1500m: 600m more does not fit", cpu="600m")
    add_nodes(ctx, node_object("node-0", cpu="4", memory="1Gi"))
    place_one_by_one(ctx, ["memory-1", "memory-2"], {"node-1"},
                     "node-1 has 500m cpu and 4Gi memory left, node-2 only 200m cpu, "
                     "node-0 only 1Gi memory", cpu="250m", memory="2Gi")


def stage_node_selector(ctx: WithAPIServer) -> None:
    add_nodes(ctx, node_object("node-1"), node_object("node-2", labels={"disktype": "ssd"}), node_object("node-3"))
    ctx.start_mine()
    place_one_by_one(ctx, ["ssd-1", "ssd-2", "ssd-3", "ssd-4"], {"node-2"},
                     "the pods' nodeSelector is disktype: ssd, and only node-2 has that label",
                     nodeSelector={"disktype": "ssd"})


def stage_cordon(ctx: WithAPIServer) -> None:
    add_nodes(ctx, node_object("node-1", unschedulable=True), node_object("node-2"))
    ctx.start_mine()
    place_one_by_one(ctx, ["web-1", "web-2", "web-3"], {"node-2"}, "node-1 is cordoned: spec.unschedulable is true")
    add_nodes(ctx, node_object("node-0", ready="False"))
    place_one_by_one(ctx, ["web-4", "web-5", "web-6"], {"node-2"},
                     "node-0's Ready condition is False: no kubelet runs pods there")
    add_nodes(ctx, node_object("node-00", ready=None))
    place_one_by_one(ctx, ["web-7", "web-8", "web-9"], {"node-2"},
                     "node-00 has no Ready condition at all: no kubelet has reported on it")


def stage_taints(ctx: WithAPIServer) -> None:
    gpu = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    draining = {"key": "draining", "value": "true", "effect": "NoExecute"}   # a value: Exists must ignore it
    spare = {"key": "spare", "value": "yes", "effect": "PreferNoSchedule"}   # a preference, never a refusal
    add_nodes(ctx, node_object("node-1", taints=[gpu]), node_object("node-2", taints=[draining]),
              node_object("node-3", taints=[spare]))
    ctx.start_mine()
    place_one_by_one(ctx, ["plain-1", "plain-2", "plain-3", "plain-4"], {"node-3"},
                     "node-1 has the taint dedicated=gpu:NoSchedule and node-2 draining=true:NoExecute; "
                     "the pods tolerate neither, and node-3's spare=yes:PreferNoSchedule refuses no one")
    place_one_by_one(ctx, ["effect-1", "effect-2", "effect-3"], {"node-3"},
                     "the pods tolerate dedicated=gpu with effect NoExecute, not node-1's NoSchedule: "
                     "a toleration's effect must match the taint's (or be empty)",
                     tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute"}])
    place_one_by_one(ctx, ["exists-1", "exists-2", "exists-3"], {"node-2", "node-3"},
                     "the pods tolerate every taint with the key draining (operator Exists), "
                     "not node-1's dedicated",
                     tolerations=[{"key": "draining", "operator": "Exists"}])
    place_one_by_one(ctx, ["gpu-job"], {"node-1"},
                     "the pod tolerates dedicated=gpu:NoSchedule (operator Equal) and selects node-1",
                     nodeSelector={"kubernetes.io/hostname": "node-1"},
                     tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    place_one_by_one(ctx, ["cleanup"], {"node-2"},
                     "the pod tolerates every draining taint, whatever its value (operator Exists), and selects node-2",
                     nodeSelector={"kubernetes.io/hostname": "node-2"},
                     tolerations=[{"key": "draining", "operator": "Exists"}])
    place_one_by_one(ctx, ["tolerates-all"], {"node-1"},
                     "the pod's toleration is operator Exists with no key and no effect, which tolerates every "
                     "taint, and it selects node-1 (dedicated=gpu:NoSchedule)",
                     nodeSelector={"kubernetes.io/hostname": "node-1"}, tolerations=[{"operator": "Exists"}])


def stage_least_allocated(ctx: WithAPIServer) -> None:
    """A small node and one twice its size: least allocated fills them to
    the same fraction, 2 pods and 4, whatever breaks the ties."""
    add_nodes(ctx, node_object("node-a", cpu="2", memory="4Gi"), node_object("node-b", cpu="4", memory="8Gi"))
    ctx.start_mine()
    place_one_by_one(ctx, ["web-1"], {"node-b"},
                     "both nodes are empty and node-b, twice node-a's size, has more room left once the pod is on it",
                     cpu="500m", memory="1Gi")
    for number in range(2, 7):
        create_pod(ctx, f"web-{number}", cpu="500m", memory="1Gi")
        wait_bound(ctx, f"web-{number}")
    counts = count_per_node(placement(ctx))
    if counts != {"node-a": 2, "node-b": 4}:
        raise StageFailure("node-a 2 pods, node-b 4: each then has half its cpu and memory free",
                           f"the pods went {show_counts(counts)}")


def stage_ties(ctx: WithAPIServer) -> None:
    """Two huge identical nodes and tiny pods: every score ties (the room
    left rounds to the same number), so only the tie-break spreads them."""
    add_nodes(ctx, node_object("node-a", cpu="1000", memory="1000Gi"),
              node_object("node-b", cpu="1000", memory="1000Gi"))
    ctx.start_mine()
    for number in range(1, 7):
        create_pod(ctx, f"tiny-{number}", cpu="1m", memory="1Mi")
        wait_bound(ctx, f"tiny-{number}")
    counts = count_per_node(placement(ctx))
    if counts != {"node-a": 3, "node-b": 3}:
        raise StageFailure("3 pods on each node: the nodes tie every time, and ties take turns",
                           f"the pods went {show_counts(counts)}: the pick does not take turns among equals")


def failed_scheduling(ctx: WithAPIServer, pod: str) -> list[dict]:
    events = ctx.api.get(f"/api/v1/namespaces/{NAMESPACE}/events").json()["items"]
    return [e for e in events if e["involvedObject"].get("name") == pod and e.get("reason") == "FailedScheduling"]


def stage_failed_scheduling(ctx: WithAPIServer) -> None:
    """Nodes failing for two reasons: node-a lacks both cpu and memory (one
    filter, two reasons, both counted); node-c is cordoned and too small
    (two filters: only the first to say no is counted)."""
    add_nodes(ctx, node_object("node-a", cpu="1", memory="1Gi"), node_object("node-b", cpu="1", memory="4Gi"),
              node_object("node-c", cpu="1", unschedulable=True))
    ctx.start_mine()
    create_pod(ctx, "too-big", cpu="2", memory="2Gi")
    expected_message = ("0/3 nodes are available: 1 Insufficient memory, 1 node(s) were unschedulable, "
                        "2 Insufficient cpu.")
    events = ctx.wait_until(lambda: failed_scheduling(ctx, "too-big"),
                            expected="a FailedScheduling event about pod too-big (it needs 2 cpu and 2Gi: node-a "
                                     "has 1 cpu and 1Gi, node-b 1 cpu and 4Gi, node-c 1 cpu and is cordoned)",
                            happened=lambda: f"no such event; too-big is on {node_of(ctx, 'too-big') or 'no node'}")
    messages = sorted({e["message"] for e in events})
    if messages != [expected_message] or events[0]["type"] != "Warning":
        raise StageFailure(f'one Warning event with the message "{expected_message}" (node-a counted under '
                           f'both the reasons it fails, node-c only under its first filter\'s)',
                           f"the events say {[(e['type'], e['message']) for e in events]}")
    if node_of(ctx, "too-big"):
        raise StageFailure("too-big to stay Pending", f"it was bound to {node_of(ctx, 'too-big')}")
    add_nodes(ctx, node_object("node-d", cpu="4"))
    wait_bound(ctx, "too-big", expected="too-big bound to node-d, a node with room that registered after it "
                                        "failed (a new node may fit: try the waiting pods again)")


def stage_scheduler_name(ctx: WithAPIServer) -> None:
    add_nodes(ctx, node_object("node1"))
    ctx.start_mine()
    create_pod(ctx, "theirs", schedulerName="my-scheduler")
    create_pod(ctx, "ours")
    wait_bound(ctx, "ours")
    # A scheduler that takes every pod may bind theirs a moment after ours
    # (the queue's order within one second is its own): give it two seconds.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if node_of(ctx, "theirs"):
            raise StageFailure('pod theirs (schedulerName: my-scheduler) left alone by the scheduler named '
                               '"default-scheduler"', "it was bound")
        time.sleep(0.05)
    ctx.start_mine("--scheduler-name", "my-scheduler")
    wait_bound(ctx, "theirs",
               expected="pod theirs bound by your scheduler started with --scheduler-name my-scheduler")


def count_per_node(placement: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in placement.values():
        counts[node] = counts.get(node, 0) + 1
    return counts


def show_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{node or 'no node'} {count}" for node, count in sorted(counts.items()))


STAGES = [
    Stage(1, "binds a pod to the only node", stage_binds, ROUND_ROBIN,
          terms=("best score", "returns one", "a single node")),
    Stage(2, "requests, not usage: never a node without room", stage_requests, FILTER,
          terms=("Requests, not usage", "allocatable", "already", "`spec.nodeName`", "cpu and memory",
                 "Insufficient cpu")),
    Stage(3, "nodeSelector", stage_node_selector, SELECTOR,
          terms=("nodeSelector", "every one of its labels", "same value",
                 "node(s) didn't match Pod's node affinity/selector")),
    Stage(4, "cordoned and not-ready nodes get no pods", stage_cordon, CORDON,
          terms=("spec.unschedulable", "node(s) were unschedulable", "`Ready` condition", '`"True"`, a string',
                 '`"False"`', "no Ready condition at all", "node(s) were not ready")),
    Stage(5, "taints and tolerations", stage_taints, TAINTS,
          terms=("NoSchedule", "NoExecute", "PreferNoSchedule", "Equal", "Exists", "effect is empty",
                 "an empty key", "any value", "the same value", "untolerated taint")),
    Stage(6, "spreads by least allocated", stage_least_allocated, SCORE,
          terms=("(allocatable - requested) * 100 // allocatable", "plus the pod being placed", "averaged",
                 "twice the pods")),
    Stage(7, "ties take turns", stage_ties, ROUND_ROBIN, terms=("same tie", "in turn", "first of the best")),
    Stage(8, "FailedScheduling: why a pod stays Pending, until room appears", stage_failed_scheduling, NOTHING_FITS,
          terms=("`Warning`", "`FailedScheduling`", "0/N nodes are available", "sorted",
                 "Each reason a node gives is counted", "first filter that said no", "added later")),
    Stage(9, "only the pods that name this scheduler", stage_scheduler_name, ANOTHER,
          terms=("spec.schedulerName", "--scheduler-name", "leaves every other pod alone", "default-scheduler")),
]
