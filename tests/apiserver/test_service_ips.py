"""Services' cluster IPs and node ports (02-apiserver/extensions/service_ips.py), on a real server.

Each test that needs a range of its own starts a server of its own; the
messages are Kubernetes 1.32's (pkg/registry/core/service/storage/alloc.go
and the ipallocator and portallocator errors)."""
from __future__ import annotations

import ipaddress
import threading

import pytest

from apiserver_harness import APIServer, Client, unique

SERVICES = "/api/v1/namespaces/default/services"


def service(name: str, **spec) -> dict:
    spec.setdefault("ports", [{"port": 80, "targetPort": 8080}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def server(tmp_path):
    started = APIServer(tmp_path / "data", "--secure-port", "0").start()
    yield started
    started.stop()


@pytest.fixture
def api(server) -> Client:
    return Client(server.url)


def test_the_kubernetes_service_is_there_at_the_first_address(api):
    svc = api.get(f"{SERVICES}/kubernetes").json()
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}


def test_concurrent_creates_never_get_the_same_ip(api):
    names = [unique("svc") for _ in range(40)]
    answers = {}

    def create(name):
        answers[name] = api.post(SERVICES, service(name))
    threads = [threading.Thread(target=create, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.status_code == 201 for r in answers.values()), [r.text for r in answers.values() if r.status_code != 201]
    ips = [r.json()["spec"]["clusterIP"] for r in answers.values()]
    assert len(set(ips)) == len(ips) and "10.96.0.1" not in ips
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12") for ip in ips)
    assert all(r.json()["spec"]["clusterIPs"] == [r.json()["spec"]["clusterIP"]] for r in answers.values())


def test_a_requested_ip_is_honoured_once_and_refused_after(api):
    first = api.post(SERVICES, service(unique("dns"), clusterIP="10.96.0.10"))
    assert first.status_code == 201 and first.json()["spec"]["clusterIP"] == "10.96.0.10"
    name = unique("dns")
    again = api.post(SERVICES, service(name, clusterIP="10.96.0.10"))
    assert again.status_code == 422
    assert again.json()["message"] == (f'Service "{name}" is invalid: spec.clusterIPs: Invalid value: '
                                       '[]string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: '
                                       'provided IP is already allocated')
    far = api.post(SERVICES, service(name, clusterIP="10.0.0.5"))
    assert far.status_code == 422 and far.json()["message"].endswith(
        "failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12")
    taken = api.post(SERVICES, service(name, clusterIP="10.96.0.1"))       # the kubernetes Service's
    assert taken.status_code == 422 and "provided IP is already allocated" in taken.json()["message"]


def test_a_deleted_service_gives_its_ip_back(api):
    name = unique("svc")
    assert api.post(SERVICES, service(name, clusterIP="10.96.0.20")).status_code == 201
    assert api.delete(f"{SERVICES}/{name}").status_code == 200
    assert api.post(SERVICES, service(unique("svc"), clusterIP="10.96.0.20")).status_code == 201


def test_headless_and_external_name_services_get_no_ip(api):
    headless = api.post(SERVICES, service(unique("headless"), clusterIP="None")).json()
    assert headless["spec"]["clusterIP"] == "None"
    external = api.post(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": unique("ext")},
                                   "spec": {"type": "ExternalName", "externalName": "example.com"}}).json()
    assert "clusterIP" not in external["spec"]


def test_node_ports_from_the_range_once_each(api):
    first = api.post(SERVICES, service(unique("np"), type="NodePort")).json()
    port = first["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    name = unique("np")
    again = api.post(SERVICES, service(name, type="NodePort", ports=[{"port": 80, "nodePort": port}]))
    assert again.status_code == 422
    assert again.json()["message"] == (f'Service "{name}" is invalid: spec.ports[0].nodePort: Invalid value: '
                                       f'{port}: provided port is already allocated')
    low = api.post(SERVICES, service(name, type="NodePort", ports=[{"port": 80, "nodePort": 8080}]))
    assert low.status_code == 422 and low.json()["message"].endswith(
        "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767")


def test_an_update_that_leaves_them_out_keeps_the_ip_and_node_ports(api):
    name = unique("np")
    created = api.post(SERVICES, service(name, type="NodePort")).json()
    replaced = service(name, type="NodePort")          # as in the manifest: no clusterIP, no nodePort
    replaced["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = api.put(f"{SERVICES}/{name}", replaced)
    assert updated.status_code == 200, updated.text
    assert updated.json()["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    assert updated.json()["spec"]["ports"][0]["nodePort"] == created["spec"]["ports"][0]["nodePort"]
    # Becoming a ClusterIP service gives the node port back; becoming NodePort again gets one.
    as_cluster_ip = dict(updated.json(), spec={**updated.json()["spec"], "type": "ClusterIP",
                                               "externalTrafficPolicy": None,
                                               "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]})
    back = api.put(f"{SERVICES}/{name}", as_cluster_ip)
    assert back.status_code == 200, back.text
    assert "nodePort" not in back.json()["spec"]["ports"][0]


def test_a_restarted_server_knows_what_is_taken(tmp_path):
    server = APIServer(tmp_path / "data", "--secure-port", "0").start()
    api = Client(server.url)
    try:
        kept = api.post(SERVICES, service(unique("svc"), clusterIP="10.96.0.30")).json()
    finally:
        server.stop()
    server = APIServer(tmp_path / "data", "--secure-port", "0").start()
    api = Client(server.url)
    try:
        again = api.post(SERVICES, service(unique("svc"), clusterIP="10.96.0.30"))
        assert again.status_code == 422 and "provided IP is already allocated" in again.json()["message"]
        assert api.get(f"{SERVICES}/{kept['metadata']['name']}").json()["spec"]["clusterIP"] == "10.96.0.30"
    finally:
        server.stop()


def test_a_full_range_says_so(tmp_path):
    # 10.213.5.0/29: .1 is the kubernetes Service's, .2 to .6 are left.
    server = APIServer(tmp_path / "data", "--secure-port", "0", "--service-cluster-ip-range", "10.213.5.0/29").start()
    api = Client(server.url)
    try:
        made = [api.post(SERVICES, service(unique("svc"))) for _ in range(5)]
        assert sorted(r.json()["spec"]["clusterIP"] for r in made) == [f"10.213.5.{i}" for i in range(2, 7)]
        full = api.post(SERVICES, service(unique("svc")))
        assert full.status_code == 500
        assert full.json()["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"
    finally:
        server.stop()


@pytest.mark.parametrize("flag, value, complaint", [
    ("--service-cluster-ip-range", "banana", "--service-cluster-ip-range 'banana':"),
    ("--service-node-port-range", "30000", "--service-node-port-range '30000': FIRST-LAST"),
    ("--advertise-address", "master", "--advertise-address 'master' is not an IP address"),
])
def test_bad_service_flags_are_one_line_errors(tmp_path, flag, value, complaint):
    import subprocess
    import sys
    from apiserver_harness import APISERVER
    done = subprocess.run([sys.executable, str(APISERVER), "--data-dir", str(tmp_path / "d"), flag, value],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and complaint in done.stderr, done.stderr
