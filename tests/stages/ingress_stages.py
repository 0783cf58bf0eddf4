"""Chapter 05's ingress stages: the routing rules of an ingress controller,
graded one rule set at a time.

Each stage gets a fresh API server, starts "pods" (small HTTP servers in
the stage's own process, each answering with its name), writes a Service
and an EndpointSlice for each (as the endpointslice controller would) and
the Ingresses under test, then starts the learner's controller with
`--apiserver URL --port P --https-port 0` on a free loopback port and
sends it requests with a Host header: the answer's body says which pod,
so which rule, took the request; 404 is "no rule and no default backend".

The API refuses loopback addresses in an EndpointSlice (no pod has one),
so the pods listen on this machine's own address, as in
tests/network/test_ingress_controller.py: the packets never leave it.

A check that a request goes nowhere (404) or to a less obvious rule comes
after a check that the Ingress has arrived (a request it routes), so a
controller that routes nothing never passes one.
"""
from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from common.addresses import this_machines_address
from common.tooling.ports import free_port
from stage_runner import Hint, Stage, WithAPIServer

PART5 = "05-proxy-dns/lesson-5-from-outside-in.md"
THE_MATCH = Hint("The match", PART5)

NAMESPACE = "shop"
NETWORKING = "/apis/networking.k8s.io/v1"
CLASS = "groundup"                  # the controller's default --ingress-class
PUBLISHED = "192.0.2.10"            # what it writes to the Ingresses' status (TEST-NET-1: reaches nothing)


class Pod(ThreadingHTTPServer):
    """A stand-in for a Service's pod: answers every GET with its name."""
    daemon_threads = True

    def __init__(self, name: str, address: str):
        self.name = name
        super().__init__((address, 0), NameHandler)


class NameHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = self.server.name.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class WithIngress(WithAPIServer):
    """A fresh API server, the namespace, pods on this machine's address, and
    a free loopback port for the learner's controller."""

    def __init__(self, mine, workdir):
        super().__init__(mine, workdir)
        self.port = free_port()
        self.address = this_machines_address()
        if self.address.startswith("127."):
            self.server.stop()
            raise RuntimeError("this machine has no address but loopback, and an EndpointSlice may not "
                               "hold one: the ingress stages need a network interface with an address")
        self.pods: list[Pod] = []
        response = self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NAMESPACE}})
        assert response.status_code == 201, response.text

    def mine_args(self) -> list[str]:
        return [*super().mine_args(), "--port", str(self.port), "--https-port", "0",
                "--bind-address", "127.0.0.1", "--publish-address", PUBLISHED]

    def close(self) -> None:
        super().close()
        for pod in self.pods:
            pod.shutdown()
            pod.server_close()


CONTEXT = WithIngress


# ---------------------------------------------------------------- objects

def backend(ctx: WithIngress, name: str) -> None:
    """A pod answering `name`, and a Service `name` on port 80 whose
    EndpointSlice holds that pod."""
    pod = Pod(name, ctx.address)
    threading.Thread(target=pod.serve_forever, daemon=True).start()
    ctx.pods.append(pod)
    response = ctx.api.post(f"/api/v1/namespaces/{NAMESPACE}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
    assert response.status_code == 201, response.text
    response = ctx.api.post(f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "ports": [{"name": "http", "port": pod.server_address[1], "protocol": "TCP"}],
        "endpoints": [{"addresses": [ctx.address], "conditions": {"ready": True}}]})
    assert response.status_code == 201, response.text


def service_backend(name: str) -> dict:
    return {"service": {"name": name, "port": {"number": 80}}}


def create_ingress(ctx: WithIngress, name: str, rules: list) -> None:
    """rules: [(host or "", [(path, pathType, service), ...]), ...]; every
    service named gets its pod and Service."""
    for _, paths in rules:
        for _, _, service in paths:
            if not any(pod.name == service for pod in ctx.pods):
                backend(ctx, service)
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": {"ingressClassName": CLASS, "rules": [
                {**({"host": host} if host else {}), "http": {"paths": [
                    {"path": path, "pathType": path_type, "backend": service_backend(service)}
                    for path, path_type, service in paths]}} for host, paths in rules]}}
    response = ctx.api.post(f"{NETWORKING}/namespaces/{NAMESPACE}/ingresses", body)
    assert response.status_code == 201, response.text


# ---------------------------------------------------------------- requests

def send(ctx: WithIngress, host: str, path: str) -> tuple[int, str]:
    """(status, body) of a GET through the learner's controller; (0, why) if none."""
    conn = http.client.HTTPConnection("127.0.0.1", ctx.port, timeout=3)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as error:
        return 0, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    finally:
        conn.close()


def described(answer: tuple[int, str]) -> str:
    status, body = answer
    if status == 200:
        return f"it went to {body}"
    if status == 0:
        return f"no answer ({body})"
    return f"the answer was {status} {body.strip()[:100]!r}"


def routed(ctx: WithIngress, host: str, path: str, service: str | None, why: str, timeout: float = 5) -> None:
    """Until host+path goes to service's pod (None: a 404), or fail saying where it went."""
    last = [(0, "not sent yet")]

    def check() -> bool:
        last[0] = send(ctx, host, path)
        return last[0] == (200, service) if service else last[0][0] == 404
    where = f"to {service}" if service else "nowhere: 404"
    ctx.wait_until(check, expected=f"Host {host}, GET {path}: {where} ({why})",
                   happened=lambda: described(last[0]), timeout=timeout, hint=THE_MATCH)


# ---------------------------------------------------------------- the stages

def stage_paths(ctx: WithIngress) -> None:
    create_ingress(ctx, "shop", [("shop.example", [
        ("/foo", "Prefix", "foo"),
        ("/index.html", "Exact", "exact"),
        ("/docs/", "Prefix", "docs"),
        ("/legacy", "ImplementationSpecific", "legacy")])])
    backend(ctx, "fallback")
    ctx.start_mine()
    routed(ctx, "shop.example", "/foo", "foo", "Prefix /foo: the path itself", timeout=15)
    routed(ctx, "shop.example", "/foo/bar", "foo", "Prefix /foo matches /foo/bar: /foo's elements, then more")
    routed(ctx, "shop.example", "/foo/", "foo", "a trailing slash is not an element")
    routed(ctx, "shop.example", "/foo?page=2", "foo", "the query string is no part of the path")
    routed(ctx, "shop.example", "/foobar", None,
           "Prefix compares whole elements: foobar is not foo, so /foobar is no rule's")
    routed(ctx, "shop.example", "/index.html", "exact", "Exact /index.html: the same path")
    routed(ctx, "shop.example", "/index.html/more", None, "Exact is the whole path, never a prefix")
    routed(ctx, "shop.example", "/INDEX.html", None, "paths are case-sensitive")
    routed(ctx, "shop.example", "/docs", "docs", "Prefix /docs/ is /docs: its trailing slash is ignored")
    routed(ctx, "shop.example", "/legacy/page", "legacy", "ImplementationSpecific is read as Prefix here")
    routed(ctx, "other.example", "/foo", None, "no rule names the host other.example, and no default backend")
    response = ctx.api.patch(f"{NETWORKING}/namespaces/{NAMESPACE}/ingresses/shop",
                             {"spec": {"defaultBackend": service_backend("fallback")}})
    assert response.status_code == 200, response.text
    routed(ctx, "shop.example", "/foobar", "fallback",
           "the Ingress now has a defaultBackend: what no rule takes goes there")
    routed(ctx, "other.example", "/", None, "an Ingress with rules lends its default backend to its own hosts "
           "only (as ingress-nginx does): other.example is still no one's")
    catch_all = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "catch-all"},
                 "spec": {"ingressClassName": CLASS, "defaultBackend": service_backend("fallback")}}
    response = ctx.api.post(f"{NETWORKING}/namespaces/{NAMESPACE}/ingresses", catch_all)
    assert response.status_code == 201, response.text
    routed(ctx, "other.example", "/", "fallback",
           "an Ingress with no rules, only a defaultBackend, is the default backend of every host no rule names")
    routed(ctx, "shop.example", "/foo/bar", "foo", "a rule that matches still wins over the default backend")


def stage_hosts(ctx: WithIngress) -> None:
    create_ingress(ctx, "hosts", [
        ("shop.example.com", [("/", "Prefix", "shop")]),
        ("*.example.com", [("/", "Prefix", "wild")]),
        ("", [("/", "Prefix", "any")]),
        ("api.example.com", [("/v1", "Prefix", "api-v1")])])
    ctx.start_mine()
    routed(ctx, "shop.example.com", "/", "shop", "an exact host before the wildcard that also matches it",
           timeout=15)
    routed(ctx, "Shop.Example.COM:8080", "/cart", "shop", "a host is matched without its port, in lower case")
    routed(ctx, "blog.example.com", "/", "wild", "*.example.com matches blog.example.com: one label for the *")
    routed(ctx, "a.blog.example.com", "/", "any",
           "a wildcard stands for exactly one label: *.example.com does not match a.blog.example.com, "
           "so the rule with no host takes it")
    routed(ctx, "example.com", "/", "any", "*.example.com needs a label in place of the *: not example.com")
    routed(ctx, "localhost", "/", "any", "a rule with no host takes any host no other rule names")
    routed(ctx, "api.example.com", "/v1/users", "api-v1", "api.example.com's own rule")
    routed(ctx, "api.example.com", "/other", None,
           "the host is chosen first: api.example.com has rules, none for /other, so no fallback to "
           "*.example.com or to the rule with no host")


def stage_most_specific(ctx: WithIngress) -> None:
    # Listed least specific first, and the Prefix /api/v1 before the Exact:
    # taking the first that matches, or the longest without the Exact rule,
    # picks the wrong one.
    create_ingress(ctx, "api", [("shop.example", [
        ("/", "Prefix", "root"),
        ("/api", "Prefix", "api"),
        ("/api/v1", "Prefix", "v1-prefix"),
        ("/api/v1", "Exact", "v1-exact"),
        ("/api/v1/users/", "Prefix", "users")])])
    ctx.start_mine()
    routed(ctx, "shop.example", "/other", "root", "only / matches", timeout=15)
    routed(ctx, "shop.example", "/api/orders", "api", "/ and /api match: the longest wins")
    routed(ctx, "shop.example", "/api/v1/orders", "v1-prefix", "/, /api and Prefix /api/v1 match: the longest wins")
    routed(ctx, "shop.example", "/api/v1", "v1-exact",
           "Prefix /api/v1 and Exact /api/v1 both match, as long: Exact wins")
    routed(ctx, "shop.example", "/api/v1/users/7", "users",
           "/api/v1/users/ is the longest that matches (its trailing slash not counted)")
    routed(ctx, "shop.example", "/apix", "root", "element-wise: /api does not match /apix, / does")


STAGES = [
    Stage(1, "paths: Exact and Prefix, element by element, and the default backend", stage_paths, THE_MATCH,
          terms=("Exact", "Prefix", "`/foo` matches `/foo/bar` but not `/foobar`", "trailing slash",
                 "case-sensitive", "ImplementationSpecific", "query string", "default backend", "404")),
    Stage(2, "hosts: exact, then a wildcard of one label, then any host", stage_hosts, THE_MATCH,
          terms=("an exact host beats a wildcard", "exactly one label", "a rule with no host",
                 "is chosen first", "without its port")),
    Stage(3, "the most specific path: the longest, and Exact before Prefix", stage_most_specific, THE_MATCH,
          terms=("the longest match wins", "of two as long, Exact")),
]
