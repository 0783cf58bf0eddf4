"""A cluster on machines made of namespaces: what chapter 05's lessons start, from Python.

The demo (`make demo`), the tests (tests/network) and the benchmarks run it
on machines from machines.py: the API server (plain HTTP on master's
address, port 8080: these machines reach nothing outside this computer)
and the controller manager on master, and on each node that joins a
kubelet with --network-plugin kubenet, a route agent, a service proxy and
cluster DNS at the kube-dns address. Every process logs to a file of its
own in the work directory.

Cluster(..., your_dns=path) runs the learner's cluster DNS
(build-it-yourself/cluster_dns.py) on the nodes in place of ours. Every
request to the API server from here first checks that it is still
running, so whatever waits on the cluster stops, at its next poll, with
one line naming the file and its last lines (common/tooling/your_program.py).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import requests
import yaml

from common.tooling.polling import wait_for
from common.tooling.processes import stop_within
from common.tooling.your_program import YourProgram, environment
from machines import Machines, covering_route, host_routes

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER_DNS = "10.96.0.10"


def free_subnet() -> str:
    """A /24 of 10.213.100.0-10.213.249.255 that no route of this host
    covers (machines.py's own test, which `up` makes again)."""
    routes = host_routes()
    for third in random.sample(range(100, 250), 150):
        if covering_route(f"10.213.{third}.0/24", routes) is None:
            return f"10.213.{third}.0/24"
    raise RuntimeError("no free /24 in 10.213.100.0-10.213.249.255: routes of this host cover them all")


@dataclass
class Cluster:
    machines: Machines
    workdir: Path
    your_dns: Path | None = None        # the learner's cluster DNS, to run in place of ours
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    yours: dict[str, YourProgram] = field(default_factory=dict)     # process key -> the learner's program

    @property
    def api(self) -> str:
        return f"http://{self.machines.address('master')}:8080"

    def bring_up(self, *controller_flags: str, scheduler: bool = False, proxy_mode: str = "userspace",
                 nodes: tuple[str, ...] = ("node1", "node2"), secure: bool = False, ingress: bool = False) -> None:
        """The control plane (and the scheduler, if asked), then the nodes
        (with an ingress controller on port 80 of each, if asked), and wait
        until every node is Ready with its pod range."""
        self.start_control_plane(*controller_flags, secure=secure)
        if scheduler:
            self.start("scheduler", "master", "03-scheduler/scheduler.py", "--apiserver", self.api)
        for node in nodes:
            self.join(node, proxy_mode=proxy_mode)
            if ingress:
                self.start(f"ingress-{node}", node, "05-proxy-dns/ingress_controller.py", "--apiserver", self.api,
                           "--publish-address", self.machines.address(node))
        wait_for(lambda: all(ready(self.node(n)) for n in nodes), 90,
                 what=f"{' and '.join(nodes)} Ready with their pod ranges")

    def tear_down(self) -> None:
        """Stop every process started here (the machines' pods and rules stay)."""
        for key in list(self.processes):
            self.stop(key)

    def start_control_plane(self, *controller_flags: str, secure: bool = False) -> None:
        """The API server (with the kube-dns Service), the controller
        manager (with these flags) and a route agent on master, which
        reaches pods like any machine. secure: the API server also serves
        HTTPS on master's port 6443 with Node,RBAC and ServiceAccount
        tokens, and advertises it as the `kubernetes` Service's endpoint, so
        programs in pods can reach it (the components stay on port 8080)."""
        secure_flags = self.secure_flags() if secure else ["--secure-port", "0"]
        self.start("apiserver", "master", "02-apiserver/apiserver.py", "--data-dir", str(self.workdir / "data"),
                   "--insecure-bind-address", self.machines.address("master"), *secure_flags,
                   "--kubelet-client-token-file", str(self.kubelet_token))
        if secure:
            controller_flags += ("--root-ca-file", str(self.certs / "ca.crt"))
        wait_for(lambda: requests.get(self.api + "/healthz", timeout=2).ok, 30, what="the API server on master")
        kube_dns = yaml.safe_load((ROOT / "05-proxy-dns" / "manifests" / "kube-dns.yaml").read_text())
        created = self.request("POST", "/api/v1/namespaces/kube-system/services", kube_dns)
        assert created.status_code == 201, created.text            # the address the nodes' DNS answers at
        self.start("controller-manager", "master", "04-controllers/controller_manager.py", "--apiserver", self.api,
                   "--cluster-cidr", CLUSTER_CIDR, *controller_flags)
        self.route_agent("master")

    @property
    def certs(self) -> Path:
        return self.workdir / "certs"

    def secure_flags(self) -> list[str]:
        """Certificates and keys from certs.py (its certificate names
        master's address and the `kubernetes` Service's 10.96.0.1), and the
        flags of a cluster as kubeadm starts one: Node,RBAC, signed tokens."""
        master = self.machines.address("master")
        subprocess.run([PY, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(self.certs), "--master-ip", master,
                        "--master-name", "master"], check=True, capture_output=True)
        certs = self.certs
        return ["--bind-address", master, "--secure-port", "6443", "--advertise-address", master,
                "--tls-cert-file", str(certs / "apiserver.crt"), "--tls-private-key-file", str(certs / "apiserver.key"),
                "--token-auth-file", str(certs / "tokens.csv"), "--authorization-mode", "Node,RBAC",
                "--service-account-signing-key-file", str(certs / "sa.key"),
                "--service-account-key-file", str(certs / "sa.pub"), "--root-ca-file", str(certs / "ca.crt")]

    def start(self, key: str, machine: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        with open(self.workdir / f"{key}.log", "ab") as log:        # the child keeps its own copy
            process = self.machines.popen(machine, [PY, str(ROOT / argv[0]), *argv[1:]], stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.processes[key] = process
        return process

    def start_yours(self, key: str, role: str, machine: str, path: Path, *flags: str) -> subprocess.Popen:
        """The learner's program (role: "cluster DNS") on a machine, watched by check_yours()."""
        process = self.start(key, machine, str(path.resolve()), *flags, env=environment())
        self.yours[key] = YourProgram(role, path, process, self.workdir / f"{key}.log")
        return process

    def check_yours(self) -> None:
        """Stop (YourProgramExited) if a program of the learner's has exited."""
        for program in self.yours.values():
            program.check()

    def stop(self, key: str) -> None:
        self.yours.pop(key, None)                   # stopped on purpose: no longer watched
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

    def join(self, node: str, proxy_mode: str = "userspace") -> None:
        """A kubelet on the pod network, a route agent, a service proxy and cluster DNS, on one machine."""
        self.start_kubelet(node)
        self.route_agent(node)
        self.start(f"proxy-{node}", node, "05-proxy-dns/proxy.py", "--apiserver", self.api, "--proxy-mode", proxy_mode,
                   "-v")
        self.start_dns(node)

    def start_dns(self, node: str) -> subprocess.Popen:
        """Cluster DNS on a node (the learner's, if given), at the kube-dns
        address itself (as NodeLocal DNSCache does): the node owns it on lo,
        so a pod's query goes no further than its own node."""
        self.machines.run(node, "ip", "addr", "replace", f"{CLUSTER_DNS}/32", "dev", "lo")
        flags = ("--apiserver", self.api, "--address", CLUSTER_DNS)
        if self.your_dns:
            return self.start_yours(f"dns-{node}", "cluster DNS", node, self.your_dns, *flags)
        return self.start(f"dns-{node}", node, "05-proxy-dns/cluster_dns.py", *flags)

    def start_kubelet(self, node: str) -> subprocess.Popen:
        return self.start(f"kubelet-{node}", node, "01-kubelet/kubelet.py", "--apiserver", self.api,
                          "--node-name", node, "--authentication-token-file", str(self.kubelet_token),
                          "--network-plugin", "kubenet", "--non-masquerade-cidr", CLUSTER_CIDR,
                          "--cluster-dns", CLUSTER_DNS,
                          "--sync-frequency", "0.5s", "--node-status-update-frequency", "1s")

    def leave(self, node: str) -> None:
        """Stop what join started (the machine's pods and rules stay)."""
        for what in ("kubelet", "routes", "proxy", "dns", "ingress"):
            if f"{what}-{node}" in self.processes:
                self.stop(f"{what}-{node}")

    def route_agent(self, machine: str) -> subprocess.Popen:
        return self.start(f"routes-{machine}", machine, "05-proxy-dns/route_agent.py", "--apiserver", self.api,
                          "--node-name", machine)

    def get(self, path: str) -> dict:
        self.check_yours()          # everything that waits on the cluster polls through here or request()
        response = requests.get(self.api + path, timeout=10)
        response.raise_for_status()
        return response.json()

    def request(self, method: str, path: str, body: dict | None = None,
                content_type: str = "application/json") -> requests.Response:
        self.check_yours()
        return requests.request(method, self.api + path, json=body, timeout=10,
                                headers={"Content-Type": content_type})

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

