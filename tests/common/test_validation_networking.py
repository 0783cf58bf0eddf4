"""Ingress and IngressClass validation: Kubernetes' paths and wording.

Each expected message is what Kubernetes 1.32's pkg/apis/networking/validation
prints for the same object (the function is named beside each group), except
where a line says "ours".
"""

import copy

import pytest

from common.model.validate import validate_object, validate_status_update

GROUP = "networking.k8s.io"
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*"
    r"[a-z0-9])?)*')")
WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
    "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character "
    r"(e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]"
    r"([-a-z0-9]*[a-z0-9])?)*')")


def ingress(*paths, host="shop.example.com", **spec):
    """An Ingress with one rule of the given paths (each a dict)."""
    rule = {"host": host, "http": {"paths": list(paths)}} if paths else None
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {**({"rules": [rule]} if rule else {}), **spec}}


def path(p="/", path_type="Prefix", service="web", port=None):
    entry = {"path": p, "backend": {"service": {"name": service, "port": port or {"number": 80}}}}
    if path_type is not None:
        entry["pathType"] = path_type
    return entry


def errors(obj, kind="Ingress"):
    return [str(e) for e in validate_object(GROUP, kind, obj)]


# validateIngressRules, validateHTTPIngressPath, validateIngressBackend, ValidateIngressSpec
CASES = [
    ("minimal", ingress(path("/testpath")), []),
    ("no host is any host", ingress(path(), host=None), []),
    ("wildcard host", ingress(path(), host="*.example.com"), []),
    ("default backend alone", ingress(defaultBackend={"service": {"name": "web", "port": {"number": 80}}}), []),
    # Ours for the value: Kubernetes shows the Go value, []networking.IngressRule(nil).
    ("nothing to route", ingress(),
     ["spec: Invalid value: []: either `defaultBackend` or `rules` must be specified"]),
    ("an IP is not a host", ingress(path(), host="10.0.0.1"),
     ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address']),
    ("a star in the middle", ingress(path(), host="shop.*.com"),
     [f'spec.rules[0].host: Invalid value: "shop.*.com": {WILDCARD_MSG}']),
    ("upper case host", ingress(path(), host="Shop.example.com"),
     [f'spec.rules[0].host: Invalid value: "Shop.example.com": {SUBDOMAIN_MSG}']),
    ("pathType is required", ingress(path(path_type=None)),
     ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]),
    ("unknown pathType", ingress(path(path_type="Regex")),
     ['spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: '
      '"Exact", "ImplementationSpecific", "Prefix"']),
    ("relative path", ingress(path("api")),
     ['spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path']),
    ("double slash", ingress(path("/a//b", "Exact")),
     ["spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"]),
    ("dot dot at the end", ingress(path("/a/..")),
     ["spec.rules[0].http.paths[0].path: Invalid value: \"/a/..\": cannot end with '/..'"]),
    ("implementation specific may be empty", ingress(path("", "ImplementationSpecific")), []),
    ("no paths", {**ingress(path()), "spec": {"rules": [{"host": "a.example", "http": {"paths": []}}]}},
     ["spec.rules[0].http.paths: Required value"]),
    ("no port", ingress({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {}}}}),
     ["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"]),
    ("port name and number", ingress(path(port={"name": "http", "number": 80})),
     ['spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number']),
    ("port out of range", ingress(path(port={"number": 70000})),
     ["spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: "
      "must be between 1 and 65535, inclusive"]),
    ("bad port name", ingress(path(port={"name": "HTTP"})),
     ['spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: "HTTP": '
      "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
      'spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: "HTTP": '
      "must contain at least one letter (a-z)"]),
    ("service without a name", ingress(path(service="")),
     ["spec.rules[0].http.paths[0].backend.service.name: Required value"]),
    ("neither service nor resource", ingress({"path": "/", "pathType": "Prefix", "backend": {}}),
     ['spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required']),
    ("service and resource", ingress({"path": "/", "pathType": "Prefix", "backend": {
        "service": {"name": "web", "port": {"number": 80}}, "resource": {"kind": "Bucket", "name": "b"}}}),
     ['spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both resource and service backends']),
    ("resource without a kind", ingress({"path": "/", "pathType": "Prefix", "backend": {
        "resource": {"name": "b"}}}),
     ["spec.rules[0].http.paths[0].backend.resource.kind: Required value"]),
    ("tls hosts and secret", ingress(path(), tls=[{"hosts": ["*.example.com", "bad_host"], "secretName": "x_y"}]),
     [f'spec.tls[0].hosts[1]: Invalid value: "bad_host": {SUBDOMAIN_MSG}',
      f'spec.tls[0].secretName: Invalid value: "x_y": {SUBDOMAIN_MSG}']),
    ("class annotation disagrees", {**ingress(path(), ingressClassName="groundup"),
                                    "metadata": {"name": "shop", "annotations": {
                                        "kubernetes.io/ingress.class": "nginx"}}},
     ['annotations.kubernetes.io/ingress.class: Invalid value: "nginx": '
      "must match `ingressClassName` when both are specified"]),
]


@pytest.mark.parametrize("obj, expected", [pytest.param(o, e, id=i) for i, o, e in CASES])
def test_ingress(obj, expected):
    assert errors(obj) == expected


def ingress_class(**spec):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "groundup"}, "spec": spec}


# validateIngressClassSpec, validateIngressClassParametersReference
CLASS_CASES = [
    ("controller", ingress_class(controller="groundup.dev/ingress"), []),
    ("no controller", ingress_class(), ["spec.controller: Required value"]),
    ("not domain-prefixed", ingress_class(controller="nginx"),
     ['spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")']),
    ("namespace scope needs a namespace",
     ingress_class(controller="a.io/b", parameters={"kind": "ConfigMap", "name": "c", "scope": "Namespace"}),
     ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]),
    ("cluster scope has none",
     ingress_class(controller="a.io/b", parameters={"kind": "ConfigMap", "name": "c", "scope": "Cluster",
                                                   "namespace": "x"}),
     ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]),
    ("the namespace is a namespace name",
     ingress_class(controller="a.io/b", parameters={"kind": "ConfigMap", "name": "c", "scope": "Namespace",
                                                   "namespace": "Team_A"}),
     ['spec.parameters.namespace: Invalid value: "Team_A": a lowercase RFC 1123 label must consist of lower case '
      "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
      "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("too long, and still not domain-prefixed", ingress_class(controller="n" * 251),
     ["spec.controller: Too long: may not be more than 250 bytes",
      f'spec.controller: Invalid value: "{"n" * 251}": must be a domain-prefixed path (such as "acme.io/foo")']),
]


@pytest.mark.parametrize("obj, expected", [pytest.param(o, e, id=i) for i, o, e in CLASS_CASES])
def test_ingress_class(obj, expected):
    assert errors(obj, "IngressClass") == expected


def test_the_controller_of_a_class_is_fixed():
    old = ingress_class(controller="a.io/b")
    new = copy.deepcopy(old)
    new["spec"]["controller"] = "c.io/d"
    assert [str(e) for e in validate_object(GROUP, "IngressClass", new, old)] == [
        'spec.controller: Invalid value: "c.io/d": field is immutable']


def test_every_rule_of_an_ingress_may_change():
    old = ingress(path("/a"))
    new = ingress(path("/b", "Exact"), host="*.example.com")
    assert validate_object(GROUP, "Ingress", new, old) == []


@pytest.mark.parametrize("entry, expected", [
    ({"ip": "192.168.56.11"}, []),
    ({"hostname": "lb.example.com"}, []),
    ({"ip": "nope"}, ['status.loadBalancer.ingress[0].ip: Invalid value: "nope": '
                      "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
    ({"hostname": "10.0.0.1"}, ['status.loadBalancer.ingress[0].hostname: Invalid value: "10.0.0.1": '
                                "must be a DNS name, not an IP address"]),
])
def test_status_load_balancer(entry, expected):
    old = ingress(path())
    new = {**old, "status": {"loadBalancer": {"ingress": [entry]}}}
    assert [str(e) for e in validate_status_update(GROUP, "Ingress", new, old)] == expected
