"""metrics.k8s.io without Docker: discovery, the PodMetrics and NodeMetrics the
API server makes from a kubelet's Summary (a small HTTP server plays the
kubelet, with figures the test chooses), errors, and who may read them.
The real kubelet and kubectl are in test_top.py."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apiserver_harness import make_certs, pod, unique
from polling import free_port
from test_gauntlet import SecureServer, as_user

METRICS = "/apis/metrics.k8s.io/v1beta1"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AT = "2026-11-26T12:00:00Z"


def summary(node: str, pods: list[tuple[dict, dict[str, tuple[int, int]]]]) -> dict:
    """A Summary: pods as (pod object, {container: (nanocores, working set bytes)})."""
    def stats(cores: int, memory: int) -> dict:
        return {"cpu": {"time": AT, "usageNanoCores": cores, "usageCoreNanoSeconds": cores * 60},
                "memory": {"time": AT, "workingSetBytes": memory, "usageBytes": memory}}
    return {"node": {"nodeName": node, "startTime": AT, **stats(1_500_000_000, 3 << 30)},
            "pods": [{"podRef": {"name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"],
                                 "uid": p["metadata"]["uid"]}, "startTime": AT,
                      "containers": [{"name": name, "startTime": AT, **stats(*figures)}
                                     for name, figures in containers.items()]}
                     for p, containers in pods]}


class FakeKubelet:
    """Answers GET /stats/summary with whatever .summary holds; counts the calls."""

    def __init__(self):
        self.summary: dict = {"node": {}, "pods": []}
        self.calls = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.calls += 1
                body = json.dumps(fake.summary).encode() if self.path == "/stats/summary" else b"{}"
                self.send_response(200 if self.path == "/stats/summary" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def kubelet():
    fake = FakeKubelet()
    yield fake
    fake.server.shutdown()


def register_node(api, port: int, labels: dict | None = None) -> str:
    name = unique("node")
    node = {"metadata": {"name": name, **({"labels": labels} if labels else {})},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}
    assert api.post("/api/v1/nodes", node).status_code == 201
    return name


def scheduled_pod(api, namespace: str, node: str, name: str, labels: dict | None = None) -> dict:
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", pod(name, labels=labels, nodeName=node))
    assert created.status_code == 201, created.text
    return created.json()


def test_discovery_lists_the_metrics_group_in_both_forms(api):
    legacy = api.get("/apis").json()
    group = next(g for g in legacy["groups"] if g["name"] == "metrics.k8s.io")
    assert group["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
    aggregated = api.get("/apis", headers={"Accept": AGGREGATED}).json()
    (entry,) = [g for g in aggregated["items"] if g["metadata"].get("name") == "metrics.k8s.io"]
    resources = {r["resource"]: r for r in entry["versions"][0]["resources"]}
    assert resources["pods"]["scope"] == "Namespaced" and resources["nodes"]["scope"] == "Cluster"
    assert resources["pods"]["responseKind"]["kind"] == "PodMetrics" and resources["pods"]["verbs"] == ["get", "list"]
    listed = api.get(METRICS).json()
    assert {(r["name"], r["kind"], r["namespaced"]) for r in listed["resources"]} == {
        ("pods", "PodMetrics", True), ("nodes", "NodeMetrics", False)}
    # No schema is published for it (Kubernetes' comes from metrics-server): the OpenAPI documents leave it out.
    assert "apis/metrics.k8s.io/v1beta1" not in api.get("/openapi/v3").json()["paths"]
    assert api.get("/openapi/v2").status_code == 200


def test_pod_and_node_metrics_are_the_kubelets_figures_as_quantities(api, namespace, kubelet):
    node = register_node(api, kubelet.port, {"zone": "a"})
    web = scheduled_pod(api, namespace, node, "web", {"app": "web"})
    db = scheduled_pod(api, namespace, node, "db", {"app": "db"})
    scheduled_pod(api, namespace, node, "starting")          # no figures yet: left out
    kubelet.summary = summary(node, [(web, {"app": (250_000_000, 10 << 20), "side": (1_234_567, 1000)}),
                                     (db, {"db": (2_000_000_000, 1 << 30)})])
    listed = api.get(f"{METRICS}/namespaces/{namespace}/pods").json()
    assert listed["kind"] == "PodMetricsList", listed["message"]
    assert [m["metadata"]["name"] for m in listed["items"]] == ["db", "web"]
    one = api.get(f"{METRICS}/namespaces/{namespace}/pods/web").json()
    assert one["kind"] == "PodMetrics" and one["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert one["metadata"]["namespace"] == namespace and one["metadata"]["labels"] == {"app": "web"}
    assert one["timestamp"] == AT and one["window"] == "10s"
    assert one["containers"] == [{"name": "app", "usage": {"cpu": "250m", "memory": "10Mi"}},
                                 {"name": "side", "usage": {"cpu": "1234567n", "memory": "1k"}}]  # as Go writes it
    selected = api.get(f"{METRICS}/namespaces/{namespace}/pods", params={"labelSelector": "app=db"}).json()
    assert [(m["metadata"]["name"], m["containers"][0]["usage"]) for m in selected["items"]] == [
        ("db", {"cpu": "2", "memory": "1Gi"})]
    assert any(m["metadata"]["name"] == "web" for m in api.get(f"{METRICS}/pods").json()["items"])
    missing = api.get(f"{METRICS}/namespaces/{namespace}/pods/starting")
    assert missing.status_code == 404
    assert missing.json()["message"] == f'podmetrics.metrics.k8s.io "{namespace}/starting" not found'
    node_metrics = api.get(f"{METRICS}/nodes/{node}").json()
    assert node_metrics["kind"] == "NodeMetrics" and node_metrics["usage"] == {"cpu": "1500m", "memory": "3Gi"}
    assert node_metrics["metadata"]["labels"] == {"zone": "a"}
    by_label = api.get(f"{METRICS}/nodes", params={"labelSelector": "zone=a"}).json()
    assert by_label["kind"] == "NodeMetricsList" and [m["metadata"]["name"] for m in by_label["items"]] == [node]
    assert api.get(f"{METRICS}/nodes/{unique('nope')}").status_code == 404
    for path in (f"{METRICS}/namespaces/{namespace}/pods/web", f"{METRICS}/nodes/{node}"):
        assert api.delete(path).status_code == 405
    api.delete(f"/api/v1/nodes/{node}")


def test_one_kubelet_per_node_is_asked_once_per_request(api, namespace, kubelet):
    node = register_node(api, kubelet.port)
    pods = [scheduled_pod(api, namespace, node, f"p{i}") for i in range(5)]
    kubelet.summary = summary(node, [(p, {"app": (1, 1)}) for p in pods])
    before = kubelet.calls
    assert len(api.get(f"{METRICS}/namespaces/{namespace}/pods").json()["items"]) == 5
    assert kubelet.calls == before + 1
    api.delete(f"/api/v1/nodes/{node}")


def test_a_kubelet_that_cannot_be_reached_is_named_in_the_error(api, namespace):
    node = register_node(api, free_port())        # nothing listens there
    scheduled_pod(api, namespace, node, "lost")
    for path in (f"{METRICS}/namespaces/{namespace}/pods", f"{METRICS}/namespaces/{namespace}/pods/lost",
                 f"{METRICS}/nodes/{node}"):
        answer = api.get(path)
        assert answer.status_code == 503, (path, answer.text)
        assert answer.json()["message"].startswith(f"no metrics from the kubelet of node {node}: cannot reach it")
    api.delete(f"/api/v1/nodes/{node}")


def test_pods_nobody_scheduled_have_no_metrics_and_need_no_kubelet(api, namespace):
    api.post(f"/api/v1/namespaces/{namespace}/pods", pod("pending"))
    assert api.get(f"{METRICS}/namespaces/{namespace}/pods").json()["items"] == []
    assert api.get(f"{METRICS}/namespaces/{namespace}/pods/pending").status_code == 404


# --- who may read them: RBAC over HTTPS ------------------------------------------------

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"))
    with open(out / "tokens.csv", "a") as tokens:
        tokens.write("nobody-token-0123456789,nobody,nobody-uid\n")
    return out


@pytest.fixture(scope="module")
def rbac_server(tmp_path_factory, certs):
    started = SecureServer(tmp_path_factory.mktemp("metrics-rbac") / "data", certs,
                           "--authorization-mode", "RBAC").start()
    yield started
    started.stop()


def test_view_may_read_metrics_and_a_user_with_no_role_may_not(rbac_server, certs):
    role = as_user(rbac_server, certs, "admin").get(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregated-metrics-reader").json()
    assert role["rules"] == [{"verbs": ["get", "list", "watch"], "apiGroups": ["metrics.k8s.io"],
                              "resources": ["pods", "nodes"]}]
    viewer = as_user(rbac_server, certs, "viewer")     # bound to `view`, which aggregates the role
    assert viewer.get(f"{METRICS}/namespaces/default/pods").status_code == 200
    assert viewer.get(f"{METRICS}/nodes").status_code == 200
    client = as_user(rbac_server, certs, "admin")
    client.session.headers["Authorization"] = "Bearer nobody-token-0123456789"
    refused = client.get(f"{METRICS}/namespaces/default/pods")
    assert refused.status_code == 403 and refused.json()["reason"] == "Forbidden"
    assert "metrics.k8s.io" in refused.json()["message"]
