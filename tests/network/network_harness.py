"""Chapter 05's test harness: a cluster on machines made of namespaces.

The `machines` fixture (conftest.py) makes master, node1, node2 and node3 with
05-proxy-dns/machines.py (a prefix and a subnet of the test's own, so a
learner's `make machines` is left alone), and removes them afterwards, also
when a test fails. The `cluster` fixture runs on them, with
05-proxy-dns/machine_cluster.py, what the lessons run:
the API server and the controller manager (for the node IPAM controller)
on master, and on node1 and node2 a kubelet with --network-plugin kubenet
and a route agent; master runs a route agent too, to reach pods. node3
stays empty: a test adds it as the node that joins later.

These need root (namespaces) and Docker (an engine per node); without them
they skip with one line, unless GROUNDUP_REQUIRE_DOCKER=1 (CI).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from machines import Machines, missing_requirements
from machine_cluster import CLUSTER_CIDR, CLUSTER_DNS, PY, ROOT, Cluster, free_subnet, ready  # noqa: F401 (re-exported)
from polling import wait_for


def require(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("GROUNDUP_REQUIRE_DOCKER") == "1":
            pytest.fail(f"in CI, but {reason}")
        pytest.skip(reason)


@contextlib.contextmanager
def own_machines(tag: str, names: tuple[str, ...], hostnames: tuple[str, ...] | None = None):
    """Machines of a test module's own (a prefix and a subnet that a
    learner's `make machines` never uses), up; removed afterwards, also
    when a test fails."""
    problem = missing_requirements()
    require(problem is None, f"the machines are network namespaces: {problem}")
    made = Machines(prefix=f"{tag}{os.getpid() % 10000:04d}", subnet=free_subnet(), names=names, hostnames=hostnames)
    try:
        made.up()
        yield made
    finally:
        made.down()


SERVER = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -v -p 80 -h /www"


def run_pod(cluster: Cluster, name: str, node: str, command: str = SERVER) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sh", "-c", command]}]}}
    created = cluster.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert created.status_code == 201, created.text
    return wait_for(lambda: (p := cluster.get(f"/api/v1/namespaces/default/pods/{name}"))["status"].get("podIP")
                    and p["status"].get("phase") == "Running" and p, 60,
                    what=f"pod {name} running on {node} with an IP")


def delete_pod(cluster: Cluster, name: str) -> None:
    cluster.request("DELETE", f"/api/v1/namespaces/default/pods/{name}")


def in_pod(cluster: Cluster, node: str, pod: str, *command: str) -> str:
    """Run a command in a pod's app container, through its node's Docker."""
    found = cluster.machines.run(node, "docker", "ps", "-q", "--filter", f"label=io.kubernetes.pod.name={pod}",
                                 "--filter", "label=io.kubernetes.container.name=app").stdout.split()
    assert found, f"no running container of pod {pod} on {node}"
    return cluster.machines.run(node, "docker", "exec", found[0], *command, timeout=30).stdout


def start_servers(cluster: Cluster, app: str, nodes: tuple[str, ...], *extra_containers: dict) -> list[str]:
    """A web server pod per node named (labelled app=<app>, ready once port
    80 answers), with any extra containers beside it; their names."""
    names = [f"{app}-{i}" for i in range(len(nodes))]
    for name, node in zip(names, nodes):
        web = {"name": "app", "image": "busybox:1.35", "command": ["sh", "-c", SERVER],
               "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
               "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                        "containers": [web, *extra_containers]}}
        created = cluster.request("POST", "/api/v1/namespaces/default/pods", pod)
        assert created.status_code == 201, created.text
    return names


@contextlib.contextmanager
def cluster_running_image(machines, image_module, tag: str):
    """A secure cluster with a scheduler (Node,RBAC, signed ServiceAccount
    tokens) whose nodes have the offline image of `image_module` (its
    build() and IMAGE): what a component the cluster runs as a pod needs."""
    workdir = Path(tempfile.mkdtemp(prefix=f"groundup-{tag}-", dir="/var/tmp"))
    made = Cluster(machines, workdir)
    try:
        image_module.build(quiet=True)
        machines.load_image(image_module.IMAGE, ("node1", "node2"))
        made.bring_up(scheduler=True, secure=True)
        yield made
    finally:
        made.tear_down()
        shutil.rmtree(workdir, ignore_errors=True)


def kubectl_as_admin(kubectl: str, cluster: Cluster, *args: str) -> str:
    """The real kubectl as the administrator (the insecure port on master); its output."""
    done = subprocess.run([kubectl, "--server", cluster.api, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout
