"""pods/log: the one request the API server passes on to a kubelet.

A real chapter 01 kubelet runs a pod on Docker; the API server learns where
that kubelet listens from a Node object (its address and port in status),
and `kubectl logs` reads the container's output through the API server.
"""
from __future__ import annotations

import subprocess

from apiserver_harness import unique
from harness import make_kubelet, pod_yaml  # noqa: F401 (make_kubelet is a fixture)
from polling import wait_for


def test_logs_come_from_the_kubelet_of_the_pods_node(api, make_kubelet, kubectl, tmp_path):
    kubelet = make_kubelet()
    name = unique("logger")
    kubelet.write(f"{name}.yaml", pod_yaml(name, "  - name: app\n    image: busybox:1.35\n"
                                                 "    command: ['sh', '-c', 'echo hello; echo world; sleep 3600']\n"))
    kubelet.wait_running(name)
    node = {"metadata": {"name": kubelet.node_name},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}}}}
    assert api.post("/api/v1/nodes", node).status_code == 201
    pod = {"metadata": {"name": name}, "spec": {"nodeName": kubelet.node_name,
                                                "containers": [{"name": "app", "image": "busybox:1.35"}]}}
    assert api.post("/api/v1/namespaces/default/pods", pod).status_code == 201
    try:
        path = f"/api/v1/namespaces/default/pods/{name}/log"
        logs = wait_for(lambda: (r := api.get(path)).status_code == 200 and "world" in r.text and r.text,
                        timeout=30, what="the container's log through the API server")
        assert logs == "hello\nworld\n"
        assert api.get(path, params={"tailLines": 1}).text == "world\n"
        missing = api.get(path, params={"container": "nope"})
        assert missing.status_code == 400 and "nope" in missing.json()["message"]
        printed = subprocess.run([kubectl, "-s", api.url, "--cache-dir", str(tmp_path / "cache"),
                                  "logs", name], capture_output=True, text=True, timeout=60)
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == "hello\nworld\n"
    finally:
        api.delete(f"/api/v1/namespaces/default/pods/{name}", {"gracePeriodSeconds": 0})
        api.delete(f"/api/v1/nodes/{kubelet.node_name}")


def test_a_pod_without_a_node_has_no_log_to_give(api, namespace):
    api.post(f"/api/v1/namespaces/{namespace}/pods",
             {"metadata": {"name": "nowhere"}, "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}})
    response = api.get(f"/api/v1/namespaces/{namespace}/pods/nowhere/log")
    assert response.status_code == 400 and "does not have a host assigned" in response.json()["message"]
