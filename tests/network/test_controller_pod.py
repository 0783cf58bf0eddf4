"""A client run by the cluster: the official Python client's
load_incluster_config() lists pods from inside a pod, and is refused what
its ServiceAccount was not granted.

Chapter 04's Website controller as a Deployment (its own ServiceAccount, a
least-privilege ClusterRole, a verb taken away and given back) is chapter
05's part 4, which the lesson runner replays command by command
(tests/lessons/): checking it here too ran the same scenario twice.

Real machines (network namespaces with a Docker engine each), the real API
server with HTTPS, Node,RBAC and signed ServiceAccount tokens, the real
kubectl making the pod's account and role, the offline image
groundup/controllers:dev (05-proxy-dns/controller_image.py), which holds
the official client. What a pod reaches is the Service 10.96.0.1:443, through its node's service proxy, to
master's port 6443: nothing here gives the pod another way in."""
from __future__ import annotations

import uuid

import pytest

from network_harness import Cluster, cluster_running_image, kubectl_as_admin
from polling import wait_for

import controller_image


@pytest.fixture(scope="module")
def cluster(machines):
    with cluster_running_image(machines, controller_image, "controller-pod") as made:
        yield made


def log_of(cluster: Cluster, namespace: str, name: str) -> str:
    response = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    return response.text if response.status_code == 200 else ""


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
    kubectl_as_admin(kubectl, cluster, "create", "serviceaccount", name)
    kubectl_as_admin(kubectl, cluster, "create", "role", name, "--verb=list", "--resource=pods")
    kubectl_as_admin(kubectl, cluster, "create", "rolebinding", name, f"--role={name}", f"--serviceaccount=default:{name}")
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
