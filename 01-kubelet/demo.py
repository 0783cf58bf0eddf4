"""The main demo (`make demo`): a kubelet runs chapter 01's example pods.

It starts a kubelet on a copy of 01-kubelet/manifests/, waits until every
example pod has reached the state it should (running, ready, finished or
crash-looping), shows them as `kubectl get pods` would and as Docker sees
them, then stops the kubelet and removes its containers.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from rich.console import Console

from common.ports import free_port
from get_pods import ready, status_column, table

HERE = Path(__file__).resolve().parent
NODE = "demo-node"
console = Console()


# What each example should show before the demo moves on.
EXPECTED = {
    "two-containers": lambda p: p["status"].get("phase") == "Running" and ready(p) == "2/2",
    "web": lambda p: ready(p) == "1/1",
    "crasher": lambda p: status_column(p) == "CrashLoopBackOff",
    "one-shot": lambda p: p["status"].get("phase") == "Succeeded",
}


def wait_for_examples(url: str, kubelet: subprocess.Popen, timeout: float = 90) -> list[dict]:
    deadline = time.monotonic() + timeout
    pods: list[dict] = []
    while time.monotonic() < deadline:
        if kubelet.poll() is not None:
            raise SystemExit(f"the kubelet exited with code {kubelet.returncode}; its log is above")
        try:
            pods = requests.get(url, timeout=2).json()["items"]
        except requests.RequestException:
            pods = []
        by_name = {p["metadata"]["name"]: p for p in pods}
        if all(name in by_name and check(by_name[name]) for name, check in EXPECTED.items()):
            return pods
        time.sleep(0.5)
    show(pods)
    raise SystemExit(f"the example pods did not all reach their expected state within {timeout:.0f} s")


def show(pods: list[dict]) -> None:
    console.print(f"[bold]pods on {NODE}[/bold] (python 01-kubelet/get_pods.py)")
    print(table(pods))


def main() -> int:
    port = free_port(10255)
    workdir = Path(tempfile.mkdtemp(prefix="kubelet-demo-"))
    manifests = workdir / "manifests"
    shutil.copytree(HERE / "manifests", manifests)
    log_path = workdir / "kubelet.log"
    console.rule("chapter 01: a kubelet runs pods from manifests")
    console.print(f"kubelet --node-name {NODE} --manifests {manifests} (log: {log_path})")
    with open(log_path, "wb") as log:
        kubelet = subprocess.Popen(
            [sys.executable, str(HERE / "kubelet.py"), "--node-name", NODE, "--manifests", str(manifests),
             "--address", "127.0.0.1", "--read-only-port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        pods = wait_for_examples(f"http://127.0.0.1:{port}/pods", kubelet)
        show(pods)
        console.print("\n[bold]docker ps[/bold] (the pause containers hold each pod's network):")
        subprocess.run(["docker", "ps", "--filter", f"label=io.groundup.node-name={NODE}",
                        "--format", "table {{.Names}}\t{{.Image}}\t{{.Status}}"], check=False)
        page = requests.get("http://127.0.0.1:8000/", timeout=5).text.strip()
        console.print(f"\n[bold]curl http://127.0.0.1:8000/[/bold] (web's hostPort) -> {page}")
        logs = requests.get(f"http://127.0.0.1:{port}/containerLogs/default/one-shot/count", timeout=5).text
        console.print(f"[bold]one-shot's logs:[/bold] {' | '.join(logs.splitlines())}")
    except BaseException:
        console.print(log_path.read_text()[-4000:])
        raise
    finally:
        kubelet.send_signal(signal.SIGTERM)
        kubelet.wait(timeout=30)
        console.print("\nkubelet stopped (its pods keep running, as a real kubelet's do); cleaning up:")
        subprocess.run([sys.executable, str(HERE / "kubelet.py"), "--cleanup", "--node-name", NODE], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
    console.rule("done: see 01-kubelet/README.md for the lesson")
    return 0


if __name__ == "__main__":
    sys.exit(main())
