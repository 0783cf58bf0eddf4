"""`kubectl top` end to end: the real kubectl, a real API server, a real
chapter 01 kubelet joined to it, real Docker. A pod that burns a core
shows it, an idle one does not; the kubelet's Prometheus figures parse.
(The API server's side alone, with a stand-in kubelet: test_resource_metrics.py.)"""
from __future__ import annotations

import re
import subprocess

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from apiserver_harness import APIServer, Client, unique
from harness import make_kubelet  # noqa: F401 (a fixture)
from polling import wait_for

BURN = ["sh", "-c", "while :; do :; done"]
IDLE = ["sleep", "3600"]


@pytest.fixture(scope="module")
def cluster_api(tmp_path_factory):
    """An API server of this module's own: its kubelets register nodes, which no other test should see."""
    server = APIServer(tmp_path_factory.mktemp("top") / "data").start()
    yield Client(server.url)
    server.stop()


@pytest.fixture
def node(cluster_api, make_kubelet):
    """A kubelet joined to the API server, once its Node is registered."""
    kubelet = make_kubelet("--apiserver", cluster_api.url)
    wait_for(lambda: cluster_api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, 30,
             what=f"node {kubelet.node_name} registered")
    yield kubelet
    cluster_api.delete(f"/api/v1/nodes/{kubelet.node_name}")


def run_pod(api, namespace: str, node_name: str, name: str, containers: dict[str, list[str]]) -> None:
    spec = {"nodeName": node_name, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": c, "image": "busybox:1.35", "command": command} for c, command in containers.items()]}
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", {"metadata": {"name": name}, "spec": spec})
    assert created.status_code == 201, created.text


def millicores(text: str) -> int:
    """kubectl's CPU column: "983m", or whole cores "2"."""
    return int(text[:-1]) if text.endswith("m") else int(text) * 1000


def top(kubectl, api, cache, *args) -> str:
    done = subprocess.run([kubectl, "-s", api.url, "--cache-dir", str(cache), "top", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()[1:]]


def test_kubectl_top_shows_the_pod_that_burns_a_core(cluster_api, node, kubectl, tmp_path):
    namespace = unique("top")
    assert cluster_api.post("/api/v1/namespaces", {"metadata": {"name": namespace}}).status_code == 201
    run_pod(cluster_api, namespace, node.node_name, "burner", {"burn": BURN, "rest": IDLE})
    run_pod(cluster_api, namespace, node.node_name, "idler", {"idle": IDLE})
    cache = tmp_path / "cache"

    def burning_and_idle():
        """Both pods shown, the burner above 200m, the idler below 50m (kubectl: NAME CPU MEMORY)."""
        done = subprocess.run([kubectl, "-s", cluster_api.url, "--cache-dir", str(cache), "top", "pods",
                               "-n", namespace], capture_output=True, text=True, timeout=60)
        cpu = {row[0]: millicores(row[1]) for row in rows(done.stdout)} if done.returncode == 0 else {}
        return cpu if cpu.get("burner", 0) > 200 and cpu.get("idler", 1000) < 50 else None
    cpu = wait_for(burning_and_idle, 60, what="kubectl top pods: the burner above 200m, the idler below 50m")
    assert set(cpu) == {"burner", "idler"}

    everywhere = rows(top(kubectl, cluster_api, cache, "pods", "-A"))
    assert {(r[0], r[1]) for r in everywhere if r[0] == namespace} == {(namespace, "burner"), (namespace, "idler")}

    containers = rows(top(kubectl, cluster_api, cache, "pod", "burner", "-n", namespace, "--containers"))
    by_container = {r[1]: millicores(r[2]) for r in containers}
    assert [r[0] for r in containers] == ["burner", "burner"] and set(by_container) == {"burn", "rest"}
    assert by_container["burn"] > 200 and by_container["rest"] < 50
    assert all(re.fullmatch(r"\d+Mi", r[3]) for r in containers)

    def node_busy():
        """The node's row (NAME CPU CPU% MEMORY MEMORY%) once its CPU shows the burner: the whole machine."""
        row = {r[0]: r for r in rows(top(kubectl, cluster_api, cache, "nodes"))}[node.node_name]
        return row if millicores(row[1]) > 200 else None
    name, cores, percent, memory, memory_percent = wait_for(node_busy, 30, what="kubectl top nodes above 200m")
    assert percent.endswith("%") and memory.endswith("Mi") and memory_percent.endswith("%")


def test_the_kubelets_prometheus_figures_parse(cluster_api, node):
    name = unique("burner")
    run_pod(cluster_api, "default", node.node_name, name, {"burn": BURN})
    try:
        node.wait_running(name)
        node.wait_syncs(2)
        families = {f.name: f for f in text_string_to_metric_families(requests.get(node.url("/metrics"), timeout=5).text)}
        value = {f: {tuple(s.labels.items()): s.value for s in families[f].samples} for f in families}
        assert value["kubelet_sync_loops"][()] >= 2        # the parser drops a counter's _total
        assert value["kubelet_running_pods"][()] == 1
        assert value["kubelet_running_containers"][(("container_state", "running"),)] == 1
        # What became of its events (Pulled, Created, Started...): written, none lost.
        assert value["kubelet_events"][(("result", "written"),)] >= 1
        assert value["kubelet_events"][(("result", "dropped"),)] == 0
        assert (("result", "filtered"),) in value["kubelet_events"]
        assert families["kubelet_pod_start_duration_seconds"].type == "histogram"
        assert any(s.name.endswith("_count") and s.value >= 1 for s in families["kubelet_pod_start_duration_seconds"].samples)
        assert any(s.name.endswith("_count") and s.value >= 2
                   for s in families["kubelet_sync_loop_duration_seconds"].samples)

        resource = text_string_to_metric_families(requests.get(node.url("/metrics/resource"), timeout=5).text)
        samples = {(s.name, s.labels.get("pod"), s.labels.get("container")): s for f in resource for s in f.samples}
        cpu = samples[("container_cpu_usage_seconds_total", name, "burn")]
        assert cpu.value > 0 and cpu.timestamp is not None
        assert samples[("container_memory_working_set_bytes", name, "burn")].value > 0
        assert samples[("node_cpu_usage_seconds_total", None, None)].value > 0
    finally:
        cluster_api.delete(f"/api/v1/namespaces/default/pods/{name}", {"gracePeriodSeconds": 0})
