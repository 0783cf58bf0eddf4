"""Startup, liveness and readiness probes.

One worker thread per probe of a running container, as the kubelet runs one
goroutine per probe. A worker waits initialDelaySeconds, then probes every
periodSeconds; after failureThreshold failures in a row a liveness probe
asks the kubelet to restart the container, and a readiness probe marks it
not ready (successThreshold successes make it ready again).

A startupProbe comes first: until it succeeds the container is not
"started", and its liveness and readiness probes do not run at all (so a
slow starter is not killed by a liveness probe meant for a warm one). Its
first success ends it; failureThreshold failures restart the container.
"""
from __future__ import annotations

import socket
import threading

import docker.errors
import requests
import urllib3

from common.client.events import EventRecorder
from common.log import EventLogger

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # HTTPS probes skip verification, as Kubernetes'


def resolve_port(port, container: dict) -> int:
    """A probe's port is a number or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return declared["containerPort"]
    if str(port).isdigit():
        return int(port)
    raise ValueError(f"port {port!r} is not a number nor a named port of the container")


# [START run-probe]
def run_probe(probe: dict, container: dict, container_id: str, pod_ip: str, runtime) -> tuple[bool | None, str]:
    """Run a probe once: (success, what happened). Success is None when the
    kubelet could not ask (Docker did not answer): that result is thrown
    away, not counted as a failure, as the real kubelet does."""
    timeout = probe.get("timeoutSeconds", 1)
    try:
        if "exec" in probe:
            try:
                code, output = runtime.exec(container_id, probe["exec"].get("command") or [], timeout)
            except requests.Timeout:
                return False, f"command timed out after {timeout}s"
            except (docker.errors.DockerException, requests.RequestException) as error:
                return None, f"could not exec in the container: {error}"
            return code == 0, f"exit code {code}: {output.decode(errors='replace').strip()[:200]}"
        if "httpGet" in probe:
            get = probe["httpGet"]
            host = get.get("host") or pod_ip or "127.0.0.1"
            url = f"{get.get('scheme', 'HTTP').lower()}://{host}:{resolve_port(get['port'], container)}{get.get('path', '/')}"
            headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
            response = requests.get(url, headers=headers, timeout=timeout, verify=False)
            return 200 <= response.status_code < 400, f"HTTP probe {url}: status code {response.status_code}"
        if "tcpSocket" in probe:
            port = resolve_port(probe["tcpSocket"]["port"], container)
            host = probe["tcpSocket"].get("host") or pod_ip or "127.0.0.1"
            with socket.create_connection((host, port), timeout=timeout):
                return True, f"TCP probe {host}:{port}: connected"
        return False, "probe has no handler this kubelet supports (exec, httpGet, tcpSocket)"
    except (OSError, requests.RequestException, ValueError) as error:
        return False, f"{type(error).__name__}: {error}"
# [END run-probe]


class ProbeWorker(threading.Thread):
    def __init__(self, manager: "ProbeManager", kind: str, probe: dict, pod: dict,
                 container: dict, container_id: str, pod_ip: str):
        pod_key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        super().__init__(daemon=True, name=f"probe-{kind}-{pod_key}-{container['name']}")
        self.manager, self.kind, self.probe = manager, kind, probe
        self.pod, self.pod_key = pod, pod_key
        self.container, self.container_id, self.pod_ip = container, container_id, pod_ip
        self.stopped = threading.Event()

    def run(self):
        probe = self.probe
        period = probe.get("periodSeconds", 10)
        failure_threshold = probe.get("failureThreshold", 3)
        success_threshold = probe.get("successThreshold", 1)
        successes = failures = 0
        if self.stopped.wait(probe.get("initialDelaySeconds", 0)):
            return
        while not self.stopped.is_set():
            ok, message = run_probe(probe, self.container, self.container_id, self.pod_ip, self.manager.runtime)
            if self.stopped.is_set():
                return
            if ok is None:
                self.manager.log.debug("probe result discarded", obj=self.pod_key, detail=message)
                self.stopped.wait(period)
                continue
            successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
            if not ok:
                self.manager.log.warning(f"{self.kind.capitalize()} probe failed", obj=self.pod_key,
                                         container=self.container["name"], failures=failures, detail=message)
                self.manager.events.event(self.pod, "Warning", "Unhealthy",
                                          f"{self.kind.capitalize()} probe failed: {message}",
                                          field_path=f"spec.containers{{{self.container['name']}}}")
            if self.kind == "readiness":
                if ok and successes >= success_threshold:
                    self.manager.set_ready(self.container_id, True)
                elif not ok and failures >= failure_threshold:
                    self.manager.set_ready(self.container_id, False)
            elif self.kind == "startup" and (ok or failures >= failure_threshold):
                self.manager.startup_done(self.container_id, self.pod_key, self.container["name"], ok, message)
                return  # started, or restarted: either way this probe's work is over
            elif failures >= failure_threshold:
                self.manager.liveness_failed(self.container_id, self.pod_key, self.container["name"], message)
                return  # the container is restarted; its successor gets a new worker
            self.stopped.wait(period)


class ProbeManager:
    """Starts and stops probe workers as containers come and go, and keeps
    their results for the sync loop and the pod status."""

    def __init__(self, runtime, log: EventLogger, on_change, events: EventRecorder):
        self.runtime = runtime
        self.log = log
        self.events = events                 # Unhealthy events, for kubectl describe
        self._on_change = on_change          # wakes the sync loop
        self._workers: dict[tuple[str, str], ProbeWorker] = {}
        self._lock = threading.Lock()
        # Results, written by the workers under the lock; the sync loop only
        # looks single entries up, which is safe without it.
        self.ready: dict[str, bool] = {}         # container id -> readiness
        self.failed_liveness: dict[str, str] = {}  # container id -> why
        self.failed_startup: dict[str, str] = {}   # container id -> why
        self.started: set[str] = set()             # container ids whose startupProbe succeeded

    def sync(self, running: list[tuple[str, dict, str, str]]) -> None:
        """running: (pod, container spec, container id, pod ip) of every
        running app container. Start missing workers, stop stale ones."""
        wanted = set()
        for pod, container, container_id, pod_ip in running:
            # Until its startup probe has succeeded, that is the only one.
            kinds = ["startup"] if self.awaits_startup(container, container_id) else ["liveness", "readiness"]
            for kind in kinds:
                probe = container.get(f"{kind}Probe")
                if not probe:
                    continue
                key = (container_id, kind)
                wanted.add(key)
                with self._lock:
                    if key not in self._workers:
                        worker = ProbeWorker(self, kind, probe, pod, container, container_id, pod_ip)
                        self._workers[key] = worker
                        worker.start()
        with self._lock:
            for key in [k for k in self._workers if k not in wanted]:
                self._workers.pop(key).stopped.set()
            live_ids = {container_id for _, _, container_id, _ in running}
            for table in (self.ready, self.failed_liveness, self.failed_startup):
                for container_id in [c for c in table if c not in live_ids]:
                    del table[container_id]
            self.started &= live_ids

    def awaits_startup(self, container: dict, container_id: str) -> bool:
        """Has this container a startupProbe that has not yet succeeded?"""
        return bool(container.get("startupProbe")) and container_id not in self.started

    def startup_done(self, container_id: str, pod_key: str, name: str, ok: bool, message: str) -> None:
        if ok:
            self.log.info("Startup probe succeeded", obj=pod_key, container=name)
        else:
            self.log.warning("Startup probe failed, container will be restarted", obj=pod_key, container=name)
        with self._lock:
            if ok:
                self.started.add(container_id)
            else:
                self.failed_startup[container_id] = message
        self._on_change()

    def set_ready(self, container_id: str, ready: bool) -> None:
        with self._lock:
            changed = self.ready.get(container_id) != ready
            self.ready[container_id] = ready
        if changed:
            self._on_change()

    def liveness_failed(self, container_id: str, pod_key: str, name: str, message: str) -> None:
        self.log.warning("Liveness probe failed, container will be restarted", obj=pod_key, container=name)
        with self._lock:
            self.failed_liveness[container_id] = message
        self._on_change()

    def stop(self) -> None:
        with self._lock:
            for worker in self._workers.values():
                worker.stopped.set()
            self._workers.clear()
