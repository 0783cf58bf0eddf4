"""What the chapters' benchmarks share, so that none loads another
chapter's bench script: small statistics and the report, an API server to
load and the pods to fill it with (chapters 02 and 03), and the kubelet's
benchmark pods with their bare-Docker floor (chapters 01 and 02).

Tooling, not part of any component: only the bench scripts import it.
"""
from __future__ import annotations

import asyncio
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from common.tooling.ports import free_port

APISERVER = Path(__file__).resolve().parents[2] / "02-apiserver" / "apiserver.py"


# ----- figures and the report -----

def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> str:
    model = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    return f"{model.group(1) if model else platform.processor()}, {os.cpu_count()} cores"


def print_rows(rows: list[tuple], subject: str) -> None:
    """The table, in Markdown, ready for a chapter's BENCHMARKS.md."""
    print(f"| measure | {subject} | floor (same run) | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for measure, value, floor, ratio, target, met in rows:
        verdict = "" if met is None else "yes" if met else "NO"
        print(f"| {measure} | {value} | {floor} | {ratio} | {target} | {verdict} |")


# ----- an API server under load -----

def pod(name: str, namespace: str) -> dict:
    """A small but ordinary pod: what `kubectl apply` of web.yaml sends."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web", "tier": "bench"}},
            "spec": {"containers": [{"name": "httpd", "image": "busybox:1.35",
                                     "command": ["httpd", "-f", "-p", "80", "-h", "/etc"],
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def call(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def start(argv: list[str], port: int, log_path: Path, ready_path: str = "/healthz") -> subprocess.Popen:
    """A Python program that serves HTTP on port, once ready_path answers."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen([sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            call(port, "GET", ready_path)
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{argv[0]} did not start within 30 s; see {log_path}")


def start_apiserver(workdir: Path, name: str) -> tuple[subprocess.Popen, int]:
    """apiserver.py over workdir/name, on a free port: (process, port)."""
    port = free_port()
    process = start([str(APISERVER), "--data-dir", str(workdir / name), "--port", str(port),
                     "--max-watches", "2000"], port, workdir / f"{name}.log")
    return process, port


async def populate(port: int, namespace: str, first: int, last: int, concurrency: int = 8) -> None:
    """Create pods first..last-1 through the API, the real path, 8 at a time."""
    import aiohttp
    url = f"http://127.0.0.1:{port}{pods_path(namespace)}"
    names = iter(range(first, last))

    async def client(session) -> None:
        for i in names:
            async with session.post(url, json=pod(f"pod-{i}", namespace)) as response:
                await response.read()
                assert response.status == 201, (response.status, await response.text())

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(client(session) for _ in range(concurrency)))


# ----- the kubelet's benchmark pods, and the floor they are held to -----

PODS = 30          # at once
SOLO = 10          # one at a time
IMAGE, PAUSE = "busybox:1.35", "registry.k8s.io/pause:3.9"
SLEEP = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def manifest(name) -> str:
    """A pod of two sleeping containers; an int n names it bench-n."""
    containers = "".join(f"  - name: {n}\n    image: {IMAGE}\n    command: [sh, -c, \"trap 'exit 0' TERM; "
                         f"sleep 3600 & wait\"]\n" for n in ("a", "b"))
    name = name if isinstance(name, str) else f"bench-{name}"
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  terminationGracePeriodSeconds: 1\n  containers:\n{containers}")


def bare_docker(client) -> list[float]:
    """The floor: seconds per pod (pause + 2 app containers) made with the
    Docker SDK alone, one pod after another."""
    label = {"io.groundup.bench": "bare"}
    times = []
    try:
        for i in range(PODS):
            began = time.perf_counter()
            pause = client.containers.run(PAUSE, detach=True, labels=label, name=f"bench-bare-{i}-pod")
            for name in ("a", "b"):
                client.containers.run(IMAGE, SLEEP, detach=True, labels=label, name=f"bench-bare-{i}-{name}",
                                      network_mode=f"container:{pause.id}")
            times.append(time.perf_counter() - began)
    finally:
        for container in client.containers.list(all=True, filters={"label": "io.groundup.bench=bare"}):
            container.remove(force=True)
    return times
