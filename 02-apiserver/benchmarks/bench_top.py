"""What `kubectl top pods` costs next to `kubectl get pods`, on one node with 10 pods.

    .venv/bin/python 02-apiserver/benchmarks/bench_top.py [--pods 10] [--runs 7]

Starts an API server and a kubelet joined to it (free ports, a node name
of its own), runs the pods (busybox, sleeping), then times each command
several times with a warm discovery cache and prints medians as a
Markdown table. `top` comes twice: with the kubelet's 10-second answer
still fresh (kept), and right after it has expired (a fresh cgroup reading
of every container). The same for the raw requests, without kubectl's
start-up. Removes its containers afterwards.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
from common.tooling.polling import wait_for
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

RESOLUTION = 10.0     # the kubelet keeps an answer this long (01-kubelet/stats/stats_summary.py)


def start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdout=open(log, "ab"), stderr=subprocess.STDOUT, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return time.perf_counter() - began


def timed_get(url: str) -> float:
    began = time.perf_counter()
    requests.get(url, timeout=30).raise_for_status()
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-top-"))
    node = f"bench-{uuid.uuid4().hex[:8]}"
    api_port, kubelet_port = free_port(), free_port()
    api_url = f"http://127.0.0.1:{api_port}"
    kubectl = [shutil.which("kubectl") or "kubectl", "-s", api_url, "--cache-dir", str(work / "cache")]
    apiserver = start(["02-apiserver/apiserver.py", "--data-dir", str(work / "data"), "--port", str(api_port)],
                      work / "apiserver.log")
    kubelet = None
    try:
        wait_for(lambda: _up(f"{api_url}/readyz"), 30, what="the API server")
        kubelet = start(["01-kubelet/kubelet.py", "--node-name", node, "--apiserver", api_url, "--address",
                         "127.0.0.1", "--read-only-port", str(kubelet_port), "--node-ip", "127.0.0.1"],
                        work / "kubelet.log")
        wait_for(lambda: requests.get(f"{api_url}/api/v1/nodes/{node}", timeout=2).status_code == 200, 30,
                 what="the node registered")
        for i in range(options.pods):
            pod = {"metadata": {"name": f"sleeper-{i}"}, "spec": {"nodeName": node, "containers": [
                {"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}]}}
            requests.post(f"{api_url}/api/v1/namespaces/default/pods", json=pod, timeout=10).raise_for_status()
        wait_for(lambda: _running(api_url) == options.pods, 120, what=f"{options.pods} pods running")
        get, top = kubectl + ["get", "pods"], kubectl + ["top", "pods"]
        timed(get), timed(top)                          # discovery cached; the kubelet has read once
        rows = {"kubectl get pods": [timed(get) for _ in range(options.runs)],
                "kubectl top pods (kubelet's answer kept)": [timed(top) for _ in range(options.runs)],
                "kubectl top pods (a fresh reading)": _after_expiry(lambda: timed(top), options.runs),
                "GET .../pods": [timed_get(f"{api_url}/api/v1/namespaces/default/pods")
                                 for _ in range(options.runs)],
                "GET metrics.k8s.io .../pods (kept)": [timed_get(_metrics(api_url)) for _ in range(options.runs)],
                "GET metrics.k8s.io .../pods (fresh)": _after_expiry(lambda: timed_get(_metrics(api_url)),
                                                                     options.runs)}
        _print(rows, options)
        return 0
    finally:
        for process in (kubelet, apiserver):
            if process is not None and process.poll() is None:
                stop_within(process, 10)
        subprocess.run([sys.executable, "01-kubelet/kubelet.py", "--cleanup", "--node-name", node], cwd=ROOT,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        shutil.rmtree(work, ignore_errors=True)


def _metrics(api_url: str) -> str:
    return f"{api_url}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"


def _after_expiry(measure, runs: int) -> list[float]:
    """Each run after the kubelet's kept answer has expired: the wait is the point."""
    out = []
    for _ in range(min(runs, 3)):
        deadline = time.monotonic() + RESOLUTION + 0.2
        while time.monotonic() < deadline:
            time.sleep(0.1)
        out.append(measure())
    return out


def _up(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


def _running(api_url: str) -> int:
    pods = requests.get(f"{api_url}/api/v1/namespaces/default/pods", timeout=5).json()["items"]
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


def _print(rows: dict[str, list[float]], options) -> None:
    floor = statistics.median(rows["kubectl get pods"])
    raw_floor = statistics.median(rows["GET .../pods"])
    print(f"{options.pods} pods on one node, {platform.node()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}; medians of up to {options.runs} runs\n")
    print("| what | median | ratio |")
    print("|---|---|---|")
    for name, times in rows.items():
        base = raw_floor if name.startswith("GET") else floor
        print(f"| {name} | {statistics.median(times) * 1000:.0f} ms | {statistics.median(times) / base:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
