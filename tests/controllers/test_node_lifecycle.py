"""The node lifecycle controller: its decisions as tables on a fixed clock,
then end to end against a real API server and controller_manager.py.

No kubelet: a NodeHeartbeat thread here renews the node's Lease and Ready
heartbeat as a kubelet would, and stopping it is how a node "dies"."""
from __future__ import annotations

import threading
import time

import pytest

from controllers_harness import ControllerManager, replicaset, unique, wait_for
from node_lifecycle import merged_taints, silent_node_status, wanted_taints
from scheduler_harness import node_object
from taints import NOT_READY, UNREACHABLE, UNSCHEDULABLE, eviction_time, with_default_tolerations

NOW = 1_800_000_000.0
GRACE = 40


def at(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def node(ready="True", heartbeat_ago=None, created_ago=600, unschedulable=False, taints=None, pressure=None):
    conditions = []
    if ready is not None:
        ready_condition = {"type": "Ready", "status": ready, "reason": "KubeletReady", "lastTransitionTime": at(900)}
        if heartbeat_ago is not None:
            ready_condition["lastHeartbeatTime"] = at(heartbeat_ago)
        conditions.append(ready_condition)
    if pressure:
        conditions.append({"type": pressure, "status": "True"})
    spec = {"unschedulable": True} if unschedulable else {}
    if taints:
        spec["taints"] = taints
    return {"metadata": {"name": "node1", "creationTimestamp": at(created_ago)}, "spec": spec,
            "status": {"conditions": conditions}}


def lease(renewed_ago):
    return {"spec": {"renewTime": at(renewed_ago).replace("Z", ".250000Z")}}


# ---------------------------------------------------------------- is it silent?

@pytest.mark.parametrize("the_node, the_lease, marked, why", [
    (node(heartbeat_ago=5), None, False, "a recent Ready heartbeat"),
    (node(heartbeat_ago=300), lease(5), False, "an old condition, but the Lease was renewed"),
    (node(heartbeat_ago=5), lease(300), False, "an old Lease, but a recent condition"),
    (node(heartbeat_ago=GRACE), lease(GRACE), False, "exactly the grace period: not yet"),
    (node(heartbeat_ago=300), lease(GRACE + 1), True, "both older than the grace period"),
    (node(heartbeat_ago=None), lease(300), True, "only a Lease, and it is old"),
    (node(ready="False", heartbeat_ago=300), None, True, "a NotReady node that went silent too"),
    (node(ready=None, created_ago=10), None, False, "just registered: its grace runs from creation"),
    (node(ready=None, created_ago=300), None, True, "registered long ago and never reported"),
])
def test_a_node_is_unknown_after_the_grace_period(the_node, the_lease, marked, why):
    status = silent_node_status(the_node, the_lease, NOW, GRACE)
    assert (status is not None) is marked, why


def test_a_silent_node_says_why_and_keeps_its_last_heartbeat():
    status = silent_node_status(node(heartbeat_ago=300, pressure="MemoryPressure"), None, NOW, GRACE)
    ready, memory = status["conditions"]
    assert ready == {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                     "message": "Kubelet stopped posting node status.",
                     "lastHeartbeatTime": at(300), "lastTransitionTime": at(0)}
    assert (memory["status"], memory["reason"]) == ("Unknown", "NodeStatusUnknown")
    # Marked already: nothing more to write.
    assert silent_node_status({**node(), "status": status}, None, NOW, GRACE) is None


def test_a_node_that_never_reported_says_so():
    status = silent_node_status(node(ready=None, created_ago=300), None, NOW, GRACE)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == \
        ("Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")


# ---------------------------------------------------------------- which taints

@pytest.mark.parametrize("the_node, taints", [
    (node("True"), set()),
    (node("False"), {(NOT_READY, "NoExecute"), (NOT_READY, "NoSchedule")}),
    (node("Unknown"), {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")}),
    (node("True", unschedulable=True), {(UNSCHEDULABLE, "NoSchedule")}),
    (node("True", pressure="DiskPressure"), {("node.kubernetes.io/disk-pressure", "NoSchedule")}),
    (node(ready=None), {(NOT_READY, "NoSchedule")}),        # registered, not yet reported
])
def test_taints_follow_ready_and_cordon(the_node, taints):
    assert {(t["key"], t["effect"]) for t in wanted_taints(the_node)} == taints


def test_taints_are_merged_keeping_peoples_and_their_times():
    mine = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    old_unreachable = {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": at(100)}
    stale = {"key": NOT_READY, "effect": "NoSchedule"}
    wanted = [{"key": UNREACHABLE, "effect": "NoExecute"}, {"key": UNREACHABLE, "effect": "NoSchedule"}]
    merged = merged_taints([mine, old_unreachable, stale], wanted, NOW)
    assert merged == [mine, old_unreachable, {"key": UNREACHABLE, "effect": "NoSchedule"}]
    # The node is back: ours go, the person's stays.
    assert merged_taints(merged, [], NOW) == [mine]
    # A new NoExecute taint is stamped: tolerationSeconds count from it.
    assert merged_taints([], wanted[:1], NOW) == [{**wanted[0], "timeAdded": at(0)}]


# ---------------------------------------------------------------- when a pod must leave

def taint(key, added_ago=0, effect="NoExecute", value=None):
    result = {"key": key, "effect": effect, "timeAdded": at(added_ago)}
    if value:
        result["value"] = value
    return result


def toleration(key, seconds=None, operator="Exists", effect="NoExecute", value=None):
    result = {"key": key, "operator": operator, "effect": effect}
    if seconds is not None:
        result["tolerationSeconds"] = seconds
    if value is not None:
        result["value"] = value
    return result


@pytest.mark.parametrize("tolerations, taints, leave_at, why", [
    ([], [], None, "no taints"),
    ([], [taint("dedicated", effect="NoSchedule")], None, "NoSchedule never evicts"),
    ([], [taint(UNREACHABLE)], NOW, "not tolerated: at once"),
    ([toleration(UNREACHABLE)], [taint(UNREACHABLE)], None, "tolerated without seconds: forever"),
    ([toleration(UNREACHABLE, 300)], [taint(UNREACHABLE, 100)], NOW + 200, "300 s from when the taint came"),
    ([toleration(UNREACHABLE, 30)], [taint(UNREACHABLE, 100)], NOW, "ran out already"),
    ([toleration(UNREACHABLE, 0)], [taint(UNREACHABLE)], NOW, "0 s: at once"),
    ([toleration(UNREACHABLE, 300), toleration("", 60, effect="")], [taint(UNREACHABLE)], NOW + 60,
     "two tolerations match: the shorter counts"),
    ([toleration(UNREACHABLE, 300), toleration(NOT_READY, 60)], [taint(UNREACHABLE, 10), taint(NOT_READY, 0)],
     NOW + 60, "two taints: the earlier deadline"),
    ([toleration(UNREACHABLE)], [taint(UNREACHABLE), taint("dedicated", value="db")], NOW,
     "one of two taints not tolerated"),
    ([toleration("dedicated", operator="Equal", value="db")], [taint("dedicated", value="db")], None,
     "Equal with the value"),
    ([toleration("dedicated", operator="Equal", value="web")], [taint("dedicated", value="db")], NOW,
     "Equal with another value"),
    ([toleration(UNREACHABLE, 300, effect="NoSchedule")], [taint(UNREACHABLE)], NOW, "a NoSchedule toleration"),
])
def test_when_a_pod_leaves_a_tainted_node(tolerations, taints, leave_at, why):
    assert eviction_time(tolerations, taints, NOW) == leave_at, why


@pytest.mark.parametrize("tolerations, added", [
    ([], {NOT_READY, UNREACHABLE}),
    ([toleration(UNREACHABLE, 5)], {NOT_READY}),                 # it chose for itself
    ([toleration(NOT_READY, effect="")], {UNREACHABLE}),        # every effect covers NoExecute
    ([toleration(NOT_READY, effect="NoSchedule")], {NOT_READY, UNREACHABLE}),
    ([{"operator": "Exists"}], set()),                          # tolerates everything
])
def test_default_tolerations_for_pods_that_say_nothing(tolerations, added):
    result = with_default_tolerations(tolerations, 300)
    extra = result[len(tolerations):]
    assert result[:len(tolerations)] == tolerations
    assert {t["key"] for t in extra} == added
    assert all(t["tolerationSeconds"] == 300 and t["effect"] == "NoExecute" for t in extra)


# ---------------------------------------------------------------- end to end

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def micro_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


class NodeHeartbeat:
    """What a kubelet writes every second: its Lease's renewTime and its
    Ready condition (with `ready` as the status). Stop it and the node
    falls silent, as when its machine loses power."""

    def __init__(self, api, name: str, ready: str = "True"):
        self.api, self.name, self.ready = api, name, ready
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        current = self.api.get(f"{LEASES}/{self.name}")
        if current.status_code == 404:
            body = {"metadata": {"name": self.name}, "spec": {"holderIdentity": self.name,
                                                                "leaseDurationSeconds": 40, "renewTime": micro_now()}}
            assert self.api.post(LEASES, body).status_code == 201
        else:
            body = current.json()
            body["spec"]["renewTime"] = micro_now()
            self.api.put(f"{LEASES}/{self.name}", body)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        condition = {"type": "Ready", "status": self.ready, "reason": "KubeletReady" if self.ready == "True"
                     else "KubeletNotReady", "lastHeartbeatTime": now, "lastTransitionTime": now}
        self.api.patch(f"/api/v1/nodes/{self.name}/status", {"status": {"conditions": [condition]}})

    def start(self) -> "NodeHeartbeat":
        self.beat()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(1):
            try:
                self.beat()
            except Exception:      # the server stopping under us at the end of a test
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)


def get_node(api, name):
    return api.get(f"/api/v1/nodes/{name}").json()


def ready_of(api, name):
    return next(c for c in get_node(api, name)["status"]["conditions"] if c["type"] == "Ready")


def taints_of(api, name):
    return {(t["key"], t["effect"]) for t in get_node(api, name)["spec"].get("taints") or []}


def live_pods(api, ns, app):
    items = api.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def gone_or_going(api, ns, name):
    response = api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return response.status_code == 404 or bool(response.json()["metadata"].get("deletionTimestamp"))


def events_about(api, ns, name, reason):
    items = api.get(f"/api/v1/namespaces/{ns}/events").json()["items"]
    return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def bind_all(api, ns, app, node_name, count):
    wait_for(lambda: len(live_pods(api, ns, app)) == count, timeout=20, what=f"{count} {app} pods")
    pods = live_pods(api, ns, app)
    for pod in pods:
        response = api.post(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/binding",
                            {"target": {"kind": "Node", "name": node_name}})
        assert response.status_code == 201, response.text
    return {p["metadata"]["name"] for p in pods}


def with_tolerations(rs: dict, *tolerations) -> dict:
    rs["spec"]["template"]["spec"]["tolerations"] = list(tolerations)
    return rs


@pytest.fixture
def namespace(api):
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def start_manager(apiserver, tmp_path, *flags):
    return ControllerManager(apiserver.url, tmp_path, "--controllers", "replicaset,nodelifecycle",
                             "--node-monitor-grace-period", "4", "--node-monitor-period", "1", *flags).start()


def test_a_silent_node_goes_unknown_is_tainted_and_its_pods_move(api, apiserver, tmp_path, namespace):
    name = unique("node")
    assert api.post("/api/v1/nodes", node_object(name)).status_code == 201
    heart = NodeHeartbeat(api, name).start()
    manager = start_manager(apiserver, tmp_path)
    try:
        api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets",
                 with_tolerations(replicaset("web", 2), toleration(UNREACHABLE, 2)))
        api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets",
                 with_tolerations(replicaset("patient", 1), toleration(UNREACHABLE)))
        api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", replicaset("plain", 1))
        web = bind_all(api, namespace, "web", name, 2)
        patient = bind_all(api, namespace, "patient", name, 1)
        plain = bind_all(api, namespace, "plain", name, 1)
        assert ready_of(api, name)["status"] == "True" and not taints_of(api, name)

        heart.stop()                                  # the machine loses power
        wait_for(lambda: ready_of(api, name)["status"] == "Unknown", timeout=30, what="Ready=Unknown")
        ready = ready_of(api, name)
        assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
        wait_for(lambda: taints_of(api, name) == {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")},
                 timeout=20, what="the unreachable taints")
        no_execute = next(t for t in get_node(api, name)["spec"]["taints"] if t["effect"] == "NoExecute")
        assert no_execute.get("timeAdded")
        wait_for(lambda: events_about(api, "default", name, "NodeNotReady"), timeout=20, what="a NodeNotReady event")

        # Their 2 s of tolerance run out: evicted, and replaced by the ReplicaSet.
        wait_for(lambda: all(gone_or_going(api, namespace, pod) for pod in web), timeout=30,
                 what="the web pods evicted")
        wait_for(lambda: len(live_pods(api, namespace, "web")) == 2 and
                 not web & {p["metadata"]["name"] for p in live_pods(api, namespace, "web")},
                 timeout=20, what="two replacement web pods")
        evicted = sorted(web)[0]
        event = wait_for(lambda: events_about(api, namespace, evicted, "TaintManagerEviction"), timeout=20,
                         what="a TaintManagerEviction event")[0]
        assert event["message"] == f"Marking for deletion Pod {namespace}/{evicted}"
        # The pod that tolerates unreachable nodes forever is still there, and
        # so is the one that said nothing: it has the default 300 s.
        assert {p["metadata"]["name"] for p in live_pods(api, namespace, "patient")} == patient
        assert {p["metadata"]["name"] for p in live_pods(api, namespace, "plain")} == plain

        heart.start()                                 # power back: the kubelet writes again
        wait_for(lambda: not taints_of(api, name), timeout=30, what="the taints removed")
        assert ready_of(api, name)["status"] == "True"
        wait_for(lambda: events_about(api, "default", name, "NodeReady"), timeout=20, what="a NodeReady event")
    finally:
        heart.stop()
        manager.stop()


def test_not_ready_cordoned_and_hand_tainted_nodes(api, apiserver, tmp_path, namespace):
    name = unique("node")
    assert api.post("/api/v1/nodes", node_object(name)).status_code == 201
    heart = NodeHeartbeat(api, name, ready="False").start()
    manager = start_manager(apiserver, tmp_path, "--default-toleration-seconds", "1")
    try:
        wait_for(lambda: taints_of(api, name) == {(NOT_READY, "NoExecute"), (NOT_READY, "NoSchedule")},
                 timeout=30, what="the not-ready taints")
        assert ready_of(api, name)["status"] == "False"          # heartbeats fresh: not marked Unknown
        # A pod that says nothing gets --default-toleration-seconds, then goes.
        api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", replicaset("plain", 1))
        plain = bind_all(api, namespace, "plain", name, 1)
        wait_for(lambda: all(gone_or_going(api, namespace, pod) for pod in plain), timeout=30,
                 what="the plain pod evicted after the default toleration")

        # Ready again and cordoned: only the cordon's taint.
        heart.ready = "True"
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": True}})
        wait_for(lambda: taints_of(api, name) == {(UNSCHEDULABLE, "NoSchedule")}, timeout=30,
                 what="only the unschedulable taint")

        # A person's NoExecute taint: a pod without a toleration for it goes at once,
        # and the taint stays when the controller tidies its own.
        dedicated = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": False, "taints": [
            {"key": UNSCHEDULABLE, "effect": "NoSchedule"}, dedicated]}})
        api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", replicaset("other", 1))
        other = bind_all(api, namespace, "other", name, 1)
        wait_for(lambda: all(gone_or_going(api, namespace, pod) for pod in other), timeout=30,
                 what="the pod without a toleration for dedicated=db evicted")
        wait_for(lambda: taints_of(api, name) == {("dedicated", "NoExecute")}, timeout=30,
                 what="the cordon's taint gone, the person's kept")
    finally:
        heart.stop()
        manager.stop()
