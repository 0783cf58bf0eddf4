"""The DaemonSet controller: its decisions as tables, then against a real API
server with Node objects registered through the API, as a real process."""
from __future__ import annotations

import subprocess

import pytest

from controllers_harness import FakeKubelet, unique, wait_for
from daemon_placement import (NodePods, NodeState, Placement, daemon_pod_spec, daemon_status, node_actions,
                              old_pods_to_replace, pinned_to, placement, target_node)
from scheduler_harness import node_object

NAME_FIELD = {"key": "metadata.name", "operator": "In", "values": ["node2"]}


def taint(key, effect="NoSchedule"):
    return {"key": key, "effect": effect}


def node(name="node1", labels=None, taints=None):
    return node_object(name, labels=labels, taints=taints)


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


# ---------------------------------------------------------------- which nodes


@pytest.mark.parametrize("template_spec, the_node, expected, why", [
    ({}, node(), (True, True), "no constraints: every node"),
    ({"nodeSelector": {"disk": "ssd"}}, node(labels={"disk": "ssd"}), (True, True), "selector matches"),
    ({"nodeSelector": {"disk": "ssd"}}, node(labels={"disk": "hdd"}), (False, False), "selector does not"),
    ({"affinity": required({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})},
     node(labels={"zone": "a"}), (True, True), "required affinity matches"),
    ({"affinity": required({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})},
     node(labels={"zone": "b"}), (False, False), "required affinity does not"),
    ({"affinity": required({"matchFields": [NAME_FIELD]})}, node("node2"), (True, True), "matchFields by name"),
    ({"affinity": required({"matchFields": [NAME_FIELD]})}, node("node1"), (False, False), "another name"),
    ({"nodeName": "node9"}, node("node1"), (False, False), "the template names another node"),
    ({}, node(taints=[taint("gpu")]), (False, True), "NoSchedule: no new pod, the running one stays"),
    ({}, node(taints=[taint("gpu", "NoExecute")]), (False, False), "NoExecute: the running one goes too"),
    ({}, node(taints=[taint("gpu", "PreferNoSchedule")]), (True, True), "a preference is no bar"),
    ({"tolerations": [{"key": "gpu", "operator": "Exists"}]}, node(taints=[taint("gpu", "NoExecute")]),
     (True, True), "tolerated"),
    ({}, node(taints=[taint("node.kubernetes.io/unschedulable")]), (True, True), "cordoned: daemons still run"),
    ({}, node(taints=[taint("node.kubernetes.io/not-ready", "NoExecute")]), (True, True), "not ready"),
    ({}, node(taints=[taint("node.kubernetes.io/unreachable", "NoExecute")]), (True, True), "unreachable"),
    ({}, node(taints=[taint("node.kubernetes.io/disk-pressure")]), (True, True), "disk pressure"),
    ({}, node(taints=[taint("node.kubernetes.io/not-ready")]), (False, True),
     "not-ready NoSchedule is not tolerated, as in Kubernetes"),
    ({}, node(taints=[taint("node.kubernetes.io/network-unavailable")]), (False, True), "needs the pod network"),
    ({"hostNetwork": True}, node(taints=[taint("node.kubernetes.io/network-unavailable")]), (True, True),
     "on the host network it does not"),
])
def test_which_nodes_run_the_daemon(template_spec, the_node, expected, why):
    assert placement(template_spec, the_node) == Placement(*expected), why


# ---------------------------------------------------------------- the pod's affinity


def test_a_template_without_affinity_gets_one_term_naming_the_node():
    spec = daemon_pod_spec({"containers": [{"name": "main", "image": "busybox:1.35"}]}, "node2")
    assert spec["affinity"] == required({"matchFields": [NAME_FIELD]})
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} \
        in spec["tolerations"]


def test_each_template_term_keeps_its_labels_and_gets_the_node_name():
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    other = {"key": "metadata.name", "operator": "In", "values": ["node7"]}
    preferred = [{"weight": 1, "preference": {"matchExpressions": [zone]}}]
    affinity = required({"matchExpressions": [zone]}, {"matchFields": [other]})
    affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    pinned = pinned_to(affinity, "node2")
    assert pinned["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [zone], "matchFields": [NAME_FIELD]}, {"matchFields": [NAME_FIELD]}]
    assert pinned["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][1] == \
        {"matchFields": [other]}, "the template itself is not changed"


@pytest.mark.parametrize("spec, node_name", [
    ({"nodeName": "node3"}, "node3"),
    ({"affinity": required({"matchFields": [NAME_FIELD]})}, "node2"),
    ({}, None),
])
def test_the_node_a_pod_is_for(spec, node_name):
    assert target_node({"spec": spec}) == node_name


# ---------------------------------------------------------------- what to do on a node


def dpod(name, phase="Running", created="2026-01-01T00:00:00Z", deleting=False, revision="new"):
    meta = {"name": name, "creationTimestamp": created, "labels": {"controller-revision-hash": revision}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:10:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


RUN, STAY, GO = Placement(True, True), Placement(False, True), Placement(False, False)
A, B = dpod("a", created="2026-01-01T00:00:00Z"), dpod("b", created="2026-01-01T00:05:00Z")


@pytest.mark.parametrize("where, pods, create, delete, why", [
    (RUN, [], True, [], "no pod: create one"),
    (RUN, [A], False, [], "one pod: nothing to do"),
    (RUN, [B, A], False, ["b"], "two: the newer goes"),
    (RUN, [dpod("f", phase="Failed")], False, ["f"], "a failed daemon is replaced (created once it is gone)"),
    (RUN, [dpod("t", deleting=True)], False, [], "terminating: wait for it before creating"),
    (STAY, [], False, [], "tainted NoSchedule: no new pod"),
    (STAY, [A], False, [], "...but the running one stays"),
    (GO, [A, dpod("t", deleting=True)], False, ["a"], "should not run: delete what is live"),
])
def test_what_a_node_needs(where, pods, create, delete, why):
    actions = node_actions(where, pods)
    assert (actions.create, [p["metadata"]["name"] for p in actions.delete]) == (create, delete), why


# ---------------------------------------------------------------- rolling update


def old(name):
    return dpod(name, revision="old")


def new(name):
    return dpod(name, revision="new")


@pytest.mark.parametrize("nodes, max_unavailable, unavailable, replaced, why", [
    ([NodePods([], [old("a")]), NodePods([], [old("b")]), NodePods([], [old("c")])], 1, set(), ["a"],
     "one node at a time"),
    ([NodePods([], [old("a")]), NodePods([], [old("b")]), NodePods([], [old("c")])], 2, set(), ["a", "b"],
     "maxUnavailable 2"),
    ([NodePods([new("a")], []), NodePods([], [old("b")])], 1, {"a"}, [],
     "the new pod is not available yet: wait"),
    ([NodePods([new("a")], []), NodePods([], [old("b")])], 1, set(), ["b"], "the new pod is available: next"),
    ([NodePods([], []), NodePods([], [old("b")])], 1, set(), [], "a node between pods counts as unavailable"),
    ([NodePods([], [old("a")]), NodePods([], [old("b")])], 1, {"b"}, ["b"],
     "an unavailable old pod is replaced at once"),
    ([NodePods([new("a")], []), NodePods([], [old("b")]), NodePods([], [old("c")])], 1, {"a", "c"}, ["c"],
     "unavailable old pods go even when the budget is spent"),
])
def test_rolling_update_replaces_within_max_unavailable(nodes, max_unavailable, unavailable, replaced, why):
    chosen = old_pods_to_replace(nodes, max_unavailable, available=lambda p: p["metadata"]["name"] not in unavailable)
    assert [p["metadata"]["name"] for p in chosen] == replaced, why


def test_status_counts_nodes():
    ready = {"a", "b"}
    states = [NodeState(RUN, [new("a")]), NodeState(RUN, [old("b")]), NodeState(RUN, []),
              NodeState(STAY, [new("d")]), NodeState(GO, [])]
    status = daemon_status(states, "new", ready=lambda p: p["metadata"]["name"] in ready,
                           available=lambda p: p["metadata"]["name"] == "a")
    assert status == {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberMisscheduled": 1,
                      "numberReady": 2, "numberAvailable": 1, "updatedNumberScheduled": 1, "numberUnavailable": 2}


# ---------------------------------------------------------------- end to end


def daemonset(name, **pod_spec):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}], **pod_spec}}}}


@pytest.fixture
def ns(api) -> str:
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def add_node(api, name, **kwargs):
    response = api.post("/api/v1/nodes", node_object(name, **kwargs))
    assert response.status_code == 201, response.text


def live_pods(api, ns):
    items = api.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def pods_by_node(api, ns) -> dict[str, list[str]]:
    placed: dict[str, list[str]] = {}
    for pod in live_pods(api, ns):
        placed.setdefault(target_node(pod), []).append(pod["metadata"]["name"])
    return placed


def one_each(api, ns, nodes) -> dict | None:
    placed = pods_by_node(api, ns)
    return placed if sorted(placed) == sorted(nodes) and all(len(v) == 1 for v in placed.values()) else None


def test_one_pod_per_node_as_nodes_come_and_go(api, manager, ns):
    nodes = [unique("node") for _ in range(3)]
    for name in nodes:
        add_node(api, name)
    ds = api.post(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("agent")).json()
    wait_for(lambda: one_each(api, ns, nodes), timeout=20, what="one pod on each of 3 nodes")
    for pod in live_pods(api, ns):
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"]) == ("DaemonSet", "agent", ds["metadata"]["uid"])
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [target_node(pod)]}]}]
        assert not pod["spec"].get("nodeName"), "the scheduler binds daemon pods, not the controller"
        assert pod["metadata"]["labels"]["controller-revision-hash"]

    fourth = unique("node")
    add_node(api, fourth)
    wait_for(lambda: one_each(api, ns, nodes + [fourth]), timeout=20, what="a pod on the node that joined")

    assert api.delete(f"/api/v1/nodes/{nodes[0]}").status_code == 200
    wait_for(lambda: one_each(api, ns, nodes[1:] + [fourth]), timeout=20, what="the pod of the deleted node gone")

    tainted, after = unique("node"), unique("node")
    add_node(api, tainted, taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    # The watch delivers nodes in order: once the node registered after the
    # tainted one has its pod, the controller has judged the tainted one too.
    add_node(api, after)
    wait_for(lambda: one_each(api, ns, nodes[1:] + [fourth, after]), timeout=20, what="a pod on the last node")
    assert tainted not in pods_by_node(api, ns)
    wait_for(lambda: (api.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/agent").json().get("status") or {})
             .get("desiredNumberScheduled") == 4, timeout=20, what="desiredNumberScheduled 4 of 5 nodes")


def test_a_node_that_stops_matching_loses_its_pod(api, manager, ns):
    ssd, hdd = unique("node"), unique("node")
    add_node(api, ssd, labels={"disk": "ssd"})
    add_node(api, hdd, labels={"disk": "hdd"})
    api.post(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("agent", nodeSelector={"disk": "ssd"}))
    wait_for(lambda: one_each(api, ns, [ssd]), timeout=20, what="a pod on the ssd node only")
    api.patch(f"/api/v1/nodes/{ssd}", {"metadata": {"labels": {"disk": "hdd"}}})
    wait_for(lambda: not live_pods(api, ns), timeout=20, what="the pod gone when the label changed")
    api.patch(f"/api/v1/nodes/{hdd}", {"metadata": {"labels": {"disk": "ssd"}}})
    wait_for(lambda: one_each(api, ns, [hdd]), timeout=20, what="a pod on the node that now matches")


def test_rolling_update_and_kubectl_rollout_status(api, apiserver, manager, ns, kubectl, tmp_path):
    def k(*args):
        result = subprocess.run([kubectl, "-s", apiserver.url, "-n", ns, "--cache-dir", str(tmp_path / "cache"),
                                 *args], capture_output=True, text=True, timeout=90)
        assert result.returncode == 0, result.stderr + result.stdout
        return result.stdout

    nodes = [unique("node") for _ in range(3)]
    for name in nodes:
        add_node(api, name)
    with FakeKubelet(api, ns):
        api.post(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("agent"))
        assert 'daemon set "agent" successfully rolled out' in k("rollout", "status", "daemonset/agent",
                                                                  "--timeout=60s")
        first = {p["metadata"]["labels"]["controller-revision-hash"] for p in live_pods(api, ns)}
        k("set", "image", "daemonset/agent", "main=busybox:1.36")
        assert "successfully rolled out" in k("rollout", "status", "daemonset/agent", "--timeout=60s")
    pods = live_pods(api, ns)
    assert sorted(target_node(p) for p in pods) == sorted(nodes)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"busybox:1.36"}
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods}.isdisjoint(first)
    status = api.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/agent").json()["status"]
    assert (status["desiredNumberScheduled"], status["updatedNumberScheduled"], status["numberAvailable"],
            status["observedGeneration"]) == (3, 3, 3, 2)


def all_bound(api, ns, count) -> list[dict] | None:
    pods = live_pods(api, ns)
    return pods if len(pods) == count and all(p["spec"].get("nodeName") for p in pods) else None


def test_the_default_scheduler_binds_each_pod_to_its_node(api, apiserver, manager, ns, tmp_path):
    from scheduler_harness import SchedulerProcess
    nodes = [unique("node") for _ in range(3)]
    for name in nodes:
        add_node(api, name)
    scheduler = SchedulerProcess(tmp_path, apiserver.url).start()
    try:
        api.post(f"/apis/apps/v1/namespaces/{ns}/daemonsets", daemonset("agent"))
        bound = wait_for(lambda: all_bound(api, ns, 3), timeout=30, what="3 pods bound")
    finally:
        scheduler.stop()
    # Three nodes alike: only the affinity on the node's name can have put
    # each pod on its own node.
    assert sorted(p["spec"]["nodeName"] for p in bound) == sorted(nodes)
    assert all(p["spec"]["nodeName"] == p["spec"]["affinity"]["nodeAffinity"]
               ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
               for p in bound)
