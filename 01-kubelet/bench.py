"""Chapter 01 benchmark (`make bench-01`): how much does the kubelet add to Docker?

1. The floor: the Docker SDK alone creates and starts, one pod after the
   other, a pause container plus two app containers joined to it, 30 times.
2. The kubelet: 30 two-container pod manifests appear at once; per pod, the
   time from the kubelet seeing the manifest to all its containers running
   (the kubelet logs it as `pod running startup=...`), and the time until
   all 30 run.
3. Idle: with the 30 pods running, the kubelet's own CPU time per sync.

It prints a Markdown table for 01-kubelet/README.md. Figures are compared
as ratios to the floor measured in the same run, since absolute times vary
from machine to machine.
"""
from __future__ import annotations

import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import requests

from common.tooling.bench_tools import PODS, SOLO, bare_docker, cpu_seconds, manifest, percentile
from common.tooling.ports import free_port

HERE = Path(__file__).resolve().parent
NODE = "bench-node"


def wait_running(url: str, names: set[str], log_path: Path, timeout: float = 180) -> None:
    """Poll the kubelet's /pods until exactly these pods run all their containers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = {p["metadata"]["name"]: p for p in requests.get(url, timeout=5).json()["items"]}
        if set(pods) == names and all(
                all("running" in s["state"] for s in p["status"].get("containerStatuses", [{"state": {}}]))
                for p in pods.values()):
            return
        time.sleep(0.01)
    raise SystemExit(f"the kubelet did not converge within {timeout} s; see {log_path}")


def kubelet_run(workdir: Path) -> dict:
    manifests = workdir / "manifests"
    manifests.mkdir()
    port = free_port()
    log_path = workdir / "kubelet.log"
    with open(log_path, "wb") as log:
        kubelet = subprocess.Popen(
            [sys.executable, str(HERE / "kubelet.py"), "--node-name", NODE, "--manifests", str(manifests),
             "--address", "127.0.0.1", "--read-only-port", str(port), "--sync-frequency", "1s"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "GROUNDUP_LOG_LEVEL": "INFO"})
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.05)
        pods_url = f"http://127.0.0.1:{port}/pods"
        # Phase 1: one pod at a time, so nothing waits in a queue: the
        # kubelet's own overhead per pod.
        for i in range(SOLO):
            (manifests / f"solo-{i}.yaml").write_text(manifest(f"solo-{i}"))
            wait_running(pods_url, {f"solo-{j}" for j in range(i + 1)}, log_path)
        for i in range(SOLO):
            (manifests / f"solo-{i}.yaml").unlink()
        wait_running(pods_url, set(), log_path)
        # Phase 2: 30 pods appear at once.
        for i in range(PODS):
            (manifests / f".bench-{i}.tmp").write_text(manifest(i))
        written = time.monotonic()
        for i in range(PODS):
            os.replace(manifests / f".bench-{i}.tmp", manifests / f"bench-{i}.yaml")
        wait_running(pods_url, {f"bench-{i}" for i in range(PODS)}, log_path)
        converged = time.monotonic() - written
        startups = dict(re.findall(r"default/(\S+): pod running startup=([0-9.]+)s", log_path.read_text()))
        solo = [float(v) for k, v in startups.items() if k.startswith("solo-")]
        burst = [float(v) for k, v in startups.items() if k.startswith("bench-")]
        time.sleep(3)                      # let the last status writes settle
        idle_seconds = 10
        before = cpu_seconds(kubelet.pid)
        time.sleep(idle_seconds)
        idle_cpu = cpu_seconds(kubelet.pid) - before
        return {"solo": solo, "burst": burst, "converged": converged, "idle_cpu_per_sync": idle_cpu / idle_seconds}
    finally:
        kubelet.send_signal(signal.SIGTERM)
        kubelet.wait(timeout=30)
        subprocess.run([sys.executable, str(HERE / "kubelet.py"), "--cleanup", "--node-name", NODE],
                       check=False, capture_output=True)


def main() -> int:
    client = docker.from_env()
    bare = bare_docker(client)
    with tempfile.TemporaryDirectory(prefix="bench-01-") as workdir:
        result = kubelet_run(Path(workdir))
    solo, burst = result["solo"], result["burst"]
    bare_p50, bare_total = statistics.median(bare), sum(bare)
    print(f"\n{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, Docker "
          f"{client.version()['Version']}, Python {platform.python_version()}; pods of 2 containers + pause\n")
    print("| measure | bare Docker SDK | kubelet | ratio | target |")
    print("|---|---|---|---|---|")
    print(f"| one pod's startup, p50 ({SOLO} pods, one at a time) | {bare_p50:.3f} s | {statistics.median(solo):.3f} s"
          f" | {statistics.median(solo) / bare_p50:.2f}x | within 1.3x |")
    print(f"| one pod's startup, p90 / max | {percentile(bare, 0.9):.3f} / {max(bare):.3f} s | "
          f"{percentile(solo, 0.9):.3f} / {max(solo):.3f} s | | |")
    print(f"| {PODS} pods at once: startup p50 / p90 / max (queueing included) | | "
          f"{statistics.median(burst):.2f} / {percentile(burst, 0.9):.2f} / {max(burst):.2f} s | | |")
    print(f"| {PODS} pods at once: all running | {bare_total:.2f} s (sequential) | {result['converged']:.2f} s "
          f"(from the files appearing) | {result['converged'] / bare_total:.2f}x | within 1.5x |")
    print(f"| kubelet CPU per idle sync ({PODS} pods) | | {result['idle_cpu_per_sync'] * 1000:.1f} ms | | under 20 ms |")
    missing = SOLO + PODS - len(solo) - len(burst)
    if missing:
        print(f"\nnote: {missing} pods had no startup line in the kubelet's log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
