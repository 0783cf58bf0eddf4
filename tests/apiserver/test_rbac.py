"""RBAC: Kubernetes' matching rules (table-driven), then a real API server with
--authorization-mode RBAC over HTTPS, driven with requests and the real kubectl:
where a grant counts, resourceNames, subresources, a deleted role, escalation,
impersonation, validation, the default policy and its reconciliation."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rbac
import rbac_escalation
from abac import Attributes
from apiserver_harness import ROOT, make_certs, unique
from polling import wait_for
from rbac import PolicyRule
from test_gauntlet import SecureServer, as_user  # as_user: a client signed in with a user's token

RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
GROUP = "rbac.authorization.k8s.io"
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}


# ----- the matching rules, without a server -----

def res(verb, resource, namespace="d", group="", name="", sub=""):
    return Attributes(verb, resource, sub, group, namespace, name)


def rule(verbs=("get",), groups=("",), resources=("pods",), names=(), urls=()):
    return PolicyRule(tuple(verbs), tuple(groups), tuple(resources), tuple(names), tuple(urls))


RULES = [
    # verbs
    (rule(), res("get", "pods"), True),
    (rule(), res("list", "pods"), False),
    (rule(verbs=["*"]), res("delete", "pods"), True),
    (rule(verbs=["get", "list"]), res("list", "pods"), True),
    # apiGroups: "" is the core group only
    (rule(), res("get", "deployments", group="apps"), False),
    (rule(groups=["apps"], resources=["deployments"]), res("get", "deployments", group="apps"), True),
    (rule(groups=["*"], resources=["deployments"]), res("get", "deployments", group="apps"), True),
    (rule(groups=["apps"], resources=["pods"]), res("get", "pods"), False),
    # resources: plural, exact; a subresource is named on its own
    (rule(resources=["pod"]), res("get", "pods"), False),
    (rule(), res("get", "pods", sub="log"), False),
    (rule(resources=["pods/log"]), res("get", "pods", sub="log"), True),
    (rule(resources=["pods/log"]), res("get", "pods"), False),
    (rule(resources=["*"]), res("get", "pods", sub="log"), True),
    (rule(groups=["*"], resources=["*/scale"]), res("get", "deployments", group="apps", sub="scale"), True),
    (rule(groups=["*"], resources=["*/scale"]), res("get", "deployments", group="apps"), False),
    (rule(groups=["*"], resources=["*/scale"]), res("get", "pods", sub="status"), False),
    # resourceNames: only those objects, so never a list or a create
    (rule(names=["web"]), res("get", "pods", name="web"), True),
    (rule(names=["web"]), res("get", "pods", name="db"), False),
    (rule(verbs=["list"], names=["web"]), res("list", "pods"), False),
    (rule(verbs=["create"], names=["web"]), res("create", "pods"), False),
    # nonResourceURLs: exact, "*", or a prefix ending in "*"
    (rule(groups=(), resources=(), urls=["/healthz"]), Attributes("get", path="/healthz"), True),
    (rule(groups=(), resources=(), urls=["/healthz"]), Attributes("get", path="/healthz/etcd"), False),
    (rule(groups=(), resources=(), urls=["/healthz*"]), Attributes("get", path="/healthz/etcd"), True),
    (rule(groups=(), resources=(), urls=["/apis/*"]), Attributes("get", path="/apis"), False),
    (rule(groups=(), resources=(), urls=["*"]), Attributes("get", path="/metrics"), True),
    (rule(groups=(), resources=(), urls=["/healthz"]), Attributes("post", path="/healthz"), False),
    # a resource rule never matches a path, nor a path rule a resource
    (rule(resources=["*"], groups=["*"], verbs=["*"]), Attributes("get", path="/version"), False),
    (rule(groups=(), resources=(), urls=["*"], verbs=["*"]), res("get", "pods"), False),
]


@pytest.mark.parametrize("policy_rule, attributes, allowed", RULES)
def test_rule_matching(policy_rule, attributes, allowed):
    assert rbac.rule_allows(policy_rule, attributes) is allowed


COVERS = [
    (rule(verbs=["*"], groups=["*"], resources=["*"]), rule(verbs=["get", "delete"], resources=["secrets"]), True),
    (rule(verbs=["get"]), rule(verbs=["get", "list"]), False),
    (rule(resources=["*/status"], verbs=["update"]), rule(resources=["pods/status"], verbs=["update"]), True),
    (rule(resources=["pods"]), rule(resources=["pods/log"]), False),
    (rule(names=["web"]), rule(), False),                 # a named grant does not cover all objects
    (rule(), rule(names=["web"]), True),
    (rule(groups=(), resources=(), urls=["/apis/*"]), rule(groups=(), resources=(), urls=["/apis/apps"]), True),
]


@pytest.mark.parametrize("owner, wanted, covered", COVERS)
def test_what_a_holder_may_grant(owner, wanted, covered):
    assert (rbac_escalation.missing_rules([owner], [wanted]) == []) is covered


def test_missing_rights_print_as_kubernetes_prints_them():
    missing = rbac_escalation.missing_rules([], [rule(verbs=["get", "list"], resources=["pods", "secrets"])])
    assert sorted(rbac_escalation.compact_string(r) for r in rbac_escalation.compact(missing)) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}']


# ----- a real server -----

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"))
    with open(out / "tokens.csv", "a") as tokens:
        for name, token in TOKENS.items():
            tokens.write(f"{token},{name},{name}-uid\n")
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs):
    started = SecureServer(tmp_path_factory.mktemp("rbac") / "data", certs, "--authorization-mode", "RBAC").start()
    yield started
    started.stop()



@pytest.fixture(scope="module")
def admin(server, certs):
    return as_user(server, certs, "admin")


@pytest.fixture(scope="module")
def alice(server, certs):
    return as_user(server, certs, "alice")


@pytest.fixture
def ns(admin):
    name = unique("rbac")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def role(name, *rules, namespace=None, kind="Role") -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": meta, "rules": list(rules)}


def grant(verbs, resources, groups=("",), names=()) -> dict:
    out = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    return {**out, "resourceNames": list(names)} if names else out


def binding(name, role_kind, role_name, user, kind="RoleBinding") -> dict:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name},
            "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role_name},
            "subjects": [{"kind": "User", "name": user, "apiGroup": GROUP}]}


def create(api, obj, namespace=None, code=201):
    plural = obj["kind"].lower() + "s"
    where = f"/namespaces/{namespace}" if namespace else ""
    response = api.post(f"{RBAC_API}{where}/{plural}", obj)
    assert response.status_code == code, response.text
    return response


def give(admin, namespace, user, *rules):
    """A Role with these rules in `namespace`, bound to `user`."""
    name = unique("role")
    create(admin, role(name, *rules), namespace)
    create(admin, binding(name, "Role", name, user), namespace)
    return name


def test_a_role_counts_only_in_its_namespace(admin, alice, ns):
    other = unique("rbac")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": other}}).status_code == 201
    give(admin, ns, "alice", grant(["list"], ["pods"]))
    assert alice.get(f"/api/v1/namespaces/{ns}/pods").status_code == 200
    refused = alice.get(f"/api/v1/namespaces/{other}/pods")
    assert refused.status_code == 403
    # Kubernetes' text: no reason after it, since RBAC only has no opinion
    # (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go, forbiddenMessage, v1.32).
    assert refused.json()["message"] == (f'pods is forbidden: User "alice" cannot list resource "pods" '
                                         f'in API group "" in the namespace "{other}"')
    assert alice.get("/api/v1/pods").status_code == 403          # every namespace: not granted


def test_a_cluster_role_through_a_role_binding_counts_in_the_binding_namespace(admin, alice, ns):
    other = unique("rbac")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": other}}).status_code == 201
    name = unique("cr")
    create(admin, role(name, grant(["get", "list"], ["configmaps"]), kind="ClusterRole"))
    create(admin, binding(name, "ClusterRole", name, "alice"), ns)
    assert alice.get(f"/api/v1/namespaces/{ns}/configmaps").status_code == 200
    assert alice.get(f"/api/v1/namespaces/{other}/configmaps").status_code == 403
    assert alice.get("/api/v1/configmaps").status_code == 403


def test_resource_names_limit_a_rule_to_those_objects(admin, alice, ns):
    for name in ("settings", "other"):
        admin.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}, "data": {"a": "b"}})
    give(admin, ns, "alice", grant(["get", "list"], ["configmaps"], names=["settings"]))
    assert alice.get(f"/api/v1/namespaces/{ns}/configmaps/settings").status_code == 200
    assert alice.get(f"/api/v1/namespaces/{ns}/configmaps/other").status_code == 403
    assert alice.get(f"/api/v1/namespaces/{ns}/configmaps").status_code == 403     # a list names no object


def test_a_subresource_needs_its_own_grant(admin, alice, ns):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}
    assert admin.post(f"/api/v1/namespaces/{ns}/pods", pod).status_code == 201
    give(admin, ns, "alice", grant(["get"], ["pods"]))
    assert alice.get(f"/api/v1/namespaces/{ns}/pods/web").status_code == 200
    refused = alice.get(f"/api/v1/namespaces/{ns}/pods/web/status")
    assert refused.status_code == 403
    assert refused.json()["message"] == (f'pods "web" is forbidden: User "alice" cannot get resource "pods/status" '
                                         f'in API group "" in the namespace "{ns}"')
    give(admin, ns, "alice", grant(["get"], ["pods/status"]))
    wait_for(lambda: alice.get(f"/api/v1/namespaces/{ns}/pods/web/status").status_code == 200, timeout=10,
             what="pods/status granted")


def test_a_binding_whose_role_is_deleted_grants_nothing_and_says_why(admin, alice, ns):
    name = give(admin, ns, "alice", grant(["list"], ["secrets"]))
    assert alice.get(f"/api/v1/namespaces/{ns}/secrets").status_code == 200
    assert admin.delete(f"{RBAC_API}/namespaces/{ns}/roles/{name}").status_code == 200
    refused = alice.get(f"/api/v1/namespaces/{ns}/secrets")
    assert refused.status_code == 403
    assert refused.json()["message"].endswith(f': RBAC: role.{GROUP} "{name}" not found')


def test_escalation_is_refused_with_kubernetes_text(admin, alice, ns):
    give(admin, ns, "alice", grant(["create", "get"], ["roles", "rolebindings"], groups=[GROUP]),
         grant(["get"], ["pods"]))
    create(alice, role("pod-getter", grant(["get"], ["pods"])), ns)               # held: allowed
    refused = create(alice, role("secret-reader", grant(["get", "list"], ["secrets", "pods"])), ns, code=403)
    assert refused.json()["message"] == (
        f'roles.{GROUP} "secret-reader" is forbidden: user "alice" (groups=["system:authenticated"]) '
        "is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}')
    refused = create(alice, binding("alice-admin", "ClusterRole", "admin", "alice"), ns, code=403)
    assert "is attempting to grant RBAC permissions not currently held" in refused.json()["message"]
    # A binding of a role she holds all of is fine.
    create(alice, binding("bob-gets-pods", "Role", "pod-getter", "bob"), ns)


def test_escalate_and_bind_open_the_door(admin, alice, ns):
    give(admin, ns, "alice", grant(["create"], ["roles", "rolebindings"], groups=[GROUP]),
         grant(["escalate"], ["roles"], groups=[GROUP], names=["wide"]),
         grant(["bind"], ["clusterroles"], groups=[GROUP], names=["view"]))
    create(alice, role("wide", grant(["*"], ["secrets"])), ns)
    create(alice, role("narrow", grant(["*"], ["secrets"])), ns, code=403)       # escalate names "wide" only
    create(alice, binding("bob-views", "ClusterRole", "view", "bob"), ns)
    create(alice, binding("bob-edits", "ClusterRole", "edit", "bob"), ns, code=403)


def test_impersonation_needs_the_impersonate_verb(admin, alice, ns):
    as_bob = {"Impersonate-User": "bob"}
    refused = alice.get(f"/api/v1/namespaces/{ns}/pods", headers=as_bob)
    assert refused.status_code == 403
    assert refused.json()["message"] == ('users "bob" is forbidden: User "alice" cannot impersonate resource '
                                         '"users" in API group "" at the cluster scope')
    give(admin, ns, "bob", grant(["list"], ["pods"]))
    name = unique("imp")
    create(admin, role(name, grant(["impersonate"], ["users"], names=["bob"]), kind="ClusterRole"))
    create(admin, binding(name, "ClusterRole", name, "alice", kind="ClusterRoleBinding"))
    assert alice.get(f"/api/v1/namespaces/{ns}/pods", headers=as_bob).status_code == 200
    # Acting as bob, alice has bob's rights, not her own.
    me = alice.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, headers=as_bob).json()
    assert me["status"]["userInfo"] == {"username": "bob", "groups": ["system:authenticated"]}
    refused = alice.get(f"/api/v1/namespaces/{ns}/pods", headers={**as_bob, "Impersonate-Group": "system:masters"})
    assert refused.status_code == 403 and 'cannot impersonate resource "groups"' in refused.json()["message"]
    assert alice.get("/api/v1/pods", headers={"Impersonate-Group": "x"}).status_code == 400
    refused = alice.get(f"/api/v1/namespaces/{ns}/pods", headers={**as_bob, "Impersonate-Uid": "42"})
    assert refused.status_code == 403
    assert 'cannot impersonate resource "uids" in API group "authentication.k8s.io"' in refused.json()["message"]
    me = admin.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", {},
                    headers={**as_bob, "Impersonate-Uid": "42", "Impersonate-Group": "devs"}).json()
    assert me["status"]["userInfo"] == {"username": "bob", "uid": "42", "groups": ["devs", "system:authenticated"]}


@pytest.mark.parametrize("obj, namespaced, message", [
    (role("r", {"apiGroups": [""], "resources": ["pods"]}), True,
     "rules[0].verbs: Required value: verbs must contain at least one value"),
    (role("r", {"verbs": ["get"], "resources": ["pods"]}), True,
     "rules[0].apiGroups: Required value: resource rules must supply at least one api group"),
    (role("r", {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}), True,
     'rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to '
     "non-resource URLs"),
    (role("a/b", grant(["get"], ["pods"])), True, "metadata.name: Invalid value: \"a/b\": may not contain '/'"),
    ({**binding("b", "Secret", "x", "bob")}, True,
     'roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"'),
    ({**binding("b", "Role", "x", "bob", kind="ClusterRoleBinding")}, False,
     'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"'),
    ({**binding("b", "Role", "x", "bob"), "subjects": [{"kind": "Robot", "name": "r"}]}, True,
     'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"'),
])
def test_bad_objects_are_422_naming_the_field(admin, ns, obj, namespaced, message):
    refused = create(admin, obj, ns if namespaced else None, code=422)
    assert message in refused.json()["message"], refused.json()["message"]


def test_a_binding_role_ref_cannot_change(admin, ns):
    created = create(admin, binding("fixed", "ClusterRole", "view", "bob"), ns).json()
    created["roleRef"]["name"] = "edit"
    refused = admin.put(f"{RBAC_API}/namespaces/{ns}/rolebindings/fixed", created)
    assert refused.status_code == 422
    assert ('roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
            'Name:"edit"}: cannot change roleRef') in refused.json()["message"]


def test_the_default_policy_is_there(admin, certs, server):
    view = admin.get(f"{RBAC_API}/clusterroles/view").json()
    assert any("deployments" in r["resources"] and "watch" in r["verbs"] for r in view["rules"])
    edit = admin.get(f"{RBAC_API}/clusterroles/edit").json()
    admin_role = admin.get(f"{RBAC_API}/clusterroles/admin").json()
    for r in view["rules"]:                            # view's rules aggregate into edit, and edit's into admin
        assert r in edit["rules"] and r in admin_role["rules"]
    assert not any("secrets" in r["resources"] for r in view["rules"])
    masters = admin.get(f"{RBAC_API}/clusterrolebindings/cluster-admin").json()
    assert masters["subjects"] == [{"apiGroup": GROUP, "kind": "Group", "name": "system:masters"}]
    # The lessons' users get what policy.jsonl gives them.
    node = as_user(server, certs, "system:node:node1")
    assert node.post("/api/v1/nodes", {"metadata": {"name": "node1"}}).status_code in (201, 409)
    assert node.get("/api/v1/namespaces/kube-system/secrets").status_code == 200
    assert node.delete("/api/v1/namespaces/default").status_code == 403
    viewer = as_user(server, certs, "viewer")
    assert viewer.get("/api/v1/namespaces/default/pods").status_code == 200
    assert viewer.get("/api/v1/namespaces/default/secrets").status_code == 403   # view leaves secrets out
    assert as_user(server, certs, "bob").get("/version").status_code == 200        # system:discovery


def test_anyone_may_read_the_version_and_health_and_nothing_else(server, certs):
    """--anonymous-auth (on by default, as in Kubernetes): no token at all is
    system:anonymous, and system:public-info-viewer grants system:unauthenticated these paths."""
    anonymous = as_user(server, certs, None)
    for path in ("/version", "/healthz", "/livez", "/readyz"):
        assert anonymous.get(path).status_code == 200, path
    for path, what in (("/api", 'path "/api"'), ("/api/v1/namespaces/default/pods",
                                                 'resource "pods" in API group "" in the namespace "default"')):
        refused = anonymous.get(path)
        assert refused.status_code == 403, path
        assert 'User "system:anonymous" cannot' in refused.json()["message"] and what in refused.json()["message"]


def test_aggregation_follows_new_roles(admin, alice, ns):
    name = unique("agg")
    labelled = role(name, grant(["get", "list"], ["widgets"], groups=["example.com"]), kind="ClusterRole")
    labelled["metadata"]["labels"] = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    create(admin, labelled)

    def in_role(role_name):
        return lambda: any("widgets" in r.get("resources", ())
                           for r in admin.get(f"{RBAC_API}/clusterroles/{role_name}").json()["rules"])
    for role_name in ("view", "edit", "admin"):
        wait_for(in_role(role_name), timeout=10, what=f"widgets in {role_name}")
    assert admin.delete(f"{RBAC_API}/clusterroles/{name}").status_code == 200
    wait_for(lambda: not in_role("view")(), timeout=10, what="widgets gone from view")


def test_rbac_then_abac_each_allow_what_they_know(tmp_path, certs):
    """With RBAC,ABAC the policy file still grants what no binding does (viewer reads nodes)."""
    for mode, code in (("RBAC", 403), ("RBAC,ABAC", 200), ("ABAC", 200)):
        (tmp_path / mode).mkdir()
        started = SecureServer(tmp_path / mode / "data", certs, "--authorization-mode", mode).start()
        try:
            assert as_user(started, certs, "viewer").get("/api/v1/nodes").status_code == code, mode
            # alice is in no binding and on no policy line
            refused = as_user(started, certs, "alice").get("/api/v1/nodes")
            assert refused.status_code == 403
            assert refused.json()["message"].endswith("at the cluster scope" if mode == "RBAC"
                                                      else ": No policy matched.")
        finally:
            started.stop()


@pytest.mark.parametrize("mode", ["ABAC", "AlwaysAllow"])
def test_the_default_roles_exist_whatever_authorizes(tmp_path, certs, kubectl, mode):
    """Kubernetes writes them wherever it serves rbac.authorization.k8s.io: a
    cluster may switch to RBAC later, or `kubectl auth reconcile` against them."""
    started = SecureServer(tmp_path / "data", certs, "--authorization-mode", mode).start()
    try:
        shown = subprocess.run([kubectl, "-s", started.url, "--cache-dir", str(tmp_path / "cache"),
                                "get", "clusterrole", "view", "-o", "jsonpath={.metadata.name} {.rules[*].verbs}"],
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("view ") and "watch" in shown.stdout      # aggregated, not empty
        admin = as_user(started, certs, "admin")
        for name in ("cluster-admin", "admin", "edit", "system:node", "system:public-info-viewer"):
            assert admin.get(f"{RBAC_API}/clusterroles/{name}").status_code == 200, name
        assert admin.get(f"{RBAC_API}/clusterrolebindings/system:discovery").status_code == 200
    finally:
        started.stop()


def test_bad_authorization_modes_stop_the_server(tmp_path, certs):
    for mode, words in (("RBAC,Webhook", "'Webhook' is not one of"), ("RBAC,RBAC", "only once")):
        done = subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "apiserver.py"), "--data-dir",
                               str(tmp_path / "d"), "--authorization-mode", mode], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 2 and words in done.stderr, done.stderr


def test_start_up_reconciles_the_defaults_by_kubernetes_rule(tmp_path, certs):
    data = tmp_path / "data"
    started = SecureServer(data, certs, "--authorization-mode", "RBAC").start()
    admin = as_user(started, certs, "admin")
    path = f"{RBAC_API}/clusterroles/system:basic-user"
    try:
        basic = admin.get(path).json()
        assert len(basic["rules"]) == 2
        kept = grant(["get"], ["widgets"], groups=["example.com"])
        basic["rules"] = [basic["rules"][0], kept]                         # one default taken away, one added
        assert admin.put(path, basic).status_code == 200
        public = admin.get(f"{RBAC_API}/clusterroles/system:public-info-viewer").json()
        public["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
        public["rules"] = []
        assert admin.put(f"{RBAC_API}/clusterroles/system:public-info-viewer", public).status_code == 200
    finally:
        started.stop()
    started = SecureServer(data, certs, "--authorization-mode", "RBAC").start()    # the same data, restarted
    admin = as_user(started, certs, "admin")
    try:
        rules = admin.get(path).json()["rules"]
        assert kept in rules and len(rules) == 3                           # the default is back, the addition kept
        assert admin.get(f"{RBAC_API}/clusterroles/system:public-info-viewer").json()["rules"] == []
    finally:
        started.stop()


# ----- the real kubectl -----

@pytest.fixture
def kubectl_as(server, certs, kubectl, tmp_path):
    """kubectl_as(user, *args): kubectl with that user's token (alice, bob: their tokens)."""
    config = tmp_path / "admin.kubeconfig"
    config.write_text((certs / "admin.kubeconfig").read_text().replace("https://127.0.0.1:1", server.secure_url))

    def run(user, *args):
        token = ["--token", TOKENS[user]] if user in TOKENS else []
        return subprocess.run([kubectl, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"),
                               *token, *args], capture_output=True, text=True, timeout=60)
    return run


def test_kubectl_create_get_and_can_i(kubectl_as, ns):
    for args in (("create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", ns),
                 ("create", "rolebinding", "alice-reads", "--role=pod-reader", "--user=alice", "-n", ns),
                 ("create", "clusterrole", unique("cm"), "--verb=get", "--resource=configmaps",
                  "--resource-name=settings"),
                 ("create", "clusterrolebinding", unique("crb"), "--clusterrole=view", "--group=devs",
                  "--serviceaccount", f"{ns}:robot")):
        done = kubectl_as("admin", *args)
        assert done.returncode == 0, done.stderr
    table = kubectl_as("admin", "get", "roles,rolebindings", "-n", ns, "-o", "wide").stdout
    assert "role.rbac.authorization.k8s.io/pod-reader" in table and "CREATED AT" in table
    header = next(line for line in table.splitlines() if line.startswith("NAME") and "ROLE" in line)
    assert header.split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert "Role/pod-reader" in table and "alice" in table
    # can-i, as alice through impersonation, agrees with what the server then does.
    for verb, where, answer in (("list", ns, "yes"), ("list", "default", "no"), ("delete", ns, "no")):
        said = kubectl_as("admin", "auth", "can-i", verb, "pods", "-n", where, "--as", "alice").stdout.strip()
        assert said == answer, (verb, where, said)
        did = kubectl_as("alice", "get", "pods", "-n", where) if verb == "list" else None
        if did is not None:
            assert (did.returncode == 0) is (answer == "yes"), did.stderr
    assert kubectl_as("admin", "auth", "can-i", "get", "pods", "--as", "bob", "--as-group", "system:masters",
                      "-A").stdout.strip() == "yes"
    refused = kubectl_as("alice", "auth", "can-i", "list", "pods", "--as", "carol")
    assert 'User "alice" cannot impersonate resource "users"' in refused.stderr


def test_kubectl_can_i_list_shows_rbac_rules(kubectl_as, admin, ns):
    give(admin, ns, "bob", grant(["get"], ["configmaps"], names=["settings"]), grant(["get", "list"], ["pods"]))
    listed = kubectl_as("admin", "auth", "can-i", "--list", "-n", ns, "--as", "bob")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["configmaps", "[]", "[settings]", "[get]"] in rows
    assert ["pods", "[]", "[]", "[get", "list]"] in rows
    assert ["[/version]", "[]", "[get]"] in rows                # system:public-info-viewer, a path rule


def test_kubectl_auth_reconcile(kubectl_as, admin, ns, tmp_path):
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {**role("deployer", grant(["get", "create"], ["deployments"], groups=["apps"])), "metadata":
         {"name": "deployer", "namespace": ns}},
        {**binding("alice-deploys", "Role", "deployer", "alice"), "metadata": {"name": "alice-deploys",
                                                                                "namespace": ns}}]}))
    first = kubectl_as("admin", "auth", "reconcile", "-f", str(manifest))
    assert first.returncode == 0, first.stderr
    assert "role.rbac.authorization.k8s.io/deployer reconciled" in first.stdout
    assert admin.get(f"{RBAC_API}/namespaces/{ns}/rolebindings/alice-deploys").status_code == 200
    # An extra rule added by hand is kept by a second reconcile (no --remove-extra-permissions).
    stored = admin.get(f"{RBAC_API}/namespaces/{ns}/roles/deployer").json()
    stored["rules"].append(grant(["list"], ["deployments"], groups=["apps"]))
    assert admin.put(f"{RBAC_API}/namespaces/{ns}/roles/deployer", stored).status_code == 200
    again = kubectl_as("admin", "auth", "reconcile", "-f", str(manifest))
    assert again.returncode == 0, again.stderr
    assert len(admin.get(f"{RBAC_API}/namespaces/{ns}/roles/deployer").json()["rules"]) == 2


# ----- the official Python client -----

def test_the_python_client_manages_roles_and_meets_the_same_refusals(server, certs, admin, ns):
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    def rbac_api(token):
        config = k8s.Configuration()
        config.host = server.secure_url
        config.ssl_ca_cert = str(certs / "ca.crt")
        config.api_key = {"authorization": f"Bearer {token}"}
        return k8s.RbacAuthorizationV1Api(k8s.ApiClient(config))
    admin_token = next(line.split(",")[0] for line in (certs / "tokens.csv").read_text().splitlines()
                       if line.split(",")[1] == "admin")
    as_admin = rbac_api(admin_token)
    as_admin.create_namespaced_role(ns, k8s.V1Role(
        metadata=k8s.V1ObjectMeta(name="reader"),
        rules=[k8s.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])]))
    as_admin.create_namespaced_role_binding(ns, k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="bob-reads"),
        role_ref=k8s.V1RoleRef(api_group=GROUP, kind="Role", name="reader"),
        subjects=[k8s.RbacV1Subject(kind="User", name="bob", api_group=GROUP)]))
    assert [b.metadata.name for b in as_admin.list_namespaced_role_binding(ns).items] == ["bob-reads"]
    names = {r.metadata.name for r in as_admin.list_cluster_role().items}
    assert {"cluster-admin", "admin", "edit", "view", "system:node"} <= names
    with pytest.raises(ApiException) as refused:
        rbac_api(TOKENS["bob"]).create_namespaced_role(ns, k8s.V1Role(
            metadata=k8s.V1ObjectMeta(name="mine"),
            rules=[k8s.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get"])]))
    assert refused.value.status == 403
    assert 'cannot create resource "roles"' in json.loads(refused.value.body)["message"]


def test_the_scheduler_and_controller_manager_can_do_their_jobs(server, certs, admin, ns):
    """groundup:scheduler (system:kube-scheduler) and groundup:controller-manager, as the lessons run them."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unbound"},
           "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}
    assert admin.post(f"/api/v1/namespaces/{ns}/pods", pod).status_code == 201
    scheduler = as_user(server, certs, "scheduler")
    assert scheduler.get("/api/v1/nodes").status_code == 200
    assert scheduler.get("/api/v1/services").status_code == 200
    bound = scheduler.post(f"/api/v1/namespaces/{ns}/pods/unbound/binding",
                           {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unbound"},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": "node1"}})
    assert bound.status_code == 201, bound.text
    assert scheduler.get(f"/api/v1/namespaces/{ns}/secrets").status_code == 403
    manager = as_user(server, certs, "controller-manager")
    create(admin, role("leftover", grant(["get"], ["pods"])), ns)
    # Emptying a namespace: every kind, Roles included.
    assert manager.delete(f"{RBAC_API}/namespaces/{ns}/roles/leftover").status_code == 200
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
              "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "busybox:1.35"}]}}}}
    assert manager.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", rs).status_code == 201
    assert manager.post(f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}}).status_code == 403


def test_kubectl_as_several_groups_and_a_uid(kubectl_as):
    """Repeated Impersonate-Group headers reach the server joined; each is a group."""
    shown = kubectl_as("admin", "auth", "whoami", "--as", "bob", "--as-group", "a", "--as-group", "b",
                       "--as-uid", "7", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"]["userInfo"] == {
        "username": "bob", "uid": "7", "groups": ["a", "b", "system:authenticated"]}
