"""ABAC policy files: Kubernetes' matching rules, its 403 messages, bad files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import abac
import api_errors
import request_info
from abac import Attributes
from authentication import ANONYMOUS_USER, INSECURE_USER, User

POLICY_FILE = Path(__file__).resolve().parents[2] / "02-apiserver" / "policy.jsonl"

ALICE = User("alice", ("dev", "system:authenticated"))
BOB = User("bob", ("ops", "system:authenticated"))


def line(**spec) -> str:
    return json.dumps({"apiVersion": abac.API_VERSION, "kind": "Policy", "spec": spec})


def authorizer(tmp_path, *lines: str) -> abac.ABACAuthorizer:
    path = tmp_path / "policy.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return abac.ABACAuthorizer(path)


def allowed(authz, user, attributes) -> bool:
    try:
        authz.authorize(user, attributes)
        return True
    except api_errors.APIError as error:
        assert (error.code, error.reason) == (403, "Forbidden")
        return False


def res(verb, resource, namespace="", group="", name="", sub=""):
    return Attributes(verb, resource, sub, group, namespace, name)


def path(verb, p):
    return abac.non_resource_attributes(verb, p)


# (policy spec, user, request, allowed?) -- one matching rule a row.
RULES = [
    # subject: user
    (dict(user="alice", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), True),
    (dict(user="alice", namespace="*", resource="*"), BOB, res("get", "pods", "d"), False),
    (dict(user="*", namespace="*", resource="*"), BOB, res("get", "pods", "d"), True),
    (dict(user="*", namespace="*", resource="*"), ANONYMOUS_USER, res("get", "pods", "d"), True),
    (dict(user="Alice", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), False),   # exact, case and all
    # subject: group
    (dict(group="dev", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), True),
    (dict(group="dev", namespace="*", resource="*"), BOB, res("get", "pods", "d"), False),
    (dict(group="*", namespace="*", resource="*"), BOB, res("get", "pods", "d"), True),
    (dict(group="system:authenticated", namespace="*", resource="*"), BOB, res("get", "pods", "d"), True),
    (dict(group="system:authenticated", namespace="*", resource="*"), ANONYMOUS_USER, res("get", "pods", "d"), False),
    (dict(group="system:unauthenticated", namespace="*", resource="*"), ANONYMOUS_USER, res("get", "pods", "d"), True),
    (dict(group="system:unauthenticated", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), False),
    # subject: user and group both given must both match
    (dict(user="alice", group="dev", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), True),
    (dict(user="alice", group="ops", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), False),
    (dict(user="bob", group="dev", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), False),
    (dict(user="*", group="ops", namespace="*", resource="*"), ALICE, res("get", "pods", "d"), False),
    # namespace
    (dict(user="*", namespace="d", resource="pods"), ALICE, res("list", "pods", "d"), True),
    (dict(user="*", namespace="d", resource="pods"), ALICE, res("list", "pods", "other"), False),
    (dict(user="*", namespace="d", resource="pods"), ALICE, res("list", "pods", ""), False),   # all namespaces
    (dict(user="*", resource="pods"), ALICE, res("list", "pods", ""), True),     # no namespace = "" only
    (dict(user="*", resource="pods"), ALICE, res("list", "pods", "d"), False),
    (dict(user="*", resource="nodes"), ALICE, res("get", "nodes", name="n1"), True),
    (dict(user="*", namespace="*", resource="nodes"), ALICE, res("get", "nodes", name="n1"), True),
    # resource
    (dict(user="*", namespace="*", resource="pods"), ALICE, res("get", "services", "d"), False),
    (dict(user="*", namespace="*", resource="pod"), ALICE, res("get", "pods", "d"), False),      # plural only
    # a subresource is covered by its resource, and cannot be named alone
    (dict(user="*", namespace="*", resource="pods"), ALICE, res("update", "pods", "d", name="w", sub="status"), True),
    (dict(user="*", namespace="*", resource="pods"), ALICE, res("create", "pods", "d", name="w", sub="binding"), True),
    (dict(user="*", namespace="*", resource="pods/status"), ALICE, res("update", "pods", "d", name="w", sub="status"), False),
    (dict(user="*", namespace="*", resource="pods", readonly=True), ALICE, res("get", "pods", "d", name="w", sub="log"), True),
    # apiGroup
    (dict(user="*", namespace="*", resource="*"), ALICE, res("get", "deployments", "d", "apps"), False),   # "" = core only
    (dict(user="*", namespace="*", resource="*", apiGroup="apps"), ALICE, res("get", "deployments", "d", "apps"), True),
    (dict(user="*", namespace="*", resource="*", apiGroup="apps"), ALICE, res("get", "pods", "d"), False),
    (dict(user="*", namespace="*", resource="*", apiGroup="*"), ALICE, res("get", "deployments", "d", "apps"), True),
    # readonly: get, list and watch, nothing else
    *[(dict(user="*", namespace="*", resource="*", readonly=True), ALICE, res(v, "pods", "d"), True)
      for v in ("get", "list", "watch")],
    *[(dict(user="*", namespace="*", resource="*", readonly=True), ALICE, res(v, "pods", "d"), False)
      for v in ("create", "update", "patch", "delete", "deletecollection")],
    *[(dict(user="*", namespace="*", resource="*"), ALICE, res(v, "pods", "d"), True)
      for v in ("create", "update", "patch", "delete", "deletecollection")],
    # non-resource paths
    (dict(user="*", nonResourcePath="*"), ALICE, path("GET", "/anything"), True),
    (dict(user="*", nonResourcePath="/version"), ALICE, path("GET", "/version"), True),
    (dict(user="*", nonResourcePath="/version"), ALICE, path("GET", "/version/"), False),
    (dict(user="*", nonResourcePath="/version"), ALICE, path("GET", "/versions"), False),
    (dict(user="*", nonResourcePath="/apis/*"), ALICE, path("GET", "/apis/apps/v1"), True),
    (dict(user="*", nonResourcePath="/apis/*"), ALICE, path("GET", "/apis/"), True),
    (dict(user="*", nonResourcePath="/apis/*"), ALICE, path("GET", "/apis"), False),   # the prefix is "/apis/"
    (dict(user="*", nonResourcePath="/api*"), ALICE, path("GET", "/api"), True),
    (dict(user="*", nonResourcePath="/api*"), ALICE, path("GET", "/apis/apps/v1"), True),
    (dict(user="*", nonResourcePath="/api*"), ALICE, path("GET", "/healthz"), False),
    (dict(user="*", nonResourcePath="/healthz", readonly=True), ALICE, path("GET", "/healthz"), True),
    (dict(user="*", nonResourcePath="/healthz", readonly=True), ALICE, path("POST", "/healthz"), False),
    (dict(user="*", nonResourcePath="/healthz", readonly=True), ALICE, path("HEAD", "/healthz"), False),
    (dict(user="*", nonResourcePath="/healthz"), ALICE, path("POST", "/healthz"), True),
    # resource and non-resource rules never cross
    (dict(user="*", namespace="*", resource="*", apiGroup="*"), ALICE, path("GET", "/version"), False),
    (dict(user="*", nonResourcePath="*"), ALICE, res("get", "pods", "d"), False),
    (dict(user="*", namespace="*", resource="*", nonResourcePath="/version"), ALICE, path("GET", "/version"), True),
    (dict(user="*", namespace="*", resource="*", nonResourcePath="/version"), ALICE, res("get", "pods", "d"), True),
]


@pytest.mark.parametrize("spec, user, attributes, expected", RULES)
def test_matching_rules(tmp_path, spec, user, attributes, expected):
    assert allowed(authorizer(tmp_path, line(**spec)), user, attributes) is expected


def test_default_deny_and_any_line_allows(tmp_path):
    authz = authorizer(tmp_path, line(user="alice", namespace="a", resource="pods"),
                       line(user="alice", namespace="b", resource="pods"))
    assert allowed(authz, ALICE, res("get", "pods", "a"))
    assert allowed(authz, ALICE, res("get", "pods", "b"))
    assert not allowed(authz, ALICE, res("get", "pods", "c"))
    assert not allowed(authz, BOB, res("get", "pods", "a"))


# The exact texts kube-apiserver sends (and kubectl prints after
# "Error from server (Forbidden): "), with ABAC's reason at the end.
MESSAGES = [
    (User("node1"), res("list", "pods", "default"),
     'pods is forbidden: User "node1" cannot list resource "pods" in API group "" in the namespace "default": No policy matched.',
     {"kind": "pods"}),
    (User("viewer"), res("create", "nodes"),
     'nodes is forbidden: User "viewer" cannot create resource "nodes" in API group "" at the cluster scope: No policy matched.',
     {"kind": "nodes"}),
    (User("x"), res("get", "pods", "default", name="web", sub="log"),
     'pods "web" is forbidden: User "x" cannot get resource "pods/log" in API group "" in the namespace "default": No policy matched.',
     {"name": "web", "kind": "pods"}),
    (User("x"), res("list", "deployments", "d", "apps"),
     'deployments.apps is forbidden: User "x" cannot list resource "deployments" in API group "apps" in the namespace "d": No policy matched.',
     {"group": "apps", "kind": "deployments"}),
    (User("x"), res("watch", "pods"),
     'pods is forbidden: User "x" cannot watch resource "pods" in API group "" at the cluster scope: No policy matched.',
     {"kind": "pods"}),
    (User("x"), path("GET", "/version"),
     'forbidden: User "x" cannot get path "/version": No policy matched.', None),
    (ANONYMOUS_USER, path("POST", "/api/v1"),
     'forbidden: User "system:anonymous" cannot post path "/api/v1": No policy matched.', None),
    # Go's %q escaping, and no HTML-looking text in a refusal.
    (User('a"b'), path("GET", "/<script>&"),
     'forbidden: User "a\\"b" cannot get path "/&lt;script&gt;&amp;": No policy matched.', None),
]


@pytest.mark.parametrize("user, attributes, message, details", MESSAGES)
def test_forbidden_messages_are_kubernetes_own(tmp_path, user, attributes, message, details):
    authz = authorizer(tmp_path, line(user="nobody", nonResourcePath="*"))
    with pytest.raises(api_errors.APIError) as caught:
        authz.authorize(user, attributes)
    error = caught.value
    assert (error.code, error.reason, error.message, error.details) == (403, "Forbidden", message, details)
    assert error.status()["code"] == 403


def test_forbidden_without_a_reason_is_the_bare_kubernetes_message():
    error = abac.forbidden(User("node1"), res("list", "pods", "default"), reason="")
    assert error.message == 'pods is forbidden: User "node1" cannot list resource "pods" in API group "" in the namespace "default"'


def parse(method, url, **args):
    return request_info.parse(method, url, args)


@pytest.mark.parametrize("method, url, args, expected", [
    ("GET", "/api/v1/namespaces/default/pods", {}, res("list", "pods", "default")),
    ("GET", "/api/v1/pods", {"watch": "true"}, res("watch", "pods")),
    ("GET", "/api/v1/namespaces/default/pods/web/log", {}, res("get", "pods", "default", name="web", sub="log")),
    ("POST", "/api/v1/namespaces/default/pods/web/binding", {}, res("create", "pods", "default", name="web", sub="binding")),
    ("PUT", "/api/v1/nodes/n1/status", {}, res("update", "nodes", name="n1", sub="status")),
    ("PATCH", "/apis/apps/v1/namespaces/d/deployments/w/scale", {}, res("patch", "deployments", "d", "apps", "w", "scale")),
    # A Namespace is filed under its own name, as Kubernetes does.
    ("GET", "/api/v1/namespaces/team-a", {}, res("get", "namespaces", "team-a", name="team-a")),
    ("GET", "/api/v1/namespaces", {}, res("list", "namespaces")),
])
def test_attributes_from_request_info(method, url, args, expected):
    assert abac.attributes_from(parse(method, url, **args)) == expected


def test_the_authorizer_hook_takes_request_info(tmp_path):
    authz = authorizer(tmp_path, line(user="alice", namespace="default", resource="pods", readonly=True))
    authz(ALICE, parse("GET", "/api/v1/namespaces/default/pods"))
    with pytest.raises(api_errors.APIError) as caught:
        authz(ALICE, parse("DELETE", "/api/v1/namespaces/default/pods/web"))
    assert caught.value.message.startswith('pods "web" is forbidden: User "alice" cannot delete resource "pods"')
    authz(ALICE, Attributes("get", "pods", namespace="default"))


def test_non_resource_attributes():
    assert abac.non_resource_attributes("GET", "/openapi/v3") == Attributes("get", path="/openapi/v3")
    assert not abac.non_resource_attributes("GET", "/version").is_resource_request


def test_blank_and_comment_lines_are_skipped(tmp_path):
    authz = authorizer(tmp_path, "# who may do what", "", "   ", "  # indented comment",
                       line(user="alice", nonResourcePath="*"))
    assert [p.line for p in authz.policies] == [5]


BAD_LINES = [
    ('{"apiVersion": ', "Expecting value"),
    ("not json", "Expecting value"),
    ('{"user": "alice", "nonResourcePath": "*"}', "no apiVersion"),
    ('[1, 2]', "one JSON object"),
    ('"a string"', "one JSON object"),
    (json.dumps({"apiVersion": "abac.authorization.kubernetes.io/v1", "kind": "Policy", "spec": {}}),
     'apiVersion must be "abac.authorization.kubernetes.io/v1beta1"'),
    (json.dumps({"apiVersion": abac.API_VERSION, "kind": "Role", "spec": {}}), 'kind "Policy"'),
    (json.dumps({"apiVersion": abac.API_VERSION, "kind": "Policy"}), "spec must be an object"),
    (json.dumps({"apiVersion": abac.API_VERSION, "kind": "Policy", "spec": [], "x": 1}), "unknown field 'x'"),
    (line(user="alice", resource="pods", readOnly=True), "unknown field spec.readOnly"),
    (line(user="alice", resource="pods", verb="get"), "unknown field spec.verb"),
    (line(user=["alice"], resource="pods"), "spec.user must be a string"),
    (line(user="alice", resource="pods", readonly="true"), "spec.readonly must be true or false"),
    (line(user="alice", resource="pods", namespace=None), "spec.namespace must be a string"),
    (line(namespace="*", resource="pods"), "names neither user nor group"),
    (line(user="alice", namespace="*"), "names neither resource nor nonResourcePath"),
]


@pytest.mark.parametrize("text, why", BAD_LINES)
def test_a_bad_line_is_refused_naming_file_line_and_error(tmp_path, text, why):
    good = line(user="alice", nonResourcePath="*")
    path = tmp_path / "policy.jsonl"
    path.write_text(f"# comment\n{good}\n\n{text}\n{good}\n")
    with pytest.raises(abac.PolicyFileError) as caught:
        abac.ABACAuthorizer(path)
    message = str(caught.value)
    assert message.startswith(f"error reading policy file {path}, line 4: {text}: "), message
    assert why in message


def test_a_huge_bad_line_is_shortened_in_the_message(tmp_path):
    path = tmp_path / "policy.jsonl"
    path.write_text("{" + "x" * 100_000 + "\n")
    with pytest.raises(abac.PolicyFileError) as caught:
        abac.ABACAuthorizer(path)
    assert len(str(caught.value)) < 500


@pytest.mark.parametrize("setup, why", [
    (lambda p: None, "No such file or directory"),
    (lambda p: p.write_bytes(b"\xff\n"), "not UTF-8 text"),
])
def test_an_unreadable_file_is_refused_naming_it(tmp_path, setup, why):
    path = tmp_path / "policy.jsonl"
    setup(path)
    with pytest.raises(abac.PolicyFileError) as caught:
        abac.ABACAuthorizer(path)
    assert str(caught.value) == f"error reading policy file {path}: {why}"


def test_an_empty_file_refuses_everything(tmp_path):
    authz = authorizer(tmp_path, "")
    assert not allowed(authz, INSECURE_USER, res("get", "pods", "d"))


# The example policy: what each component of the cluster needs, and no more
# than ABAC can express.
ADMIN = User("admin", ("system:masters", "system:authenticated"))
NODE = User("system:node:node1", ("system:nodes", "system:authenticated"))
SCHEDULER = User("scheduler", ("system:authenticated",))
CONTROLLERS = User("controller-manager", ("system:authenticated",))
VIEWER = User("viewer", ("system:authenticated",))
STRANGER = User("someone", ("system:authenticated",))

EXAMPLE = [
    (ADMIN, res("delete", "nodes", name="n1"), True),
    (ADMIN, res("create", "deployments", "d", "apps"), True),
    (ADMIN, path("POST", "/anything"), True),
    # kubelets
    *[(NODE, res(v, "pods", "d"), True) for v in ("get", "list", "watch")],
    (NODE, res("watch", "pods"), True),    # across all namespaces ("" request namespace): "*" covers it
    *[(NODE, res(v, "pods", "d", name="w", sub="status"), True) for v in ("update", "patch")],
    *[(NODE, res(v, "nodes", name="node1"), True) for v in ("create", "update", "patch", "get")],
    (NODE, res("patch", "nodes", name="node1", sub="status"), True),
    (NODE, res("create", "events", "d"), True),
    *[(NODE, res(v, r, "d"), True) for v in ("get", "list", "watch")
      for r in ("services", "endpoints", "configmaps", "secrets")],
    *[(NODE, res("update", r, "d", name="x"), False) for r in ("services", "endpoints", "configmaps", "secrets")],
    (NODE, res("create", "deployments", "d", "apps"), False),
    (NODE, res("list", "namespaces"), False),
    *[(NODE, path("GET", p), True) for p in ("/version", "/api", "/api/v1", "/apis", "/apis/apps/v1", "/healthz")],
    (NODE, path("POST", "/version"), False),
    # the scheduler
    *[(SCHEDULER, res(v, "pods", "d"), True) for v in ("list", "watch")],
    *[(SCHEDULER, res(v, "nodes"), True) for v in ("list", "watch")],
    (SCHEDULER, res("create", "pods", "d", name="w", sub="binding"), True),
    (SCHEDULER, res("create", "events", "d"), True),
    (SCHEDULER, res("update", "nodes", name="n1"), False),
    *[(SCHEDULER, res(v, "services", "d"), True) for v in ("list", "watch")],   # to spread a service's pods
    (SCHEDULER, res("update", "services", "d", name="s"), False),
    (SCHEDULER, path("GET", "/version"), True),
    # the controller manager
    (CONTROLLERS, res("list", "services", "d"), True),
    (CONTROLLERS, res("create", "pods", "d"), True),
    (CONTROLLERS, res("update", "replicasets", "d", "apps", "r"), True),
    (CONTROLLERS, res("update", "endpoints", "d", name="web"), True),
    (CONTROLLERS, res("delete", "secrets", "d", name="s"), True),       # the namespace controller empties
    (CONTROLLERS, res("delete", "roles", "d", "rbac.authorization.k8s.io", "r"), True),
    (CONTROLLERS, res("delete", "clusterroles", "", "rbac.authorization.k8s.io", "r"), False),
    (CONTROLLERS, res("update", "customresourcedefinitions", "", "apiextensions.k8s.io", "c"), False),
    (CONTROLLERS, res("update", "nodes", name="n1"), True),       # taints, conditions, podCIDR
    (CONTROLLERS, res("update", "daemonsets", "d", "apps", "a"), True),
    (CONTROLLERS, res("update", "jobs", "d", "batch", "j"), True),
    (CONTROLLERS, res("update", "configmaps", "d", name="c"), True),      # kube-root-ca.crt
    (CONTROLLERS, res("create", "serviceaccounts", "d"), True),           # each namespace's default
    # the viewer
    *[(VIEWER, res(v, r, ns, g), True) for v in ("get", "list", "watch")
      for r, ns, g in (("pods", "d", ""), ("nodes", "", ""), ("deployments", "d", "apps"))],
    *[(VIEWER, res(v, "pods", "d"), False) for v in ("create", "update", "patch", "delete")],
    (VIEWER, path("GET", "/openapi/v3"), True),
    # anyone else signed in may only discover
    (STRANGER, path("GET", "/apis"), True),
    (STRANGER, res("get", "pods", "d"), False),
    # no token at all (--anonymous-auth): /version, as Kubernetes' system:public-info-viewer, and nothing else
    (ANONYMOUS_USER, path("GET", "/version"), True),
    (ANONYMOUS_USER, path("GET", "/api"), False),
    (ANONYMOUS_USER, res("get", "pods", "d"), False),
]


@pytest.mark.parametrize("user, attributes, expected", EXAMPLE)
def test_example_policy(user, attributes, expected):
    assert allowed(abac.ABACAuthorizer(POLICY_FILE), user, attributes) is expected
