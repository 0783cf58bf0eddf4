"""Chapter 03 test helpers: a real scheduler.py process, a real API server,
and Node and Pod objects made through the API.

No kubelet runs here: a Node is only an object, registered through the API
with the status a kubelet would report (capacity, Ready). That is all the
scheduler ever looks at, and it lets a test make a node of any size, or a
hundred of them, in milliseconds.

Builders for the unit tests are here too: `make_pod(...)` and
`node_info(...)` give the PodInfo and NodeInfo the plugins read.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from apiserver_harness import ROOT, APIServer, Client, unique  # noqa: F401 (re-exported)
from polling import wait_for  # noqa: F401 (re-exported)
from common.tooling.processes import stop_within

SCHEDULER = ROOT / "03-scheduler" / "scheduler.py"


# ---------------------------------------------------------------- objects

def node_object(name: str, cpu: str = "2", memory: str = "4Gi", pods: str = "110", *, labels: dict | None = None,
                taints: list | None = None, unschedulable: bool = False, ready: str | None = "True",
                conditions: dict | None = None) -> dict:
    """A Node as a kubelet would register it. conditions: {"DiskPressure": "True", ...}."""
    all_conditions = [{"type": "Ready", "status": ready}] if ready is not None else []
    all_conditions += [{"type": kind, "status": status} for kind, status in (conditions or {}).items()]
    spec: dict = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"capacity": dict(allocatable), "allocatable": allocatable, "conditions": all_conditions}}


def pod_object(name: str, namespace: str = "default", *, cpu: str | None = None, memory: str | None = None,
               limits: dict | None = None, labels: dict | None = None, **spec) -> dict:
    """A one-container pod; cpu/memory become requests."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    container = {"name": "app", "image": "busybox:1.35", **({"resources": resources} if resources else {})}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         **({"labels": labels} if labels else {})},
            "spec": {"containers": [container], **spec}}


def make_pod(name: str = "web", **kwargs):
    """A PodInfo, for the unit tests."""
    from pod_info import PodInfo
    return PodInfo.of(pod_object(name, **kwargs))


def node_info(name: str = "node1", *, running: list | None = None, **kwargs):
    """A NodeInfo with pods running (PodInfos or pod names), for the unit tests."""
    from scheduler_cache import NodeInfo
    info = NodeInfo(name)
    info.set_node(node_object(name, **kwargs))
    for pod in running or []:
        info.add_pod(make_pod(pod) if isinstance(pod, str) else pod)
    return info


# ---------------------------------------------------------------- processes

class SchedulerProcess:
    """03-scheduler/scheduler.py as a real process, its output in a log file."""

    def __init__(self, tmp: Path, url: str, *extra: str):
        self.url = url
        self.extra = list(extra)
        self.log_path = Path(tmp) / f"scheduler-{unique('log')}.log"
        self.process: subprocess.Popen | None = None

    def start(self, wait: bool = True) -> "SchedulerProcess":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(SCHEDULER), "--apiserver", self.url, *self.extra],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "GROUNDUP_LOG_LEVEL": "INFO"})
        if wait:
            wait_for(self.scheduling, timeout=20, what=f"the scheduler to list pods and nodes (log: {self.log_path})")
        return self

    def scheduling(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the scheduler exited with {self.process.returncode}:\n{self.log()}")
        return " INFO scheduling " in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no clean-up at all, as a crash or a power cut."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> int | None:
        if self.process and self.process.poll() is None:
            stop_within(self.process, 15)
        return self.process.returncode if self.process else None


class Cluster:
    """An API server and the calls the tests make against it."""

    def __init__(self, server: APIServer, tmp: Path):
        self.server = server
        self.api = Client(server.url)
        self.tmp = tmp
        self.namespace = "default"
        self.schedulers: list[SchedulerProcess] = []

    def scheduler(self, *extra: str, wait: bool = True) -> SchedulerProcess:
        process = SchedulerProcess(self.tmp, self.server.url, *extra).start(wait)
        self.schedulers.append(process)
        return process

    def add_node(self, name: str, **kwargs) -> dict:
        response = self.api.post("/api/v1/nodes", node_object(name, **kwargs))
        assert response.status_code == 201, response.text
        return response.json()

    def patch_node(self, name: str, patch: dict) -> dict:
        response = self.api.patch(f"/api/v1/nodes/{name}", patch)
        assert response.status_code == 200, response.text
        return response.json()

    def create_pod(self, name: str, **kwargs) -> dict:
        body = pod_object(name, self.namespace, **kwargs)
        del body["metadata"]["uid"]                 # the API server gives it one
        response = self.api.post(f"/api/v1/namespaces/{self.namespace}/pods", body)
        assert response.status_code == 201, response.text
        return response.json()

    def pod(self, name: str) -> dict:
        response = self.api.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        assert response.status_code == 200, response.text
        return response.json()

    def pods(self) -> list[dict]:
        return self.api.get(f"/api/v1/namespaces/{self.namespace}/pods").json()["items"]

    def placement(self) -> dict[str, str]:
        """pod name -> node name ("" while pending)."""
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in self.pods()}

    def all_bound(self, count: int) -> dict[str, str] | None:
        placement = self.placement()
        if len(placement) == count and all(placement.values()):
            return placement
        return None

    def events(self, pod_name: str, reason: str | None = None) -> list[dict]:
        items = self.api.get(f"/api/v1/namespaces/{self.namespace}/events").json()["items"]
        return [e for e in items if e["involvedObject"].get("name") == pod_name
                and (reason is None or e.get("reason") == reason)]

    def stop(self) -> None:
        for process in self.schedulers:
            process.stop()
        self.server.stop()


def per_node(placement: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in placement.values():
        counts[node] = counts.get(node, 0) + 1
    return counts
