"""A kubelet with --apiserver registers its Node and keeps it Ready, and
waits out an API server that is not there yet (real processes, real HTTP)."""
from __future__ import annotations

from apiserver_harness import APIServer, Client
from harness import make_kubelet  # noqa: F401 (a fixture)
from polling import free_port, wait_for
from test_kubectl import Kubectl


def _node(api: Client, name: str):
    response = api.get(f"/api/v1/nodes/{name}")
    return response.json() if response.status_code == 200 else None


def _ready(node: dict) -> dict:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def test_the_node_registers_and_its_heartbeat_stays_fresh(tmp_path, make_kubelet):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        kubelet = make_kubelet("--apiserver", server.url, "--node-status-update-frequency", "0.3")
        node = wait_for(lambda: _node(api, kubelet.node_name), timeout=30, what="the node to register")
        assert _ready(node)["status"] == "True"
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.port
        assert int(node["status"]["capacity"]["pods"]) == 110
        first = _ready(node)["lastHeartbeatTime"]
        wait_for(lambda: _ready(_node(api, kubelet.node_name))["lastHeartbeatTime"] > first, timeout=10,
                 what="a newer heartbeat")
        table = api.get("/api/v1/nodes", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
        row = next(r for r in table["rows"] if r["cells"][0] == kubelet.node_name)
        assert row["cells"][1] == "Ready"                 # what `kubectl get nodes` shows
    finally:
        server.stop()


def _lease(api: Client, name: str):
    response = api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}")
    return response.json() if response.status_code == 200 else None


def test_the_node_lease_is_created_owned_by_the_node_and_renewed(tmp_path, make_kubelet, kubectl):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        kubelet = make_kubelet("--apiserver", server.url, "--node-status-update-frequency", "0.3")
        lease = wait_for(lambda: _lease(api, kubelet.node_name), timeout=30, what="the node's Lease")
        node = _node(api, kubelet.node_name)
        assert lease["spec"]["holderIdentity"] == kubelet.node_name
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": kubelet.node_name, "uid": node["metadata"]["uid"]}]
        first = lease["spec"]["renewTime"]
        assert first.endswith("Z") and len(first) == len("2026-11-22T08:36:33.123456Z")   # a MicroTime
        wait_for(lambda: _lease(api, kubelet.node_name)["spec"]["renewTime"] > first, timeout=10,
                 what="a later renewTime")
        described = Kubectl(kubectl, server.url, "default", tmp_path).run("describe", "node", kubelet.node_name)
        assert described.returncode == 0, described.stderr
        assert f"HolderIdentity:  {kubelet.node_name}" in described.stdout
        assert "Failed to get lease" not in described.stdout + described.stderr
    finally:
        server.stop()


def test_a_kubelet_started_before_the_api_server_registers_once_it_answers(tmp_path, make_kubelet):
    port = free_port()
    kubelet = make_kubelet("--apiserver", f"http://127.0.0.1:{port}", "--node-status-update-frequency", "0.3")
    kubelet.wait_syncs(2)                                 # running its (empty) node meanwhile
    server = APIServer(tmp_path / "data", port=port).start()
    try:
        wait_for(lambda: _node(Client(server.url), kubelet.node_name), timeout=30, what="late registration")
    finally:
        server.stop()


def test_a_pod_bound_to_the_node_runs_reports_status_and_goes_when_deleted(tmp_path, make_kubelet):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        kubelet = make_kubelet("--apiserver", server.url, "--node-status-update-frequency", "0.5")
        wait_for(lambda: _node(api, kubelet.node_name), timeout=30, what="the node to register")
        pod = {"metadata": {"name": "bound"},
               "spec": {"nodeName": kubelet.node_name, "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}]}}
        assert api.post("/api/v1/namespaces/default/pods", pod).status_code == 201
        path = "/api/v1/namespaces/default/pods/bound"

        def running():
            status = api.get(path).json().get("status", {})
            return status if status.get("phase") == "Running" and status.get("podIP") else None
        status = wait_for(running, timeout=60, what="the pod Running with an IP, as reported by the kubelet")
        assert status["containerStatuses"][0]["ready"] is True
        assert len(kubelet.containers("bound", all=False)) == 2          # pause and app
        assert api.delete(path).status_code == 200                        # graceful: the kubelet finishes it
        wait_for(lambda: api.get(path).status_code == 404, timeout=60, what="the kubelet to delete the pod")
        assert kubelet.containers("bound", all=False) == []
    finally:
        server.stop()
