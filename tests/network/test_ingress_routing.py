"""The ingress controller's routing rules, table-driven: no process, no network.

The rules are the Ingress page's (kubernetes.io/docs/concepts/services-networking/ingress/):
host exact before wildcard before none, Exact before Prefix, the longest
path first, prefixes compared element by element.
"""
from __future__ import annotations

import pytest

from ingress import routes
from ingress.forward import RoundRobin
from ingress.match import hostname, match, path_matches

T0, T1, T2 = "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"


def ingress(name, rules=(), *, created=T0, class_name="groundup", annotations=None, default=None, tls=None,
            namespace="default"):
    spec = {"rules": [{**({"host": h} if h else {}),
                       "http": {"paths": [{"path": p, "pathType": t,
                                           "backend": {"service": {"name": s, "port": {"number": 80}}}}
                                          for p, t, s in paths]}} for h, paths in rules]}
    if class_name:
        spec["ingressClassName"] = class_name
    if default:
        spec["defaultBackend"] = {"service": {"name": default, "port": {"number": 80}}}
    if tls:
        spec["tls"] = tls
    return {"metadata": {"name": name, "namespace": namespace, "creationTimestamp": created,
                         "annotations": annotations or {}}, "spec": spec}


def table(*ingresses, classes=()):
    return routes.build(list(ingresses), list(classes), [], [], "groundup")


SHOP = ingress("shop", [
    ("shop.example.com", [("/", "Prefix", "web"), ("/api", "Prefix", "api"), ("/api/v2", "Prefix", "api-v2"),
                          ("/api", "Exact", "api-root"), ("/Static", "Exact", "static")]),
    ("*.example.com", [("/", "Prefix", "wildcard")]),
    ("", [("/", "Prefix", "any-host"), ("/foo/", "Prefix", "foo")]),
])

# (host header, path) -> the Service that gets it, or None (404)
CASES = [
    ("shop.example.com", "/", "web"),
    ("shop.example.com", "/index.html", "web"),
    ("SHOP.example.com:8080", "/", "web"),                   # case and port do not matter in a host
    ("shop.example.com", "/api", "api-root"),                # equal length: Exact before Prefix
    ("shop.example.com", "/api/", "api"),                    # not exactly /api: the Prefix
    ("shop.example.com", "/api/users?id=3", "api"),          # the query is not part of the path
    ("shop.example.com", "/api/v2/users", "api-v2"),         # the longest prefix wins
    ("shop.example.com", "/apiary", "web"),                  # /api is no prefix of /apiary, element-wise
    ("shop.example.com", "/static", "web"),                  # Exact paths are case-sensitive
    ("shop.example.com", "/Static", "static"),
    ("cart.example.com", "/anything", "wildcard"),           # the wildcard: one label
    ("a.cart.example.com", "/", "any-host"),                 # ... not two
    ("example.com", "/", "any-host"),                        # ... nor none
    ("other.org", "/foo", "foo"),                            # "/foo/" is the prefix /foo
    ("other.org", "/foo/bar", "foo"),
    ("other.org", "/foobar", "any-host"),
]


@pytest.mark.parametrize("host, path, service", CASES)
def test_the_rules_of_matching(host, path, service):
    backend = match(table(SHOP), host, path)
    assert (backend.service if backend else None) == service


@pytest.mark.parametrize("prefix, path, matches", [
    ("/", "/", True), ("/", "/anything/at/all", True),
    ("/foo", "/foo", True), ("/foo", "/foo/", True), ("/foo", "/foo/bar", True), ("/foo", "/foobar", False),
    ("/foo/", "/foo", True), ("/foo/bar", "/foo", False), ("/aaa/bb", "/aaa/bbb", False),
    ("/aaa/bbb", "/aaa/bbb/ccc", True), ("/aaa/bbb/", "/aaa/bbb/", True),
])
def test_prefix_is_element_wise(prefix, path, matches):
    route = routes.Route("", prefix, "Prefix", routes.Backend("default", "web", 80), "default/x")
    assert path_matches(route, path) is matches


def test_a_host_level_without_a_matching_path_gets_the_default_backend_not_the_any_host_rules():
    only_api = ingress("api", [("shop.example.com", [("/api", "Prefix", "api")]), ("", [("/", "Prefix", "any")])])
    assert match(table(only_api), "shop.example.com", "/other") is None
    with_default = ingress("fallback", default="fallback", created=T1)
    assert match(table(only_api, with_default), "shop.example.com", "/other").service == "fallback"


def test_a_default_backend_beside_rules_takes_only_its_own_hosts_unmatched_paths():
    """As ingress-nginx: only an Ingress with no rules makes the catch-all;
    one with rules keeps its default to its own hosts."""
    theirs = ingress("theirs", [("shop.example.com", [("/api", "Prefix", "api")])], default="their-fallback",
                     namespace="team-a")
    built = table(theirs)
    assert match(built, "shop.example.com", "/other") == routes.Backend("team-a", "their-fallback", 80)
    assert match(built, "shop.example.com", "/api/x").service == "api"
    assert match(built, "blog.example.com", "/") is None                       # not another host's traffic
    catch_all = ingress("catch-all", default="everything", created=T1, namespace="team-b")
    assert match(table(theirs, catch_all), "blog.example.com", "/").service == "everything"
    assert match(table(theirs, catch_all), "shop.example.com", "/other").service == "their-fallback"


def test_a_hosts_own_root_rule_beats_an_ingress_default_and_the_oldest_naming_the_host_decides():
    older = ingress("older", [("shop.example.com", [("/api", "Prefix", "api")])], default="old-fallback")
    root = ingress("root", [("shop.example.com", [("/", "Prefix", "web")])], created=T2)
    assert match(table(older, root), "shop.example.com", "/other").service == "web"
    newer = ingress("newer", [("shop.example.com", [("/cart", "Prefix", "cart")])], default="new-fallback",
                    created=T1)
    assert match(table(older, newer), "shop.example.com", "/other").service == "old-fallback"
    first_without = ingress("plain", [("shop.example.com", [("/cart", "Prefix", "cart")])])
    later_with = ingress("later", [("shop.example.com", [("/api", "Prefix", "api")])], default="late", created=T1)
    assert match(table(first_without, later_with), "shop.example.com", "/other") is None


@pytest.mark.parametrize("ingress_spec, ours", [
    ({"class_name": "groundup"}, True),
    ({"class_name": "nginx"}, False),
    ({"class_name": None, "annotations": {"kubernetes.io/ingress.class": "groundup"}}, True),
    ({"class_name": None, "annotations": {"kubernetes.io/ingress.class": "nginx"}}, False),
    ({"class_name": None}, False),                       # no class, and ours is not the default
])
def test_only_our_class(ingress_spec, ours):
    one = ingress("web", [("", [("/", "Prefix", "web")])], **ingress_spec)
    assert (match(table(one), "x.example", "/") is not None) is ours


def test_an_ingress_without_a_class_is_ours_when_our_class_is_the_default():
    classless = ingress("web", [("", [("/", "Prefix", "web")])], class_name=None)
    default_class = {"metadata": {"name": "groundup",
                                  "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                     "spec": {"controller": "groundup.dev/ingress-controller"}}
    assert match(table(classless, classes=[default_class]), "x.example", "/").service == "web"
    other_default = {**default_class, "metadata": {**default_class["metadata"], "name": "nginx"}}
    assert match(table(classless, classes=[other_default]), "x.example", "/") is None


def test_two_ingresses_claiming_one_path_the_oldest_wins_and_the_conflict_is_reported():
    newer = ingress("newer", [("shop.example.com", [("/", "Prefix", "new")])], created=T2)
    older = ingress("older", [("shop.example.com", [("/", "Prefix", "old"), ("/extra", "Prefix", "extra")])],
                    created=T1)
    built = table(newer, older)
    assert match(built, "shop.example.com", "/").service == "old"
    assert match(built, "shop.example.com", "/extra/1").service == "extra"       # the rest merges
    assert built.conflicts == ["default/newer: Prefix shop.example.com/ is already served by default/older "
                               "(older): ignored"]


SERVICE = {"metadata": {"name": "web", "namespace": "default"},
           "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "admin", "port": 9000}]}}


def endpoint_slice(name, port_name, port, *endpoints, service="web"):
    return {"metadata": {"name": name, "namespace": "default",
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": conditions} for ip, conditions in endpoints]}


@pytest.mark.parametrize("port, slices, expected", [
    (80, [endpoint_slice("a", "http", 8080, ("10.244.1.5", {"ready": True}), ("10.244.2.7", {}))],
     ((("10.244.1.5", 8080), ("10.244.2.7", 8080)), "")),                # ready unset counts as ready
    ("http", [endpoint_slice("a", "http", 8080, ("10.244.1.5", {"ready": True})),
              endpoint_slice("b", "http", 8080, ("10.244.3.2", {"ready": True}))],
     ((("10.244.1.5", 8080), ("10.244.3.2", 8080)), "")),                # a Service in several slices
    (80, [endpoint_slice("a", "http", 8080, ("10.244.1.5", {"ready": False, "terminating": True}))],
     ((), 'service "default/web" has no ready endpoint')),
    (80, [endpoint_slice("a", "http", 8080, ("10.244.1.5", {}), service="other")],
     ((), 'service "default/web" has no ready endpoint')),
    (9000, [endpoint_slice("a", "http", 8080, ("10.244.1.5", {}))],
     ((), 'service "default/web" has no ready endpoint')),              # the slice has no "admin" port
    (81, [], ((), 'service "default/web" has no port 81')),
])
def test_a_backend_resolves_to_ready_pod_addresses(port, slices, expected):
    target = routes.resolve(routes.Backend("default", "web", port), {("default", "web"): SERVICE}, slices)
    assert (target.endpoints, target.problem) == expected


def test_a_missing_service():
    target = routes.resolve(routes.Backend("default", "gone", 80), {}, [])
    assert target.problem == 'service "default/gone" not found'


def test_round_robin_starts_each_request_at_the_next_endpoint():
    balancer, backend = RoundRobin(), routes.Backend("default", "web", 80)
    endpoints = (("10.0.0.1", 80), ("10.0.0.2", 80), ("10.0.0.3", 80))
    firsts = [balancer.order(backend, endpoints)[0][0] for _ in range(6)]
    assert firsts == ["10.0.0.1", "10.0.0.2", "10.0.0.3"] * 2
    assert balancer.order(backend, endpoints) == [("10.0.0.1", 80), ("10.0.0.2", 80), ("10.0.0.3", 80)]


def test_tls_hosts_oldest_first_and_only_with_a_secret():
    a = ingress("a", tls=[{"hosts": ["shop.example.com"], "secretName": "shop-tls"}], created=T1)
    b = ingress("b", tls=[{"hosts": ["shop.example.com", "*.example.com"], "secretName": "other"},
                          {"hosts": ["nosecret.example.com"]}], created=T2)
    assert routes.tls_hosts([b, a]) == {"shop.example.com": "default/shop-tls", "*.example.com": "default/other"}


@pytest.mark.parametrize("header, host", [("Shop.Example.com", "shop.example.com"), ("a.b:8443", "a.b"),
                                          ("[::1]:80", "[::1]"), ("10.0.0.1", "10.0.0.1")])
def test_hostname_of_a_host_header(header, host):
    assert hostname(header) == host
