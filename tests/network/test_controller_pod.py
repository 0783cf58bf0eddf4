"""A controller run by the cluster: chapter 04's Website controller as a
Deployment, signed in with its own ServiceAccount and a least-privilege
ClusterRole, reaching the API server through the `kubernetes` Service.

Real machines (network namespaces with a Docker engine each), the real API
server with HTTPS, Node,RBAC and signed ServiceAccount tokens, the real
kubectl applying the manifests the lesson applies, the offline image
groundup/controllers:dev (05-proxy-dns/controller_image.py). What a pod
reaches is the Service 10.96.0.1:443, through its node's service proxy, to
master's port 6443: nothing here gives the pod another way in.

Also the issue's other in-pod promise: the official Python client's
load_incluster_config() lists pods from inside a pod, and is refused what
its ServiceAccount was not granted."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from network_harness import ROOT, Cluster
from polling import wait_for

import controller_image

CONTROLLER = "/apis/apps/v1/namespaces/website-system/deployments/website-controller"
WEBSITES = "/apis/example.groundup.dev/v1/namespaces/default/websites"
ROLE = "/apis/rbac.authorization.k8s.io/v1/clusterroles/website-controller"


@pytest.fixture(scope="module")
def cluster(machines):
    workdir = Path(tempfile.mkdtemp(prefix="groundup-controller-pod-", dir="/var/tmp"))
    made = Cluster(machines, workdir)
    try:
        controller_image.build(quiet=True)
        machines.load_image(controller_image.IMAGE, ("node1", "node2"))
        made.bring_up(scheduler=True, secure=True)
        yield made
    finally:
        made.tear_down()
        shutil.rmtree(workdir, ignore_errors=True)


def kubectl_run(kubectl: str, cluster: Cluster, *args: str) -> str:
    """The real kubectl as the administrator (the insecure port on master)."""
    done = subprocess.run([kubectl, "--server", cluster.api, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def pods(cluster: Cluster, namespace: str, selector: str) -> list[dict]:
    return cluster.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")["items"]


def log_of(cluster: Cluster, namespace: str, name: str) -> str:
    response = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    return response.text if response.status_code == 200 else ""


@pytest.fixture(scope="module")
def controller(cluster, kubectl):
    """The CRD, then the controller's namespace, account, role, binding and
    Deployment, applied as the lesson applies them; its running pod's name."""
    kubectl_run(kubectl, cluster, "apply", "-f", str(ROOT / "04-controllers" / "manifests" / "website-crd.yaml"))
    kubectl_run(kubectl, cluster, "apply", "-f", str(ROOT / "05-proxy-dns" / "manifests" / "website-controller.yaml"))

    def running() -> str | None:
        for pod in pods(cluster, "website-system", "app=website-controller"):
            if pod["status"].get("phase") == "Running" and "controllers running" in log_of(
                    cluster, "website-system", pod["metadata"]["name"]):
                return pod["metadata"]["name"]
        return None
    try:
        return wait_for(running, 120, what="the controller's pod running and its informers synced")
    except AssertionError:
        print(cluster.logs())
        for pod in pods(cluster, "website-system", "app=website-controller"):
            print(json.dumps(pod.get("status"), indent=1), log_of(cluster, "website-system", pod["metadata"]["name"]))
        raise


def make_website(cluster: Cluster, name: str) -> None:
    body = {"apiVersion": "example.groundup.dev/v1", "kind": "Website", "metadata": {"name": name},
            "spec": {"replicas": 1, "message": f"hello from {name}"}}
    created = cluster.request("POST", WEBSITES, body)
    assert created.status_code == 201, created.text


def test_the_controller_in_a_pod_makes_a_websites_deployment_and_service(cluster, controller):
    name = f"site-{uuid.uuid4().hex[:6]}"
    make_website(cluster, name)
    deployment = wait_for(lambda: (r := cluster.request("GET", f"/apis/apps/v1/namespaces/default/deployments/{name}"))
                          .status_code == 200 and r.json(), 60, what=f"Website {name}'s Deployment")
    assert deployment["metadata"]["ownerReferences"][0]["kind"] == "Website"
    wait_for(lambda: cluster.request("GET", f"/api/v1/namespaces/default/services/{name}").status_code == 200, 30,
             what=f"Website {name}'s Service")
    website = wait_for(lambda: (w := cluster.get(f"{WEBSITES}/{name}")).get("status", {}).get("availableReplicas") == 1
                       and w, 90, what=f"Website {name} reporting one available replica")
    assert website["status"]["url"] == f"http://{name}.default.svc.cluster.local"
    # It was the pod, signed in as its ServiceAccount, that did it: the
    # token the kubelet projected, on the Service's address.
    environment = cluster.get(f"/api/v1/namespaces/website-system/pods/{controller}")["spec"]
    assert environment["serviceAccountName"] == "website-controller"
    assert any(v["name"].startswith("kube-api-access-") for v in environment["volumes"])


def test_a_verb_taken_from_its_role_is_a_403_in_its_log_until_given_back(cluster, controller):
    role = cluster.get(ROLE)
    reduced = json.loads(json.dumps(role))
    for rule in reduced["rules"]:
        if rule["resources"] == ["deployments"]:
            rule["verbs"].remove("create")
    assert cluster.request("PUT", ROLE, reduced).status_code == 200
    name = f"denied-{uuid.uuid4().hex[:6]}"
    make_website(cluster, name)
    wanted = ('deployments.apps is forbidden: User "system:serviceaccount:website-system:website-controller" '
              'cannot create resource "deployments" in API group "apps" in the namespace "default"')
    try:
        wait_for(lambda: wanted in log_of(cluster, "website-system", controller), 30,
                 what="the controller logging the 403 for creating a Deployment")
    except AssertionError:
        print(log_of(cluster, "website-system", controller)[-3000:])
        raise
    assert cluster.request("GET", f"/apis/apps/v1/namespaces/default/deployments/{name}").status_code == 404
    restored = {**cluster.get(ROLE), "rules": role["rules"]}
    assert cluster.request("PUT", ROLE, restored).status_code == 200
    # The work queue retries the Website with back-off; with the verb back, it succeeds.
    wait_for(lambda: cluster.request("GET", f"/apis/apps/v1/namespaces/default/deployments/{name}").status_code == 200,
             60, what=f"Website {name}'s Deployment once the verb is given back")


LISTER = """
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_incluster_config()
api = client.CoreV1Api()
print("pods:", " ".join(sorted(p.metadata.name for p in api.list_namespaced_pod("default").items)))
try:
    api.list_namespaced_secret("default")
    print("secrets: allowed")
except ApiException as error:
    print("secrets:", error.status, error.reason)
"""


def test_the_official_python_client_lists_pods_from_inside_a_pod(cluster, kubectl):
    name = f"lister-{uuid.uuid4().hex[:6]}"
    kubectl_run(kubectl, cluster, "create", "serviceaccount", name)
    kubectl_run(kubectl, cluster, "create", "role", name, "--verb=list", "--resource=pods")
    kubectl_run(kubectl, cluster, "create", "rolebinding", name, f"--role={name}", f"--serviceaccount=default:{name}")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"serviceAccountName": name, "restartPolicy": "Never",
                    "containers": [{"name": "app", "image": controller_image.IMAGE,
                                    "command": ["python3", "-c", LISTER]}]}}
    created = cluster.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert created.status_code == 201, created.text
    phase = wait_for(lambda: (p := cluster.get(f"/api/v1/namespaces/default/pods/{name}")["status"].get("phase"))
                     in ("Succeeded", "Failed") and p, 90, what=f"pod {name} finished")
    output = log_of(cluster, "default", name)
    assert phase == "Succeeded", output
    listed = next(line for line in output.splitlines() if line.startswith("pods:")).split()[1:]
    assert name in listed
    assert "secrets: 403 Forbidden" in output     # the standard phrase, as from Kubernetes
