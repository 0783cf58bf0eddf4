"""Chapter 04 test helpers: a real controller_manager.py process beside a
real API server. No kubelet: pods are objects, and a test that needs a pod
Running and Ready writes that status itself, as a kubelet would."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from apiserver_harness import ROOT, APIServer, Client, unique  # noqa: F401 (re-exported)
from common.tooling.processes import stop_within
from polling import wait_for  # noqa: F401 (re-exported)

CONTROLLER_MANAGER = ROOT / "04-controllers" / "controller_manager.py"


class ControllerManager:
    def __init__(self, url: str, workdir: Path, *flags: str):
        self.url, self.flags = url, list(flags)
        self.log_path = workdir / f"controller-manager-{time.monotonic_ns()}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "ControllerManager":
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, str(CONTROLLER_MANAGER), "--apiserver", self.url, *self.flags],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        wait_for(lambda: "controllers running" in self.log() or self._exited(), timeout=30,
                 what=f"the controller manager to sync (log: {self.log_path})")
        assert self.process.poll() is None, f"the controller manager exited:\n{self.log()}"
        return self

    def _exited(self) -> bool:
        return self.process.poll() is not None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            stop_within(self.process, 10)


def make_namespace(api: Client) -> str:
    """A fresh namespace, so a test never sees another's objects."""
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def pods_of(api: Client, namespace: str, app: str) -> list[dict]:
    """The live pods labelled app=APP (those being deleted left out)."""
    items = api.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def replicaset(name: str, replicas: int, labels: dict | None = None, **spec) -> dict:
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}},
                     **spec}}


def mark_ready(api: Client, pod: dict, node: str = "node1") -> None:
    """What a kubelet would report for a started pod: Running and Ready."""
    meta = pod["metadata"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
              "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox:1.35",
                                     "imageID": "", "started": True, "state": {"running": {"startedAt": now}}}]}
    response = api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                         {"status": status}, content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text


class FakeKubelet:
    """Marks every pod Running and Ready as soon as it appears, as a kubelet
    with instant containers would: enough for rollouts, which wait on
    readiness. (Pods here have no node, so their deletion is immediate.)"""

    def __init__(self, api: Client, namespace: str):
        import threading
        self.api, self.namespace = api, namespace
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "FakeKubelet":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                items = self.api.get(f"/api/v1/namespaces/{self.namespace}/pods").json()["items"]
                for pod in items:
                    if (pod.get("status") or {}).get("phase") != "Running" and \
                            not pod["metadata"].get("deletionTimestamp"):
                        mark_ready(self.api, pod)
            except Exception:        # a pod deleted under us: next round
                continue
