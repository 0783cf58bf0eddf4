"""Cluster DNS (05-proxy-dns/cluster_dns.py) against a real API server, over UDP and TCP.

Each name type of Kubernetes' DNS specification, the difference between
NXDOMAIN and NODATA, names outside the cluster, truncation and the TCP
retry. The server runs as a process on loopback, as a learner runs it;
queries are made with dnspython."""
from __future__ import annotations

import subprocess
import sys

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest

from apiserver_harness import APIServer, Client, unique
from network_harness import ROOT
from polling import free_port, wait_for

NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """An API server with Services of every kind, and the DNS server on it."""
    tmp = tmp_path_factory.mktemp("dns")
    server = APIServer(tmp / "data", "--secure-port", "0").start()
    api = Client(server.url)
    names = {kind: unique(kind) for kind in ("web", "db", "mail", "big")}
    post = lambda path, body: api.post(path, body).json()      # noqa: E731
    services = f"/api/v1/namespaces/{NS}/services"
    web = post(services, {"metadata": {"name": names["web"]},
                          "spec": {"selector": {"app": "web"},
                                   "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53,
                                                                             "protocol": "UDP"}]}})
    post(services, {"metadata": {"name": names["db"]}, "spec": {"clusterIP": "None", "ports": [{"port": 5432}]}})
    post(f"/api/v1/namespaces/{NS}/endpoints", {"metadata": {"name": names["db"]}, "subsets": [
        {"addresses": [{"ip": "10.244.0.5", "hostname": "db-0"}, {"ip": "10.244.1.6", "hostname": "db-1"}],
         "ports": [{"port": 5432}]}]})
    post(services, {"metadata": {"name": names["mail"]},
                    "spec": {"type": "ExternalName", "externalName": "mail.example.com"}})
    # A headless Service with too many addresses for 512 bytes of UDP.
    post(services, {"metadata": {"name": names["big"]}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}})
    post(f"/api/v1/namespaces/{NS}/endpoints", {"metadata": {"name": names["big"]}, "subsets": [
        {"addresses": [{"ip": f"10.244.2.{i}"} for i in range(2, 60)], "ports": [{"port": 80}]}]})
    port = free_port()
    log = open(tmp / "dns.log", "w")
    process = subprocess.Popen([sys.executable, str(ROOT / "05-proxy-dns" / "cluster_dns.py"), "--apiserver",
                                server.url, "--address", "127.0.0.1", "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        wait_for(lambda: "serving" in (tmp / "dns.log").read_text(), 30, what="the DNS server serving")
        yield {"port": port, "web_ip": web["spec"]["clusterIP"], "api": api, **names}
    finally:
        process.terminate()
        process.wait(10)
        server.stop()


def ask(cluster, name: str, rdtype: str = "A", tcp: bool = False, payload: int | None = None) -> dns.message.Message:
    query = dns.message.make_query(name, rdtype, use_edns=payload is not None, payload=payload or 512)
    send = dns.query.tcp if tcp else dns.query.udp
    return send(query, "127.0.0.1", port=cluster["port"], timeout=5)


def values(response: dns.message.Message) -> list[str]:
    return sorted(r.to_text() for rrset in response.answer for r in rrset)


def svc(cluster, key: str) -> str:
    return f"{cluster[key]}.{NS}.svc.cluster.local."


@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_a_service_name_is_its_cluster_ip(cluster, tcp):
    response = ask(cluster, svc(cluster, "web"), tcp=tcp)
    assert response.rcode() == dns.rcode.NOERROR and values(response) == [cluster["web_ip"]]
    assert response.flags & dns.flags.AA and response.answer[0].ttl == 5


def test_a_headless_service_is_its_ready_pods_and_each_pod_has_a_name(cluster):
    assert values(ask(cluster, svc(cluster, "db"))) == ["10.244.0.5", "10.244.1.6"]
    assert values(ask(cluster, f"db-1.{svc(cluster, 'db')}")) == ["10.244.1.6"]


def test_named_ports_are_srv_records(cluster):
    response = ask(cluster, f"_http._tcp.{svc(cluster, 'web')}", "SRV")
    assert values(response) == [f"0 100 80 {svc(cluster, 'web')}"]
    assert values(ask(cluster, f"_dns._udp.{svc(cluster, 'web')}", "SRV")) == [f"0 100 53 {svc(cluster, 'web')}"]


def test_an_external_name_service_is_a_cname(cluster):
    assert values(ask(cluster, svc(cluster, "mail"))) == ["mail.example.com."]


def test_a_pod_name_is_its_ip_and_a_cluster_ip_points_back_to_its_name(cluster):
    assert values(ask(cluster, f"10-244-3-7.{NS}.pod.cluster.local.")) == ["10.244.3.7"]
    reverse = dns.reversename.from_address(cluster["web_ip"]).to_text()
    assert values(ask(cluster, reverse, "PTR")) == [svc(cluster, "web")]


def test_nxdomain_for_no_such_name_nodata_for_no_such_record_both_with_the_soa(cluster):
    missing = ask(cluster, f"nothing-here.{NS}.svc.cluster.local.")
    assert missing.rcode() == dns.rcode.NXDOMAIN and not missing.answer
    nodata = ask(cluster, svc(cluster, "web"), "AAAA")
    assert nodata.rcode() == dns.rcode.NOERROR and not nodata.answer
    for response in (missing, nodata):
        assert response.authority[0].rdtype == dns.rdatatype.SOA and response.authority[0].ttl == 5


def test_names_outside_the_cluster_are_refused(cluster):
    assert ask(cluster, "example.com.").rcode() == dns.rcode.REFUSED


def test_a_big_answer_is_truncated_over_udp_and_whole_over_tcp(cluster):
    udp = ask(cluster, svc(cluster, "big"))
    assert udp.flags & dns.flags.TC and not udp.answer
    assert len(values(ask(cluster, svc(cluster, "big"), tcp=True))) == 58
    bigger = ask(cluster, svc(cluster, "big"), payload=4096)            # EDNS: the client takes more
    assert not bigger.flags & dns.flags.TC and len(values(bigger)) == 58


def test_garbage_gets_no_answer_and_the_server_keeps_going(cluster):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"\x00\x01not dns at all", ("127.0.0.1", cluster["port"]))
    assert values(ask(cluster, svc(cluster, "web"))) == [cluster["web_ip"]]


def test_a_new_service_has_its_name_as_soon_as_the_watch_brings_it(cluster):
    # Environment variables name only what existed when a pod started; DNS follows the watch.
    name = unique("late")
    made = cluster["api"].post(f"/api/v1/namespaces/{NS}/services",
                               {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}).json()
    found = wait_for(lambda: values(ask(cluster, f"{name}.{NS}.svc.cluster.local.")), 10,
                     what=f"a name for the new Service {name}")
    assert found == [made["spec"]["clusterIP"]]


def test_a_lookup_that_fails_is_servfail_and_the_server_keeps_going():
    """An object shaped as nobody foresaw (validation lets few through, but
    a bug should cost one answer, not the server)."""
    import cluster_dns

    class Broken:
        def get(self, namespace, name):
            return {"spec": {"type": "ClusterIP", "clusterIP": 42}}        # not a string
        def list(self):
            return []
    records = cluster_dns.Records(Broken(), Broken())
    wire = dns.message.make_query("web.default.svc.cluster.local.", "A").to_wire()
    reply = dns.message.from_wire(cluster_dns.answer(records, wire, max_size=512))
    assert reply.rcode() == dns.rcode.SERVFAIL


def test_a_headless_service_with_nobody_ready_is_nodata_and_its_srv_names_each_pod(cluster):
    name = unique("empty")
    cluster["api"].post(f"/api/v1/namespaces/{NS}/services",
                        {"metadata": {"name": name}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}})
    response = wait_for(lambda: (r := ask(cluster, f"{name}.{NS}.svc.cluster.local.")).rcode() == dns.rcode.NOERROR
                        and r, 10, what="the new headless Service known")
    assert not response.answer and response.authority                     # NODATA, parseable
    peers = unique("peers")
    api = cluster["api"]
    api.post(f"/api/v1/namespaces/{NS}/services", {"metadata": {"name": peers}, "spec": {
        "clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}})
    api.post(f"/api/v1/namespaces/{NS}/endpoints", {"metadata": {"name": peers}, "subsets": [
        {"addresses": [{"ip": "10.244.7.7", "hostname": "pg-0"}, {"ip": "10.244.7.8"}],
         "ports": [{"name": "pg", "port": 5432}]}]})
    domain = f"{peers}.{NS}.svc.cluster.local."
    srv = wait_for(lambda: values(ask(cluster, f"_pg._tcp.{domain}", "SRV")), 10, what="the headless SRV records")
    assert srv == [f"0 100 5432 10-244-7-8.{domain}", f"0 100 5432 pg-0.{domain}"]   # one per pod, by its name
    assert values(ask(cluster, f"10-244-7-8.{domain}")) == ["10.244.7.8"]


def test_a_response_sent_to_the_server_gets_no_answer(cluster):
    import socket
    reply = dns.message.make_response(dns.message.make_query("x.cluster.local.", "A")).to_wire()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1)
        sock.sendto(reply, ("127.0.0.1", cluster["port"]))
        with pytest.raises(socket.timeout):
            sock.recv(512)
