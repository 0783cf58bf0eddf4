"""Helpers of the dashboard's tests: the dashboard as a real process, and
objects written the way a kubelet or kubectl would write them."""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import requests

from common.tooling.polling import wait_for
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboard" / "dashboard.py"


class Dashboard:
    def __init__(self, workdir: Path, *flags: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = workdir / f"dashboard-{self.port}.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([sys.executable, str(DASHBOARD), "--port", str(self.port), *flags],
                                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        wait_for(self._ready, timeout=30, what=f"the dashboard on {self.url} (log: {self.log_path})")

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the dashboard exited with {self.process.returncode}:\n{self.log()}")
        try:
            return requests.get(self.url + "healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def state(self) -> dict:
        return requests.get(self.url + "api/state", timeout=5).json()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_within(self.process, 10)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_condition(status: str, reason: str, message: str) -> dict:
    return {"type": "Ready", "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now(), "lastTransitionTime": now()}


def register_node(api: str, name: str, cpu: str = "2", memory: str = "4Gi", **spec) -> None:
    """A Node as a kubelet registers it, and its status as a kubelet posts it:
    Ready, with room for pods (no kubelet needed to draw a column)."""
    created = requests.post(f"{api}/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                          "metadata": {"name": name}, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    set_ready(api, name, "True", "KubeletReady", "kubelet is posting ready status", cpu=cpu, memory=memory)


def set_ready(api: str, name: str, status: str, reason: str, message: str, cpu="2", memory="4Gi") -> None:
    node = requests.get(f"{api}/api/v1/nodes/{name}", timeout=10).json()
    room = {"cpu": cpu, "memory": memory, "pods": "110"}
    node["status"] = {**node.get("status", {}), "capacity": room, "allocatable": room,
                      "conditions": [ready_condition(status, reason, message)]}
    updated = requests.put(f"{api}/api/v1/nodes/{name}/status", json=node, timeout=10)
    assert updated.status_code == 200, updated.text


def create_pod(api: str, name: str, node: str = "", namespace: str = "default", cpu: str = "250m",
               labels: dict | None = None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {"app": "web"}},
           "spec": {"containers": [{"name": "app", "image": "busybox:1.35",
                                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}
    if node:
        pod["spec"]["nodeName"] = node
    created = requests.post(f"{api}/api/v1/namespaces/{namespace}/pods", json=pod, timeout=10)
    assert created.status_code == 201, created.text
    return created.json()


class Kubectl:
    """The real kubectl against one server, with a kubeconfig and cache of its own."""

    def __init__(self, binary: str, url: str, workdir: Path):
        self.binary, self.workdir = binary, workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.kubeconfig.write_text(textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters:
            - name: groundup
              cluster: {{server: "{url}"}}
            users:
            - name: learner
              user: {{}}
            contexts:
            - name: groundup
              context: {{cluster: groundup, user: learner, namespace: default}}
            current-context: groundup
            """))

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run([self.binary, "--kubeconfig", str(self.kubeconfig),
                                 "--cache-dir", str(self.workdir / "kube-cache"), *args],
                                input=stdin, capture_output=True, text=True, timeout=60, cwd=self.workdir,
                                env={**os.environ, "HOME": str(self.workdir)})
        assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stderr}{result.stdout}"
        return result.stdout
