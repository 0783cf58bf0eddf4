"""End to end: a real API server, a real scheduler process, Node objects
registered through the API, and pods created as kubectl would create them."""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import requests

from scheduler_harness import per_node, wait_for


def test_pending_pods_get_bound_and_say_so(cluster):
    cluster.add_node("node1")
    cluster.add_node("node2")
    for i in range(3):
        cluster.create_pod(f"web-{i}", cpu="100m")
    scheduler = cluster.scheduler("--explain")
    placement = wait_for(lambda: cluster.all_bound(3), 20, what="3 pods bound")
    assert set(placement.values()) <= {"node1", "node2"}
    for name, node in placement.items():
        scheduled = wait_for(lambda: cluster.events(name, "Scheduled"), 10, what=f"a Scheduled event for {name}")
        assert scheduled[0]["message"] == f"Successfully assigned {cluster.namespace}/{name} to {node}"
        assert scheduled[0]["type"] == "Normal" and scheduled[0]["source"]["component"] == "default-scheduler"
        conditions = {c["type"]: c["status"] for c in cluster.pod(name)["status"]["conditions"]}
        assert conditions["PodScheduled"] == "True"
    # --explain printed each decision: the filters, the scores, the winner.
    log = scheduler.log()
    assert "default/web-0 → node1 (round robin among node1, node2)" in log
    assert "LeastAllocated×1" in log and "TaintToleration×3" in log and "◀" in log
    # SIGTERM: a clean stop, saying how much it did.
    assert scheduler.stop() == 0
    assert "stopped bound=3" in scheduler.log()


def test_identical_pods_spread_evenly_over_identical_nodes(cluster):
    for name in ("node1", "node2", "node3"):
        cluster.add_node(name, cpu="4", memory="8Gi")
    cluster.scheduler()
    for i in range(9):
        cluster.create_pod(f"web-{i}")             # no requests at all: the round robin spreads them
    placement = wait_for(lambda: cluster.all_bound(9), 20, what="9 pods bound")
    assert per_node(placement) == {"node1": 3, "node2": 3, "node3": 3}


def test_a_cordoned_node_gets_nothing(cluster):
    cluster.add_node("node1")
    cluster.add_node("node2", unschedulable=True)
    cluster.scheduler()
    for i in range(4):
        cluster.create_pod(f"web-{i}", cpu="100m")
    placement = wait_for(lambda: cluster.all_bound(4), 20, what="4 pods bound")
    assert per_node(placement) == {"node1": 4}


def test_a_pod_too_big_for_every_node_waits_until_a_node_fits_it(cluster):
    cluster.add_node("node1", cpu="1")
    cluster.add_node("node2", cpu="1")
    cluster.add_node("node3", cpu="8", unschedulable=True)
    cluster.scheduler()
    cluster.create_pod("big", cpu="2")
    message = "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."

    def unschedulable_condition():
        conditions = cluster.pod("big")["status"].get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"), None)
    condition = wait_for(unschedulable_condition, 20, what="PodScheduled=False on the big pod")
    assert condition["reason"] == "Unschedulable" and condition["message"] == message
    [event] = wait_for(lambda: cluster.events("big", "FailedScheduling"), 10, what="a FailedScheduling event")
    assert event["type"] == "Warning" and event["message"] == message
    assert cluster.pod("big")["spec"].get("nodeName") is None

    # A node that fits arrives: the pod is tried again at once, no polling interval to wait out.
    cluster.add_node("node4", cpu="4")
    wait_for(lambda: cluster.pod("big")["spec"].get("nodeName") == "node4", 10, what="big bound to node4")
    conditions = {c["type"]: c for c in cluster.pod("big")["status"]["conditions"]}
    assert conditions["PodScheduled"]["status"] == "True"


def test_fifty_pods_at_once_fill_nodes_with_room_for_exactly_fifty(cluster):
    for i in range(5):
        cluster.add_node(f"node{i}", cpu="1")           # 1000m each: ten 100m pods apiece
    cluster.scheduler()
    with ThreadPoolExecutor(10) as pool:
        list(pool.map(lambda i: cluster.create_pod(f"web-{i:02}", cpu="100m"), range(50)))
    placement = wait_for(lambda: cluster.all_bound(50), 30, what="50 pods bound")
    # Ten each, and no more: every node's requests within its allocatable.
    assert per_node(placement) == {f"node{i}": 10 for i in range(5)}
    # The 51st finds every node full, counted from the bound pods.
    cluster.create_pod("one-too-many", cpu="100m")
    [event] = wait_for(lambda: cluster.events("one-too-many", "FailedScheduling"), 10, what="FailedScheduling")
    assert event["message"] == "0/5 nodes are available: 5 Insufficient cpu."


def test_killed_mid_burst_and_restarted_every_pod_is_bound_exactly_once(cluster):
    for i in range(4):
        cluster.add_node(f"node{i}", cpu="1500m")      # room for exactly 120 pods of 50m
    assignments: dict[str, list[str]] = {}             # pod -> every nodeName the watch ever showed

    def watch_pods():
        url = f"{cluster.server.url}/api/v1/namespaces/{cluster.namespace}/pods?watch=true"
        try:
            with requests.get(url, stream=True, timeout=(5, 60)) as response:
                for line in response.iter_lines():
                    if line:
                        pod = json.loads(line)["object"]
                        node = pod["spec"].get("nodeName")
                        seen = assignments.setdefault(pod["metadata"]["name"], [])
                        if node and node not in seen:
                            seen.append(node)
        except requests.RequestException:
            pass                                       # the server stopped at the end of the test
    threading.Thread(target=watch_pods, daemon=True).start()

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(lambda i: cluster.create_pod(f"web-{i:03}", cpu="50m"), range(120)))
    first = cluster.scheduler("--bind-workers", "1", wait=False)      # one binding at a time: a wider window
    wait_for(lambda: any(cluster.placement().values()), 20, interval=0.005, what="the first binding")
    first.kill()                                       # SIGKILL, with bindings in flight
    bound_before = sum(1 for node in cluster.placement().values() if node)
    cluster.scheduler()                                # a fresh process: it knows only what the API says
    placement = wait_for(lambda: cluster.all_bound(120), 30, what="all 120 pods bound after the restart")
    assert bound_before < 120, "the burst ended before the kill; the test proved nothing"
    assert per_node(placement) == {f"node{i}": 30 for i in range(4)}      # nothing over-committed
    wait_for(lambda: len(assignments) == 120 and all(assignments.values()), 10, what="the watch to see every bind")
    assert {pod: nodes for pod, nodes in assignments.items() if len(nodes) != 1} == {}


def test_a_pod_naming_another_scheduler_is_left_alone(cluster):
    cluster.add_node("node1")
    cluster.create_pod("theirs", cpu="100m", schedulerName="my-scheduler")
    cluster.create_pod("ours", cpu="100m")
    cluster.scheduler()
    wait_for(lambda: cluster.pod("ours")["spec"].get("nodeName"), 20, what="our pod bound")
    assert not cluster.pod("theirs")["spec"].get("nodeName")
    assert cluster.events("theirs") == []
    # The second scheduler, the same program under another name, takes it.
    cluster.scheduler("--scheduler-name", "my-scheduler")
    wait_for(lambda: cluster.pod("theirs")["spec"].get("nodeName") == "node1", 20, what="theirs bound")
    [event] = wait_for(lambda: cluster.events("theirs", "Scheduled"), 10, what="their Scheduled event")
    assert event["source"]["component"] == "my-scheduler"


def test_a_binding_that_lost_a_race_is_dropped_without_harm(cluster):
    """Drive one Scheduler in this process by hand, so that the pod can be
    bound elsewhere, deleted, or deleted and re-created between the decision
    and the binding, every time."""
    from common.client.client import APIClient
    from common.client.kubeconfig import Connection
    from pod_info import PodInfo
    from scheduler import Scheduler

    cluster.add_node("node1", cpu="1")
    cluster.add_node("node2", cpu="1")
    scheduler = Scheduler(APIClient(Connection(cluster.server.url)))
    assert scheduler.start(sync_timeout=10)
    try:
        def decided(name):
            """The pod, popped and assumed on node1, its binding not sent yet."""
            cluster.create_pod(name, cpu="600m")
            wait_for(lambda: scheduler.pods.get(cluster.namespace, name), 10, what=f"{name} in the informer")
            queued = scheduler.queue.pop(timeout=10)
            assert queued.key == f"{cluster.namespace}/{name}"
            info = PodInfo.of(scheduler.pods.get(cluster.namespace, name))
            scheduler.cache.assume(info, "node1")
            return queued, info

        def room_on(node):
            return scheduler.cache.node(node).requested["cpu"]

        # 1. Bound by someone else meanwhile: the API server says 409; the
        #    watch shows where it really went.
        queued, info = decided("raced")
        response = cluster.api.post(f"/api/v1/namespaces/{cluster.namespace}/pods/raced/binding",
                                    {"target": {"kind": "Node", "name": "node2"}})
        assert response.status_code == 201, response.text
        scheduler.bind(queued, info, "node1")
        wait_for(lambda: room_on("node1") == 0 and room_on("node2") == 600, 10, what="the cache to follow the watch")
        assert cluster.pod("raced")["spec"]["nodeName"] == "node2"

        # 2. Deleted meanwhile: 404, and the room it held is free again.
        queued, info = decided("gone")
        assert cluster.api.delete(f"/api/v1/namespaces/{cluster.namespace}/pods/gone").status_code == 200
        scheduler.bind(queued, info, "node1")
        assert room_on("node1") == 0

        # 3. Deleted and re-created under the same name: the binding names the
        #    old pod's uid, so it cannot bind the new one by mistake (409).
        queued, info = decided("again")
        assert cluster.api.delete(f"/api/v1/namespaces/{cluster.namespace}/pods/again").status_code == 200
        cluster.create_pod("again", cpu="600m")
        scheduler.bind(queued, info, "node1")
        assert not cluster.pod("again")["spec"].get("nodeName")
        assert room_on("node1") == 0
        assert scheduler.bound == 0

        # The scheduler carries on as if nothing happened: the new "again" is placed.
        threading.Thread(target=scheduler.run, daemon=True).start()
        wait_for(lambda: cluster.pod("again")["spec"].get("nodeName") == "node1", 10, what="the new pod bound")
    finally:
        scheduler.stop()
