"""The ingress controller end to end: a real API server, the real controller
process, real HTTP (and TLS) from this test to plain HTTP servers standing in
for pods.

The "pods" are servers in this test process. Their addresses go into
EndpointSlices written through the API, as the endpointslice controller
would write them. The API refuses loopback addresses in a slice (no pod
has one), so they listen on this machine's own address: the packets still
never leave the machine. No Docker, no namespaces: the routing is the
subject here; tests/lessons replays the lesson on the namespace machines.
"""
from __future__ import annotations

import base64
import datetime
import http.client
import json
import os
import socket
import ssl
import subprocess
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apiserver_harness import APIServer, Client, unique
from common.addresses import this_machines_address
from polling import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "05-proxy-dns" / "ingress_controller.py"
PUBLISHED = "192.0.2.10"            # what the controller writes to status (TEST-NET-1: reaches nothing)
MAX_BODY = 32 * 1024 * 1024
NETWORKING = "/apis/networking.k8s.io/v1"


# ----------------------------------------------------------------- the "pods"

class Pod(ThreadingHTTPServer):
    """An HTTP server that says who it is and what it was sent."""
    daemon_threads = True

    def __init__(self, name: str, address: str, handler=None):
        self.name = name
        super().__init__((address, 0), handler or EchoHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]


class EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"pod": self.server.name, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """Counts the body as it comes; tells the test once the first MiB is in."""
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            return self.chunked_body()
        left, received = int(self.headers.get("Content-Length", "0")), 0
        while left:
            piece = self.rfile.read1(min(65536, left))
            if not piece:
                break
            left -= len(piece)
            received += len(piece)
            if received >= 1024 * 1024 and getattr(self.server, "first_mib", None):
                self.server.first_mib.set()
        body = json.dumps({"pod": self.server.name, "received": received}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunked_body(self) -> None:
        """A chunked body, decoded: how many bytes it held."""
        received = 0
        while True:
            line = self.rfile.readline()
            if not line:                  # the client gave up mid-body (a test does): nothing to answer
                return
            if not (size := int(line.split(b";")[0], 16)):
                break
            received += len(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b""):
            pass                                              # trailers
        body = json.dumps({"pod": self.server.name, "received": received, "chunked": True}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def address() -> str:
    found = this_machines_address()
    if found.startswith("127."):
        pytest.skip("this machine has no address but loopback, and an EndpointSlice may not hold one")
    return found


@pytest.fixture(scope="module")
def pods(address):
    """Make pods by name; all are stopped at the end."""
    made: list[Pod] = []

    def make(name: str, handler=None) -> Pod:
        pod = Pod(name, address, handler)
        threading.Thread(target=pod.serve_forever, daemon=True).start()
        made.append(pod)
        return pod
    yield make
    for pod in made:
        pod.shutdown()
        pod.server_close()


# ---------------------------------------------------- the API server, the controller

@pytest.fixture(scope="module")
def api(tmp_path_factory):
    server = APIServer(tmp_path_factory.mktemp("ingress") / "data").start()
    yield Client(server.url)
    server.stop()


@pytest.fixture(scope="module")
def controller(api, tmp_path_factory):
    http_port, https_port = free_port(), free_port()
    log_path = tmp_path_factory.mktemp("controller") / "ingress.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(CONTROLLER), "--apiserver", api.url, "--port", str(http_port),
             "--https-port", str(https_port), "--bind-address", "127.0.0.1", "--publish-address", PUBLISHED,
             "--client-timeout", "2", "--upstream-timeout", "3", "--connect-timeout", "0.5",
             "--max-body-size", str(MAX_BODY), "-v"],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def listening() -> bool:
        assert process.poll() is None, f"the controller exited:\n{log_path.read_text()}"
        try:
            socket.create_connection(("127.0.0.1", https_port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_for(listening, 30, what="the ingress controller's ports")
    yield {"http": http_port, "https": https_port, "log": log_path}
    process.terminate()
    process.wait(10)


@pytest.fixture
def namespace(api) -> str:
    name = unique("ing")
    assert api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name}}).status_code == 201
    return name


def service(api, namespace: str, name: str, *pods: Pod, ready: bool = True, port_name: str = "http") -> None:
    """A Service on port 80 and, per pod, an EndpointSlice with its address."""
    response = api.post(f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"ports": [{"name": port_name, "port": 80, "protocol": "TCP"}]}})
    assert response.status_code == 201, response.text
    for pod in pods:
        slice_for(api, namespace, name, pod, ready, port_name)


def slice_for(api, namespace, service_name, pod: Pod, ready: bool = True, port_name: str = "http") -> str:
    name = f"{service_name}-{pod.port}"
    response = api.post(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": service_name}},
        "addressType": "IPv4", "ports": [{"name": port_name, "port": pod.port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [pod.server_address[0]], "conditions": {"ready": ready}}]})
    assert response.status_code == 201, response.text
    return name


def ingress(api, namespace: str, name: str, rules: list, **spec) -> dict:
    """rules: [(host, [(path, pathType, service), ...]), ...]"""
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": {"ingressClassName": "groundup", **spec,
                     "rules": [{**({"host": host} if host else {}), "http": {"paths": [
                         {"path": p, "pathType": t, "backend": {"service": {"name": s, "port": {"number": 80}}}}
                         for p, t, s in paths]}} for host, paths in rules]}}
    if spec.get("ingressClassName", "x") is None:
        del body["spec"]["ingressClassName"]
    response = api.post(f"{NETWORKING}/namespaces/{namespace}/ingresses", body)
    assert response.status_code == 201, response.text
    return response.json()


def delete(api, path: str) -> None:
    """DELETE, again while it conflicts with the controller's status write."""
    wait_for(lambda: api.delete(path).status_code in (200, 404), 10, what=f"DELETE {path}")


def get(controller, host: str, path: str = "/", headers: dict | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def pod_of(controller, host: str, path: str = "/") -> str | None:
    status, body = get(controller, host, path)
    return json.loads(body)["pod"] if status == 200 else None


def routed(controller, host, path, pod_name, timeout=10) -> None:
    """Until the controller sends host+path to pod_name (it learns of changes by watch)."""
    wait_for(lambda: pod_of(controller, host, path) == pod_name, timeout, what=f"{host}{path} -> {pod_name}")


# ----------------------------------------------------------------- routing

def test_two_apps_behind_one_address_by_host_and_by_path(api, controller, pods, namespace):
    shop, blog, api_pod = pods("shop"), pods("blog"), pods("api")
    for name, pod in (("shop", shop), ("blog", blog), ("api", api_pod)):
        service(api, namespace, name, pod)
    host = f"shop.{namespace}.example"
    ingress(api, namespace, "apps", [
        (host, [("/", "Prefix", "shop"), ("/api", "Prefix", "api")]),
        (f"blog.{namespace}.example", [("/", "Prefix", "blog")])])
    routed(controller, host, "/", "shop")
    assert pod_of(controller, host, "/api/orders") == "api"
    assert pod_of(controller, host, "/apiary") == "shop"                   # element-wise prefixes
    assert pod_of(controller, f"blog.{namespace}.example", "/api") == "blog"
    status, body = get(controller, f"nobody.{namespace}.example")
    assert status == 404 and "no rule matches" in body


def test_the_pod_hears_who_asked(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    host = f"web.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "web")
    status, body = get(controller, host + ":8080", "/x?y=1", {"X-Forwarded-For": "203.0.113.9"})
    headers = json.loads(body)["headers"]
    assert status == 200 and json.loads(body)["path"] == "/x?y=1"
    assert headers["x-forwarded-for"] == "203.0.113.9, 127.0.0.1"        # appended to what came
    assert headers["x-forwarded-host"] == host + ":8080" and headers["host"] == host + ":8080"
    assert headers["x-forwarded-proto"] == "http" and headers["x-real-ip"] == "127.0.0.1"
    # -v: a line per request, naming the pod that answered.
    wait_for(lambda: f"request host={host}:8080 path=/x?y=1 endpoint=" in controller["log"].read_text(), 10,
             what="the request's log line")


def test_round_robin_among_ready_endpoints_only(api, controller, pods, namespace):
    one, two, not_ready = pods("one"), pods("two"), pods("not-ready")
    service(api, namespace, "web", one, two)
    slice_for(api, namespace, "web", not_ready, ready=False)
    host = f"rr.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    wait_for(lambda: {pod_of(controller, host) for _ in range(4)} == {"one", "two"}, 10, what="both endpoints")
    seen = [pod_of(controller, host) for _ in range(6)]
    assert sorted(seen) == ["one"] * 3 + ["two"] * 3                       # in turn: never the same twice running
    assert all(a != b for a, b in zip(seen, seen[1:]))


def test_default_backend_and_503_when_nothing_is_ready(api, controller, pods, namespace):
    service(api, namespace, "fallback", pods("fallback"))
    service(api, namespace, "empty")                                        # a Service with no endpoint at all
    host = f"d.{namespace}.example"
    ingress(api, namespace, "d", [(host, [("/empty", "Exact", "empty"), ("/missing", "Exact", "missing")])],
            defaultBackend={"service": {"name": "fallback", "port": {"number": 80}}})
    routed(controller, host, "/other", "fallback")
    # An Ingress with rules: its default backend takes its own hosts' unmatched paths, no other host's.
    assert get(controller, f"elsewhere.{namespace}.example", "/")[0] == 404
    status, body = get(controller, host, "/empty")
    assert status == 503 and f'service "{namespace}/empty" has no ready endpoint' in body
    status, body = get(controller, host, "/missing")
    assert status == 503 and f'service "{namespace}/missing" not found' in body
    # An Ingress with no rules: the catch-all for what no rule of any host matches.
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "catch-all"},
            "spec": {"ingressClassName": "groundup",
                     "defaultBackend": {"service": {"name": "fallback", "port": {"number": 80}}}}}
    assert api.post(f"{NETWORKING}/namespaces/{namespace}/ingresses", body).status_code == 201
    try:
        routed(controller, f"elsewhere.{namespace}.example", "/", "fallback")
    finally:   # the other tests expect a 404 where no rule matches
        delete(api, f"{NETWORKING}/namespaces/{namespace}/ingresses/catch-all")
        wait_for(lambda: get(controller, f"elsewhere.{namespace}.example")[0] == 404, 10,
                 what="the catch-all gone")


def test_a_rule_edited_live_takes_effect_without_a_restart(api, controller, pods, namespace):
    service(api, namespace, "old", pods("old"))
    service(api, namespace, "new", pods("new"))
    host = f"live.{namespace}.example"
    ingress(api, namespace, "live", [(host, [("/", "Prefix", "old")])])
    routed(controller, host, "/", "old")
    path = f"{NETWORKING}/namespaces/{namespace}/ingresses/live"
    # A merge patch, as `kubectl edit` sends: the controller writes the status meanwhile.
    rules = [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
        "service": {"name": "new", "port": {"number": 80}}}}]}}]
    assert api.patch(path, {"spec": {"rules": rules}}).status_code == 200
    routed(controller, host, "/", "new")
    delete(api, path)
    wait_for(lambda: get(controller, host)[0] == 404, 10, what="the deleted Ingress's routes gone")


def test_only_ingresses_of_our_class_and_the_default_class(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    theirs, classless = f"nginx.{namespace}.example", f"none.{namespace}.example"
    ingress(api, namespace, "theirs", [(theirs, [("/", "Prefix", "web")])], ingressClassName="nginx")
    ingress(api, namespace, "classless", [(classless, [("/", "Prefix", "web")])], ingressClassName=None)
    mine = f"mine.{namespace}.example"
    ingress(api, namespace, "mine", [(mine, [("/", "Prefix", "web")])])
    routed(controller, mine, "/", "web")
    assert get(controller, theirs)[0] == 404 and get(controller, classless)[0] == 404
    default_class = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                     "metadata": {"name": "groundup",
                                  "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                     "spec": {"controller": "groundup.dev/ingress-controller"}}
    assert api.post(f"{NETWORKING}/ingressclasses", default_class).status_code == 201
    try:
        routed(controller, classless, "/", "web")
        assert get(controller, theirs)[0] == 404                      # naming another class still means theirs
    finally:
        delete(api, f"{NETWORKING}/ingressclasses/groundup")


def test_the_kubernetes_io_fanout_and_virtual_host_examples_route_as_the_page_says(api, controller, pods, namespace):
    """The Ingress page's simple fanout and name-based virtual hosting, with its
    Service names and ports, through a default IngressClass (the examples name none)."""
    service1, service2 = pods("service1"), pods("service2")
    for name, pod, port in (("service1", service1, 4200), ("service2", service2, 8080)):
        response = api.post(f"/api/v1/namespaces/{namespace}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": port, "protocol": "TCP"}]}})
        assert response.status_code == 201
        slice_for(api, namespace, name, pod, port_name="")
    fanout = f"foo.bar.{namespace}.example"
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "simple-fanout-example"},
            "spec": {"rules": [{"host": fanout, "http": {"paths": [
                {"path": "/foo", "pathType": "Prefix",
                 "backend": {"service": {"name": "service1", "port": {"number": 4200}}}},
                {"path": "/bar", "pathType": "Prefix",
                 "backend": {"service": {"name": "service2", "port": {"number": 8080}}}}]}}]}}
    assert api.post(f"{NETWORKING}/namespaces/{namespace}/ingresses", body).status_code == 201
    default_class = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                     "metadata": {"name": "groundup",
                                  "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                     "spec": {"controller": "groundup.dev/ingress-controller"}}
    assert api.post(f"{NETWORKING}/ingressclasses", default_class).status_code == 201
    try:
        routed(controller, fanout, "/foo", "service1")
        assert pod_of(controller, fanout, "/bar/baz") == "service2"
        assert get(controller, fanout, "/")[0] == 404
    finally:
        delete(api, f"{NETWORKING}/ingressclasses/groundup")


def test_status_load_balancer_names_the_node(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    ingress(api, namespace, "web", [(f"s.{namespace}.example", [("/", "Prefix", "web")])])
    path = f"{NETWORKING}/namespaces/{namespace}/ingresses/web"
    wait_for(lambda: (api.get(path).json().get("status") or {}).get("loadBalancer") == {
        "ingress": [{"ip": PUBLISHED}]}, 10, what="status.loadBalancer written")
    # An Ingress moved to another class loses our address.
    assert api.patch(path, {"spec": {"ingressClassName": "nginx"}}).status_code == 200
    wait_for(lambda: not (api.get(path).json().get("status") or {}).get("loadBalancer"), 10,
             what="our address withdrawn")


def test_two_ingresses_claim_one_path_the_oldest_keeps_it(api, controller, pods, namespace):
    service(api, namespace, "first", pods("first"))
    service(api, namespace, "second", pods("second"))
    host = f"c.{namespace}.example"
    ingress(api, namespace, "first", [(host, [("/", "Prefix", "first")])])
    # Created within the same second, the two tie on age; the name decides then ("first" < "second").
    ingress(api, namespace, "second", [(host, [("/", "Prefix", "second")])])
    routed(controller, host, "/", "first")
    wait_for(lambda: f"{namespace}/second: Prefix {host}/ is already served by {namespace}/first"
             in controller["log"].read_text(), 10, what="the conflict logged")
    assert pod_of(controller, host) == "first"


# ----------------------------------------------------------------- TLS

def certificate(common_name: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def https_get(controller, host: str, cafile: Path | None):
    context = ssl.create_default_context(cafile=str(cafile)) if cafile else ssl._create_unverified_context()
    conn = http.client.HTTPSConnection("127.0.0.1", controller["https"], timeout=10, context=context)
    # SNI and the certificate check name the host, not 127.0.0.1.
    conn.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", controller["https"]), timeout=10),
                                    server_hostname=host)
    try:
        conn.request("GET", "/", headers={"Host": host})
        response = conn.getresponse()
        subject = conn.sock.getpeercert(binary_form=True)
        return response.status, json.loads(response.read()), x509.load_der_x509_certificate(subject)
    finally:
        conn.close()


def test_tls_is_ended_with_the_secret_the_ingress_names(api, controller, pods, namespace, tmp_path):
    service(api, namespace, "web", pods("web"))
    host = f"secure.{namespace}.example"
    cert, key = certificate(host)
    (tmp_path / "ca.pem").write_bytes(cert)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "secure-tls"}, "type": "kubernetes.io/tls",
              "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}}
    assert api.post(f"/api/v1/namespaces/{namespace}/secrets", secret).status_code == 201
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])],
            tls=[{"hosts": [host], "secretName": "secure-tls"}])

    def verified() -> bool:
        try:
            return https_get(controller, host, tmp_path / "ca.pem")[0] == 200
        except ssl.SSLError:
            return False                        # still the default certificate
    wait_for(verified, 10, what="the host's own certificate")
    status, body, _ = https_get(controller, host, tmp_path / "ca.pem")
    assert body["pod"] == "web" and body["headers"]["x-forwarded-proto"] == "https"


def test_a_secret_that_is_not_tls_leaves_the_default_certificate_and_a_log_line(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    host = f"opaque.{namespace}.example"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "not-tls"}, "type": "Opaque",
              "data": {"password": base64.b64encode(b"hunter2").decode()}}
    assert api.post(f"/api/v1/namespaces/{namespace}/secrets", secret).status_code == 201
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])], tls=[{"hosts": [host], "secretName": "not-tls"}])
    wait_for(lambda: f'secret "{namespace}/not-tls" is of type Opaque, not kubernetes.io/tls'
             in controller["log"].read_text(), 10, what="the log line")
    status, body, cert = https_get(controller, host, None)
    assert status == 200 and body["pod"] == "web"
    assert "Fake Certificate" in cert.subject.rfc4514_string()


# ----------------------------------------------------------------- streaming and bad input

def test_a_large_upload_streams_through_not_held_whole(api, controller, pods, namespace):
    """The pod sees the first MiB while the client still holds back the rest:
    a proxy that buffered the body whole could not pass this test."""
    pod = pods("sink")
    pod.first_mib = threading.Event()
    service(api, namespace, "sink", pod)
    host = f"up.{namespace}.example"
    ingress(api, namespace, "sink", [(host, [("/", "Prefix", "sink")])])
    routed(controller, host, "/", "sink")
    total, piece = 24 * 1024 * 1024, b"x" * (1024 * 1024)
    conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=20)
    conn.putrequest("POST", "/upload", skip_host=True)
    conn.putheader("Host", host)
    conn.putheader("Content-Length", str(total))
    conn.endheaders()
    conn.send(piece * 2)
    assert pod.first_mib.wait(10), "the pod saw nothing of the body while the client was still sending"
    for _ in range(total // len(piece) - 2):
        conn.send(piece)
    response = conn.getresponse()
    assert response.status == 200 and json.loads(response.read())["received"] == total
    conn.close()


def test_a_chunked_upload_passes_chunk_by_chunk(api, controller, pods, namespace):
    service(api, namespace, "sink", pods("sink"))
    host = f"chunks.{namespace}.example"
    ingress(api, namespace, "sink", [(host, [("/", "Prefix", "sink")])])
    routed(controller, host, "/", "sink")
    conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=20)
    pieces = [b"a" * 10, b"b" * 70000, b"c"]
    conn.request("POST", "/", body=iter(pieces), headers={"Host": host}, encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read()) == {"pod": "sink", "received": 70011, "chunked": True}
    conn.close()


class SlowDownloadHandler(BaseHTTPRequestHandler):
    """Sends a first piece, then waits for the test to have it before the rest."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        first = b"first piece\n"
        self.wfile.write(f"{len(first):x}\r\n".encode() + first + b"\r\n")
        self.wfile.flush()
        self.server.client_has_first.wait(10)
        rest = b"the rest\n"
        self.wfile.write(f"{len(rest):x}\r\n".encode() + rest + b"\r\n0\r\n\r\n")


def test_a_response_streams_back_as_the_pod_writes_it(api, controller, pods, namespace):
    pod = pods("slow", SlowDownloadHandler)
    pod.client_has_first = threading.Event()
    pod.client_has_first.set()                                 # no waiting while the route is being made
    service(api, namespace, "slow", pod)
    host = f"down.{namespace}.example"
    ingress(api, namespace, "slow", [(host, [("/", "Prefix", "slow")])])
    wait_for(lambda: get(controller, host)[0] != 404, 10, what="the route")
    pod.client_has_first.clear()
    conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=20)
    conn.request("GET", "/", headers={"Host": host})
    response = conn.getresponse()
    assert response.read1(100) == b"first piece\n"             # before the pod has sent the rest
    pod.client_has_first.set()
    assert response.read() == b"the rest\n"
    conn.close()


def test_a_body_over_the_limit_gets_413_at_once(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    host = f"big.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "web")
    conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=10)
    conn.putrequest("POST", "/", skip_host=True)
    conn.putheader("Host", host)
    conn.putheader("Content-Length", str(1024 ** 3))                    # 1 GiB announced, nothing sent
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and "--max-body-size" in response.read().decode()
    conn.close()


class ResettingHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.request.recv(65536)
        self.request.close()                                            # RST, not FIN


def test_a_pod_that_resets_connections_gets_502_and_nothing_is_stuck(api, controller, pods, namespace):
    service(api, namespace, "broken", pods("broken", ResettingHandler))
    service(api, namespace, "fine", pods("fine"))
    host = f"reset.{namespace}.example"
    ingress(api, namespace, "r", [(host, [("/", "Prefix", "broken"), ("/fine", "Prefix", "fine")])])
    routed(controller, host, "/fine", "fine")
    status, body = get(controller, host, "/")
    assert status == 502 and "took the request" in body
    assert pod_of(controller, host, "/fine") == "fine"


def test_a_client_that_stalls_is_let_go_and_others_are_served(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    host = f"stall.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "web")
    stalled = socket.create_connection(("127.0.0.1", controller["http"]), timeout=10)
    stalled.sendall(f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\nonly part".encode())
    assert pod_of(controller, host) == "web"                           # served meanwhile
    answer = b""
    while chunk := stalled.recv(4096):                                 # the controller ends it (--client-timeout 2)
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"the request body" in answer
    stalled.close()


def test_a_pod_going_away_during_a_loop_of_requests_fails_none(api, controller, pods, namespace):
    one, two = pods("one"), pods("two")
    service(api, namespace, "web", one, two)
    host = f"loop.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    wait_for(lambda: {pod_of(controller, host) for _ in range(4)} == {"one", "two"}, 10, what="both endpoints")
    failures, answers, stop = [], [], threading.Event()

    def loop():
        while not stop.is_set():
            status, body = get(controller, host)
            (answers if status == 200 else failures).append(body)
    runner = threading.Thread(target=loop)
    runner.start()
    try:
        wait_for(lambda: len(answers) > 20, 10, what="requests flowing")
        two.shutdown()
        two.server_close()                                              # gone, still in its slice
        count = len(answers)
        wait_for(lambda: len(answers) > count + 40, 20, what="more requests after the pod went")
    finally:
        stop.set()
        runner.join()
    assert failures == []


def raw(controller, request: bytes, then: bytes = b"") -> bytes:
    """Send request bytes as they are, then (once an answer began) `then`;
    everything the controller sends until it closes the connection."""
    sock = socket.create_connection(("127.0.0.1", controller["http"]), timeout=10)
    try:
        sock.sendall(request)
        answer = sock.recv(65536)
        if then:
            try:
                sock.sendall(then)
            except OSError:
                pass                                                    # closed already: what we want
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer
    finally:
        sock.close()


@pytest.mark.parametrize("framing, status", [
    (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"400"),        # CL.TE / TE.CL smuggling
    (b"Content-Length: 0\r\nContent-Length: 5\r\n", b"400"),
    (b"Host: other.example\r\n", b"400"),                                    # a second Host
    (b"Transfer-Encoding: chunked, gzip\r\n", b"400"),                       # chunked not last: no end
    (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", b"400"),
    (b"Transfer-Encoding: gzip, chunked\r\n", b"501"),
    (b"X-Folded: a\r\n b\r\n", b"400"),                                    # obs-fold (RFC 9112 5.2)
    (b"Content-Length : 5\r\n", b"400"),                                    # a space before the colon
    (b"X-Bare: a\nContent-Length: 5\r\n", b"400"),                         # a bare LF inside a line
])
def test_framing_a_pod_could_read_otherwise_is_refused_and_the_connection_closed(
        api, controller, pods, namespace, framing, status):
    """RFC 9112 section 6.3: the hidden second request never reaches a pod."""
    service(api, namespace, "web", pods("web"))
    host = f"smuggle.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "web")
    hidden = b"GET /hidden HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n"
    body = b"0\r\n\r\n" + hidden
    answer = raw(controller, b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + framing + b"\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 " + status), answer
    assert answer.count(b"HTTP/1.1") == 1 and b"/hidden" not in answer     # closed: nothing after it was read


def test_the_pod_sees_the_proxys_framing_not_the_clients(api, controller, pods, namespace):
    service(api, namespace, "web", pods("web"))
    host = f"framing.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "web")
    answer = raw(controller, b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nTransfer-Encoding: Chunked\r\n"
                 b"Connection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b'"received": 3, "chunked": true' in answer


def test_a_client_that_expects_100_continue_gets_it_and_then_the_pods_answer(api, controller, pods, namespace):
    """Expect: 100-continue (curl sends it before large bodies): the body
    follows our 100; a body over the limit gets its 413 without one."""
    service(api, namespace, "sink", pods("sink"))
    host = f"continue.{namespace}.example"
    ingress(api, namespace, "sink", [(host, [("/", "Prefix", "sink")])])
    routed(controller, host, "/", "sink")
    sock = socket.create_connection(("127.0.0.1", controller["http"]), timeout=10)
    try:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Length: 5\r\n"
                     b"Expect: 100-continue\r\n\r\n")
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"          # nothing sent yet but the head
        sock.sendall(b"hello")
        answer = b""
        while not answer.endswith(b"}") and (piece := sock.recv(65536)):   # head and body may come apart
            answer += piece
        assert answer.startswith(b"HTTP/1.1 200") and b'"received": 5' in answer
    finally:
        sock.close()
    answer = raw(controller, b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Length: "
                 + str(MAX_BODY + 1).encode() + b"\r\nExpect: 100-continue\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and b"100 Continue" not in answer


class ShortHandler(socketserver.BaseRequestHandler):
    """Announces more than it sends, then closes: a pod that crashed mid-answer."""

    def handle(self) -> None:
        self.request.recv(65536)
        if self.server.chunked:
            self.request.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc")
        else:
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        self.request.close()


@pytest.mark.parametrize("chunked", [False, True])
def test_an_answer_cut_short_closes_the_clients_connection(api, controller, pods, namespace, chunked):
    """The client must see the answer is not whole: the connection ends, and
    a next request on it is not served as if all were well."""
    pod = pods("short", ShortHandler)
    pod.chunked = chunked
    service(api, namespace, "short", pod)
    host = f"short.{namespace}.example"
    ingress(api, namespace, "short", [(host, [("/", "Prefix", "short")])])
    request = b"GET / HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n"
    wait_for(lambda: raw(controller, request).startswith(b"HTTP/1.1 200"), 10, what="the route")
    answer = raw(controller, request, then=request)
    assert answer.startswith(b"HTTP/1.1 200") and b"abc" in answer
    assert answer.count(b"HTTP/1.1") == 1, answer                      # the second request was not taken
    assert not answer.endswith(b"0\r\n\r\n")                          # no chunked end: not whole


class DroppingHandler(socketserver.BaseRequestHandler):
    """Reads a request, counts it, and closes without an answer."""

    def handle(self) -> None:
        if self.request.recv(65536):
            self.server.seen.append(1)
        self.request.close()


class CountingHandler(EchoHandler):
    def do_POST(self) -> None:
        self.server.seen.append(1)
        super().do_POST()


def test_a_dropped_request_is_sent_again_only_if_its_method_is_idempotent(api, controller, pods, namespace):
    """RFC 9110 9.2.2: a POST the pod may have acted on is not re-sent to the next pod."""
    dropper, fine = pods("dropper", DroppingHandler), pods("fine", CountingHandler)
    dropper.seen, fine.seen = [], []
    service(api, namespace, "web", dropper, fine)
    host = f"retry.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "fine")                                # a GET: tried on the next pod
    assert {get(controller, host)[0] for _ in range(4)} == {200}
    dropper.seen.clear()
    statuses = []
    for _ in range(4):
        conn = http.client.HTTPConnection("127.0.0.1", controller["http"], timeout=10)
        conn.request("POST", "/", body=b"", headers={"Host": host, "Content-Length": "0"})
        statuses.append(conn.getresponse().status)
        conn.close()
    assert statuses.count(502) == len(dropper.seen) > 0                  # each drop: a 502, not a second try
    assert len(dropper.seen) + len(fine.seen) == 4                       # no POST reached two pods


class Silent:
    """An address that takes no connection: a listening socket whose queue
    is full, so the kernel drops the SYNs (like a pod that vanished)."""

    def __init__(self, address: str):
        self.sock = socket.socket()
        self.sock.bind((address, 0))
        self.sock.listen(0)
        self.filler = socket.create_connection(self.sock.getsockname(), timeout=5)   # the one queue place
        self.server_address = self.sock.getsockname()
        self.port = self.server_address[1]

    def close(self) -> None:
        self.filler.close()
        self.sock.close()


def test_a_pod_that_takes_no_connection_costs_the_connect_timeout_then_the_next_pod(
        api, controller, pods, namespace, address):
    silent = Silent(address)
    try:
        service(api, namespace, "web", silent, pods("live"))
        host = f"silent.{namespace}.example"
        ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
        routed(controller, host, "/", "live")
        # --connect-timeout 0.5, --upstream-timeout 3: the silent pod is skipped, not a 504.
        assert [pod_of(controller, host) for _ in range(4)] == ["live"] * 4
    finally:
        silent.close()


class HTTP10UntilCloseHandler(socketserver.BaseRequestHandler):
    """An answer with no length: it ends when the connection does."""

    def handle(self) -> None:
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
        self.request.close()


def test_an_http_1_0_client_gets_no_chunked_answer(api, controller, pods, namespace):
    """RFC 9112 6.1: no Transfer-Encoding in an answer to HTTP/1.0; the end is the close."""
    service(api, namespace, "web", pods("web", HTTP10UntilCloseHandler))
    host = f"old.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    wait_for(lambda: get(controller, host)[0] == 200, 10, what="the route")
    answer = raw(controller, b"GET / HTTP/1.0\r\nHost: " + host.encode() + b"\r\nConnection: keep-alive\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding" not in head.lower()
    assert b"connection: close" in head.lower() and body == b"until the end"


@pytest.mark.parametrize("size", [b"-1", b"0x5", b"1_0", b"+5", b" "])
def test_a_chunk_size_that_is_not_plain_hex_gets_400(api, controller, pods, namespace, size):
    service(api, namespace, "sink", pods("sink"))
    host = f"hex.{namespace}.example"
    ingress(api, namespace, "sink", [(host, [("/", "Prefix", "sink")])])
    routed(controller, host, "/", "sink")
    answer = raw(controller, b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + size + b"\r\nabcde\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and b"bad chunk size" in answer


class ConnectionCountingHandler(EchoHandler):
    def setup(self) -> None:
        super().setup()
        self.server.open_connections += 1

    def finish(self) -> None:
        super().finish()
        self.server.open_connections -= 1


def test_idle_connections_to_a_pod_that_left_are_closed(api, controller, pods, namespace):
    """The pool keeps a connection to each pod for the next request; once a
    pod is in no backend any more, its connections are closed, not kept for good."""
    pod = pods("leaving", ConnectionCountingHandler)
    pod.open_connections = 0
    service(api, namespace, "web", pod)
    host = f"leave.{namespace}.example"
    ingress(api, namespace, "web", [(host, [("/", "Prefix", "web")])])
    routed(controller, host, "/", "leaving")
    assert pod.open_connections >= 1                                    # kept for the next request
    delete(api, f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices/web-{pod.port}")
    wait_for(lambda: get(controller, host)[0] == 503, 10, what="the pod out of the backend")
    wait_for(lambda: pod.open_connections == 0, 10, what="the pool's connections to it closed")


# ----------------------------------------------------------------- where it runs

def test_the_daemonset_manifest_is_accepted_and_grants_only_reads_and_status(api):
    """manifests/ingress-controller.yaml: every object valid; the role reads
    what the informers read and writes only Ingresses' status."""
    documents = list(yaml.safe_load_all((ROOT / "05-proxy-dns/manifests/ingress-controller.yaml").read_text()))
    paths = {"Namespace": "/api/v1/namespaces", "ServiceAccount": "/api/v1/namespaces/ingress-system/serviceaccounts",
             "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
             "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
             "IngressClass": f"{NETWORKING}/ingressclasses",
             "DaemonSet": "/apis/apps/v1/namespaces/ingress-system/daemonsets"}
    for document in documents:
        if document["kind"] == "IngressClass":
            continue          # the default class would change what the other tests here route
        response = api.post(paths[document["kind"]], document)
        assert response.status_code == 201, response.text
    role = next(d for d in documents if d["kind"] == "ClusterRole")
    verbs = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
             for resource in rule["resources"] for verb in rule["verbs"]}
    writes = {v for v in verbs if v[2] not in ("get", "list", "watch")}
    assert writes == {("networking.k8s.io", "ingresses/status", "update")}
    for group, resource in (("networking.k8s.io", "ingresses"), ("networking.k8s.io", "ingressclasses"),
                            ("", "services"), ("discovery.k8s.io", "endpointslices"), ("", "secrets")):
        assert {(group, resource, "list"), (group, resource, "watch")} <= verbs
    daemonset = next(d for d in documents if d["kind"] == "DaemonSet")
    assert daemonset["spec"]["template"]["spec"]["hostNetwork"] is True
