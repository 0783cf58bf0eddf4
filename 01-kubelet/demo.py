"""The main demo (`make demo`): a kubelet runs chapter 01's example pods.

It starts a kubelet on a copy of 01-kubelet/manifests/, waits until every
example pod has reached the state it should (running, ready, finished or
crash-looping), shows them as `kubectl get pods` would and as Docker sees
them, then stops the kubelet and removes its containers.

    python 01-kubelet/demo.py [--kubelet path/to/your_kubelet.py]

--kubelet runs your own kubelet (01-kubelet/build-it-yourself/) in place
of the reference, on the examples it can run: not two-containers (it
needs an emptyDir volume), and without the hostPort and the logs, which
the starting file does not serve.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from rich.console import Console

from common.tooling.ports import free_port
from common.tooling.your_program import YourProgram, YourProgramExited, environment
from get_pods import ready, restarts, status_column, table

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
# With a kubelet of your own (the starting file's stages): no volumes, and
# no CrashLoopBackOff reason in its status, but the restarts to show for it.
EXPECTED_OF_YOURS = {
    "web": EXPECTED["web"],
    "crasher": lambda p: restarts(p) >= 1,
    "one-shot": EXPECTED["one-shot"],
}


def wait_for_examples(url: str, kubelet: subprocess.Popen, yours: YourProgram | None, expected: dict,
                      timeout: float = 90) -> list[dict]:
    deadline = time.monotonic() + timeout
    pods: list[dict] = []
    while time.monotonic() < deadline:
        if yours:
            yours.check()
        elif kubelet.poll() is not None:
            raise SystemExit(f"the kubelet exited with code {kubelet.returncode}; its log is above")
        try:
            pods = requests.get(url, timeout=2).json()["items"]
        except requests.RequestException:
            pods = []
        by_name = {p["metadata"]["name"]: p for p in pods}
        if all(name in by_name and check(by_name[name]) for name, check in expected.items()):
            return pods
        time.sleep(0.5)
    show(pods)
    raise SystemExit(f"the example pods did not all reach their expected state within {timeout:.0f} s")


def show(pods: list[dict]) -> None:
    console.print(f"[bold]pods on {NODE}[/bold] (python 01-kubelet/get_pods.py)")
    print(table(pods))


def show_port_and_logs(port: int) -> None:
    page = requests.get("http://127.0.0.1:8000/", timeout=5).text.strip()
    console.print(f"\n[bold]curl http://127.0.0.1:8000/[/bold] (web's hostPort) -> {page}")
    logs = requests.get(f"http://127.0.0.1:{port}/containerLogs/default/one-shot/count", timeout=5).text
    console.print(f"[bold]one-shot's logs:[/bold] {' | '.join(logs.splitlines())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubelet", default=str(HERE / "kubelet.py"),
                        help="the kubelet to run (default: the reference, 01-kubelet/kubelet.py)")
    args = parser.parse_args()
    yours = Path(args.kubelet).resolve() != HERE / "kubelet.py"
    expected = EXPECTED_OF_YOURS if yours else EXPECTED
    port = free_port(10255)
    workdir = Path(tempfile.mkdtemp(prefix="kubelet-demo-"))
    manifests = workdir / "manifests"
    shutil.copytree(HERE / "manifests", manifests)
    if yours:                       # only the examples it can run
        for path in manifests.iterdir():
            if path.stem not in expected:
                path.unlink()
    log_path = workdir / "kubelet.log"
    console.rule("chapter 01: a kubelet runs pods from manifests")
    console.print(f"{args.kubelet} --node-name {NODE} --manifests {manifests} (log: {log_path})")
    with open(log_path, "wb") as log:
        kubelet = subprocess.Popen(
            [sys.executable, str(Path(args.kubelet).resolve()), "--node-name", NODE, "--manifests", str(manifests),
             "--address", "127.0.0.1", "--read-only-port", str(port)], stdout=log, stderr=subprocess.STDOUT,
            env=environment() if yours else None)
    your_kubelet = YourProgram("kubelet", Path(args.kubelet), kubelet, log_path) if yours else None
    try:
        pods = wait_for_examples(f"http://127.0.0.1:{port}/pods", kubelet, your_kubelet, expected)
        show(pods)
        console.print("\n[bold]docker ps[/bold] (the pause containers hold each pod's network):")
        subprocess.run(["docker", "ps", "--filter", f"label=io.groundup.node-name={NODE}",
                        "--format", "table {{.Names}}\t{{.Image}}\t{{.Status}}"], check=False)
        if yours:
            console.print("\n(web's hostPort 8000 and one-shot's logs on the read-only port are the "
                          "reference kubelet's: yours serves /pods only)")
        else:
            show_port_and_logs(port)
    except YourProgramExited:
        raise                   # its message has your kubelet's last lines
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
