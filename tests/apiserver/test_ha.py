"""Several API servers on one etcd, HAProxy in front, and a three-member
etcd that loses members: real processes on free loopback ports
(02-apiserver/ha_control_plane.py starts the same pieces for `make ha`)."""
from __future__ import annotations

import base64
import json
import time

import pytest
import requests

from apiserver_harness import APIServer, Backend, Client, make_certs, unique, watch_lines
from etcd_cluster import EtcdCluster
from ha_control_plane import HAProxy
from polling import free_port, wait_for

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def two_apiservers(etcd, tmp_path):
    """Two API servers on one etcd, under one prefix: one cluster."""
    flags = Backend("etcd3", etcd).flags()
    servers = [APIServer(tmp_path / f"data{i}", *flags).start() for i in range(2)]
    yield servers
    for server in servers:
        server.stop()


def test_a_write_through_one_api_server_is_seen_on_a_watch_through_the_other(two_apiservers):
    one, two = (Client(server.url) for server in two_apiservers)
    since = one.get(CONFIGMAPS).json()["metadata"]["resourceVersion"]
    with two.get(CONFIGMAPS, params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "20"},
                 stream=True) as watch:
        created = one.post(CONFIGMAPS, {"metadata": {"name": "shared"}, "data": {"by": "one"}})
        assert created.status_code == 201, created.text
        event = next(watch_lines(watch))
    assert event["type"] == "ADDED" and event["object"] == created.json()
    # And a stale write through the other is the same 409 (etcd's compare).
    stale = created.json()
    assert two.put(f"{CONFIGMAPS}/shared", {**stale, "data": {"by": "two"}}).status_code == 200
    refused = one.put(f"{CONFIGMAPS}/shared", {**stale, "data": {"by": "one, stale"}})
    assert refused.status_code == 409 and refused.json()["reason"] == "Conflict"


def test_a_watch_from_a_version_just_written_through_the_other_server_waits_for_it(two_apiservers):
    one, two = (Client(server.url) for server in two_apiservers)
    for i in range(20):
        rv = one.post(CONFIGMAPS, {"metadata": {"name": f"c{i}"}}).json()["metadata"]["resourceVersion"]
        with two.get(CONFIGMAPS, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"},
                     stream=True) as watch:
            assert watch.status_code == 200, watch.text       # never "Too large resource version"


def test_list_pages_come_from_one_snapshot(two_apiservers):
    one, two = (Client(server.url) for server in two_apiservers)
    for name in "abcde":
        one.post(CONFIGMAPS, {"metadata": {"name": name}})
    first = one.get(CONFIGMAPS, params={"limit": 2}).json()
    one.delete(f"{CONFIGMAPS}/c")
    one.post(CONFIGMAPS, {"metadata": {"name": "f"}})
    rest = two.get(CONFIGMAPS, params={"continue": first["metadata"]["continue"]}).json()   # the other server
    assert [o["metadata"]["name"] for o in first["items"] + rest["items"]] == list("abcde")
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_a_continue_token_from_before_a_compaction_is_410(two_apiservers, etcd):
    api = Client(two_apiservers[0].url)
    for name in "abc":
        api.post(CONFIGMAPS, {"metadata": {"name": name}})
    first = api.get(CONFIGMAPS, params={"limit": 1}).json()
    token = json.loads(base64.urlsafe_b64decode(first["metadata"]["continue"]))
    # Compacting the shared etcd to now would cut the history other tests
    # replay: compact only its first revisions, and ask for one of them.
    gone = base64.urlsafe_b64encode(json.dumps({**token, "rv": 1}).encode()).decode()
    requests.post(f"{etcd.members[0].client_url}/v3/kv/compaction", json={"revision": "2"}, timeout=5)
    answer = api.get(CONFIGMAPS, params={"continue": gone})
    assert answer.status_code == 410 and answer.json()["reason"] == "Expired", answer.text


@pytest.mark.exhaustive    # ten rounds of a race, a regression's guard (issue 35): make test's, not a checkpoint's
def test_api_servers_started_at_the_same_instant_on_one_etcd_all_come_up(etcd, tmp_path):
    """Every server writes the cluster's defaults at start-up (the system
    namespaces, the kubernetes Service and its Endpoints, RBAC's roles and
    bindings). Started together they race to write them: the loser of each
    race finds the object there and carries on, as kube-apiserver's
    post-start hooks do (issue 35: one exited on `already exists`)."""
    certs = make_certs(tmp_path / "certs")
    for round in range(10):
        flags = Backend("etcd3", etcd).flags()        # a prefix of its own: an empty cluster each round
        servers = [APIServer(tmp_path / f"round{round}-data{i}", *flags, *_rbac_secure_port(certs, i))
                   for i in range(3)]
        try:
            for server in servers:
                server.start(wait=False)
            for server in servers:
                server.wait_ready()
                answer = Client(server.url).get("/api/v1/namespaces/kube-public")
                assert answer.status_code == 200, answer.text
            api = Client(servers[0].url)
            for made_at_start in ("/api/v1/namespaces/default/services/kubernetes",
                                  "/api/v1/namespaces/default/endpoints/kubernetes",
                                  "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"):
                assert api.get(made_at_start).status_code == 200, made_at_start
        finally:
            for server in servers:
                server.stop()


def _rbac_secure_port(certs, i: int) -> list[str]:
    """A secure port (so each server writes the kubernetes Endpoints, with an
    address of its own) and RBAC (so each writes the default roles)."""
    return ["--secure-port", str(free_port()), "--bind-address", "127.0.0.1",
            "--advertise-address", f"127.0.0.{i + 1}", "--authorization-mode", "RBAC",
            "--tls-cert-file", str(certs / "apiserver.crt"), "--tls-private-key-file", str(certs / "apiserver.key"),
            "--token-auth-file", str(certs / "tokens.csv")]


def test_haproxy_carries_a_client_past_a_dead_api_server(two_apiservers, haproxy_binary, tmp_path):
    servers = two_apiservers
    balancer = HAProxy(free_port(), {f"apiserver{i}": s.port for i, s in enumerate(servers)}, tmp_path).start()
    try:
        api = Client(balancer.url)
        assert api.post(CONFIGMAPS, {"metadata": {"name": "before"}}).status_code == 201
        servers[0].kill()
        started = time.monotonic()

        def write_after():
            try:
                return api.post(CONFIGMAPS, {"metadata": {"name": unique("after")}}, timeout=5).status_code == 201
            except requests.ConnectionError:
                return False              # the kept-alive connection went to the dead one: connect again
        wait_for(write_after, timeout=10, interval=0.05, what="a write through HAProxy after a kill")
        assert time.monotonic() - started < 5
        for _ in range(20):               # and from then on, every write
            assert api.post(CONFIGMAPS, {"metadata": {"name": unique("later")}}).status_code == 201
    finally:
        balancer.stop()


def test_three_etcd_members_lose_one_and_go_on_lose_two_and_refuse_clearly(etcd_binary, tmp_path):
    cluster = EtcdCluster(tmp_path / "etcd", size=3).start()
    server = APIServer(tmp_path / "data", "--storage-backend", "etcd3", "--etcd-servers", cluster.client_urls)
    server.start()
    api = Client(server.url)
    try:
        assert api.post(CONFIGMAPS, {"metadata": {"name": "three"}}).status_code == 201
        cluster.members[0].stop()                         # a majority (two of three) is left
        wait_for(lambda: api.post(CONFIGMAPS, {"metadata": {"name": "two"}}).status_code == 201,
                 timeout=15, what="a write with one member down")
        cluster.members[1].stop()                         # no majority: etcd cannot commit anything
        refused = api.post(CONFIGMAPS, {"metadata": {"name": "one"}, "data": {"whole": "yes"}}, timeout=60)
        assert refused.status_code == 503, refused.text
        status = refused.json()
        assert status["reason"] == "ServiceUnavailable" and "etcd" in status["message"]
        assert requests.get(f"{server.url}/readyz", timeout=30).status_code == 500
        for member in cluster.members[:2]:
            cluster.start_member(member)
        cluster.wait_ready()
        wait_for(lambda: api.post(CONFIGMAPS, {"metadata": {"name": "again"}}).status_code == 201,
                 timeout=30, what="a write once the members are back")
        stored = {o["metadata"]["name"]: o for o in api.get(CONFIGMAPS).json()["items"]}
        assert {"three", "two", "again"} <= set(stored)
        # The refused write is all there (etcd may yet have committed it) or not at all.
        assert "one" not in stored or stored["one"]["data"] == {"whole": "yes"}
    finally:
        server.stop()
        cluster.stop()


def _free_pairs(count: int) -> list[int]:
    """Ports p with p + 1 free too (an etcd member's client and peer ports)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port + 1 not in ports and port - 1 not in ports and free_port(port + 1) == port + 1:
            ports.append(port)
    return ports


def test_make_ha_starts_everything_and_ctrl_c_stops_everything(etcd_binary, haproxy_binary, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from ha_control_plane import ROOT
    port, etcd_ports, apiserver_ports = free_port(), _free_pairs(3), [free_port() for _ in range(2)]
    plane = subprocess.Popen(
        [sys.executable, str(ROOT / "02-apiserver" / "ha_control_plane.py"), "--dir", str(tmp_path), "--port", str(port),
         "--etcd-ports", ",".join(map(str, etcd_ports)), "--apiserver-ports", ",".join(map(str, apiserver_ports))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        wait_for(lambda: (tmp_path / "controller-manager2.pid").exists(), timeout=90,
                 what="the control plane's pid files")
        pids = [int((tmp_path / f"{name}.pid").read_text()) for name in
                ("etcd0", "etcd1", "etcd2", "apiserver1", "apiserver2", "haproxy",
                 "scheduler1", "scheduler2", "controller-manager1", "controller-manager2")]
        api = Client(f"http://127.0.0.1:{port}")
        assert api.post(CONFIGMAPS, {"metadata": {"name": "through-haproxy"}}).status_code == 201
        plane.send_signal(signal.SIGINT)              # what Ctrl-C sends
        output, _ = plane.communicate(timeout=30)
    finally:
        if plane.poll() is None:
            plane.kill()
    assert plane.returncode == 0, output
    assert ("a control plane of 3 etcd members, 2 API servers, 2 schedulers and 2 controller managers" in output
            and output.endswith("stopped\n"))
    assert "scheduler1 leads kube-scheduler" in " ".join(output.split()), output
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read(), pid
