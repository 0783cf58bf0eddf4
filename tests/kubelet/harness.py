"""Fixtures for chapter 01: a real kubelet process on real Docker.

Each test gets its own node name, manifest directory and read-only port,
so its containers never mix with another test's (or a learner's own
kubelet), and everything it made is removed afterwards, also on failure.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker.errors
import pytest
import requests

from polling import free_port, wait_for  # noqa: F401 (re-exported to the tests)

ROOT = Path(__file__).resolve().parents[2]
KUBELET = ROOT / "01-kubelet" / "kubelet.py"
NODE_LABEL = "io.groundup.node-name"


class Kubelet:
    """A kubelet.py process and its manifest directory."""

    def __init__(self, tmp: Path, docker_client, node_name: str | None = None, *extra: str):
        self.node_name = node_name or f"test-{uuid.uuid4().hex[:8]}"
        self.dir = tmp / f"manifests-{self.node_name}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = tmp / f"kubelet-{self.node_name}.log"
        self.port = free_port()
        self.docker = docker_client
        self.extra = list(extra)
        self.python_options: list[str] = []     # the interpreter's own, e.g. ["-X", "importtime"]
        self.process: subprocess.Popen | None = None

    def start(self) -> "Kubelet":
        args = [sys.executable, *self.python_options, str(KUBELET), "--node-name", self.node_name, "--manifests", str(self.dir),
                "--address", "127.0.0.1", "--read-only-port", str(self.port), "--node-ip", "127.0.0.1",
                "--sync-frequency", "0.5s", "--backoff-initial", "1s", "--backoff-max", "4s", *self.extra]
        self.process = subprocess.Popen(args, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT,
                                        env={**os.environ, "GROUNDUP_LOG_LEVEL": "INFO"})
        wait_for(self.healthy, 20, what=f"kubelet {self.node_name} /healthz")
        return self

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"kubelet exited with {self.process.returncode}:\n{self.log()}")
        try:
            return requests.get(self.url("/healthz"), timeout=2).text.strip() == "ok"
        except requests.ConnectionError:
            return False

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signum)
            self.process.wait(timeout=30)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    # manifests ---------------------------------------------------------------

    def write(self, filename: str, text: str) -> Path:
        """Write atomically (a hidden temporary file, then rename) so the
        kubelet never reads half a file."""
        path = self.dir / filename
        tmp = self.dir / f".{filename}.tmp"
        tmp.write_text(text)
        os.replace(tmp, path)
        return path

    def remove(self, filename: str) -> None:
        (self.dir / filename).unlink()

    # the read-only API ---------------------------------------------------------

    def syncs(self) -> int:
        """Completed syncs, from the kubelet's /metrics."""
        text = requests.get(self.url("/metrics"), timeout=5).text
        return int(float(next(line.split()[1] for line in text.splitlines()    # Prometheus writes 12.0
                              if line.startswith("kubelet_sync_loops_total "))))

    def wait_syncs(self, more: int = 3, timeout: float = 20) -> None:
        """Wait until the kubelet has synced `more` more times: the way to
        assert that something does *not* happen, without a bare sleep."""
        target = self.syncs() + more
        wait_for(lambda: self.syncs() >= target, timeout, what=f"{more} more syncs of {self.node_name}")

    def pods(self) -> list[dict]:
        return requests.get(self.url("/pods"), timeout=5).json()["items"]

    def pod(self, name: str, namespace: str = "default") -> dict | None:
        for pod in self.pods():
            if pod["metadata"]["name"] == name and pod["metadata"]["namespace"] == namespace:
                return pod
        return None

    def wait_pod(self, name: str, check, timeout: float = 30, what: str = "") -> dict:
        """Wait until the pod exists and check(pod) is true; returns the pod."""
        return wait_for_pod(lambda: self.pod(name), name, check, timeout, what,
                            lambda: f"kubelet log:\n{self.log()[-3000:]}")

    def wait_phase(self, name: str, phase: str, timeout: float = 30) -> dict:
        return self.wait_pod(name, lambda p: p["status"].get("phase") == phase, timeout, f"phase {phase}")

    def wait_running(self, name: str, timeout: float = 30) -> dict:
        return self.wait_pod(name, all_running, timeout, "all containers running")

    # Docker's view -------------------------------------------------------------

    def containers(self, pod: str | None = None, all: bool = True) -> list:
        filters = {"label": [f"{NODE_LABEL}={self.node_name}"]}
        if pod:
            filters["label"].append(f"io.kubernetes.pod.name={pod}")
        # ignore_removed: one removed between Docker's list and the SDK's
        # inspect of it is gone, not an error (a cleanup once failed on that).
        return self.docker.containers.list(all=all, filters=filters, ignore_removed=True)

    def container(self, pod: str, name: str):
        """The running Docker container of one of the pod's containers."""
        return next(c for c in self.containers(pod, all=False) if c.labels["io.kubernetes.container.name"] == name)

    def cleanup(self) -> None:
        self.stop(signal.SIGKILL)
        remove_all(self.containers())       # the containers first: they hold the volumes
        remove_all(self.docker.volumes.list(filters={"label": f"{NODE_LABEL}={self.node_name}"}))


def remove_all(things: list) -> None:
    """Remove containers (or volumes) side by side: Docker stops a pod's
    pause, app and sidecar containers at once, so a clean-up takes about
    the time of the slowest, not the sum of all."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(remove_eventually, things))     # list(): the first error is raised here


def remove_eventually(thing, timeout: float = 20) -> None:
    """Remove a container or volume. Gone already is fine (a `kubelet.py
    --cleanup` run meanwhile): the point is that it is gone. Docker's 409
    (its removal already in progress, or a volume still held by a container
    being removed) means: ask again shortly, until the deadline."""
    def removed() -> bool:
        try:
            thing.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as error:
            if error.status_code == 409:
                return False
            raise
        return True
    wait_for(removed, timeout, what=f"Docker to remove {getattr(thing, 'name', thing)}")


def wait_for_pod(get, name: str, check, timeout: float, what: str, context) -> dict:
    """Wait until get() returns a pod that passes check(pod); on failure say
    what its status was, and context() (logs)."""
    def probe():
        pod = get()
        return pod if pod is not None and check(pod) else None
    try:
        return wait_for(probe, timeout, what=f"pod {name}: {what}")
    except AssertionError as error:
        raise AssertionError(f"{error}\nstatus: {(get() or {}).get('status')}\n{context()}") from None


def all_running(pod: dict) -> bool:
    statuses = pod["status"].get("containerStatuses") or []
    return bool(statuses) and all("running" in s["state"] for s in statuses)


def container_status(pod: dict, name: str) -> dict:
    return next(s for s in pod["status"]["containerStatuses"] if s["name"] == name)


def condition(pod: dict, kind: str) -> str | None:
    return next((c["status"] for c in pod["status"].get("conditions", []) if c["type"] == kind), None)


@pytest.fixture
def make_kubelet(tmp_path, docker_client):
    """Start kubelets; every one is stopped and its containers removed after the test."""
    made: list[Kubelet] = []

    def make(*extra: str, node_name: str | None = None, start: bool = True) -> Kubelet:
        kubelet = Kubelet(tmp_path, docker_client, node_name, *extra)
        made.append(kubelet)
        return kubelet.start() if start else kubelet
    yield make
    for kubelet in made:
        kubelet.cleanup()


@pytest.fixture
def kubelet(make_kubelet) -> Kubelet:
    return make_kubelet()


def pod_yaml(name: str, containers: str, spec_extra: str = "", volumes: str = "") -> str:
    """A small pod manifest; containers and extras are YAML fragments
    indented for spec (two spaces)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  terminationGracePeriodSeconds: 1\n{spec_extra}{volumes}  containers:\n{containers}")
