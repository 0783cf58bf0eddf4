"""ServiceAccounts over real HTTPS: the `default` account and kube-root-ca.crt
in every namespace, tokens from TokenRequest (and the real kubectl's
`create token`), what the authenticator refuses, the admission plugin, and
a kubelet's tokens under the Node authorizer."""
from __future__ import annotations

import base64
import datetime
import json
import subprocess
import sys

import jwt
import pytest

from apiserver_harness import APIServer, Client, ROOT, make_certs, unique
from polling import wait_for
from test_gauntlet import SecureServer, as_user  # as_user: a client signed in with a user's token

sys.path.insert(0, str(ROOT / "02-apiserver"))
import sa_tokens  # noqa: E402

PLUGINS = "NamespaceLifecycle,LimitRanger,ServiceAccount,DenyPrivileged,NoControllerManager,NodeRestriction"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"), nodes='node1,node2')
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs):
    started = SecureServer(tmp_path_factory.mktemp("sa") / "data", certs, "--authorization-mode", "Node,RBAC",
                           "--enable-admission-plugins", PLUGINS,
                           "--service-account-signing-key-file", str(certs / "sa.key"),
                           "--service-account-key-file", str(certs / "sa.pub"),
                           "--root-ca-file", str(certs / "ca.crt")).start()
    yield started
    started.stop()



def with_token(server, certs, token: str) -> Client:
    c = Client(server.secure_url)
    c.session.verify = str(certs / "ca.crt")
    c.session.headers["Authorization"] = f"Bearer {token}"
    return c


@pytest.fixture
def admin(server, certs) -> Client:
    return as_user(server, certs, "admin")


@pytest.fixture
def ns(admin) -> str:
    name = unique("sa")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def pod(name: str, node: str = "", **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {**({"nodeName": node} if node else {}),
                                                  "containers": [{"name": "app", "image": "busybox:1.35"}], **spec}}


def token_for(client: Client, ns: str, account: str, **spec) -> dict:
    response = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts/{account}/token",
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    assert response.status_code == 201, response.text
    return response.json()


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


# ----- every namespace's defaults -----

def test_a_new_namespace_gets_the_default_account_and_the_ca(admin, ns, certs):
    account = wait_for(lambda: (r := admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")).status_code
                       == 200 and r.json(), 10, what="the default ServiceAccount")
    assert account["kind"] == "ServiceAccount"
    ca = admin.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt").json()
    assert ca["data"] == {"ca.crt": (certs / "ca.crt").read_text()}
    # Deleted, they come back (the controllers' job; the server's without them).
    assert admin.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/default").status_code == 200
    again = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    assert again["metadata"]["uid"] != account["metadata"]["uid"]


def test_kubectl_get_sa_and_create_token(server, certs, ns, kubectl, tmp_path):
    config = tmp_path / "admin.kubeconfig"
    config.write_text((certs / "admin.kubeconfig").read_text().replace("https://127.0.0.1:1", server.secure_url))

    def run(*args):
        return subprocess.run([kubectl, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "c"), "-n", ns,
                               *args], capture_output=True, text=True, timeout=60)
    assert run("create", "serviceaccount", "robot").returncode == 0
    listed = run("get", "sa")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:2] for line in listed.stdout.splitlines()] == [
        ["NAME", "SECRETS"], ["default", "0"], ["robot", "0"]]
    made = run("create", "token", "robot", "--duration", "20m")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    got = claims(token)
    assert got["sub"] == f"system:serviceaccount:{ns}:robot"
    assert got["exp"] - got["iat"] == 1200
    assert got["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    missing = run("create", "token", "nobody")
    assert missing.returncode != 0
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    # Bound to a pod: the token names it, and dies with it.
    assert run("run", "holder", "--image", "busybox:1.35", "--overrides",
               '{"spec": {"serviceAccountName": "robot"}}').returncode == 0
    bound = run("create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "holder")
    assert bound.returncode == 0, bound.stderr
    assert claims(bound.stdout.strip())["kubernetes.io"]["pod"]["name"] == "holder"
    other = run("create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "holder")
    assert 'cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.' \
        in other.stderr


# ----- the authenticator -----

def test_a_token_signs_in_as_its_account_and_rbac_decides(server, certs, admin, ns):
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "reader"}})
    role = {"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"],
                                                           "verbs": ["get", "list"]}]}
    assert admin.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", role).status_code == 201
    binding = {"metadata": {"name": "reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                           "name": "pod-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]}
    assert admin.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", binding).status_code == 201
    reader = with_token(server, certs, token_for(admin, ns, "reader")["status"]["token"])
    assert reader.get(f"/api/v1/namespaces/{ns}/pods").status_code == 200
    refused = reader.get(f"/api/v1/namespaces/{ns}/secrets")
    assert refused.status_code == 403
    assert f'User "system:serviceaccount:{ns}:reader" cannot list resource "secrets"' in refused.json()["message"]
    review = reader.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).json()
    assert review["status"]["userInfo"]["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                                                       "system:authenticated"]


def test_an_expired_token_is_refused(server, certs, admin, ns):
    account = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    issuer = sa_tokens.TokenIssuer(str(certs / "sa.key"), sa_tokens.DEFAULT_ISSUER)
    two_hours_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    expired, _ = issuer.issue(account, 3600, [sa_tokens.DEFAULT_ISSUER], now=two_hours_ago)
    fresh, _ = issuer.issue(account, 3600, [sa_tokens.DEFAULT_ISSUER])
    # The same key, account and audience: only the dates differ.
    assert with_token(server, certs, fresh).get(f"/api/v1/namespaces/{ns}").status_code in (200, 403)
    assert with_token(server, certs, expired).get(f"/api/v1/namespaces/{ns}").status_code == 401


def test_a_token_for_another_audience_is_refused(server, certs, admin, ns):
    token = token_for(admin, ns, "default", audiences=["vault"])
    assert token["spec"]["audiences"] == ["vault"]
    assert with_token(server, certs, token["status"]["token"]).get("/api").status_code == 401
    ours = token_for(admin, ns, "default")["status"]["token"]
    assert with_token(server, certs, ours).get("/api").status_code == 200


def test_a_token_signed_by_another_key_is_refused(server, certs, tmp_path, admin, ns):
    other = tmp_path / "other"
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(other)],
                   check=True, capture_output=True)
    account = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    forged, _ = sa_tokens.TokenIssuer(str(other / "sa.key"), sa_tokens.DEFAULT_ISSUER).issue(
        account, 3600, [sa_tokens.DEFAULT_ISSUER])
    assert with_token(server, certs, forged).get("/api").status_code == 401


def test_a_recreated_account_voids_its_old_tokens(server, certs, admin, ns):
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "temp"}})
    token = token_for(admin, ns, "temp")["status"]["token"]
    assert with_token(server, certs, token).get("/api").status_code == 200
    assert admin.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/temp").status_code == 200
    assert with_token(server, certs, token).get("/api").status_code == 401
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "temp"}})   # same name, new uid
    assert with_token(server, certs, token).get("/api").status_code == 401


def test_a_pod_bound_token_dies_with_its_pod(server, certs, admin, ns):
    created = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("bound")).json()
    token = token_for(admin, ns, "default", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "bound"})
    assert token["spec"]["boundObjectRef"]["uid"] == created["metadata"]["uid"]
    private = claims(token["status"]["token"])["kubernetes.io"]
    assert private["pod"] == {"name": "bound", "uid": created["metadata"]["uid"]}
    assert private["serviceaccount"]["name"] == "default"
    client = with_token(server, certs, token["status"]["token"])
    assert client.get("/api").status_code == 200
    assert admin.delete(f"/api/v1/namespaces/{ns}/pods/bound").status_code == 200    # no node: gone at once
    assert client.get("/api").status_code == 401
    admin.post(f"/api/v1/namespaces/{ns}/pods", pod("bound"))                        # same name, new uid
    assert client.get("/api").status_code == 401


@pytest.mark.parametrize("spec, message", [
    ({"expirationSeconds": 60}, "spec.expirationSeconds: Invalid value: 60: may not specify a duration less "
                                "than 10 minutes"),
    ({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s"}},
     'spec.boundObjectRef.kind: Unsupported value: "Secret": supported values: "Pod"'),
])
def test_a_token_request_is_validated(admin, ns, spec, message):
    response = admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts/default/token", {"spec": spec})
    assert response.status_code == 422
    assert message in response.json()["message"]


def test_a_token_bound_to_a_pod_of_another_account_is_refused(admin, ns):
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "other"}})
    admin.post(f"/api/v1/namespaces/{ns}/pods", pod("runs-as-default"))
    response = admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts/other/token",
                          {"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "runs-as-default"}}})
    assert response.status_code == 400
    assert response.json()["message"] == ('cannot bind token for serviceaccount "other" to pod running with '
                                           "different serviceaccount name.")


# ----- the admission plugin -----

def test_a_pod_gets_the_default_account_and_its_token_volume(admin, ns):
    created = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("plain", initContainers=[
        {"name": "init", "image": "busybox:1.35"}])).json()
    spec = created["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    volume = spec["volumes"][-1]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    for container in spec["containers"] + spec["initContainers"]:
        assert container["volumeMounts"] == [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]


def test_automount_false_on_the_pod_or_the_account_means_no_token(admin, ns):
    off = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("off", automountServiceAccountToken=False)).json()
    assert "volumes" not in off["spec"] or not off["spec"]["volumes"]
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts",
               {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False})
    quiet = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("quiet", serviceAccountName="quiet")).json()
    assert not quiet["spec"].get("volumes")
    # The pod's own setting wins over the account's.
    loud = admin.post(f"/api/v1/namespaces/{ns}/pods",
                      pod("loud", serviceAccountName="quiet", automountServiceAccountToken=True)).json()
    assert loud["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


def test_a_pod_naming_a_missing_account_is_refused(admin, ns):
    response = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("ghostly", serviceAccountName="ghost"))
    assert response.status_code == 403
    assert response.json()["message"] == (f'pods "ghostly" is forbidden: error looking up service account '
                                           f'{ns}/ghost: serviceaccount "ghost" not found')


@pytest.mark.parametrize("spec, refusal", [
    ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
    ({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}, "a mirror pod may not reference secrets"),
    ({"containers": [{"name": "app", "image": "busybox:1.35", "envFrom": [{"secretRef": {"name": "s"}}]}]},
     "a mirror pod may not reference secrets"),
    ({"imagePullSecrets": [{"name": "s"}]}, "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]},
     "a mirror pod may not use ServiceAccountToken volume projections"),
])
def test_a_mirror_pod_may_not_use_an_account_or_a_secret(admin, ns, spec, refusal):
    """Whoever creates it: a static pod's kubelet never asks for either."""
    mirror = pod("static", **spec)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    response = admin.post(f"/api/v1/namespaces/{ns}/pods", mirror)
    assert response.status_code == 403, response.text
    assert response.json()["message"] == f'pods "static" is forbidden: {refusal}'


def test_the_account_is_checked_without_a_signing_key_too(tmp_path):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        made = api.post("/api/v1/namespaces/default/pods", pod("p")).json()
        assert made["spec"]["serviceAccountName"] == "default"
        assert not made["spec"].get("volumes")          # no key, no token to mount
        assert api.get("/api/v1/namespaces/default/serviceaccounts/default").status_code == 200
        assert api.get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt").status_code == 404  # no CA given
        token = api.post("/api/v1/namespaces/default/serviceaccounts/default/token", {"spec": {}})
        assert token.status_code == 404
        assert "--service-account-signing-key-file" in token.json()["message"]
    finally:
        server.stop()


# ----- kubelets: tokens for their own pods only -----

def test_a_kubelet_gets_tokens_only_for_its_own_pods_bound_to_them(server, certs, admin, ns):
    for node in ("node1", "node2"):
        admin.post("/api/v1/nodes", {"metadata": {"name": node}})
    mine = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("mine", "node1")).json()
    theirs = admin.post(f"/api/v1/namespaces/{ns}/pods", pod("theirs", "node2")).json()
    node1 = as_user(server, certs, "system:node:node1")
    url = f"/api/v1/namespaces/{ns}/serviceaccounts/default/token"

    def ask(ref):
        return node1.post(url, {"spec": {"boundObjectRef": ref} if ref else {}})
    ok = ask({"kind": "Pod", "apiVersion": "v1", "name": "mine", "uid": mine["metadata"]["uid"]})
    assert ok.status_code == 201, ok.text
    assert claims(ok.json()["status"]["token"])["kubernetes.io"]["node"]["name"] == "node1"
    other = ask({"kind": "Pod", "apiVersion": "v1", "name": "theirs", "uid": theirs["metadata"]["uid"]})
    assert other.status_code == 403
    assert other.json()["message"] == ('serviceaccounts "default" is forbidden: node requested token bound to a '
                                       "pod scheduled on a different node")
    unbound = ask(None)
    assert unbound.status_code == 403
    assert unbound.json()["message"].endswith("node requested token not bound to a pod")
    # An account no pod of node1 runs as: the Node authorizer says no before anything is read.
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "elsewhere"}})
    stranger = node1.post(f"/api/v1/namespaces/{ns}/serviceaccounts/elsewhere/token", {"spec": {}})
    assert stranger.status_code == 403
    assert "no relationship found between node 'node1' and this object" in stranger.json()["message"]


def test_the_sa_printer_and_the_schema_agree(admin, ns):
    table = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts",
                      headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Secrets", "Age"]
    bad = admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts",
                     {"metadata": {"name": "bad"}, "automountServiceAccountToken": "yes"})
    # Refused when decoded, as Kubernetes' JSON decoder refuses a string for a bool.
    assert bad.status_code == 400
    assert "automountServiceAccountToken" in bad.json()["message"]


# ----- asking about someone else: TokenReview and SubjectAccessReview -----

def delegator(server, certs, admin, ns: str) -> Client:
    """An account bound to system:auth-delegator, as a webhook-checking component would be."""
    name = unique("checker")
    admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": name}})
    binding = {"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                       "kind": "ClusterRole", "name": "system:auth-delegator"},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]}
    assert admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding).status_code == 201
    return with_token(server, certs, token_for(admin, ns, name)["status"]["token"])


def review_token(client: Client, token: str):
    return client.post("/apis/authentication.k8s.io/v1/tokenreviews",
                       {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})


def test_a_token_review_says_whose_token_it_is_or_that_it_is_refused(server, certs, admin, ns):
    checker = delegator(server, certs, admin, ns)
    presented = token_for(admin, ns, "default")["status"]["token"]
    answer = review_token(checker, presented)
    assert answer.status_code == 201, answer.text
    status = answer.json()["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == f"system:serviceaccount:{ns}:default"
    assert status["audiences"] == [sa_tokens.DEFAULT_ISSUER]
    static = next(line.split(",")[0] for line in (certs / "tokens.csv").read_text().splitlines() if ",viewer," in line)
    assert review_token(checker, static).json()["status"]["user"]["username"] == "viewer"   # the token file too
    refused = review_token(checker, presented[:-4] + "AAAA").json()["status"]
    assert refused["authenticated"] is False and refused["error"] == "invalid bearer token"
    for spec in ({"token": ""}, None):
        missing = checker.post("/apis/authentication.k8s.io/v1/tokenreviews", {"spec": spec})
        assert missing.status_code == 422 and "spec.token: Required value" in missing.json()["message"], spec
    for spec in (["a"], "x"):       # not an object: Go's decoder refuses it before validation, as for a create
        garbled = checker.post("/apis/authentication.k8s.io/v1/tokenreviews", {"spec": spec})
        assert garbled.status_code == 400 and "spec" in garbled.json()["message"], (spec, garbled.text)


def test_asking_about_others_needs_the_auth_delegator_role(server, certs, admin, ns):
    plain = with_token(server, certs, token_for(admin, ns, "default")["status"]["token"])
    refused = review_token(plain, "anything")
    assert refused.status_code == 403
    assert 'cannot create resource "tokenreviews" in API group "authentication.k8s.io"' in refused.json()["message"]
    refused = plain.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": {"user": "viewer"}})
    assert refused.status_code == 403


def test_a_subject_access_review_answers_for_the_user_named(server, certs, admin, ns):
    checker = delegator(server, certs, admin, ns)

    def may(user: str, verb: str, resource: str, groups=()) -> dict:
        answer = checker.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups),
                     "resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns}}})
        assert answer.status_code == 201, answer.text
        return answer.json()["status"]
    assert may("viewer", "list", "pods") == {"allowed": True}
    denied = may("viewer", "delete", "pods")
    assert denied["allowed"] is False and 'User "viewer" cannot delete resource "pods"' in denied["reason"]
    assert may("someone", "delete", "pods", groups=["system:masters"])["allowed"] is True
    nobody = checker.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": {
        "resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert nobody.status_code == 422 and "spec.user" in nobody.json()["message"]


# ----- the issuer's public documents -----

def test_a_verifier_outside_the_cluster_checks_a_token_with_the_published_keys(server, certs, admin, ns):
    """What Vault or a cloud does with a pod's token: read the issuer's
    configuration, fetch its keys, verify the signature itself."""
    token = token_for(admin, ns, "default", audiences=["vault"])["status"]["token"]
    pod_account = with_token(server, certs, token_for(admin, ns, "default")["status"]["token"])
    configuration = pod_account.get("/.well-known/openid-configuration")
    assert configuration.status_code == 200, configuration.text
    document = configuration.json()
    assert document["issuer"] == sa_tokens.DEFAULT_ISSUER
    assert document["jwks_uri"] == sa_tokens.DEFAULT_ISSUER + "/openid/v1/jwks"
    assert document["id_token_signing_alg_values_supported"] == ["ES256"]
    keys = pod_account.get("/openid/v1/jwks").json()["keys"]
    header = jwt.get_unverified_header(token)
    key = next(k for k in keys if k["kid"] == header["kid"])
    assert key["use"] == "sig" and key["alg"] == "ES256" and "d" not in key      # the public half only
    verified = jwt.decode(token, jwt.PyJWK(key).key, algorithms=[key["alg"]], audience="vault",
                          issuer=document["issuer"])
    assert verified["sub"] == f"system:serviceaccount:{ns}:default"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token[:-6] + ("AAAAAA" if not token.endswith("AAAAAA") else "BBBBBB"), jwt.PyJWK(key).key,
                   algorithms=[key["alg"]], audience="vault")


def test_the_issuer_documents_need_a_signed_in_account_and_a_signing_key(server, certs, tmp_path):
    anonymous = Client(server.secure_url)
    anonymous.session.verify = str(certs / "ca.crt")
    assert anonymous.get("/openid/v1/jwks").status_code == 403     # bound to system:serviceaccounts only
    viewer = as_user(server, certs, "viewer")        # a user, not an account: RBAC grants it nothing here
    assert viewer.get("/.well-known/openid-configuration").status_code == 403
    plain = APIServer(tmp_path / "data").start()      # no --service-account-signing-key-file
    try:
        assert Client(plain.url).get("/openid/v1/jwks").status_code == 404
    finally:
        plain.stop()
