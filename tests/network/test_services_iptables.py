"""The service proxy in iptables mode (05-proxy-dns/iptables_proxy.py), on three machines.

node1's and node2's proxies are restarted in iptables mode for this
module (and back to userspace after it). The kernel does the work: a
cluster IP answers from a pod and from a node, choices are random with
equal chances, a Service without endpoints is rejected at once, an open
connection survives a restart of the proxy, and --cleanup removes every
chain."""
from __future__ import annotations

import collections
import re
import subprocess
import uuid

import pytest

from network_harness import PY, ROOT, in_pod, run_pod, start_servers
from polling import wait_for

ECHO = "while true; do nc -l -p 9000 -e cat; done"


def nat_rules(cluster, node: str) -> str:
    return cluster.machines.run(node, "iptables", "-t", "nat", "-S").stdout


def restart_proxies(cluster, mode: str) -> None:
    for node in ("node1", "node2"):
        cluster.stop(f"proxy-{node}")
        cluster.start(f"proxy-{node}", node, "05-proxy-dns/proxy.py", "--apiserver", cluster.api,
                      "--proxy-mode", mode, "-v")


@pytest.fixture(scope="module")
def kernel_proxy(cluster):
    app = f"iptables-{uuid.uuid4().hex[:6]}"
    echo = {"name": "echo", "image": "busybox:1.35", "command": ["sh", "-c", ECHO]}
    servers = start_servers(cluster, app, ("node1", "node2", "node2"), echo)
    client = f"client-{app}"
    run_pod(cluster, client, "node1", "exec sleep 3600")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": app},
               "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80},
                                                            {"name": "echo", "port": 9000}]}}
    ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
    restart_proxies(cluster, "iptables")
    wait_for(lambda: all(re.search(rf"-A GROUNDUP-SERVICES -d {re.escape(ip)}/32 .*--dport 80 ", nat_rules(cluster, n))
                         and nat_rules(cluster, n).count("-j DNAT") >= 6 for n in ("node1", "node2")), 60,
             what="the Service's chains, with its six endpoint chains, on both nodes")
    yield {"app": app, "ip": ip, "servers": servers, "client": client}
    restart_proxies(cluster, "userspace")
    for name in servers + [client]:
        cluster.request("DELETE", f"/api/v1/namespaces/default/pods/{name}")
    cluster.request("DELETE", f"/api/v1/namespaces/default/services/{app}")


def test_the_kernel_spreads_connections_at_random_over_every_endpoint(cluster, kernel_proxy):
    loop = (f'for i in $(seq 300); do printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {kernel_proxy["ip"]} 80 '
            '| tail -1; done')
    counts = collections.Counter(in_pod(cluster, "node1", kernel_proxy["client"], "sh", "-c", loop).split())
    assert sum(counts.values()) == 300 and set(counts) == set(kernel_proxy["servers"]), counts
    # Random, equal chances (1/3 each): 100 ± 3 standard deviations (8.2) and then some.
    assert all(60 <= n <= 140 for n in counts.values()), counts
    # No process in the path: the proxy's own log has no connection in it.
    assert "connection client=" not in cluster.log("proxy-node1").split("proxying mode=iptables")[-1]


def test_an_open_connection_survives_a_restart_of_the_proxy(cluster, kernel_proxy):
    # From node1 itself (OUTPUT), one connection to the echo port: a
    # message before the restart, one after, on the same connection.
    script = ("import socket, sys, subprocess; s = socket.create_connection((sys.argv[1], 9000), timeout=10); "
              "s.sendall(b'before\\n'); print(s.recv(100).decode().strip()); sys.stdout.flush(); "
              "sys.stdin.readline(); s.sendall(b'after\\n'); print(s.recv(100).decode().strip())")
    talker = cluster.machines.popen("node1", ["python3", "-u", "-c", script, kernel_proxy["ip"]],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True)
    try:
        assert talker.stdout.readline().strip() == "before"
        cluster.stop("proxy-node1")
        cluster.start("proxy-node1", "node1", "05-proxy-dns/proxy.py", "--apiserver", cluster.api,
                      "--proxy-mode", "iptables", "-v")
        wait_for(lambda: "rules written" in cluster.log("proxy-node1").split("proxying mode=iptables")[-1]
                 or cluster.log("proxy-node1").count("proxying mode=iptables") >= 2, 30,
                 what="the restarted proxy at work")
        talker.stdin.write("\n")
        talker.stdin.flush()
        assert talker.stdout.readline().strip() == "after"
    finally:
        talker.kill()


def test_a_service_without_endpoints_is_rejected_at_once(cluster, kernel_proxy):
    name = f"{kernel_proxy['app']}-empty"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"selector": {"app": "nobody"}, "ports": [{"port": 80}]}}
    ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
    try:
        wait_for(lambda: f"{ip}/32" in cluster.machines.run("node1", "iptables", "-S").stdout, 30,
                 what="the REJECT rule in node1's filter table")
        probe = (f"import socket; socket.create_connection(('{ip}', 80), timeout=20)")
        done = cluster.machines.run("node1", "python3", "-c", probe, check=False)
        assert "ConnectionRefusedError" in done.stderr, done.stderr      # refused, not timed out
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")


def test_cleanup_removes_every_chain(cluster, kernel_proxy):
    cluster.stop("proxy-node2")
    try:
        assert "GROUNDUP-SVC-" in nat_rules(cluster, "node2")
        cluster.machines.run("node2", PY, str(ROOT / "05-proxy-dns" / "proxy.py"), "--cleanup")
        rules = nat_rules(cluster, "node2") + cluster.machines.run("node2", "iptables", "-S").stdout
        assert "GROUNDUP-SERVICES" not in rules and "GROUNDUP-SVC" not in rules and "GROUNDUP-SEP" not in rules
    finally:
        cluster.start("proxy-node2", "node2", "05-proxy-dns/proxy.py", "--apiserver", cluster.api,
                      "--proxy-mode", "iptables", "-v")


def test_a_node_port_answers_from_every_endpoint_even_on_another_node(cluster, kernel_proxy):
    # Two of the three pods are on node2: connections to node1's node port
    # that go there come back only because they are masqueraded.
    name = f"{kernel_proxy['app']}-np"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"type": "NodePort", "selector": {"app": kernel_proxy["app"]}, "ports": [{"port": 80}]}}
    node_port = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["ports"][0][
        "nodePort"]
    try:
        wait_for(lambda: f"--dport {node_port} " in nat_rules(cluster, "node1"), 30, what="the node port's rules")
        probe = ("import socket, sys\nfor _ in range(30):\n"
                 "    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
                 "    s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
                 "    print(b''.join(iter(lambda: s.recv(4096), b'')).decode().split()[-1])")
        answers = cluster.machines.run("master", "python3", "-c", probe, cluster.machines.address("node1"),
                                       str(node_port), timeout=120).stdout.split()
        assert len(answers) == 30 and set(answers) == set(kernel_proxy["servers"]), collections.Counter(answers)
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")


def ask_service(ip: str, times: int) -> str:
    return (f'for i in $(seq {times}); do printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 3 {ip} 80 | tail -1; '
            'echo; done')


def test_session_affinity_keeps_a_client_on_one_pod_with_the_recent_match(cluster, kernel_proxy):
    name = f"{kernel_proxy['app']}-sticky"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"selector": {"app": kernel_proxy["app"]}, "sessionAffinity": "ClientIP",
                        "ports": [{"name": "http", "port": 80}]}}
    ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
    try:
        wait_for(lambda: re.search(r"--rcheck --seconds 10800 --reap", nat_rules(cluster, "node1"))
                 and nat_rules(cluster, "node1").count(f"{ip}/32") == 1, 30,
                 what="the sticky Service's recent-match rules on node1")
        answers = in_pod(cluster, "node1", kernel_proxy["client"], "sh", "-c", ask_service(ip, 20)).split()
        # Without affinity 20 random choices over 3 pods land on one pod
        # with a chance of 3 / 3**20: one pod here is the rules at work.
        assert len(answers) == 20 and len(set(answers)) == 1, answers
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")


def test_a_pod_reaches_itself_through_its_own_service(cluster, kernel_proxy):
    # Hairpin: a connection DNATed back to the pod that made it only works
    # masqueraded, or the answer goes from the pod to itself untranslated.
    server = kernel_proxy["servers"][0]
    answers = in_pod(cluster, "node1", server, "sh", "-c", ask_service(kernel_proxy["ip"], 30)).split()
    assert len(answers) == 30 and server in answers, collections.Counter(answers)


UDP_ECHO = ("import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind((sys.argv[1], 9053))\n"
            "while True:\n    data, peer = s.recvfrom(2048)\n    s.sendto(b'echo ' + data, peer)\n")
UDP_ASK = ("import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(3)\n"
           "s.connect((sys.argv[1], int(sys.argv[2])))\n"
           "try:\n    s.send(b'hello')\n    print(s.recv(2048).decode())\n"
           "except OSError as error:\n    print(type(error).__name__)\n")


def test_a_udp_service_port_is_carried_and_one_without_endpoints_refused(cluster, kernel_proxy):
    # A Service without a selector, with Endpoints written by hand: node1's
    # own address, where a UDP echo listens (the pods' busybox has no UDP
    # server). Asked from node2, through node2's rules.
    name, node1 = f"{kernel_proxy['app']}-udp", cluster.machines.address("node1")
    echo = cluster.machines.popen("node1", ["python3", "-c", UDP_ECHO, node1])
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"ports": [{"port": 53, "protocol": "UDP"}]}}
    try:
        ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
        wait_for(lambda: f"-d {ip}/32 -p udp -m udp --dport 53" in cluster.machines.run("node2", "iptables", "-S").stdout,
                 30, what="the REJECT for the UDP port without endpoints on node2")
        asked = cluster.machines.run("node2", "python3", "-c", UDP_ASK, ip, "53").stdout.strip()
        # Refused at once, as TCP is: the REJECT in OUTPUT fails the node's
        # own send (EPERM); a pod's packet (FORWARD) gets port unreachable.
        assert asked in ("PermissionError", "ConnectionRefusedError"), asked
        endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name},
                     "subsets": [{"addresses": [{"ip": node1}], "ports": [{"port": 9053, "protocol": "UDP"}]}]}
        assert cluster.request("POST", "/api/v1/namespaces/default/endpoints", endpoints).status_code == 201
        wait_for(lambda: re.search(rf"-p udp .*-j DNAT --to-destination {re.escape(node1)}:9053",
                                   nat_rules(cluster, "node2")), 30, what="the UDP DNAT rule on node2")
        assert cluster.machines.run("node2", "python3", "-c", UDP_ASK, ip, "53").stdout.strip() == "echo hello"
    finally:
        echo.kill()
        cluster.request("DELETE", f"/api/v1/namespaces/default/services/{name}")
        cluster.request("DELETE", f"/api/v1/namespaces/default/endpoints/{name}")


def test_the_kube_dns_service_is_left_to_the_nodes_dns_over_udp_and_tcp(cluster, kernel_proxy):
    # kube-dns (10.96.0.10) has no endpoints: a proxy that took it would
    # REJECT it; its service-proxy-name label keeps every proxy away, and
    # the node's own DNS answers at that address, over UDP and TCP.
    rules = nat_rules(cluster, "node1") + cluster.machines.run("node1", "iptables", "-S").stdout
    assert "10.96.0.10" not in rules, [line for line in rules.splitlines() if "10.96.0.10" in line]
    ask = ("import sys, dns.message, dns.query\n"
           "question = dns.message.make_query('kube-dns.kube-system.svc.cluster.local', 'A')\n"
           "for ask in (dns.query.udp, dns.query.tcp):\n"
           "    print(ask(question, '10.96.0.10', timeout=5).answer[0][0])\n")
    assert cluster.machines.run("node1", PY, "-c", ask).stdout.split() == ["10.96.0.10", "10.96.0.10"]
