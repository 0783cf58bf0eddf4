"""Questions about yourself: `kubectl auth can-i`, `can-i --list`, `auth whoami`,
with the real kubectl on the secure port (the policy in 02-apiserver/policy.jsonl)
and with requests on the insecure one (an all-powerful user)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import abac
from apiserver_harness import Client, ROOT, make_certs
from authentication import User
from test_gauntlet import SecureServer, as_user

POLICY_FILE = ROOT / "02-apiserver" / "policy.jsonl"
NODE = "system:node:node1"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"))
    return out


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    server = SecureServer(tmp_path_factory.mktemp("secure") / "data", certs).start()
    yield server
    server.stop()


@pytest.fixture
def run_kubectl(secure, certs, kubectl, tmp_path):
    """run_kubectl(user, *args, binary=kubectl) with that user's generated kubeconfig."""
    def run(user: str, *args: str, binary: str = kubectl) -> subprocess.CompletedProcess:
        name = user.removeprefix("system:node:")
        config = tmp_path / f"{name}.kubeconfig"
        config.write_text((certs / f"{name}.kubeconfig").read_text()
                          .replace("https://127.0.0.1:1", secure.secure_url))
        return subprocess.run([binary, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"), *args],
                              capture_output=True, text=True, timeout=60)
    return run


# ----- can-i: a cluster-scoped kind ignores the namespace kubectl sends -----

@pytest.mark.parametrize("user, args, answer", [
    (NODE, ("update", "nodes"), "yes"),              # kubectl sends namespace "default" along
    (NODE, ("patch", "nodes/status"), "yes"),
    (NODE, ("update", "nodes", "-n", "kube-system"), "yes"),
    (NODE, ("delete", "namespaces"), "no"),
    ("viewer", ("get", "nodes"), "yes"),
    ("viewer", ("update", "nodes"), "no"),
    ("scheduler", ("update", "nodes"), "no"),
    (NODE, ("update", "leases.coordination.k8s.io", "-n", "kube-node-lease"), "yes"),
    (NODE, ("update", "leases.coordination.k8s.io"), "no"),        # a namespaced kind keeps its namespace
])
def test_can_i_answers_as_the_request_would_be_answered(run_kubectl, user, args, answer):
    result = run_kubectl(user, "auth", "can-i", *args)
    assert result.stdout.split()[:1] == [answer], (result.stdout, result.stderr)


def test_can_i_agrees_with_the_request_itself(secure, certs, run_kubectl):
    node = as_user(secure, certs, NODE)
    created = node.post("/api/v1/nodes", {"metadata": {"name": "node1"}})
    assert created.status_code in (201, 409), created.text
    assert node.patch("/api/v1/nodes/node1", {"metadata": {"labels": {"checked": "yes"}}}).status_code == 200
    assert run_kubectl(NODE, "auth", "can-i", "patch", "nodes").stdout.startswith("yes")


# ----- can-i --list: the rules the policy grants -----

def _rows(output: str) -> list[list[str]]:
    """kubectl's table as [resources, non-resource URLs, resource names, verbs] rows."""
    lines = output.splitlines()
    header = lines[0]
    starts = [header.index(title) for title in ("Resources", "Non-Resource URLs", "Resource Names", "Verbs")]
    return [[line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])] for line in lines[1:]]


def test_can_i_list_as_a_node(run_kubectl):
    result = run_kubectl(NODE, "auth", "can-i", "--list")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    for row in (["nodes", "[]", "[]", "[*]"],                         # cluster scope, asked in "default"
                ["pods", "[]", "[]", "[*]"],
                ["events", "[]", "[]", "[*]"],
                ["secrets", "[]", "[]", "[get list watch]"],
                ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"],
                ["selfsubjectrulesreviews.authorization.k8s.io", "[]", "[]", "[create]"],
                ["selfsubjectreviews.authentication.k8s.io", "[]", "[]", "[create]"],
                ["", "[/api*]", "[]", "[get]"],
                ["", "[/version*]", "[]", "[get]"]):
        assert row in rows, (row, result.stdout)
    resources = {row[0] for row in rows}
    assert "leases.coordination.k8s.io" not in resources      # granted in kube-node-lease only
    assert "deployments.apps" not in resources and "*.*" not in resources
    assert not any("/metrics" in row[1] or row[1] == "[*]" for row in rows)


def test_can_i_list_in_another_namespace(run_kubectl):
    rows = _rows(run_kubectl(NODE, "auth", "can-i", "--list", "-n", "kube-node-lease").stdout)
    assert ["leases.coordination.k8s.io", "[]", "[]", "[*]"] in rows


def test_can_i_list_as_an_admin(run_kubectl):
    rows = _rows(run_kubectl("admin", "auth", "can-i", "--list").stdout)
    assert ["*.*", "[]", "[]", "[*]"] in rows and ["", "[*]", "[]", "[*]"] in rows


def test_the_insecure_port_answers_for_an_all_powerful_user(secure):
    insecure = Client(secure.url)
    review = insecure.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                           {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                            "spec": {"namespace": "default"}})
    assert review.status_code == 201, review.text
    assert review.json()["status"] == {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                                       "incomplete": False}
    for version in ("v1", "v1beta1", "v1alpha1"):        # what kubectl 1.27 to 1.33 ask
        me = insecure.post(f"/apis/authentication.k8s.io/{version}/selfsubjectreviews", {})
        assert me.status_code == 201, (version, me.text)
        assert me.json()["apiVersion"] == f"authentication.k8s.io/{version}"
        assert me.json()["status"]["userInfo"] == {"username": "system:admin", "groups": ["system:masters"]}


def test_a_rules_review_needs_a_token_on_the_secure_port(secure, certs):
    anonymous, stranger = as_user(secure, certs, None), as_user(secure, certs, None)
    stranger.session.headers["Authorization"] = "Bearer not-a-token"
    for path in ("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                 "/apis/authentication.k8s.io/v1/selfsubjectreviews"):
        assert stranger.post(path, {"spec": {}}).status_code == 401
        assert anonymous.post(path, {"spec": {}}).status_code == 403    # system:anonymous: the policy says no


# ----- whoami -----

@pytest.mark.parametrize("user, groups", [
    (NODE, ["system:nodes", "system:authenticated"]),
    ("admin", ["system:masters", "system:authenticated"]),
])
def test_whoami(run_kubectl, user, groups):
    result = run_kubectl(user, "auth", "whoami", "-o", "json")
    assert result.returncode == 0, result.stderr
    review = json.loads(result.stdout)
    assert review["kind"] == "SelfSubjectReview"
    assert review["status"]["userInfo"]["username"] == user
    assert review["status"]["userInfo"]["groups"] == groups


def _versioned_kubectl(version: str) -> str | None:
    """kubectl.1.27 and friends sit beside the preinstalled dispatcher."""
    found = shutil.which("kubectl")
    candidate = Path(os.path.realpath(found)).parent / f"kubectl.{version}" if found else None
    return str(candidate) if candidate and candidate.exists() else None


def test_whoami_with_kubectl_1_27_which_asks_v1beta1(run_kubectl):
    binary = _versioned_kubectl("1.27")
    if binary is None:
        pytest.skip("no kubectl.1.27 beside kubectl")
    result = run_kubectl(NODE, "auth", "whoami", binary=binary)
    assert result.returncode == 0, result.stderr
    assert "system:node:node1" in result.stdout


def test_discovery_lists_the_questions(run_kubectl):
    result = run_kubectl("admin", "api-resources", "--verbs=create", "-o", "name")
    names = result.stdout.split()
    assert {"selfsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io",
            "selfsubjectreviews.authentication.k8s.io"} <= set(names), result.stderr


# ----- the rules an ABAC policy grants (abac.ABACAuthorizer.rules_for) -----

def line(**spec) -> str:
    return json.dumps({"apiVersion": abac.API_VERSION, "kind": "Policy", "spec": spec})


ALICE = User("alice", ("dev", "system:authenticated"))
R = abac.ResourceRule
P = abac.NonResourceRule
READ = ("get", "list", "watch")

# (policy line, namespace asked about, the rules it gives alice)
RULES = [
    (dict(user="alice", namespace="*", resource="pods"), "d", [R(("*",), ("",), ("pods",))]),
    (dict(user="alice", namespace="d", resource="pods", readonly=True), "d", [R(READ, ("",), ("pods",))]),
    (dict(user="alice", namespace="d", resource="pods"), "other", []),
    (dict(user="bob", namespace="*", resource="pods"), "d", []),                     # someone else's
    (dict(group="dev", namespace="*", resource="*", apiGroup="*"), "d", [R(("*",), ("*",), ("*",))]),
    # a cluster-scope line counts in a namespace for its cluster-scoped kinds only
    (dict(user="alice", resource="nodes"), "d", [R(("*",), ("",), ("nodes",))]),
    (dict(user="alice", resource="pods"), "d", []),
    (dict(user="alice", resource="pods"), "", [R(("*",), ("",), ("pods",))]),
    (dict(user="alice", resource="*", readonly=True), "d",
     [R(READ, ("",), ("namespaces",)), R(READ, ("",), ("nodes",)), R(READ, ("",), ("persistentvolumes",))]),
    # paths belong to no namespace; a read-only path line allows GET only
    (dict(user="alice", nonResourcePath="/api*", readonly=True), "d", [P(("get",), ("/api*",))]),
    (dict(user="alice", nonResourcePath="*"), "", [P(("*",), ("*",))]),
]


@pytest.mark.parametrize("spec, namespace, expected", RULES)
def test_rules_for(tmp_path, spec, namespace, expected):
    path = tmp_path / "policy.jsonl"
    path.write_text(line(**spec) + "\n")
    resource_rules, path_rules = abac.ABACAuthorizer(path).rules_for(ALICE, namespace)
    assert [*resource_rules, *path_rules] == expected
