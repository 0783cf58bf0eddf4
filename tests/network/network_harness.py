"""Chapter 05's test harness: a cluster on machines made of namespaces.

The `machines` fixture (conftest.py) makes master, node1, node2 and node3 with
05-proxy-dns/machines.py (a prefix and a subnet of the test's own, so a
learner's `make machines` is left alone), and removes them afterwards, also
when a test fails. The `cluster` fixture runs on them what the lessons run:
the API server and the controller manager (for the node IPAM controller)
on master, and on node1 and node2 a kubelet with --network-plugin kubenet
and a route agent; master runs a route agent too, to reach pods. node3
stays empty: a test adds it as the node that joins later.

These need root (namespaces) and Docker (an engine per node); without them
they skip with one line, unless GROUNDUP_REQUIRE_DOCKER=1 (CI).
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from common.processes import stop_within
from machines import Machines
from polling import wait_for

ROOT = Path(__file__).resolve().parents[2]

PY = sys.executable
CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER_DNS = "10.96.0.10"


def require(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("GROUNDUP_REQUIRE_DOCKER") == "1":
            pytest.fail(f"in CI, but {reason}")
        pytest.skip(reason)


def free_subnet() -> str:
    """A /24 of 10.213.0.0/16 that no route of this host covers."""
    routes = subprocess.run(["ip", "-json", "route", "show"], capture_output=True, text=True).stdout
    taken = {int(third) for third in re.findall(r'"dst":"10\.213\.(\d+)\.', routes)}
    for third in random.sample(range(100, 250), 150):
        if third not in taken:
            return f"10.213.{third}.0/24"
    raise RuntimeError("no free /24 in 10.213.0.0/16")


@dataclass
class Cluster:
    machines: Machines
    workdir: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return f"http://{self.machines.address('master')}:8080"

    def start(self, key: str, machine: str, *argv: str) -> subprocess.Popen:
        log = open(self.workdir / f"{key}.log", "ab")
        process = self.machines.popen(machine, [PY, str(ROOT / argv[0]), *argv[1:]], stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        self.processes[key] = process
        return process

    def stop(self, key: str) -> None:
        stop_within(self.processes.pop(key), 15)

    def log(self, key: str) -> str:
        return (self.workdir / f"{key}.log").read_text(errors="replace")

    @property
    def kubelet_token(self) -> Path:
        """What the API server shows a kubelet, so that nobody else may read it."""
        path = self.workdir / "kubelet-client.token"
        if not path.exists():
            path.write_text(uuid.uuid4().hex + "\n")
        return path

    def join(self, node: str) -> None:
        """A kubelet on the pod network, a route agent and a service proxy, on one machine."""
        self.start(f"kubelet-{node}", node, "01-kubelet/kubelet.py", "--apiserver", self.api,
                   "--authentication-token-file", str(self.kubelet_token),
                   "--network-plugin", "kubenet", "--non-masquerade-cidr", CLUSTER_CIDR,
                   "--cluster-dns", CLUSTER_DNS,
                   "--sync-frequency", "0.5s", "--node-status-update-frequency", "1s")
        self.route_agent(node)
        self.start(f"proxy-{node}", node, "05-proxy-dns/proxy.py", "--apiserver", self.api, "-v")
        # Cluster DNS on every node, at the kube-dns address itself (as
        # NodeLocal DNSCache does): the node owns it on lo, so a pod's
        # query goes no further than its own node.
        self.machines.run(node, "ip", "addr", "replace", f"{CLUSTER_DNS}/32", "dev", "lo")
        self.start(f"dns-{node}", node, "05-proxy-dns/cluster_dns.py", "--apiserver", self.api,
                   "--address", CLUSTER_DNS)

    def leave(self, node: str) -> None:
        """Stop what join started (the machine's pods and rules stay)."""
        for what in ("kubelet", "routes", "proxy", "dns"):
            self.stop(f"{what}-{node}")

    def route_agent(self, machine: str) -> subprocess.Popen:
        return self.start(f"routes-{machine}", machine, "05-proxy-dns/route_agent.py", "--apiserver", self.api)

    def get(self, path: str) -> dict:
        response = requests.get(self.api + path, timeout=10)
        response.raise_for_status()
        return response.json()

    def request(self, method: str, path: str, body: dict | None = None) -> requests.Response:
        return requests.request(method, self.api + path, json=body, timeout=10)

    def node(self, name: str) -> dict:
        return self.get(f"/api/v1/nodes/{name}")

    def routes(self, machine: str) -> dict[str, str]:
        """{podCIDR: gateway} of the route agent's routes on a machine."""
        shown = self.machines.run(machine, "ip", "-json", "route", "show", "proto", "213").stdout
        return {r["dst"]: r.get("gateway", "") for r in json.loads(shown or "[]")}

    def logs(self) -> str:
        return "\n".join(f"--- {key} ---\n{self.log(key)[-2500:]}" for key in sorted(self.processes))


def ready(node: dict) -> bool:
    conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    return conditions.get("Ready") == "True" and bool(node["spec"].get("podCIDR"))


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
