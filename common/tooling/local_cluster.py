"""A small cluster on this machine, as real processes: an API server on an
insecure loopback port (data in a temporary directory) and kubelets that
join it, plus whatever a later chapter adds (the scheduler). The demos use
it; stop() ends every process and removes what the kubelets ran.

A component the learner wrote (build-it-yourself/) runs with start_yours()
in place of ours, and the API server with Cluster(apiserver=their file).
When theirs exits, the demo stops with one line naming the file and its
last lines of output (common/tooling/your_program.py), not every component's log.
"""
from __future__ import annotations

import secrets
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

ROOT = Path(__file__).resolve().parents[2]
console = Console()


# Where the server's own table of each kind the demos show lives (without kubectl).
_TABLE_PATHS = {"nodes": "/api/v1/nodes", "pods": "/api/v1/namespaces/default/pods",
                "deployments": "/apis/apps/v1/namespaces/default/deployments",
                "replicasets": "/apis/apps/v1/namespaces/default/replicasets"}


class Cluster:
    """An API server and kubelets as real processes; stop() ends them and
    removes what the kubelets ran, whatever happened."""

    def __init__(self, nodes: list[str], apiserver: Path | None = None):
        """nodes: a kubelet each. apiserver: the learner's API server
        (02-apiserver/build-it-yourself/) to run in place of ours."""
        self.nodes = nodes
        self.your_apiserver = apiserver
        self.workdir = Path(tempfile.mkdtemp(prefix="groundup-demo-"))
        self.url = f"http://127.0.0.1:{free_port(8080)}"
        self.processes: dict[str, subprocess.Popen] = {}
        self.yours: dict[str, YourProgram] = {}     # process name -> the learner's program

    def start_process(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        # Appended to: a process started again keeps its earlier output.
        with open(self.workdir / f"{name}.log", "ab") as log:       # the child keeps its own copy
            process = subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                       env=env)
        self.processes[name] = process
        return process

    def start_yours(self, name: str, role: str, path: Path, args: list[str]) -> subprocess.Popen:
        """The learner's program (role: "scheduler") in place of ours, watched
        as ours are; if it exits, wait() stops the demo with its last lines."""
        process = self.start_process(name, [str(path.resolve()), *args], env=environment())
        self.yours[name] = YourProgram(role, path, process, self.workdir / f"{name}.log")
        return process

    def start(self) -> "Cluster":
        # The kubelets' ports are for the API server alone, as on real
        # machines (make certs writes this file there).
        token_file = self.workdir / "kubelet-client.token"
        token_file.write_text(secrets.token_urlsafe(32) + "\n")
        self.start_apiserver()
        for node in self.nodes:
            self.start_process(node, ["01-kubelet/kubelet.py", "--node-name", node, "--apiserver", self.url,
                                      "--address", "127.0.0.1", "--read-only-port", str(free_port(0)),
                                      "--node-ip", "127.0.0.1", "--authentication-token-file", str(token_file)])
        if self.nodes:
            self.wait(lambda: self.ready_nodes() >= set(self.nodes), "the nodes to register")
        return self

    def start_apiserver(self) -> None:
        """Ours, or the learner's with the starting file's command line; then
        wait until it answers. Again after a kill -9: the same data directory."""
        port = self.url.rsplit(":", 1)[1]
        data = str(self.workdir / "data")
        if self.your_apiserver:
            self.start_yours("apiserver", "API server", self.your_apiserver, ["--data-dir", data, "--port", port])
        else:
            self.start_process("apiserver", ["02-apiserver/apiserver.py", "--data-dir", data, "--insecure-port", port,
                                             "--kubelet-client-token-file", str(self.workdir / "kubelet-client.token")])
        self.wait(lambda: requests.get(f"{self.url}/healthz", timeout=1).ok, "the API server")

    def ready_nodes(self) -> set[str]:
        items = requests.get(f"{self.url}/api/v1/nodes", timeout=2).json()["items"]
        return {n["metadata"]["name"] for n in items
                if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}

    def wait(self, check, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_processes()
            try:
                if check():
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise SystemExit(f"timed out waiting for {what}; logs are in {self.workdir}")

    def check_processes(self) -> None:
        """Every process still running, or stop the demo saying which is not."""
        for name, process in self.processes.items():
            if name in self.yours:
                self.yours[name].check()
            elif process.poll() is not None:
                raise SystemExit(f"{name} exited with code {process.returncode}:\n{self.log(name)}")

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]

    def create(self, pod: dict, namespace: str = "default") -> None:
        response = requests.post(f"{self.url}/api/v1/namespaces/{namespace}/pods", json=pod, timeout=5)
        response.raise_for_status()

    def pod_phase(self, name: str, namespace: str = "default") -> str:
        response = requests.get(f"{self.url}/api/v1/namespaces/{namespace}/pods/{name}", timeout=2)
        return response.json().get("status", {}).get("phase", "") if response.ok else ""

    def show(self, what: str = "nodes,pods") -> None:
        """`kubectl get nodes,pods -o wide`, with the real kubectl if there is one."""
        console.print(f"\n[bold]$ kubectl -s {self.url} get {what} -o wide[/bold]")
        if shutil.which("kubectl"):
            # --kubeconfig /dev/null: no credentials of the user's own
            # kubeconfig go to the demo's plain-HTTP server.
            subprocess.run(["kubectl", "--kubeconfig", "/dev/null", "-s", self.url, "get", what, "-o", "wide"],
                           check=False)
            return
        # No kubectl here: ask the server for the same tables kubectl prints.
        for plural in what.split(","):
            table = requests.get(f"{self.url}{_TABLE_PATHS[plural]}",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
                                 params={"includeObject": "None"}, timeout=5).json()
            rows = [[c["name"].upper() for c in table["columnDefinitions"]]]
            rows += [[str(cell) for cell in row["cells"]] for row in table["rows"]]
            widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
            for row in rows:             # columns as kubectl aligns them
                print("   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
            print()

    def __enter__(self) -> "Cluster":
        try:
            return self.start()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise

    def __exit__(self, kind, error, traceback) -> None:
        """On the way out, whatever happened: on a failure, show the logs
        (not when the learner's program exited: the cause is there, and
        its message says it); then stop everything."""
        if error is not None and not isinstance(error, YourProgramExited):
            for name in self.processes:
                console.print(f"[bold]{name} log:[/bold]\n{self.log(name)}")
        console.print("\nstopping the cluster's processes" + (", removing the containers" if self.nodes else ""))
        self.stop()

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for node in self.nodes:
            subprocess.run([sys.executable, "01-kubelet/kubelet.py", "--cleanup", "--node-name", node],
                           cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.workdir, ignore_errors=True)


def pod(name: str, node: str | None = None, containers: int = 1, cpu: str | None = None) -> dict:
    """A pod of sleeping busybox containers, bound to node if given."""
    resources = {"resources": {"requests": {"cpu": cpu}}} if cpu else {}
    spec: dict = {"terminationGracePeriodSeconds": 1, "containers": [
        {"name": f"c{i}", "image": "busybox:1.35", "command": ["sleep", "3600"], **resources}
        for i in range(containers)]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
