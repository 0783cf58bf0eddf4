"""A pod's ServiceAccount token, end to end: the real API server (HTTPS,
Node,RBAC, the ServiceAccount and NodeRestriction admission plugins, signing
keys from certs.py), a real kubelet signed in as its node, real Docker.

The offline image is busybox, with no Python in it, so the official Python
client cannot run inside the pod. What the test does instead: it copies the
three files the kubelet projected into the container out with `docker exec
cat`, and hands them to the client's own in-cluster loader
(InClusterConfigLoader, what load_incluster_config() calls), pointed at the
API server's secure port."""
from __future__ import annotations

import base64
import ipaddress
import json
import shutil
import subprocess
import sys
import time

import pytest
from cryptography import x509
from kubernetes import client as k8s
from kubernetes.config.incluster_config import InClusterConfigLoader

from apiserver_harness import ROOT, Client, unique
from harness import Kubelet, all_running
from polling import wait_for
from test_gauntlet import SecureServer

sys.path.insert(0, str(ROOT / "01-kubelet"))
from api_volumes.api_objects import TokenCache  # noqa: E402
from common.client.client import APIClient  # noqa: E402
from common.client.kubeconfig import Connection  # noqa: E402

PLUGINS = "NamespaceLifecycle,LimitRanger,ServiceAccount,DenyPrivileged,NoControllerManager,NodeRestriction"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
NS = "/api/v1/namespaces/default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client):
    tmp = tmp_path_factory.mktemp("sa-token")
    node = f"test-{unique('sa')[-8:]}"
    certs = tmp / "certs"
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs), "--nodes", node,
                    "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    server = SecureServer(tmp / "data", certs, "--authorization-mode", "Node,RBAC",
                          "--enable-admission-plugins", PLUGINS,
                          "--service-account-signing-key-file", str(certs / "sa.key"),
                          "--service-account-key-file", str(certs / "sa.pub"),
                          "--root-ca-file", str(certs / "ca.crt")).start()
    kubeconfig = tmp / "node.kubeconfig"
    kubeconfig.write_text((certs / f"{node}.kubeconfig").read_text().replace("https://127.0.0.1:1",
                                                                              server.secure_url))
    kubelet = Kubelet(tmp, docker_client, node, "--kubeconfig", str(kubeconfig), "--root-dir", str(tmp / "root"),
                      "--node-status-update-frequency", "1")
    try:
        kubelet.start()
        api = Client(server.url)               # the insecure port: the test is the administrator
        wait_for(lambda: api.get(f"/api/v1/nodes/{node}").status_code == 200, 30, what="the node to register")
        yield server, kubelet, api, certs
    finally:
        try:
            kubelet.cleanup()
        finally:
            server.stop()
            shutil.rmtree(f"/dev/shm/groundup-kubelet/{node}", ignore_errors=True)


def run_pod(api: Client, kubelet: Kubelet, name: str, **spec) -> dict:
    pod = {"metadata": {"name": name}, "spec": {
        "nodeName": kubelet.node_name, "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}], **spec}}
    response = api.post(f"{NS}/pods", pod)
    assert response.status_code == 201, response.text
    try:
        return wait_for(lambda: (p := api.get(f"{NS}/pods/{name}").json()).get("status") and all_running(p) and p,
                        60, what=f"pod {name} running")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{api.get(f'{NS}/pods/{name}').json().get('status')}\n"
                             f"kubelet log:\n{kubelet.log()[-3000:]}") from None


def delete_pod(api: Client, kubelet: Kubelet, name: str) -> None:
    api.delete(f"{NS}/pods/{name}", {"gracePeriodSeconds": 0})
    wait_for(lambda: api.get(f"{NS}/pods/{name}").status_code == 404 and not kubelet.containers(name), 60,
             what=f"pod {name} to go")


def cat(kubelet: Kubelet, pod: str, path: str) -> bytes:
    result = kubelet.container(pod, "app").exec_run(["cat", path])
    assert result.exit_code == 0, result.output
    return result.output


def grant_pod_listing(api: Client, account: str) -> None:
    assert api.post(f"{NS}/serviceaccounts", {"metadata": {"name": account}}).status_code == 201
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    api.post(f"{rbac}/roles", {"metadata": {"name": account}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
    api.post(f"{rbac}/rolebindings", {"metadata": {"name": account}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}]})


def test_the_official_client_in_cluster_config_lists_what_the_role_allows_and_no_more(cluster, tmp_path):
    server, kubelet, api, certs = cluster
    account, name = unique("lister"), unique("incluster")
    grant_pod_listing(api, account)
    pod = run_pod(api, kubelet, name, serviceAccountName=account)
    volume = next(v["name"] for v in pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-"))
    assert {"name": volume, "readOnly": True, "mountPath": MOUNT} in pod["spec"]["containers"][0]["volumeMounts"]
    # The three files, read inside the container, as a program there would.
    token, ca, namespace = (cat(kubelet, name, f"{MOUNT}/{f}") for f in ("token", "ca.crt", "namespace"))
    assert ca == (certs / "ca.crt").read_bytes() and namespace == b"default"
    payload = token.split(b".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + b"=" * (-len(payload) % 4)))
    assert claims["sub"] == f"system:serviceaccount:default:{account}"
    assert claims["kubernetes.io"]["pod"] == {"name": name, "uid": pod["metadata"]["uid"]}
    assert claims["exp"] - claims["iat"] == 3607
    assert "Read-only file system" in kubelet.container(name, "app").exec_run(
        ["sh", "-c", f"echo x > {MOUNT}/token"]).output.decode()
    # Where a program in the pod would dial: the `kubernetes` Service, whose
    # cluster IP the server certificate names (reaching it needs chapter
    # 05's proxy, so below the test dials the secure port directly).
    env = dict(line.split("=", 1) for line in kubelet.container(name, "app").exec_run(["env"]).output.decode()
               .splitlines() if "=" in line)
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("10.96.0.1", "443")
    sans = x509.load_pem_x509_certificate((certs / "apiserver.crt").read_bytes()).extensions \
        .get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("10.96.0.1") in sans
    # Copied out, they are what load_incluster_config() reads.
    (tmp_path / "token").write_bytes(token)
    (tmp_path / "ca.crt").write_bytes(ca)
    configuration = k8s.Configuration()
    InClusterConfigLoader(token_filename=str(tmp_path / "token"), cert_filename=str(tmp_path / "ca.crt"),
                          environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                   "KUBERNETES_SERVICE_PORT": str(server.secure_port)}).load_and_set(configuration)
    core = k8s.CoreV1Api(k8s.ApiClient(configuration))
    assert name in [p.metadata.name for p in core.list_namespaced_pod("default").items]
    with pytest.raises(k8s.ApiException) as refused:
        core.list_namespaced_secret("default")
    assert refused.value.status == 403
    assert f'User \\"system:serviceaccount:default:{account}\\" cannot list resource \\"secrets\\"' in \
        refused.value.body
    # The kubelet wrote the token; it never logged it.
    assert token.decode() not in kubelet.log() and token.decode() not in server.log()
    # Deleting the pod revokes its token.
    delete_pod(api, kubelet, name)
    with pytest.raises(k8s.ApiException) as gone:
        core.list_namespaced_pod("default")
    assert gone.value.status == 401


def test_automount_false_leaves_the_pod_without_a_token(cluster):
    server, kubelet, api, certs = cluster
    name = unique("quiet")
    pod = run_pod(api, kubelet, name, automountServiceAccountToken=False)
    assert not pod["spec"].get("volumes")
    assert kubelet.container(name, "app").exec_run(["ls", MOUNT]).exit_code != 0
    delete_pod(api, kubelet, name)


def test_the_token_is_renewed_once_80_percent_of_its_life_has_passed(cluster):
    """The kubelet's TokenCache, asking the real API server, with a clock the test moves."""
    server, kubelet, api, certs = cluster
    name = unique("renew")
    created = api.post(f"{NS}/pods", {"metadata": {"name": name}, "spec": {
        "automountServiceAccountToken": False,
        "containers": [{"name": "app", "image": "busybox:1.35"}]}}).json()   # unscheduled: nobody runs it
    now = [time.time()]
    tokens = TokenCache(APIClient(Connection(server.url)), clock=lambda: now[0])
    first = tokens.get(created, "", 600)
    assert tokens.get(created, "", 600) == first and tokens.requests == 1
    now[0] += 0.79 * 600
    assert tokens.get(created, "", 600) == first and tokens.requests == 1
    now[0] += 0.02 * 600                       # past 80%
    second = tokens.get(created, "", 600)
    assert tokens.requests == 2 and second != first
    tokens.forget(lambda uid: uid == created["metadata"]["uid"])
    tokens.get(created, "", 600)
    assert tokens.requests == 3
    api.delete(f"{NS}/pods/{name}")
