"""What a ConfigMap volume costs, and how fast an edit reaches it
(`python 02-apiserver/benchmarks/bench_volumes.py`).

The kubelet reads the ConfigMaps and Secrets its pods name with a GET per
object per sync period (01-kubelet/api_volumes/api_objects.py says why, not a watch).
This measures both sides of that choice, with a real API server and a
real kubelet (--sync-frequency 1s, the default) running one pod that
mounts one ConfigMap:

1. Requests: the ConfigMap GETs the API server counts (its /metrics) over
   20 idle seconds.
2. Latency: 20 edits of the ConfigMap, each timed from the PUT's answer to
   the new value in the volume's file on the node (read every 5 ms).

Everything it starts is removed at the end. Prints one Markdown table.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import requests

ROOT = Path(__file__).resolve().parents[2]
from common.tooling.ports import free_port

NODE = "bench-volumes"


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/readyz", timeout=1).ok
    except requests.ConnectionError:
        return False


def configmap_gets(url: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in requests.get(f"{url}/metrics", timeout=5).text.splitlines()
               if line.startswith("apiserver_request_total{") and 'resource="configmaps"' in line
               and 'verb="GET"' in line)


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-volumes-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ns = f"{url}/api/v1/namespaces/default"
    processes = [subprocess.Popen([sys.executable, str(ROOT / "02-apiserver/apiserver.py"), "--data-dir",
                                   str(tmp / "data"), "--port", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT)]
    try:
        wait_for(lambda: ready(url), 30, "the API server")
        processes.append(subprocess.Popen([sys.executable, str(ROOT / "01-kubelet/kubelet.py"), "--node-name", NODE,
                                           "--apiserver", url, "--read-only-port", "0", "--root-dir", str(tmp / "root")],
                                          stdout=open(tmp / "kubelet.log", "wb"), stderr=subprocess.STDOUT))
        requests.post(f"{ns}/configmaps", json={"metadata": {"name": "m"}, "data": {"v": "0"}}, timeout=5)
        pod = requests.post(f"{ns}/pods", timeout=5, json={"metadata": {"name": "m"}, "spec": {
            "nodeName": NODE, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"],
                            "volumeMounts": [{"name": "c", "mountPath": "/c"}]}],
            "volumes": [{"name": "c", "configMap": {"name": "m"}}]}}).json()
        file = tmp / "root/pods" / pod["metadata"]["uid"] / "volumes/kubernetes.io~configmap/c/v"
        wait_for(file.exists, 60, "the volume")
        before, started = configmap_gets(url), time.monotonic()
        time.sleep(20)                     # the idle window being measured, not a wait for an outcome
        rate = (configmap_gets(url) - before) / (time.monotonic() - started)
        delays = []
        for n in range(1, 21):
            configmap = requests.get(f"{ns}/configmaps/m", timeout=5).json()
            configmap["data"] = {"v": str(n)}
            requests.put(f"{ns}/configmaps/m", json=configmap, timeout=5).raise_for_status()
            sent = time.monotonic()
            wait_for(lambda: file.read_text() == str(n), 10, f"edit {n} in the volume")
            delays.append(time.monotonic() - sent)
        print("| measure | value |\n|---|---|")
        print(f"| ConfigMap GETs per second, one pod, idle | {rate:.2f} |")
        print(f"| edit to file, p50 / max / min (20 edits) | {statistics.median(delays):.3f} / "
              f"{max(delays):.3f} / {min(delays):.3f} s |")
        return 0
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(30)
        client = docker.from_env()
        for container in client.containers.list(all=True, filters={"label": f"io.groundup.node-name={NODE}"}):
            container.remove(force=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(f"/dev/shm/groundup-kubelet/{NODE}", ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
