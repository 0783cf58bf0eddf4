"""pods/log: the one request the API server passes on to a kubelet.

A real chapter 01 kubelet runs a pod on Docker; the API server learns where
that kubelet listens from a Node object (its address and port in status),
and `kubectl logs` reads the container's output through the API server.
A kubelet that asks for the API server's token gets it, from the server
that has it (--kubelet-client-token-file); the others hear why not.
"""
from __future__ import annotations

import subprocess

import pytest
import requests

import netns
from apiserver_harness import APIServer, Client, unique
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


# --- a kubelet that asks for the API server's token ---------------------------------

HOST_IP, REMOTE_IP = "10.213.79.1", "10.213.79.2"


@pytest.fixture
def node_address():
    """A non-loopback address of this machine: the host end of a veth pair
    the test makes. A kubelet reached there sees the API server's request
    come from that address, as from another machine, and asks for the token."""
    with netns.remote_machine(HOST_IP, REMOTE_IP):
        yield HOST_IP


def register(api, kubelet, address: str, name: str) -> None:
    """The kubelet's Node (where it listens) and the pod it runs, in this API server."""
    node = {"metadata": {"name": kubelet.node_name},
            "status": {"addresses": [{"type": "InternalIP", "address": address}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}}}}
    assert api.post("/api/v1/nodes", node).status_code == 201
    pod = {"metadata": {"name": name}, "spec": {"nodeName": kubelet.node_name,
                                                "containers": [{"name": "app", "image": "busybox:1.35"}]}}
    assert api.post("/api/v1/namespaces/default/pods", pod).status_code == 201


def test_logs_reach_a_kubelet_that_wants_the_api_servers_token(api, node_address, make_kubelet, kubectl, tmp_path):
    token_file, wrong_file = tmp_path / "kubelet-client.token", tmp_path / "other.token"
    token_file.write_text("the-token-the-kubelet-wants\n")
    wrong_file.write_text("some-other-token\n")
    kubelet = make_kubelet("--address", "0.0.0.0", "--authentication-token-file", str(token_file))
    name = unique("logger")
    kubelet.write(f"{name}.yaml", pod_yaml(name, "  - name: app\n    image: busybox:1.35\n"
                                                 "    command: ['sh', '-c', 'echo hello; echo world; sleep 3600']\n"))
    kubelet.wait_running(name)
    path = f"/api/v1/namespaces/default/pods/{name}/log"
    direct = requests.get(f"http://{node_address}:{kubelet.port}/containerLogs/default/{name}/app", timeout=5)
    assert direct.status_code == 401       # the way the API server comes is not loopback
    secured = APIServer(tmp_path / "data", "--kubelet-client-token-file", str(token_file)).start()
    wrong = APIServer(tmp_path / "data-wrong", "--kubelet-client-token-file", str(wrong_file)).start()
    try:
        servers = {"token": Client(secured.url), "none": api, "wrong": Client(wrong.url)}
        for each in servers.values():
            register(each, kubelet, node_address, name)
        logs = wait_for(lambda: (r := servers["token"].get(path)).status_code == 200 and "world" in r.text and r.text,
                        timeout=30, what="the container's log through the API server that holds the token")
        assert logs == "hello\nworld\n"
        printed = subprocess.run([kubectl, "-s", secured.url, "--cache-dir", str(tmp_path / "cache"), "logs", name],
                                 capture_output=True, text=True, timeout=60)
        assert printed.returncode == 0 and printed.stdout == "hello\nworld\n", printed.stderr
        # Without the token, or with another: refused, and the message says which flags to look at.
        for which, fix in (("none", "start the API server with --kubelet-client-token-file"),
                           ("wrong", "hold different tokens")):
            refused = servers[which].get(path)
            assert refused.status_code == 500 and refused.json()["reason"] == "InternalError"
            assert refused.json()["message"].startswith(
                f"the kubelet of node {kubelet.node_name} refused the API server's request (401 Unauthorized): ")
            assert fix in refused.json()["message"]
        printed = subprocess.run([kubectl, "-s", api.url, "--cache-dir", str(tmp_path / "cache"), "logs", name],
                                 capture_output=True, text=True, timeout=60)
        assert printed.returncode != 0
        assert printed.stderr.startswith(f"Error from server (InternalError): the kubelet of node {kubelet.node_name}")
    finally:
        secured.stop()
        wrong.stop()
        api.delete(f"/api/v1/namespaces/default/pods/{name}", {"gracePeriodSeconds": 0})
        api.delete(f"/api/v1/nodes/{kubelet.node_name}")
