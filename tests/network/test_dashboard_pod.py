"""The dashboard run by the cluster: dashboard/manifests/dashboard.yaml
applied with the real kubectl to a cluster under Node,RBAC with signed
ServiceAccount tokens, on machines made of namespaces.

The pod runs the offline image groundup/dashboard:dev
(dashboard/dashboard_image.py), finds the API server from inside the pod
(the `kubernetes` Service, its projected token), lists and watches through
its read-only ClusterRole, and is reached from master through the NodePort
on a node's address, as a browser on the projector's laptop would reach it.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from network_harness import Cluster, cluster_running_image, kubectl_as_admin
from polling import wait_for

import dashboard_image

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "dashboard" / "manifests" / "dashboard.yaml"
NODE_PORT = 30090
ACCOUNT = "system:serviceaccount:kube-system:dashboard"


@pytest.fixture(scope="module")
def cluster(machines):
    with cluster_running_image(machines, dashboard_image, "dashboard-pod") as made:
        yield made


def can_i(kubectl: str, cluster: Cluster, verb: str, resource: str) -> str:
    """`kubectl auth can-i` as the dashboard's ServiceAccount, asked by the
    administrator on the secure port (impersonation: what RBAC decides)."""
    done = subprocess.run([kubectl, "--kubeconfig", str(cluster.certs / "admin.kubeconfig"), "--as", ACCOUNT,
                           "auth", "can-i", verb, resource], capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def page_state(cluster: Cluster, node: str) -> dict | None:
    """GET /api/state through the NodePort on node's address, from master."""
    probe = ("import sys, urllib.request; "
             "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())")
    url = f"http://{cluster.machines.address(node)}:{NODE_PORT}/api/state"
    done = cluster.machines.run("master", "python3", "-c", probe, url, check=False)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def test_the_dashboard_runs_in_the_cluster_with_read_only_rights(cluster, kubectl):
    kubectl_as_admin(kubectl, cluster, "apply", "-f", str(MANIFEST))
    try:
        def everything_listed(node: str):
            state = page_state(cluster, node)
            return state if state and all(state["synced"].values()) and \
                {n["name"] for n in state["objects"]["nodes"]} == {"node1", "node2"} else None

        state = wait_for(lambda: everything_listed("node1"), 120, interval=1,
                         what="the dashboard's page through node1's port 30090")
        assert state["troubles"] == dict.fromkeys(state["troubles"])     # no kind refused
        pods = [p for p in state["objects"]["pods"] if p["namespace"] == "kube-system"]
        assert [p["owner"].split("/")[0] for p in pods] == ["ReplicaSet"], pods
        assert pods[0]["status"] == "Running" and pods[0]["ready"] == "1/1"
        assert everything_listed("node2")                              # a NodePort answers on every node
        # What its ClusterRole allows: reading the page's kinds, nothing else.
        assert [can_i(kubectl, cluster, "watch", r) for r in ("pods", "nodes", "events")] == ["yes"] * 3
        assert [can_i(kubectl, cluster, v, r) for v, r in (("create", "pods"), ("delete", "nodes"),
                                                           ("list", "secrets"))] == ["no"] * 3
    finally:
        kubectl_as_admin(kubectl, cluster, "delete", "-f", str(MANIFEST), "--wait=false")
