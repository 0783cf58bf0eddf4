"""Chapter 02 benchmark, second half (`make bench-02-nodes`): what does the API
server add to a kubelet's work?

The same 30 two-container pods as chapter 01's benchmark (their manifest
and the helpers both use are in common/tooling/bench_tools.py), and in the same run:

1. Latency. The pods reach one kubelet two ways: as files in its manifest
   directory (chapter 01, no API server), and as pods POSTed to the API
   server with spec.nodeName set, which the kubelet learns of through its
   watch. For the API path the clock runs from sending the POST to reading,
   on a watch of our own, the status that says Running: what a user of
   `kubectl get pods -w` sees. The difference at p50 is what the API path
   adds. Both 30 at once (queueing in the kubelet included) and 10 one at a
   time (no queue: the path's own cost).
2. API writes per pod, counted from the API server's request log
   (--log-requests): status writes (PATCH/PUT pods/NAME/status), and apart
   from them the create, binding, events and deletes. The watch shows what
   each status write changed.
3. Idle: the requests one kubelet holding the 30 pods sends the API server
   over a 30 s window, by kind. Once the pods run, only the node's
   heartbeat should remain: the pods' changes reach it through a watch.

The script's own requests leave from 127.0.0.2, the kubelet's from
127.0.0.1, so the request log tells them apart. Everything it starts
(API server, kubelets, containers, temporary directory) is removed at the
end, on Ctrl-C too. It prints Markdown tables for 02-apiserver/README.md.
"""
from __future__ import annotations

import http.client
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, NamedTuple

import docker
import requests
import yaml

from common.tooling.bench_tools import PODS, SOLO, bare_docker, cpu_seconds, manifest, percentile
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

HERE = Path(__file__).resolve().parent.parent   # the chapter folder, where apiserver.py lives
KUBELET = HERE.parent / "01-kubelet" / "kubelet.py"

NAMESPACE = "bench"
BENCH_ADDRESS, KUBELET_ADDRESS = "127.0.0.2", "127.0.0.1"
IDLE_SECONDS = 30
ROUNDS = 3                 # bursts of 30 per path, in turns
QUIET_SECONDS = 3          # "settled": no request but heartbeats from the kubelet for this long


class BenchError(Exception):
    def __init__(self, message: str, *logs: Path):
        super().__init__(message)
        self.logs = logs


# ----- what this run started, undone in reverse order whatever happens -----

class Run:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self._undo: list[Callable[[], None]] = []

    def defer(self, undo: Callable[[], None]) -> Callable[[], None]:
        """Register undo for the end of the run; returns a function that runs it now, once."""
        done = []

        def once() -> None:
            if not done:
                done.append(1)
                self._undo.remove(once)
                undo()
        self._undo.append(once)
        return once

    def start(self, argv: list, log_path: Path | None, **env) -> subprocess.Popen:
        """log_path None: the output comes to us through a pipe."""
        # A session of its own: Ctrl-C reaches only this script, which then
        # stops the kubelet before removing its containers, in that order.
        with open(log_path or os.devnull, "ab") as log:
            return subprocess.Popen([sys.executable, *map(str, argv)], stdout=log if log_path else subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env={**os.environ, **env}, start_new_session=True)

    def close(self) -> None:
        while self._undo:
            try:
                self._undo[-1]()               # each step unregisters itself before it runs
            except Exception as error:         # one failed step must not keep the others from running
                print(f"cleanup: {type(error).__name__}: {error}", file=sys.stderr)


class KubeletOutput:
    """The kubelet's log lines, stamped as they arrive through a pipe (and
    kept in a file): when it read each pod's manifest, when it first found
    the pod running (the sync that computes the Running status), and its own
    startup figure. The kubelet flushes every line, so the stamp is within
    a millisecond or so of the event; nothing polls the kubelet meanwhile."""

    READ = re.compile(r"\S+/(\S+): manifest read")
    RUNNING = re.compile(r"\S+/(\S+): pod running startup=([0-9.]+)s")

    def __init__(self, process: subprocess.Popen, path: Path):
        self.path = path
        self.read_at: dict[str, float] = {}
        self.running_at: dict[str, float] = {}
        self.startup: dict[str, float] = {}
        self.changed = threading.Condition()
        threading.Thread(target=self._read, args=(process,), daemon=True, name="kubelet-output").start()

    def _read(self, process: subprocess.Popen) -> None:
        with open(self.path, "ab") as log:
            for raw in process.stdout:
                at = time.monotonic()
                log.write(raw)
                log.flush()
                line = raw.decode(errors="replace")
                with self.changed:
                    if match := self.READ.search(line):
                        self.read_at.setdefault(match.group(1), at)
                    elif match := self.RUNNING.search(line):
                        self.running_at.setdefault(match.group(1), at)
                        self.startup[match.group(1)] = float(match.group(2))
                    self.changed.notify_all()

    def wait_running(self, names: list[str], timeout: float) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: all(n in self.running_at for n in names), timeout):
                raise BenchError(f"pods {', '.join(n for n in names if n not in self.running_at)[:80]} not "
                                 f"Running within {timeout:.0f} s", self.path)


class Kubelet(NamedTuple):
    port: int                          # its read-only port
    pid: int
    output: KubeletOutput
    finish: Callable[[], None]         # stop it, remove its containers (kubelet.py --cleanup) and lock file


def start_kubelet(run: Run, node: str, source_args: list[str]) -> Kubelet:
    port = free_port()
    process = run.start([KUBELET, "--node-name", node, *source_args, "--address", "127.0.0.1",
                         "--read-only-port", port, "--sync-frequency", "1s"], None, GROUNDUP_LOG_LEVEL="INFO")
    output = KubeletOutput(process, run.workdir / f"kubelet-{node}.log")

    def undo() -> None:
        stop_within(process, 30)
        subprocess.run([sys.executable, str(KUBELET), "--cleanup", "--node-name", node],
                       check=False, capture_output=True, timeout=300)
        Path(tempfile.gettempdir(), f"groundup-kubelet-{node}.lock").unlink(missing_ok=True)
    return Kubelet(port, process.pid, output, run.defer(undo))


def docker_pids() -> list[int]:
    """dockerd's and containerd's process ids (only read: their CPU time)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() in ("dockerd", "containerd"):
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


DOCKER_PIDS = docker_pids()


class Usage(NamedTuple):
    """Where a stretch of time went: wall clock, the kubelet's syncs (its
    /metrics), CPU seconds of the kubelet, the API server, dockerd with
    containerd, and the whole machine's busy CPU seconds (/proc/stat, every
    core; the rest is the containers' own start-up, runc, and anything else
    running on the machine)."""
    wall: float
    syncs: int
    kubelet_cpu: float
    server_cpu: float
    docker_cpu: float
    machine_busy: float

    @staticmethod
    def now(kubelet: Kubelet, server_pid: int | None = None) -> "Usage":
        metrics = requests.get(f"http://127.0.0.1:{kubelet.port}/metrics", timeout=5).text
        syncs = int(re.search(r"^kubelet_sync_loops_total (\d+)", metrics, re.M).group(1))
        jiffies = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = (sum(jiffies[:8]) - jiffies[3] - jiffies[4]) / os.sysconf("SC_CLK_TCK")   # all but idle, iowait
        docker_cpu = 0.0
        for pid in DOCKER_PIDS:
            try:
                docker_cpu += cpu_seconds(pid)
            except OSError:
                pass
        return Usage(time.monotonic(), syncs, cpu_seconds(kubelet.pid),
                     cpu_seconds(server_pid) if server_pid else 0.0, docker_cpu, busy)

    def __sub__(self, before: "Usage") -> "Usage":
        return Usage(*(a - b for a, b in zip(self, before)))


def wait_for(predicate: Callable[[], bool], timeout: float, message: str, *logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise BenchError(f"{message} within {timeout:.0f} s", *logs)
        time.sleep(0.05)


def is_running(pod: dict) -> bool:
    """Phase Running with every container running: kubectl's Running, READY 2/2."""
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return status.get("phase") == "Running" and bool(containers) and all("running" in c["state"] for c in containers)


# ----- the API server, through http.client from our own address -----

def api(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(BENCH_ADDRESS, 0))
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json", "Accept": "application/json"})
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data.startswith(b"{") else {}
    except (OSError, ValueError):
        return 0, {}
    finally:
        conn.close()


def api_pod(name: str, node: str) -> dict:
    """Chapter 01's bench pod, bound to node."""
    pod = yaml.safe_load(manifest(name))
    pod["metadata"]["namespace"] = NAMESPACE
    pod["spec"]["nodeName"] = node
    return pod


def create(port: int, name: str, node: str) -> None:
    code, body = api(port, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", api_pod(name, node))
    if code != 201:
        raise BenchError(f"creating pod {name}: {code} {body.get('message', '')}")


def delete(port: int, name: str) -> None:
    """As `kubectl delete pod`: graceful, the kubelet finishes it."""
    code, body = api(port, "DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
    if code not in (200, 202):
        raise BenchError(f"deleting pod {name}: {code} {body.get('message', '')}")


class PodWatch:
    """The namespace's pods as a watch shows them: when each was first seen
    Running, each distinct status it had, when it was deleted."""

    def __init__(self, port: int, resource_version: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, source_address=(BENCH_ADDRESS, 0))
        self.conn.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion="
                                 f"{resource_version}&timeoutSeconds=3600", headers={"Accept": "application/json"})
        self.response = self.conn.getresponse()
        if self.response.status != 200:
            raise BenchError(f"watching pods: {self.response.status}")
        self.running: dict[str, float] = {}
        self.deleted: dict[str, float] = {}
        self.statuses: dict[str, list[dict]] = defaultdict(list)
        self.closed = self.stopping = False
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True, name="pod-watch").start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                at = time.monotonic()          # stamped before parsing, which is ours and not the path's
                event = json.loads(line)
                pod = event["object"]
                name = pod["metadata"].get("name")
                with self.changed:
                    if event["type"] == "DELETED":
                        self.deleted[name] = at
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        history, status = self.statuses[name], pod.get("status") or {}
                        if not history or history[-1] != status:
                            history.append(status)
                        if is_running(pod):
                            self.running.setdefault(name, at)
                    self.changed.notify_all()
        except (OSError, ValueError):
            if not self.stopping:
                raise
        finally:
            with self.changed:
                self.closed = True
                self.changed.notify_all()

    def wait(self, seen: dict[str, float], names: list[str], timeout: float, what: str, *logs: Path) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: self.closed or all(n in seen for n in names), timeout):
                missing = [n for n in names if n not in seen]
                raise BenchError(f"{len(missing)} pods ({', '.join(missing[:3])}...) not {what} "
                                 f"within {timeout:.0f} s", *logs)
            if self.closed:
                raise BenchError("the watch on the API server ended early", *logs)

    def stop(self) -> None:
        self.stopping = True
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        self.conn.close()


# ----- the API server's request log -----

class Request(NamedTuple):
    client: str
    method: str
    path: str
    query: str
    code: int


LOG_LINE = re.compile(r'^(\S+) - - \[[^\]]*\] "(\S+) (\S+) HTTP/[\d.]+" (\d{3})')
ANSI = re.compile(r"\x1b\[[0-9;]*m")   # werkzeug colours lines of non-200 answers, even into a file


class RequestLog:
    """Werkzeug's access lines (one per request, written when the answer
    starts: a watch is logged when it opens) from the API server's log."""

    def __init__(self, path: Path):
        self.path = path

    def mark(self) -> int:
        """The end of the last complete line so far."""
        return self.path.read_bytes().rfind(b"\n") + 1

    def between(self, start: int = 0, end: int | None = None) -> list[Request]:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1 if end is None else end
        found = []
        for line in data[start:end].decode(errors="replace").splitlines():
            match = LOG_LINE.match(ANSI.sub("", line))
            if match:
                client, method, target, code = match.groups()
                path, _, query = target.partition("?")
                found.append(Request(client, method, path, query, int(code)))
        return found


KINDS = ("node status heartbeats", "node lease renewals", "pod status", "watches", "lists", "events",
         "anything else")
HEARTBEATS = ("node status heartbeats", "node lease renewals")


def kind_of(request: Request, node: str) -> str:
    method, path = request.method, request.path
    if path in (f"/api/v1/nodes/{node}", f"/api/v1/nodes/{node}/status") and method in ("GET", "PATCH", "PUT"):
        return "node status heartbeats"        # the heartbeat reads its Node, then patches its status
    if path == f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}":
        return "node lease renewals"           # one PUT a round (a GET too, after a restart or a conflict)
    if re.search(r"/pods/[^/]+/status$", path) and method in ("PATCH", "PUT"):
        return "pod status"
    if re.search(r"(^|&)watch=(true|1)(&|$)", request.query):
        return "watches"
    if "/events" in path:
        return "events"
    segments = path.strip("/").split("/")[2 if path.startswith("/api/") else 3:]
    if segments[:1] == ["namespaces"] and len(segments) >= 3:
        segments = segments[2:]
    if method == "GET" and len(segments) == 1:
        return "lists"
    return "anything else"


def kubelet_busy(requests_: list[Request], node: str) -> bool:
    return any(r.client == KUBELET_ADDRESS and kind_of(r, node) not in HEARTBEATS for r in requests_)


def wait_quiet(log: RequestLog, node: str, timeout: float = 60) -> bool:
    """Until the kubelet has sent nothing but heartbeats for QUIET_SECONDS
    (its last status writes and events are in); False at the deadline."""
    position, quiet_since, deadline = log.mark(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        end = log.mark()
        if kubelet_busy(log.between(position, end), node):
            quiet_since = time.monotonic()
        position = end
        if time.monotonic() - quiet_since >= QUIET_SECONDS:
            return True
    return False


# ----- the two paths, run in turns -----

# [Why this is the comparable chapter 01 figure] The kubelet reads its
# manifest directory once per sync (1 s), so from the file's appearance a pod
# first waits 0-1 s for the next scan: an artefact of polling a directory,
# which the API path does not have (the watch wakes the sync loop at once).
# So the manifest figure runs from the scan that reads the pod's manifest
# (the kubelet's "manifest read" line) to the sync that first finds all its
# containers running and computes the Running status (its "pod running"
# line): the moment /pods would first say Running, and the moment the API
# path's kubelet hands that status to its writer. The difference of the two
# figures is then what the API path adds: the POST, the watch to the
# kubelet, the status write and the watch back. Not chapter 01's way of
# polling /pods every 10 ms: answering that poll takes the kubelet's own
# interpreter lock, and with 30 pods it slowed the kubelet by seconds here.
# The kubelet's own startup measure (pod taken on -> Docker's start time of
# the last container) is printed too, for both paths.
class ManifestPath:
    """Chapter 01: a kubelet alone, its pods from a manifest directory."""

    def __init__(self, run: Run, server_pid: int):
        self.directory = run.workdir / "manifests"
        self.directory.mkdir()
        self.kubelet = start_kubelet(run, f"bench-manifests-{os.getpid()}", ["--manifests", str(self.directory)])
        self.server_pid = server_pid
        self.from_file: list[float] = []

    def ready(self) -> None:
        wait_for(lambda: self._listed() is not None, 30, "the chapter 01 kubelet did not serve /pods",
                 self.kubelet.output.path)

    def _listed(self) -> set[str] | None:
        try:
            items = requests.get(f"http://127.0.0.1:{self.kubelet.port}/pods", timeout=5).json()["items"]
            return {p["metadata"]["name"] for p in items}
        except (requests.RequestException, ValueError):
            return None

    def one(self, name: str) -> float:
        output = self.kubelet.output
        (self.directory / f"{name}.yaml").write_text(manifest(name))
        output.wait_running([name], 120)
        return output.running_at[name] - output.read_at[name]

    def burst(self, names: list[str]) -> tuple[list[float], list[float], Usage]:
        output = self.kubelet.output
        for name in names:
            (self.directory / f".{name}.tmp").write_text(manifest(name))
        before = Usage.now(self.kubelet, self.server_pid)
        written = time.monotonic()
        for name in names:                     # all 30 appear at once
            os.replace(self.directory / f".{name}.tmp", self.directory / f"{name}.yaml")
        output.wait_running(names, 180)
        usage = Usage.now(self.kubelet, self.server_pid) - before
        self.from_file += [output.running_at[n] - written for n in names]
        return [output.running_at[n] - output.read_at[n] for n in names], [output.startup[n] for n in names], usage

    def remove(self, names: list[str]) -> None:
        for name in names:
            (self.directory / f"{name}.yaml").unlink()
        def gone() -> bool:
            listed = self._listed()
            return listed is not None and not listed & set(names)
        wait_for(gone, 120, "the chapter 01 kubelet did not remove its pods", self.kubelet.output.path)


class ApiPath:
    """Chapter 02: pods POSTed to the API server with spec.nodeName; the kubelet watches for them."""

    def __init__(self, run: Run, port: int, server_pid: int, log: RequestLog):
        self.port, self.server_pid, self.log = port, server_pid, log
        self.node = f"bench-api-{os.getpid()}"
        self.kubelet = start_kubelet(run, self.node, ["--apiserver", f"http://127.0.0.1:{port}"])
        self.logs = (self.kubelet.output.path, log.path)
        self.watch: PodWatch | None = None
        self.run = run

    def ready(self) -> None:
        def node_ready() -> bool:
            code, node = api(self.port, "GET", f"/api/v1/nodes/{self.node}")
            conditions = ((node.get("status") or {}).get("conditions") or []) if code == 200 else []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        wait_for(node_ready, 60, "the kubelet's node was not Ready", *self.logs)
        # The kubelet's pod informer has listed its pods: it watches from
        # that list's version on, so a pod created from now on is not missed.
        # (The access log cannot tell: it writes a watch's line when it ends.)
        listed = f"informer INFO pods spec.nodeName={self.node}: listed"
        wait_for(lambda: listed in self.kubelet.output.path.read_text(errors="replace"), 30,
                 "the kubelet did not list and watch its pods", *self.logs)
        _, listing = api(self.port, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        self.watch = PodWatch(self.port, listing["metadata"]["resourceVersion"])
        self.run.defer(self.watch.stop)

    def one(self, name: str) -> float:
        began = time.monotonic()
        create(self.port, name, self.node)
        self.watch.wait(self.watch.running, [name], 120, "Running", *self.logs)
        return self.watch.running[name] - began

    def burst(self, names: list[str]) -> tuple[list[float], list[float], Usage]:
        sent = {}

        def post(name: str) -> None:
            sent[name] = time.monotonic()
            create(self.port, name, self.node)
        before = Usage.now(self.kubelet, self.server_pid)
        with ThreadPoolExecutor(max_workers=8) as pool:     # 30 POSTs as fast as the server takes them
            list(pool.map(post, names))
        self.watch.wait(self.watch.running, names, 180, "Running", *self.logs)
        usage = Usage.now(self.kubelet, self.server_pid) - before
        output = self.kubelet.output
        output.wait_running(names, 10)
        return [self.watch.running[n] - sent[n] for n in names], [output.startup[n] for n in names], usage

    def remove(self, names: list[str]) -> None:
        for name in names:
            delete(self.port, name)
        self.watch.wait(self.watch.deleted, names, 120, "deleted", *self.logs)

    def write_back(self, names: list[str]) -> list[float]:
        """Per pod: from the kubelet computing Running to our watch showing it."""
        return [self.watch.running[n] - self.kubelet.output.running_at[n] for n in names]


def run_paths(run: Run) -> dict:
    port = free_port()
    server_log = run.workdir / "apiserver.log"
    server = run.start([HERE / "apiserver.py", "--data-dir", run.workdir / "data", "--insecure-port", port,
                        "--log-requests"], server_log)
    run.defer(lambda: stop_within(server, 10))
    wait_for(lambda: api(port, "GET", "/healthz")[0] == 200, 30, "the API server did not answer", server_log)
    log = RequestLog(server_log)
    code, body = api(port, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": NAMESPACE}})
    if code != 201:
        raise BenchError(f"creating namespace {NAMESPACE}: {code} {body.get('message', '')}", server_log)
    manifests, through_api = ManifestPath(run, server.pid), ApiPath(run, port, server.pid, log)
    manifests.ready()
    through_api.ready()
    paths = {"manifests": manifests, "api": through_api}
    result = {key: {"solo": [], "burst": [], "own": [], "usage": [], "rounds": []} for key in paths}

    # One at a time, the two paths in turn: each pod's cost with no queue.
    solo = [f"solo-{i}" for i in range(SOLO)]
    for name in solo:
        for key, path in paths.items():
            result[key]["solo"].append(path.one(name))
    for path in paths.values():
        path.remove(solo)

    # 30 at once, ROUNDS times, in turns (the order swaps each round, the API
    # path last, whose pods then stay for the idle window): other work on the
    # machine then weighs on both alike.
    api_pods = list(solo)
    for number in range(ROUNDS):
        order = ("manifests", "api") if number % 2 == 0 else ("api", "manifests")
        if number == ROUNDS - 1 and order[-1] != "api":
            order = order[::-1]
        names = [f"bench-{number}-{i}" for i in range(PODS)]
        for key in order:
            latencies, own, usage = paths[key].burst(names)
            result[key]["burst"] += latencies
            result[key]["own"] += own
            result[key]["usage"].append(usage)
            result[key]["rounds"].append(statistics.median(latencies))
            if key == "api":
                api_pods += names
            if not (key == "api" and number == ROUNDS - 1):
                paths[key].remove(names)
    manifests.kubelet.finish()                 # not needed any more: nothing else on the machine while idle

    settled = wait_quiet(log, through_api.node)
    idle_start = log.mark()
    time.sleep(IDLE_SECONDS)                   # the measurement window itself
    idle = [r for r in log.between(idle_start, log.mark()) if r.client == KUBELET_ADDRESS]

    through_api.remove(names)
    wait_quiet(log, through_api.node)          # the last events (Killing) are written after the delete
    _, events = api(port, "GET", f"/api/v1/namespaces/{NAMESPACE}/events")
    through_api.kubelet.finish()
    result["manifests"]["from_file"] = manifests.from_file
    result["api"].update(node=through_api.node, write_back=through_api.write_back(api_pods), settled=settled,
                         idle=idle, requests=log.between(), statuses=dict(through_api.watch.statuses),
                         pods=api_pods, events=events.get("items") or [])
    return result


# ----- what each status write changed -----

def status_changes(before: dict, after: dict) -> list[str]:
    """The fields of status that differ, at the level a reader cares about."""
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if key == "phase":
            changes.append(f"phase {old}→{new}")
        elif key == "containerStatuses" and old and new:
            previous = {c["name"]: c for c in old}
            for container in new:
                was = previous.get(container["name"], {})
                for field in sorted(set(container) | set(was)):
                    if container.get(field) == was.get(field):
                        continue
                    if field == "state":
                        changes.append(f"{container['name']}.state {'/'.join(was.get('state') or {'-': 0})}"
                                       f"→{'/'.join(container['state']) or '-'}")
                    else:
                        changes.append(f"{container['name']}.{field}")
        elif key == "conditions" and old and new:
            previous = {c["type"]: c for c in old}
            for condition in new:
                was = previous.get(condition["type"], {})
                if was.get("status") != condition.get("status"):
                    changes.append(f"{condition['type']} {was.get('status', '-')}→{condition['status']}")
                elif condition != was:
                    changes.append(f"{condition['type']}.{','.join(k for k in condition if condition[k] != was.get(k))}")
        else:
            changes.append(key)
    return changes


# ----- the report -----

def machine(client: docker.DockerClient) -> str:
    model = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    memory = int(re.search(r"^MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text(), re.M).group(1)) / 1024 ** 2
    return (f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {model.group(1) if model else platform.processor()}, "
            f"{os.cpu_count()} cores, {memory:.0f} GB RAM, Python {platform.python_version()}, "
            f"Docker {client.version()['Version']}")


def p50_p90(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} / {percentile(values, 0.9):.2f} s"


def spread(counts: list[int]) -> str:
    return f"{min(counts)} / {statistics.median(counts):g} / {max(counts)}"


def by_round_rest(usages: list[Usage]) -> str:
    return ", ".join(f"{u.machine_busy - u.kubelet_cpu - u.server_cpu - u.docker_cpu:.1f}" for u in usages)


def mean_usage(usages: list[Usage]) -> Usage:
    return Usage(*(sum(values) / len(usages) for values in zip(*usages)))


def report(bare: list[float], result: dict, others: int) -> None:
    manifests, api_path = result["manifests"], result["api"]
    node, pods = api_path["node"], api_path["pods"]
    print(f"\n{machine(docker.from_env())}; pods of 2 busybox containers + pause"
          + (f"; {others} other containers were running on this Docker engine" if others else ""))
    print(f"\nFloor, same run: the Docker SDK alone starts one such pod in {p50_p90(bare)} (p50 / p90, "
          f"{len(bare)} pods one after another).\n")

    print("| create → Running | from manifests (chapter 01) | through the API server | API path adds at p50 "
          "| target | met |")
    print("|---|---|---|---|---|---|")
    burst_added = statistics.median(api_path["burst"]) - statistics.median(manifests["burst"])
    solo_added = statistics.median(api_path["solo"]) - statistics.median(manifests["solo"])
    rounds = ", ".join(f"{(a - m) * 1000:+.0f}" for m, a in zip(manifests["rounds"], api_path["rounds"]))
    print(f"| {PODS} pods at once, p50 / p90 ({ROUNDS} rounds, {len(api_path['burst'])} pods) "
          f"| {p50_p90(manifests['burst'])} | {p50_p90(api_path['burst'])} "
          f"| {burst_added * 1000:+.0f} ms (by round: {rounds}) | < 200 ms | {'yes' if burst_added < 0.2 else 'NO'} |")
    print(f"| {SOLO} pods one at a time, p50 / p90 | {p50_p90(manifests['solo'])} | {p50_p90(api_path['solo'])} "
          f"| {solo_added * 1000:+.0f} ms | < 200 ms | {'yes' if solo_added < 0.2 else 'NO'} |")
    own_added = statistics.median(api_path["own"]) - statistics.median(manifests["own"])
    print(f"| {PODS} at once, the kubelet's own measure (pod taken on → Docker started its last container) "
          f"| {p50_p90(manifests['own'])} | {p50_p90(api_path['own'])} | {own_added * 1000:+.0f} ms | | |")
    write_back = api_path["write_back"]
    print(f"| of the API path: kubelet computes Running → the watch shows it (status write + watch), "
          f"all {len(write_back)} pods | | {statistics.median(write_back) * 1000:.0f} / "
          f"{percentile(write_back, 0.9) * 1000:.0f} ms | | | |")
    print(f"\nManifests: from the scan that reads the pod's manifest to the sync that finds it Running (both "
          f"from the kubelet's log lines, stamped as they arrive); from the file's appearance, which adds the wait "
          f"for the next scan: {p50_p90(manifests['from_file'])}. API: from sending the POST to our watch "
          f"showing it Running. The two paths take turns, pod by pod and burst by burst.\n")

    m, a = mean_usage(manifests["usage"]), mean_usage(api_path["usage"])

    def by_round(key: str, field: str) -> str:
        return ", ".join(f"{getattr(u, field):.1f}" for u in result[key]["usage"])
    print(f"| one burst of {PODS}, until all ran (mean of {ROUNDS}) | from manifests | through the API server |")
    print("|---|---|---|")
    print(f"| wall clock (by round) | {m.wall:.1f} s ({by_round('manifests', 'wall')}) "
          f"| {a.wall:.1f} s ({by_round('api', 'wall')}) |")
    print(f"| kubelet syncs (its /metrics) | {m.syncs:.0f} | {a.syncs:.0f} |")
    print(f"| kubelet CPU | {m.kubelet_cpu:.1f} s | {a.kubelet_cpu:.1f} s |")
    print(f"| API server CPU | {m.server_cpu:.1f} s (idle) | {a.server_cpu:.1f} s |")
    print(f"| dockerd + containerd CPU | {m.docker_cpu:.1f} s | {a.docker_cpu:.1f} s |")
    print(f"| whole machine, busy CPU ({os.cpu_count()} cores) | {m.machine_busy:.1f} s "
          f"({m.machine_busy / m.wall / os.cpu_count():.0%}) | {a.machine_busy:.1f} s "
          f"({a.machine_busy / a.wall / os.cpu_count():.0%}) |")
    print(f"| of which the rest: containers, runc, other work on the machine (by round) "
          f"| {m.machine_busy - m.kubelet_cpu - m.server_cpu - m.docker_cpu:.1f} s "
          f"({by_round_rest(result['manifests']['usage'])}) "
          f"| {a.machine_busy - a.kubelet_cpu - a.server_cpu - a.docker_cpu:.1f} s "
          f"({by_round_rest(result['api']['usage'])}) |\n")

    requests_ = api_path["requests"]
    by_pod: dict[str, Counter] = {name: Counter() for name in pods}
    namespace_writes = Counter()
    status_codes, delete_codes = Counter(), Counter()
    for r in requests_:
        match = re.fullmatch(rf"/api/v1/namespaces/{NAMESPACE}/pods/([^/]+)(/\w+)?", r.path)
        who = "kubelet" if r.client == KUBELET_ADDRESS else "user"
        if match and match.group(1) in by_pod:
            sub = match.group(2) or ""
            if sub == "/status" and r.method in ("PATCH", "PUT"):
                by_pod[match.group(1)]["status"] += 1
                status_codes[r.code] += 1
            elif sub == "/binding" and r.method == "POST":
                by_pod[match.group(1)]["binding"] += 1
            elif not sub and r.method == "DELETE":
                by_pod[match.group(1)][f"delete by {who}"] += 1
                delete_codes[who, r.code] += 1
            elif r.method in ("PATCH", "PUT"):
                by_pod[match.group(1)][f"other pod write by {who}"] += 1
        elif r.path == f"/api/v1/namespaces/{NAMESPACE}/pods" and r.method == "POST":
            namespace_writes["create"] += 1
        elif r.path.startswith(f"/api/v1/namespaces/{NAMESPACE}/events") and r.method in ("POST", "PATCH", "PUT"):
            namespace_writes[f"events {r.method}"] += 1
    statuses = api_path["statuses"]
    changes = {name: len(statuses.get(name, [])) - 1 for name in pods}
    clean = [n for n in pods if all(c.get("restartCount", 0) == 0 for s in statuses.get(n, [])
                                    for c in s.get("containerStatuses") or [])]
    status_writes = [by_pod[n]["status"] for n in clean]
    no_ops = [by_pod[n]["status"] - changes[n] for n in clean]
    events_total = sum(v for k, v in namespace_writes.items() if k.startswith("events"))
    reasons = Counter()
    for event in api_path["events"]:
        reasons[event.get("reason", "?")] += event.get("count", 1)

    print(f"| API writes per pod ({len(clean)} of {len(pods)} pods started cleanly) | by | per pod: min / median / max "
          f"| all pods | target | met |")
    print("|---|---|---|---|---|---|")
    worst = max(status_writes)
    print(f"| status: PATCH/PUT pods/NAME/status | kubelet | {spread(status_writes)} | {sum(status_writes)} "
          f"| ≤ 5 | {'yes' if worst <= 5 else 'NO'} |")
    print(f"| of which changed nothing the watch could see | kubelet | {spread(no_ops)} | {sum(no_ops)} | 0 | "
          f"{'yes' if not any(no_ops) else 'NO'} |")
    print(f"| create: POST pods (spec.nodeName set) | user | | {namespace_writes['create']} | | |")
    print(f"| binding: POST pods/NAME/binding | scheduler (chapter 03) | {spread([by_pod[n]['binding'] for n in pods])} "
          f"| {sum(by_pod[n]['binding'] for n in pods)} | | |")
    print(f"| events: POST (new) + PATCH (repeat) in namespace {NAMESPACE} | kubelet | "
          f"{events_total / len(pods):.1f} on average | {events_total} "
          f"({namespace_writes['events POST']} + {namespace_writes['events PATCH']}) | | |")
    for who in ("user", "kubelet"):
        counts = [by_pod[n][f"delete by {who}"] for n in pods]
        what = "graceful (sets deletionTimestamp)" if who == "user" else "final (grace 0, once its containers stopped)"
        print(f"| delete: DELETE pods/NAME, {what} | {who} | {spread(counts)} | {sum(counts)} | | |")
    other = sum(by_pod[n][k] for n in pods for k in by_pod[n] if k.startswith("other"))
    if other:
        print(f"| other writes to pods/NAME | | | {other} | | |")
    print(f"\nEvents by reason (count, merged repeats included): "
          f"{', '.join(f'{r} {c}' for r, c in sorted(reasons.items())) or 'none'}. "
          f"Answers to status writes: {', '.join(f'{c} x{n}' for c, n in sorted(status_codes.items()))}; "
          f"to deletes: {', '.join(f'{w} {c} x{n}' for (w, c), n in sorted(delete_codes.items()))}.\n")

    idle = Counter(kind_of(r, node) for r in api_path["idle"])
    print(f"| idle kubelet, {PODS} pods, {IDLE_SECONDS} s window | requests | per second |")
    print("|---|---|---|")
    for kind in KINDS:
        print(f"| {kind} | {idle[kind]} | {idle[kind] / IDLE_SECONDS:.2f} |")
    total = sum(idle.values())
    print(f"| all | {total} | {total / IDLE_SECONDS:.2f} |")
    whole_run = Counter(f"{r.method} {kind_of(r, node)}" for r in requests_ if r.client == KUBELET_ADDRESS)
    print(f"\n(The kubelet over the whole API run: {', '.join(f'{k} {n}' for k, n in whole_run.most_common())}.)"
          + ("" if api_path["settled"] else " Note: the kubelet never went quiet before the idle window."))

    noise = max(max(p["rounds"]) - min(p["rounds"]) for p in (manifests, api_path))
    agree = all((a - m > 0) == (burst_added > 0) for m, a in zip(manifests["rounds"], api_path["rounds"]))
    only_heartbeats = total == sum(idle[k] for k in HEARTBEATS) and total > 0
    print("\nVerdicts:")
    print(f"- latency: the API path adds {burst_added * 1000:+.0f} ms at p50 for {PODS} pods at once "
          f"(by round: {rounds} ms); target < 200 ms: {'met' if burst_added < 0.2 else 'NOT met'}"
          + (f" (the API path was {'slower' if burst_added > 0 else 'faster'} in every round)" if agree else
             f", but within this run's noise: the rounds disagree, and one path's own burst p50 varied by up to "
             f"{noise:.1f} s from round to round"))
    print(f"- latency, one pod at a time (no queue: the path's own cost): {solo_added * 1000:+.0f} ms at p50; "
          f"target < 200 ms: {'met' if solo_added < 0.2 else 'NOT met'}")
    print(f"- status writes: at most {worst} per cleanly started pod (median {statistics.median(status_writes):g}); "
          f"target ≤ 5: {'met' if worst <= 5 else 'NOT met'}")
    print(f"- idle: {total / IDLE_SECONDS:.2f} requests/s, "
          + ("node heartbeats only, no polling; target met" if only_heartbeats else
             f"not only heartbeats ({', '.join(f'{k} {v}' for k, v in idle.items() if k not in HEARTBEATS)})"
             "; target NOT met"))

    print("\nWhat each status change showed on the watch (clean pods; the first entry is the status "
          "the API server gave the new pod):")
    sequences = Counter()
    for name in clean:
        history = statuses[name]
        sequences[tuple("; ".join(status_changes(a, b)) for a, b in zip(history, history[1:]))] += 1
    for sequence, count in sequences.most_common(6):
        print(f"  {count} pod{'s' if count > 1 else ''}:")
        for i, change in enumerate(sequence, 1):
            print(f"    {i}. {change}")
    if len(sequences) > 6:
        print(f"  ({len(sequences) - 6} rarer sequences not shown)")


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, interrupted)
    client = docker.from_env()
    others = len(client.containers.list())
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="bench-02-nodes-"))
    run = Run(workdir)
    run.defer(lambda: subprocess.run(["rm", "-rf", str(workdir)], check=False))
    try:
        print("floor: bare Docker SDK ...", file=sys.stderr)
        bare = bare_docker(client)
        print("manifests (chapter 01) and API path, in turns ...", file=sys.stderr)
        result = run_paths(run)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        for path in error.logs:
            lines = path.read_text(errors="replace").splitlines()[-20:] if path.exists() else []
            print(f"--- last lines of {path.name}:\n" + "\n".join(lines), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not stop the cleanup halfway
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run.close()
    report(bare, result, others)
    print(f"\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
