"""Ingress and IngressClass through the real kubectl: create, apply, get.

The manifests are kubernetes.io's, from the Ingress concept page
(service/networking/minimal-ingress.yaml, the simple fanout, name-based
virtual hosting and TLS examples), as a learner would paste them.
"""
from __future__ import annotations


import pytest
import yaml

from test_kubectl import Kubectl, rows

MINIMAL_INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: minimal-ingress
  annotations:
    nginx.ingress.kubernetes.io/rewrite-target: /
spec:
  ingressClassName: nginx-example
  rules:
  - http:
      paths:
      - path: /testpath
        pathType: Prefix
        backend:
          service:
            name: test
            port:
              number: 80
"""

SIMPLE_FANOUT = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: simple-fanout-example
spec:
  rules:
  - host: foo.bar.com
    http:
      paths:
      - path: /foo
        pathType: Prefix
        backend:
          service:
            name: service1
            port:
              number: 4200
      - path: /bar
        pathType: Prefix
        backend:
          service:
            name: service2
            port:
              number: 8080
"""

NAME_VIRTUAL_HOST = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: name-virtual-host-ingress
spec:
  rules:
  - host: foo.bar.com
    http:
      paths:
      - pathType: Prefix
        path: "/"
        backend:
          service:
            name: service1
            port:
              number: 80
  - host: bar.foo.com
    http:
      paths:
      - pathType: Prefix
        path: "/"
        backend:
          service:
            name: service2
            port:
              number: 80
"""

TLS_EXAMPLE = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: tls-example-ingress
spec:
  tls:
  - hosts:
      - https-example.foo.com
    secretName: testsecret-tls
  rules:
  - host: https-example.foo.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: service1
            port:
              number: 80
"""

DEFAULT_CLASS = """\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  labels:
    app.kubernetes.io/component: controller
  name: nginx-example
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
spec:
  controller: k8s.io/ingress-nginx
"""


@pytest.fixture
def k(kubectl, apiserver, namespace, tmp_path) -> Kubectl:
    return Kubectl(kubectl, apiserver.url, namespace, tmp_path)


def test_kubectl_create_ingress_with_rules(k):
    out = k("create", "ingress", "shop", "--class", "groundup",
            "--rule", "shop.example.com/api*=api:8080", "--rule", "shop.example.com/=web:http")
    assert "ingress.networking.k8s.io/shop created" in out
    created = k.json("get", "ingress", "shop")
    paths = created["spec"]["rules"][0]["http"]["paths"]
    # kubectl's rule syntax: a trailing * asks for Prefix, otherwise Exact.
    assert [(p["path"], p["pathType"]) for p in paths] == [("/api", "Prefix"), ("/", "Exact")]
    assert paths[1]["backend"]["service"]["port"] == {"name": "http"}
    table = rows(k("get", "ing"))
    assert table[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert table[1][:4] == ["shop", "groundup", "shop.example.com", "80"]


def test_kubernetes_io_examples_apply_and_print(k):
    for name, text in (("minimal.yaml", MINIMAL_INGRESS), ("fanout.yaml", SIMPLE_FANOUT),
                       ("vhost.yaml", NAME_VIRTUAL_HOST), ("tls.yaml", TLS_EXAMPLE)):
        assert "created" in k("apply", "-f", k.manifest(text, name))
    table = {r[0]: r[1:] for r in rows(k("get", "ingress"))[1:]}
    assert table["minimal-ingress"][:3] == ["nginx-example", "*", "80"]
    assert table["simple-fanout-example"][:3] == ["<none>", "foo.bar.com", "80"]
    assert table["name-virtual-host-ingress"][:3] == ["<none>", "foo.bar.com,bar.foo.com", "80"]
    # With TLS the controller serves 443 too: "80, 443" (two cells once split on spaces).
    assert table["tls-example-ingress"][:4] == ["<none>", "https-example.foo.com", "80,", "443"]
    # Applying again changes nothing: client-side apply works out an empty patch.
    assert "unchanged" in k("apply", "-f", k.manifest(MINIMAL_INGRESS, "minimal.yaml"))


def test_ingress_class_is_cluster_scoped_and_printed(k):
    assert "created" in k("apply", "-f", k.manifest(DEFAULT_CLASS, "class.yaml"))
    table = rows(k("get", "ingressclass"))
    assert table[0] == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    assert ["nginx-example", "k8s.io/ingress-nginx", "<none>"] in [r[:3] for r in table[1:]]
    k("delete", "ingressclass", "nginx-example")


def test_an_ingress_kubernetes_refuses_is_refused_with_the_field(k):
    bad = yaml.safe_load(MINIMAL_INGRESS)
    bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = "Regex"
    bad["spec"]["rules"][0]["host"] = "*.*.example.com"
    error = k.fails("apply", "-f", k.manifest(bad, "bad.yaml"))
    assert 'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex"' in error
    assert 'spec.rules[0].host: Invalid value: "*.*.example.com"' in error


def test_status_is_a_subresource(k, api, namespace):
    k("apply", "-f", k.manifest(MINIMAL_INGRESS, "minimal.yaml"))
    path = f"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/minimal-ingress"
    ingress = api.get(path).json()
    ingress["status"] = {"loadBalancer": {"ingress": [{"ip": "192.168.56.11"}]}}
    ingress["spec"]["ingressClassName"] = "changed-through-status"
    response = api.put(path + "/status", ingress)
    assert response.status_code == 200, response.text
    stored = api.get(path).json()
    # A status write keeps the stored spec, as Kubernetes' status strategy does.
    assert stored["spec"]["ingressClassName"] == "nginx-example"
    assert rows(k("get", "ingress", "minimal-ingress"))[1][3] == "192.168.56.11"


def test_the_edit_and_view_roles_cover_ingresses(api):
    view = api.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-view").json()
    edit = api.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-edit").json()

    def grants(role, verb, resource):
        return any("networking.k8s.io" in r.get("apiGroups", []) and resource in r.get("resources", [])
                   and verb in r.get("verbs", []) for r in role["rules"])
    assert grants(view, "watch", "ingresses") and grants(view, "get", "ingresses/status")
    assert grants(edit, "create", "ingresses") and not grants(view, "create", "ingresses")
