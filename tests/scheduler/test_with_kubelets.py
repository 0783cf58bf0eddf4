"""The scheduler with real kubelets: the whole path of chapter 03.

A pod created with no node is bound by the scheduler process, and the
kubelet of the chosen node, which watches for exactly that, runs it on
Docker. Real API server, real scheduler, two real kubelets, real kubectl.
"""
from __future__ import annotations

from harness import make_kubelet  # noqa: F401 (a fixture)
from scheduler_harness import per_node, wait_for
from test_kubectl import Kubectl


def _create(cluster, name: str, cpu: str) -> None:
    """A pod that keeps running (sleep), with a cpu request, and no node."""
    pod = {"metadata": {"name": name}, "spec": {"terminationGracePeriodSeconds": 1, "containers": [
        {"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"],
         "resources": {"requests": {"cpu": cpu}}}]}}
    response = cluster.api.post(f"/api/v1/namespaces/{cluster.namespace}/pods", pod)
    assert response.status_code == 201, response.text


def _running_on(cluster, names: list[str]) -> dict[str, str] | None:
    pods = {p["metadata"]["name"]: p for p in cluster.pods()}
    if all(pods.get(n, {}).get("status", {}).get("phase") == "Running" for n in names):
        return {n: pods[n]["spec"]["nodeName"] for n in names}
    return None


def test_pending_pods_are_bound_spread_and_run_by_the_chosen_kubelets(cluster, make_kubelet, kubectl, tmp_path):
    kubelets = [make_kubelet("--apiserver", cluster.server.url, "--node-status-update-frequency", "1")
                for _ in range(2)]
    nodes = {k.node_name: k for k in kubelets}
    wait_for(lambda: {n["metadata"]["name"] for n in cluster.api.get("/api/v1/nodes").json()["items"]} == set(nodes),
             30, what="both kubelets to register")
    cluster.scheduler()
    names = [f"web-{i}" for i in range(4)]
    for name in names:
        _create(cluster, name, "100m")
    placement = wait_for(lambda: _running_on(cluster, names), 90, what="4 pods Running")
    assert sorted(per_node(placement).values()) == [2, 2]              # identical pods on identical nodes
    for name, node in placement.items():                               # each runs where it was bound, only there
        assert len(nodes[node].containers(name, all=False)) == 2       # pause + app
        other = next(k for k in kubelets if k.node_name != node)
        assert other.containers(name) == []

    # kubectl cordon: the scheduler leaves that node alone from now on.
    run = Kubectl(kubectl, cluster.server.url, cluster.namespace, tmp_path)
    cordoned, open_node = sorted(nodes)
    assert "cordoned" in run("cordon", cordoned)
    _create(cluster, "after-cordon", "100m")
    assert wait_for(lambda: _running_on(cluster, ["after-cordon"]), 60, what="after-cordon Running") == \
        {"after-cordon": open_node}

    # Too big for either machine: Pending, and kubectl describe says why.
    _create(cluster, "too-big", "1000")
    wait_for(lambda: cluster.events("too-big", "FailedScheduling"), 20, what="a FailedScheduling event")
    described = run("describe", "pod", "too-big")
    assert "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable." in described
    assert "Warning  FailedScheduling" in described
