"""The secure port's gauntlet over real HTTPS: tokens (401), the ABAC policy
(403), admission plugins in order, the audit line; with requests and the
real kubectl, using the files `make certs` (certs.py) generates."""
from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from apiserver_harness import APISERVER, APIServer, Client, ROOT, make_certs, pod, unique
from polling import free_port

POLICY = ROOT / "02-apiserver" / "policy.jsonl"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"))
    return out


def _tokens(certs) -> dict[str, str]:
    """user name -> token, from tokens.csv."""
    return {line.split(",")[1]: line.split(",")[0] for line in (certs / "tokens.csv").read_text().splitlines()}


class SecureServer(APIServer):
    def __init__(self, data_dir, certs, *extra):
        self.secure_port = free_port()
        super().__init__(data_dir, "--secure-port", str(self.secure_port),
                         "--tls-cert-file", str(certs / "apiserver.crt"),
                         "--tls-private-key-file", str(certs / "apiserver.key"),
                         "--token-auth-file", str(certs / "tokens.csv"),
                         "--authorization-policy-file", str(POLICY), *extra)
        self.secure_url = f"https://127.0.0.1:{self.secure_port}"


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    server = SecureServer(tmp_path_factory.mktemp("secure") / "data", certs).start()
    yield server
    server.stop()


def as_user(secure, certs, user: str | None) -> Client:
    client = Client(secure.secure_url)
    client.session.verify = str(certs / "ca.crt")
    if user:
        client.session.headers["Authorization"] = f"Bearer {_tokens(certs)[user]}"
    return client


@pytest.mark.parametrize("header", ["Bearer wrong", "Basic YWRtaW46YWRtaW4=", "Bearer ", "Bearer a b",
                                    "Bearer " + "x" * 10_000])
def test_a_wrong_token_is_401(secure, certs, header):
    client = as_user(secure, certs, None)
    for path in ("/api/v1/namespaces/default/pods", "/version", "/api"):
        response = client.get(path, headers={"Authorization": header})
        assert response.status_code == 401, (path, response.text)
        assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    assert client.get("/healthz").text == "ok"      # health checks need no token


def test_no_token_at_all_is_system_anonymous_and_the_policy_decides(secure, certs):
    """--anonymous-auth, on by default as in Kubernetes: policy.jsonl lets
    system:unauthenticated read /version, and nothing else."""
    anonymous = as_user(secure, certs, None)
    assert anonymous.get("/version").json()["gitVersion"].startswith("v1.")
    refused = anonymous.get("/api/v1/namespaces/default/pods")
    assert refused.status_code == 403
    assert refused.json()["message"] == ('pods is forbidden: User "system:anonymous" cannot list resource "pods" '
                                         'in API group "" in the namespace "default": No policy matched.')
    assert anonymous.get("/api").status_code == 403
    assert anonymous.get("/healthz").text == "ok"


@pytest.mark.parametrize("flags", [("--anonymous-auth=false",), ("--authorization-mode", "AlwaysAllow")])
def test_without_anonymous_auth_no_token_is_401(tmp_path, certs, flags):
    """Off when asked, and off with AlwaysAllow, which would let anyone do anything (kube-apiserver's rule)."""
    server = SecureServer(tmp_path / "data", certs, *flags).start()
    try:
        for path in ("/version", "/api/v1/namespaces/default/pods"):
            assert as_user(server, certs, None).get(path).status_code == 401, path
        assert as_user(server, certs, "viewer").get("/version").status_code == 200
    finally:
        server.stop()
    if "AlwaysAllow" in flags:
        assert "AnonymousAuth is not allowed with the AlwaysAllow authorizer" in server.log()


def test_the_policy_decides_what_each_user_may_do(secure, certs):
    admin, viewer, node = (as_user(secure, certs, u) for u in ("admin", "viewer", "system:node:node1"))
    name = unique("web")
    assert admin.post("/api/v1/namespaces/default/pods", pod(name)).status_code == 201
    assert viewer.get(f"/api/v1/namespaces/default/pods/{name}").status_code == 200
    refused = viewer.delete(f"/api/v1/namespaces/default/pods/{name}")
    assert refused.status_code == 403 and refused.json()["reason"] == "Forbidden"
    assert refused.json()["message"] == (f'pods "{name}" is forbidden: User "viewer" cannot delete resource "pods" '
                                         'in API group "" in the namespace "default": No policy matched.')
    listing = node.get("/apis/apps/v1/namespaces/default/deployments")
    assert listing.status_code == 403 and listing.json()["message"] == (
        'deployments.apps is forbidden: User "system:node:node1" cannot list resource "deployments" in API '
        'group "apps" in the namespace "default": No policy matched.')
    assert node.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1").status_code == 200
    nodes = viewer.post("/api/v1/nodes", {"metadata": {"name": "n9"}})
    assert nodes.status_code == 403 and "at the cluster scope" in nodes.json()["message"]


def test_the_insecure_port_still_needs_nothing(secure):
    assert Client(secure.url).get("/api/v1/namespaces/default/pods").status_code == 200


def test_kubectl_over_https_with_the_generated_kubeconfigs(secure, certs, kubectl, tmp_path):
    def run(user: str, *args: str):
        config = (certs / f"{user}.kubeconfig").read_text().replace("https://127.0.0.1:1", secure.secure_url)
        path = tmp_path / f"{user}.kubeconfig"
        path.write_text(config)
        return subprocess.run([kubectl, "--kubeconfig", str(path), "--cache-dir", str(tmp_path / "cache"), *args],
                              capture_output=True, text=True, timeout=60)
    name = unique("kc")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n"
                        "  - name: app\n    image: busybox:1.35\n")
    created = run("admin", "apply", "-f", str(manifest))
    assert created.returncode == 0 and created.stdout == f"pod/{name} created\n", created.stderr
    listed = run("viewer", "get", "pod", name)
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[:3] == [name, "0/1", "Pending"]
    refused = run("viewer", "delete", "pod", name)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (f'Error from server (Forbidden): pods "{name}" is forbidden: User "viewer" '
                                      'cannot delete resource "pods" in API group "" in the namespace "default": '
                                      'No policy matched.')


def test_every_change_leaves_an_audit_line_without_the_token(secure, certs):
    admin = as_user(secure, certs, "admin")
    name = unique("audited")
    admin.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    admin.delete(f"/api/v1/namespaces/default/configmaps/{name}")
    log = secure.log()
    assert f"default/{name}: request user=admin verb=create resource=configmaps code=201" in log
    assert f"default/{name}: request user=admin verb=delete resource=configmaps code=200" in log
    assert not any(token in log for token in _tokens(certs).values())


# ----- admission plugins -----

def test_namespace_lifecycle_refuses_a_missing_namespace(api):
    response = api.post("/api/v1/namespaces/nowhere/pods", pod("lost"))
    assert response.status_code == 404 and response.json()["message"] == 'namespaces "nowhere" not found'


def test_limit_ranger_fills_in_and_caps_resources(api, namespace):
    api.post(f"/api/v1/namespaces/{namespace}/limitranges", {
        "metadata": {"name": "defaults"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "64Mi"},
                             "defaultRequest": {"cpu": "100m"}, "max": {"cpu": "1"}}]}})
    filled = api.post(f"/api/v1/namespaces/{namespace}/pods", pod("filled")).json()
    assert filled["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}
    assert filled["status"]["qosClass"] == "Burstable"
    greedy = pod("greedy")
    greedy["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    refused = api.post(f"/api/v1/namespaces/{namespace}/pods", greedy)
    assert refused.status_code == 403
    assert refused.json()["message"].startswith(
        'pods "greedy" is forbidden: [LimitRanger] maximum cpu usage per Container is 1, but limit is 2')


def _privileged(name: str) -> dict:
    body = pod(name)
    body["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return body


def test_deny_privileged_names_itself_and_the_field(api, namespace):
    refused = api.post(f"/api/v1/namespaces/{namespace}/pods", _privileged("root"))
    assert refused.status_code == 403
    assert refused.json()["message"].startswith(
        'pods "root" is forbidden: [DenyPrivileged] spec.containers[0].securityContext.privileged: '
        "privileged containers are not allowed")


@pytest.mark.parametrize("plugins,first", [
    ("NamespaceLifecycle,DenyPrivileged", "namespaces \"nowhere\" not found"),
    ("DenyPrivileged,NamespaceLifecycle", "[DenyPrivileged]"),
])
def test_the_order_of_the_plugins_decides_who_speaks_first(tmp_path, plugins, first):
    server = APIServer(tmp_path / "data", "--enable-admission-plugins", plugins).start()
    try:
        response = Client(server.url).post("/api/v1/namespaces/nowhere/pods", _privileged("both"))
        assert first in response.json()["message"]
    finally:
        server.stop()


def test_allow_privileged_lets_them_in(tmp_path):
    server = APIServer(tmp_path / "data", "--allow-privileged").start()
    try:
        assert Client(server.url).post("/api/v1/namespaces/default/pods", _privileged("ok")).status_code == 201
    finally:
        server.stop()


# ----- files the server refuses to start with -----

@pytest.mark.parametrize("which,content,words", [
    ("--token-auth-file", "tok1,admin,admin\n,nobody,x\n", "line 2"),
    ("--authorization-policy-file", '{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", '
     '"kind": "Policy", "spec": {"user": "a", "resource": "*"}}\n{not json\n', "line 2"),
])
def test_a_bad_token_or_policy_file_stops_the_server_naming_the_line(tmp_path, certs, which, content, words):
    bad = tmp_path / "bad"
    bad.write_text(content)
    files = {"--token-auth-file": str(certs / "tokens.csv"), "--authorization-policy-file": str(POLICY)}
    files[which] = str(bad)
    result = subprocess.run(
        [sys.executable, str(APISERVER), "--data-dir", str(tmp_path / "data"), "--port", str(free_port()),
         "--secure-port", str(free_port()), "--tls-cert-file", str(certs / "apiserver.crt"),
         "--tls-private-key-file", str(certs / "apiserver.key"), *sum(([k, v] for k, v in files.items()), [])],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and words in result.stderr and str(bad) in result.stderr, result.stderr
    # One line that says what is wrong, not a traceback that happens to contain it.
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and words in last and "Traceback" not in result.stderr, result.stderr


def test_the_secure_port_without_a_token_file_is_refused(tmp_path, certs):
    result = subprocess.run(
        [sys.executable, str(APISERVER), "--data-dir", str(tmp_path / "data"),
         "--tls-cert-file", str(certs / "apiserver.crt"), "--tls-private-key-file", str(certs / "apiserver.key")],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "needs --token-auth-file" in result.stderr


def test_plain_http_on_the_secure_port_gets_no_answer_it_could_misread(secure):
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{secure.secure_port}/version", timeout=5)


@pytest.mark.parametrize("user,args,answer", [
    ("viewer", ("get", "pods"), "yes"),
    ("viewer", ("delete", "pods"), "no"),
    ("admin", ("delete", "nodes"), "yes"),
    ("system:node:node1", ("list", "deployments.apps"), "no"),
])
def test_kubectl_auth_can_i_asks_the_policy(secure, certs, kubectl, tmp_path, user, args, answer):
    name = "node1" if user.startswith("system:node:") else user
    config = (certs / f"{name}.kubeconfig").read_text().replace("https://127.0.0.1:1", secure.secure_url)
    path = tmp_path / "config"
    path.write_text(config)
    result = subprocess.run([kubectl, "--kubeconfig", str(path), "--cache-dir", str(tmp_path / "cache"),
                             "auth", "can-i", *args], capture_output=True, text=True, timeout=60)
    assert result.stdout.split()[:1] == [answer], result.stderr      # "no - No policy matched."
    assert result.returncode == (0 if answer == "yes" else 1)


def test_a_get_on_a_kind_that_only_answers_questions_is_405(api):
    response = api.get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert response.status_code == 405


def test_the_shared_client_flags_reach_the_secure_port(secure, certs, tmp_path):
    """common/client/kubeconfig.py: what every client component (kubelet, scheduler...)
    uses for --kubeconfig / --apiserver / --token."""
    import argparse

    from common.client import kubeconfig

    config = tmp_path / "node1.kubeconfig"
    config.write_text((certs / "node1.kubeconfig").read_text().replace("https://127.0.0.1:1", secure.secure_url))
    parser = argparse.ArgumentParser()
    kubeconfig.add_flags(parser)
    connection = kubeconfig.from_args(parser.parse_args(["--kubeconfig", str(config)]))
    assert connection.server == secure.secure_url and "<set>" in repr(connection)
    assert _tokens(certs)["system:node:node1"] not in repr(connection)
    session = connection.session()
    assert session.get(secure.secure_url + "/api/v1/pods", verify=session.verify).status_code == 200
    plain = kubeconfig.from_args(parser.parse_args(["--apiserver", "http://127.0.0.1:8080"]))
    assert plain.server == "http://127.0.0.1:8080" and plain.token is None
    flags = kubeconfig.from_args(parser.parse_args(["--apiserver", secure.secure_url, "--token",
                                                    _tokens(certs)["viewer"], "--certificate-authority",
                                                    str(certs / "ca.crt")]))
    assert flags.session().get(secure.secure_url + "/api/v1/pods", verify=str(certs / "ca.crt")).status_code == 200
    broken = tmp_path / "broken"
    broken.write_text("current-context: nowhere\ncontexts: []\n")
    with pytest.raises(kubeconfig.KubeconfigError, match="no context named 'nowhere'"):
        kubeconfig.load(broken)
