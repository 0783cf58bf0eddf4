"""A Service's cluster IP answering on three machines: 05-proxy-dns/proxy.py, userspace mode.

Three web servers (two on node1, one on node2) behind one Service; the
endpoints controller writes its Endpoints, the proxy on every node listens
for its cluster IP. From a pod and from a node the cluster IP answers;
300 requests spread round robin; sessionAffinity ClientIP keeps a client
on one pod; a Service with no ready endpoints refuses at once; the proxy's
--cleanup leaves no rule behind."""
from __future__ import annotations

import collections
import re
import uuid

import pytest

from network_harness import PY, ROOT, Cluster, in_pod, run_pod, start_servers
from polling import wait_for



def request_loop(count: int, address: str) -> str:
    """A shell loop in a pod: `count` GETs, one line (the answering pod's name) each."""
    return (f'for i in $(seq {count}); do printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {address} 80 | tail -1; done')


def make_service(cluster: Cluster, name: str, selector: dict, **spec) -> dict:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 80}], **spec}}
    created = cluster.request("POST", "/api/v1/namespaces/default/services", body)
    assert created.status_code == 201, created.text
    return created.json()


def ready_addresses(cluster: Cluster, name: str) -> int:
    endpoints = cluster.request("GET", f"/api/v1/namespaces/default/endpoints/{name}")
    if endpoints.status_code != 200:
        return 0
    return sum(len(s.get("addresses") or []) for s in endpoints.json().get("subsets") or [])


@pytest.fixture(scope="module")
def hello(cluster):
    """Three servers, a client pod on node1, and a Service for the servers."""
    app = f"hello-{uuid.uuid4().hex[:6]}"
    servers = start_servers(cluster, app, ("node1", "node1", "node2"))
    client = f"client-{app}"
    run_pod(cluster, client, "node1", "exec sleep 3600")
    service = make_service(cluster, app, {"app": app})
    wait_for(lambda: ready_addresses(cluster, app) == 3, 60, what=f"three ready endpoints for {app}")
    ip = service["spec"]["clusterIP"]
    # The proxies heard of the Service: its rule is on both nodes.
    wait_for(lambda: all(ip in cluster.machines.run(n, "iptables", "-t", "nat", "-S").stdout
                         for n in ("node1", "node2")), 20, what="the Service's rules on node1 and node2")
    yield {"app": app, "ip": ip, "servers": servers, "client": client}
    for name in servers + [client]:
        cluster.request("DELETE", f"/api/v1/namespaces/default/pods/{name}")
    cluster.request("DELETE", f"/api/v1/namespaces/default/services/{app}")


def test_300_requests_to_the_cluster_ip_spread_round_robin_over_three_pods(cluster, hello):
    answers = in_pod(cluster, "node1", hello["client"], "sh", "-c", request_loop(300, hello["ip"])).split()
    counts = collections.Counter(answers)
    assert sum(counts.values()) == 300, counts
    assert set(counts) == set(hello["servers"]), counts
    assert all(85 <= n <= 115 for n in counts.values()), counts        # within ±15% of 100


def test_a_node_reaches_the_cluster_ip_too(cluster, hello):
    probe = (f"import socket; s = socket.create_connection(('{hello['ip']}', 80), timeout=5); "
             "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); "
             "print(b''.join(iter(lambda: s.recv(4096), b'')).decode().split()[-1])")   # to the end: the body
    for node in ("node2", "node1"):
        answer = cluster.machines.run(node, "python3", "-c", probe, timeout=30).stdout.strip()
        assert answer in hello["servers"], answer


def test_session_affinity_keeps_a_client_on_one_pod(cluster, hello):
    name = f"{hello['app']}-sticky"
    service = make_service(cluster, name, {"app": hello["app"]}, sessionAffinity="ClientIP")
    try:
        wait_for(lambda: ready_addresses(cluster, name) == 3, 60, what="the sticky Service's endpoints")
        ip = service["spec"]["clusterIP"]
        wait_for(lambda: ip in cluster.machines.run("node1", "iptables", "-t", "nat", "-S").stdout, 20,
                 what="the sticky Service's rule on node1")
        answers = in_pod(cluster, "node1", hello["client"], "sh", "-c", request_loop(20, ip)).split()
        assert len(answers) == 20 and len(set(answers)) == 1, answers
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")


def test_a_service_with_no_ready_endpoints_refuses_at_once(cluster, hello):
    name = f"{hello['app']}-empty"
    service = make_service(cluster, name, {"app": "nobody-has-this-label"})
    try:
        ip = service["spec"]["clusterIP"]
        wait_for(lambda: ip in cluster.machines.run("node1", "iptables", "-t", "nat", "-S").stdout, 20,
                 what="the empty Service's rule on node1")
        answer = in_pod(cluster, "node1", hello["client"], "sh", "-c", request_loop(1, ip))
        assert answer.strip() == ""
        # Closed by the proxy for want of an endpoint, not left to time out.
        assert re.search(rf"default/{name}:80: no ready endpoint: connection closed client=10\.244\.",
                         cluster.log("proxy-node1")), cluster.log("proxy-node1")[-2000:]
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")


def test_the_proxys_cleanup_removes_every_rule_it_made(cluster, hello):
    cluster.stop("proxy-node2")
    try:
        assert hello["ip"] in cluster.machines.run("node2", "iptables", "-t", "nat", "-S").stdout   # rules stay
        done = cluster.machines.run("node2", PY, str(ROOT / "05-proxy-dns" / "proxy.py"), "--cleanup")
        assert done.returncode == 0
        rules = cluster.machines.run("node2", "iptables", "-t", "nat", "-S").stdout
        assert "GROUNDUP-SERVICES" not in rules and hello["ip"] not in rules, rules
    finally:
        cluster.start("proxy-node2", "node2", "05-proxy-dns/proxy.py", "--apiserver", cluster.api, "-v")
    wait_for(lambda: hello["ip"] in cluster.machines.run("node2", "iptables", "-t", "nat", "-S").stdout, 20,
             what="the restarted proxy's rules on node2")


def test_the_proxy_logs_each_connection_with_its_endpoint(cluster, hello):
    in_pod(cluster, "node1", hello["client"], "sh", "-c", request_loop(1, hello["ip"]))
    log = cluster.log("proxy-node1")
    assert re.search(rf"default/{hello['app']}:80: connection client=10\.244\.\d+\.\d+ endpoint=10\.244\.", log), \
        log[-2000:]


def test_a_pod_finds_a_service_by_its_short_name_through_cluster_dns(cluster, hello):
    resolv = in_pod(cluster, "node1", hello["client"], "cat", "/etc/resolv.conf")
    assert "nameserver 10.96.0.10" in resolv and "options ndots:5" in resolv, resolv
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in resolv, resolv
    looked_up = in_pod(cluster, "node1", hello["client"], "nslookup", f"{hello['app']}.default.svc.cluster.local")
    assert hello["ip"] in looked_up, looked_up
    # The short name, through the search list, and then the Service itself.
    answer = in_pod(cluster, "node1", hello["client"], "sh", "-c",
                    f'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {hello["app"]} 80 | tail -1').strip()
    assert answer in hello["servers"], answer


def test_a_node_port_answers_on_every_nodes_address(cluster, hello):
    name = f"{hello['app']}-np"
    service = make_service(cluster, name, {"app": hello["app"]}, type="NodePort")
    try:
        node_port = service["spec"]["ports"][0]["nodePort"]
        wait_for(lambda: all(f"--dport {node_port} " in cluster.machines.run(n, "iptables", "-t", "nat", "-S").stdout
                             for n in ("node1", "node2")), 20, what="the node port's rules on both nodes")
        probe = ("import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
                 "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); "
                 "print(b''.join(iter(lambda: s.recv(4096), b'')).decode().split()[-1])")
        for node in ("node1", "node2"):           # from master, which runs no proxy: the node's does the work
            address = cluster.machines.address(node)
            answer = cluster.machines.run("master", "python3", "-c", probe, address, str(node_port)).stdout.strip()
            assert answer in hello["servers"], (node, answer)
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")
