"""The pod network across machines (chapter 05, part 1), on namespace machines.

Kubernetes' network model, checked on a real cluster of three machines:
every pod has an IP of its own in the cluster, from its node's podCIDR;
a pod reaches a pod on another node by that IP, and the server sees the
client pod's address (no NAT); a node reaches pods on other nodes; traffic
leaving the pod network is masqueraded behind the node. And the route
agent's side: a node that joins gets a route on every other machine, one
that is deleted loses it, a restarted agent converges with nothing stale.
"""
from __future__ import annotations

import ipaddress
import signal
import subprocess
import uuid

import pytest
import requests

from network_harness import Cluster, delete_pod, in_pod, ready, run_pod
from polling import wait_for

def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def fetch(cluster: Cluster, node: str, pod: str, address: str) -> str:
    """An HTTP GET from inside a pod, with busybox's nc (its static wget
    crashes in this image)."""
    return in_pod(cluster, node, pod, "sh", "-c", f'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 {address} 80')


def server_log(cluster: Cluster, pod: str) -> str:
    """The pod's log through the API server: master asks the node's kubelet."""
    response = cluster.request("GET", f"/api/v1/namespaces/default/pods/{pod}/log")
    assert response.status_code == 200, response.text
    return response.text


@pytest.fixture(scope="module")
def servers(cluster):
    names = {node: unique(f"web-{node}") for node in ("node1", "node2")}
    pods = {node: run_pod(cluster, name, node) for node, name in names.items()}
    yield pods
    for name in names.values():
        delete_pod(cluster, name)


def test_every_pod_gets_a_cluster_unique_ip_from_its_nodes_range(cluster, servers):
    extra = {unique(f"more-{node}"): node for node in ("node1", "node2") for _ in range(2)}
    try:
        pods = list(servers.values()) + [run_pod(cluster, name, node, "exec sleep 3600")
                                         for name, node in extra.items()]
        ips = [p["status"]["podIP"] for p in pods]
        assert len(set(ips)) == len(ips), ips                   # stock Docker gave both nodes 172.17.0.2
        for pod in pods:
            node = cluster.node(pod["spec"]["nodeName"])
            assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
            assert pod["status"]["hostIP"] == cluster.machines.address(node["metadata"]["name"])
    finally:
        for name in extra:
            delete_pod(cluster, name)


def test_a_pod_reaches_a_pod_on_another_node_and_the_server_sees_the_client_pods_ip(cluster, servers):
    client, server = servers["node1"], servers["node2"]
    answer = fetch(cluster, "node1", client["metadata"]["name"], server["status"]["podIP"])
    assert "200 OK" in answer and server["metadata"]["name"] in answer      # httpd serves its hostname
    # busybox httpd -v logs every request with the peer's address.
    wait_for(lambda: f"{client['status']['podIP']}]" in server_log(cluster, server["metadata"]["name"]), 10,
             what=f"the server's log to name the client pod's IP {client['status']['podIP']}")


def test_a_node_reaches_a_pod_on_another_node(cluster, servers):
    server = servers["node2"]
    probe = (f"import socket; s = socket.create_connection(('{server['status']['podIP']}', 80), timeout=5); "
             "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.recv(4096).decode())")
    for machine in ("node1", "master"):
        answer = cluster.machines.run(machine, "python3", "-c", probe, timeout=30).stdout
        assert "200 OK" in answer, (machine, answer)


def test_a_pod_cannot_read_another_nodes_kubelet_but_the_api_server_can(cluster, servers):
    node2 = cluster.machines.address("node2")
    answer = in_pod(cluster, "node1", servers["node1"]["metadata"]["name"], "sh", "-c",
                    f'printf "GET /pods HTTP/1.0\\r\\n\\r\\n" | nc -w 5 {node2} 10255')
    assert answer.startswith("HTTP/1.1 401"), answer
    assert '"reason":"Unauthorized"' in answer.replace(" ", "")
    # The API server holds the token: `kubectl logs` of node2's pod works.
    assert server_log(cluster, servers["node2"]["metadata"]["name"]) is not None


def test_traffic_leaving_the_pod_network_is_masqueraded_behind_the_node(cluster, servers):
    # A listener on master (outside the pod network: --non-masquerade-cidr is
    # the cluster CIDR here) prints the address each connection comes from.
    listener = cluster.machines.popen(
        "master", ["python3", "-c", "import socket; s = socket.socket(); "
                   "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 9999)); "
                   "s.listen(); c, peer = s.accept(); print(peer[0], flush=True)"],
        stdout=subprocess.PIPE, text=True)
    try:
        master = cluster.machines.address("master")
        wait_for(lambda: "9999" in cluster.machines.run("master", "ss", "-ltn").stdout, 10,
                 what="the listener on master")
        in_pod(cluster, "node1", servers["node1"]["metadata"]["name"], "sh", "-c", f"echo hi | nc -w 2 {master} 9999")
        peer = listener.communicate(timeout=20)[0].strip()
        assert peer == cluster.machines.address("node1")          # the node's address, not the pod's
    finally:
        listener.kill()


def test_a_node_that_joins_gets_routes_everywhere_and_a_deleted_one_loses_them(cluster, servers):
    cluster.join("node3")
    try:
        node3 = wait_for(lambda: (n := cluster.node("node3")) and ready(n) and n, 60, what="node3 Ready")
        cidr, address = node3["spec"]["podCIDR"], cluster.machines.address("node3")
        # Within 5 s of node3 having its range, every machine routes to it.
        wait_for(lambda: all(cluster.routes(m).get(cidr) == address for m in ("master", "node1", "node2")), 5,
                 what=f"a route to {cidr} via {address} on master, node1 and node2")
        pod = run_pod(cluster, unique("web-node3"), "node3")
        answer = fetch(cluster, "node1", servers["node1"]["metadata"]["name"], pod["status"]["podIP"])
        assert "200 OK" in answer
        delete_pod(cluster, pod["metadata"]["name"])
    finally:
        cluster.leave("node3")
    assert cluster.request("DELETE", "/api/v1/nodes/node3").status_code == 200
    wait_for(lambda: all(cidr not in cluster.routes(m) for m in ("master", "node1", "node2")), 10,
             what=f"the route to {cidr} gone from every machine")


def test_a_restarted_route_agent_removes_what_went_stale_while_it_was_down(cluster):
    # A node that exists only while node1's agent is away.
    cluster.processes["routes-node1"].send_signal(signal.SIGKILL)
    cluster.processes.pop("routes-node1").wait()
    ghost = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ghost"},
             "spec": {"podCIDR": "10.244.200.0/24", "podCIDRs": ["10.244.200.0/24"]}}
    assert cluster.request("POST", "/api/v1/nodes", ghost).status_code == 201
    ghost_ip = cluster.machines.address("node3")          # an address on the machines' network
    status = {"status": {"addresses": [{"type": "InternalIP", "address": ghost_ip}]}}
    patched = requests.patch(cluster.api + "/api/v1/nodes/ghost/status", json=status,
                             headers={"Content-Type": "application/merge-patch+json"}, timeout=10)
    assert patched.status_code == 200, patched.text
    wait_for(lambda: cluster.routes("node2").get("10.244.200.0/24") == ghost_ip, 10, what="node2's route to ghost")
    before = cluster.routes("node1")
    assert "10.244.200.0/24" not in before                 # node1's agent is down: it heard nothing
    # A route of node1's agent that no node stands for any more.
    cluster.machines.run("node1", "ip", "route", "add", "10.244.201.0/24", "via", ghost_ip, "proto", "213")
    assert cluster.request("DELETE", "/api/v1/nodes/ghost").status_code == 200

    cluster.route_agent("node1")
    node2 = cluster.machines.address("node2")
    wait_for(lambda: cluster.routes("node1") == {cluster.node("node2")["spec"]["podCIDR"]: node2}, 15,
             what="node1's routes to be exactly node2's range, the stale one gone")
    shown = cluster.machines.run("node1", "ip", "route", "show", "proto", "213").stdout.splitlines()
    assert len(shown) == 1, shown                          # no duplicates
