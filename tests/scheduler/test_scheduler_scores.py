"""Every score, table-driven, and how the framework adds them up, words the
FailedScheduling message and breaks ties."""
from __future__ import annotations

import pytest

from default_profile import default_framework
from framework import Framework, RoundRobin, default_normalize, fit_error, nodes_to_find
from inter_pod import SelectorSpread
from node_filters import NodeAffinity, TaintToleration
from node_resources import NodeResourcesBalancedAllocation, NodeResourcesLeastAllocated, pod_requests
from scheduler_harness import make_pod, node_info

MI = 1024 * 1024


def scores(plugin, pod, nodes):
    """{node: 0-100} from plugin alone, run by the framework as the scheduler runs it."""
    decision = Framework([], [(plugin, 1)], explain=True).schedule(pod, nodes)
    return {name: by_plugin.get(plugin.name, 0) for name, by_plugin in decision.scores.items()}


# ---------------------------------------------------------------- least allocated

@pytest.mark.parametrize("node, running, pod, expected", [
    # (free cpu share + free memory share) / 2, each 0-100, rounded down.
    (dict(cpu="4", memory="4Gi"), [], dict(cpu="1", memory="1Gi"), 75),
    (dict(cpu="4", memory="4Gi"), [dict(cpu="2", memory="3Gi")], dict(cpu="1", memory="1Gi"), 12),   # (25 + 0) / 2
    (dict(cpu="4", memory="4Gi"), [], dict(cpu="4", memory="4Gi"), 0),
    (dict(cpu="1", memory="4Gi"), [], dict(cpu="2", memory="1Gi"), 37),    # over capacity scores 0: (0 + 75) / 2
    # Nothing requested counts as 100m and 200Mi: (97 + 90) / 2 on a 4 CPU, 2000Mi node.
    (dict(cpu="4", memory="2000Mi"), [], {}, (3900 * 100 // 4000 + 1800 * 100 // 2000) // 2),
    (dict(cpu="4", memory="2000Mi"), [{}], {}, (3800 * 100 // 4000 + 1600 * 100 // 2000) // 2),
])
def test_least_allocated(node, running, pod, expected):
    pods = [make_pod(f"running-{i}", **spec) for i, spec in enumerate(running)]
    node = node_info(running=pods, **node)
    assert scores(NodeResourcesLeastAllocated(), make_pod("new", **pod), [node]) == {"node1": expected}


# ---------------------------------------------------------------- balanced allocation

@pytest.mark.parametrize("node, running, pod, expected", [
    (dict(cpu="4", memory="4Gi"), [], dict(cpu="1", memory="1Gi"), 100),     # 25% and 25%
    (dict(cpu="4", memory="4Gi"), [], dict(cpu="2", memory="1Gi"), 87),      # 50% and 25%: 1 - 0.125
    (dict(cpu="4", memory="4Gi"), [dict(memory="3Gi")], dict(cpu="1"), 75),  # 25% and 75%: 1 - 0.25
    (dict(cpu="1", memory="4Gi"), [], dict(cpu="2", memory="4Gi"), 100),     # both capped at 100%
    (dict(cpu="4", memory="4Gi"), [dict(cpu="4")], {}, 0),                   # a pod asking nothing: skipped
])
def test_balanced_allocation(node, running, pod, expected):
    pods = [make_pod(f"running-{i}", **spec) for i, spec in enumerate(running)]
    node = node_info(running=pods, **node)
    assert scores(NodeResourcesBalancedAllocation(), make_pod("new", **pod), [node]) == {"node1": expected}


# ---------------------------------------------------------------- spreading

def owned(name, owner="rs-1", **kwargs):
    pod = make_pod(name, **kwargs)
    pod.pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]
    from pod_info import PodInfo
    return PodInfo.of(pod.pod)


SERVICE = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}


@pytest.mark.parametrize("case, new, services, on_nodes, expected", [
    ("same owner: fewest kin wins", owned("new"), [],
     [[owned("a"), owned("b")], [owned("c")], []], {"n1": 0, "n2": 50, "n3": 100}),
    ("another owner's pods do not count", owned("new"), [],
     [[owned("a", "rs-2")], []], {"n1": 100, "n2": 100}),
    ("behind the same service", make_pod("new", labels={"app": "web"}), [SERVICE],
     [[make_pod("a", labels={"app": "web"})], [make_pod("b", labels={"app": "db"})]], {"n1": 0, "n2": 100}),
    ("a service in another namespace", make_pod("new", labels={"app": "web"}),
     [{**SERVICE, "metadata": {"name": "web", "namespace": "other"}}],
     [[make_pod("a", labels={"app": "web"})], []], {"n1": 0, "n2": 0}),
    ("no owner, no service: no opinion", make_pod("new"), [],
     [[make_pod("a")], []], {"n1": 0, "n2": 0}),
])
def test_selector_spread(case, new, services, on_nodes, expected):
    nodes = [node_info(f"n{i + 1}", running=pods) for i, pods in enumerate(on_nodes)]
    assert scores(SelectorSpread(lambda: services), new, nodes) == expected


# ---------------------------------------------------------------- preferred node affinity

def preferred(*weighted):
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}}
        for weight, key, value in weighted]}}


@pytest.mark.parametrize("affinity, expected", [
    (preferred((10, "disk", "ssd")), {"ssd": 100, "hdd": 0, "both": 100}),
    (preferred((10, "disk", "ssd"), (30, "zone", "a")), {"ssd": 25, "hdd": 75, "both": 100}),
    ({}, {"ssd": 0, "hdd": 0, "both": 0}),
])
def test_node_affinity_score(affinity, expected):
    nodes = [node_info("ssd", labels={"disk": "ssd"}), node_info("hdd", labels={"disk": "hdd", "zone": "a"}),
             node_info("both", labels={"disk": "ssd", "zone": "a"})]
    assert scores(NodeAffinity(), make_pod(affinity=affinity), nodes) == expected


# ---------------------------------------------------------------- PreferNoSchedule taints

SOFT = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}


@pytest.mark.parametrize("tolerations, expected", [
    ([], {"clean": 100, "one": 50, "two": 0}),
    ([{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}], {"clean": 100, "one": 100, "two": 0}),
    ([{"operator": "Exists"}], {"clean": 100, "one": 100, "two": 100}),
])
def test_taint_toleration_score(tolerations, expected):
    nodes = [node_info("clean"), node_info("one", taints=[SOFT]),
             node_info("two", taints=[SOFT, {"key": "old", "effect": "PreferNoSchedule"}])]
    assert scores(TaintToleration(), make_pod(tolerations=tolerations), nodes) == expected


# ---------------------------------------------------------------- normalising

@pytest.mark.parametrize("raw, reverse, expected", [
    ({"a": 0, "b": 0}, False, {"a": 0, "b": 0}),
    ({"a": 0, "b": 0}, True, {"a": 100, "b": 100}),
    ({"a": 1, "b": 3}, False, {"a": 33, "b": 100}),
    ({"a": 1, "b": 3}, True, {"a": 67, "b": 0}),
])
def test_default_normalize(raw, reverse, expected):
    assert default_normalize(raw, reverse) == expected


# ---------------------------------------------------------------- what a pod requests

def container(cpu=None, memory=None, restart=None, limits=None):
    spec = {"name": "c", "image": "x", "resources": {}}
    if cpu or memory:
        spec["resources"]["requests"] = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if limits:
        spec["resources"]["limits"] = limits
    if restart:
        spec["restartPolicy"] = restart
    return spec


@pytest.mark.parametrize("case, spec, expected", [
    ("containers add up", {"containers": [container("1", "1Gi"), container("500m", "1Gi")]},
     {"cpu": 1500, "memory": 2048 * MI}),
    ("a limit without a request", {"containers": [container(limits={"cpu": "2", "memory": "1Gi"})]},
     {"cpu": 2000, "memory": 1024 * MI}),
    ("a request below its limit wins", {"containers": [container("1", limits={"cpu": "2"})]}, {"cpu": 1000}),
    ("init containers: the largest, if above the sum",
     {"initContainers": [container("2", "1Gi"), container("3", "500Mi")], "containers": [container("1", "2Gi")]},
     {"cpu": 3000, "memory": 2048 * MI}),
    ("a sidecar runs beside later init containers and the app",
     {"initContainers": [container("1", restart="Always"), container("2")], "containers": [container("1")]},
     {"cpu": 3000}),                                   # max(1 + 2 during init, 1 + 1 after)
    ("a sidecar adds to the app containers",
     {"initContainers": [container("500m", restart="Always")], "containers": [container("2")]}, {"cpu": 2500}),
    ("overhead on top", {"containers": [container("1")], "overhead": {"cpu": "250m"}}, {"cpu": 1250}),
    ("nothing asked", {"containers": [container()]}, {}),
])
def test_pod_requests(case, spec, expected):
    assert pod_requests(spec) == expected


def test_scores_pretend_a_request_less_container_asks_a_little():
    spec = {"containers": [container(), container("1")]}
    assert pod_requests(spec, non_zero=True) == {"cpu": 1100, "memory": 400 * MI}


# ---------------------------------------------------------------- the framework

@pytest.mark.parametrize("failures, expected", [
    ({"n1": ("NodeResourcesFit", ("Insufficient cpu",)),
      "n2": ("NodeAffinity", ("node(s) didn't match Pod's node affinity/selector",)),
      "n3": ("NodeAffinity", ("node(s) didn't match Pod's node affinity/selector",))},
     "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."),
    ({"n1": ("NodeResourcesFit", ("Insufficient cpu", "Insufficient memory"))},
     "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."),
    # Sorted as text, as Kubernetes sorts: "10 ..." before "2 ...".
    ({**{f"a{i}": ("NodeUnschedulable", ("node(s) were unschedulable",)) for i in range(10)},
      "b1": ("NodeResourcesFit", ("Too many pods",)), "b2": ("NodeResourcesFit", ("Too many pods",))},
     "0/12 nodes are available: 10 node(s) were unschedulable, 2 Too many pods."),
])
def test_fit_error_message(failures, expected):
    assert fit_error(len(failures), failures) == expected


def test_no_nodes_at_all():
    decision = default_framework().schedule(make_pod(), [])
    assert decision.node is None and decision.message == "no nodes available to schedule pods"


def test_round_robin_takes_the_tied_nodes_in_turn():
    robin = RoundRobin()
    assert [robin.pick(["b", "a"]) for _ in range(4)] == ["a", "b", "a", "b"]
    # The turn carries on from one tie to the next: the fifth pick, 4 % 3, takes the second node.
    assert robin.pick(["c", "a", "b"]) == "b"


def test_weights_multiply_and_the_best_total_wins():
    class Fixed(NodeResourcesLeastAllocated):
        def __init__(self, name, values):
            self.name, self.values = name, values

        def score(self, pod, node, state):
            return self.values[node.name]

    framework = Framework([], [(Fixed("A", {"n1": 100, "n2": 0}), 1), (Fixed("B", {"n1": 0, "n2": 60}), 2)])
    decision = framework.schedule(make_pod(), [node_info("n1"), node_info("n2")])
    assert decision.totals == {"n1": 100, "n2": 120}
    assert decision.node == "n2" and decision.ties == ["n2"]


def test_identical_pods_on_identical_nodes_spread_by_score_and_turn():
    framework = default_framework()
    nodes = [node_info(name, cpu="64", memory="256Gi") for name in ("n1", "n2", "n3")]
    placed = []
    for i in range(9):
        pod = make_pod(f"web-{i}")                    # no requests: 100m is too little to move a score
        decision = framework.schedule(pod, nodes)
        placed.append(decision.node)
        next(n for n in nodes if n.name == decision.node).add_pod(pod)
    assert sorted(placed.count(n) for n in ("n1", "n2", "n3")) == [3, 3, 3]


def test_a_node_stops_at_its_first_failing_filter():
    framework = default_framework()
    node = node_info("n1", unschedulable=True, cpu="1")
    decision = framework.schedule(make_pod(cpu="2"), [node])
    assert decision.failures == {"n1": ("NodeUnschedulable", ("node(s) were unschedulable",))}
    assert decision.message == "0/1 nodes are available: 1 node(s) were unschedulable."


# ------------------------------------------------- how many nodes are looked at

@pytest.mark.parametrize("total, enough", [
    (3, 3), (99, 99),              # a small cluster: every node
    (100, 100), (200, 100),        # never under 100 nodes
    (1000, 420), (5000, 500),      # 50% - 1% per 125 nodes: 42%, then 10%
    (10000, 500),                  # never under 5%
])
def test_enough_feasible_nodes_shrinks_as_the_cluster_grows(total, enough):
    assert nodes_to_find(total) == enough


def test_a_large_cluster_is_searched_in_turns_until_enough_nodes_fit():
    framework = default_framework()
    nodes = [node_info(f"n{i:03}", cpu="8", memory="16Gi") for i in range(300)]   # 144 are enough
    first = framework.schedule(make_pod("a"), nodes)
    second = framework.schedule(make_pod("b"), nodes)
    assert len(first.nodes) == len(second.nodes) == 144 and first.total_nodes == 300
    assert first.nodes[0] == "n000" and second.nodes[0] == "n144"           # the next search goes on from there
    assert first.node in first.nodes and second.node in second.nodes
    # A pod that fits nowhere has every node looked at, so the message counts them all.
    nowhere = framework.schedule(make_pod("huge", cpu="64"), nodes)
    assert len(nowhere.nodes) == 300 and nowhere.message == "0/300 nodes are available: 300 Insufficient cpu."
