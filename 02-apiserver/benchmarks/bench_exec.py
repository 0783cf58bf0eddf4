"""What the way into a pod costs (`python 02-apiserver/benchmarks/bench_exec.py`).

A real API server and a real kubelet on this machine's Docker, one busybox
pod serving a 64 MB file over HTTP. Measured in the same run, each against
the same thing done straight on Docker:

1. A keystroke's round trip: one byte into `cat`'s stdin and back out,
   through the API server and the kubelet (our WebSocket client speaking
   v5.channel.k8s.io, as kubectl does) vs `docker exec` on Docker's own
   hijacked socket. 200 round trips in one session each; the median.
2. A whole exec (`echo x`: connect, run, exit status): the same two ways.
3. port-forward's throughput: the file through `kubectl port-forward`
   (WebSocket tunnel and plain SPDY) vs straight from the pod's IP,
   alternating, 5 downloads each; the best of each.

Everything it starts is removed at the end. Prints one Markdown table.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import docker
import requests
import websocket

ROOT = Path(__file__).resolve().parents[2]
from common.tooling.polling import wait_for
from common.tooling.ports import free_port

NODE = f"bench-exec-{uuid.uuid4().hex[:6]}"
SIZE = 64 * 1024 * 1024
ROUND_TRIPS = 200
WHOLE_EXECS = 30
RUNS = 5                  # downloads each way, alternating; the best of each counts


# ----- through the API server -----

def exec_socket(api_port: int, command: list[str], stdin: bool) -> websocket.WebSocket:
    query = "&".join([f"command={c}" for c in command] + ["container=app", "stdout=true", "stderr=true"]
                     + (["stdin=true"] if stdin else []))
    return websocket.create_connection(f"ws://127.0.0.1:{api_port}/api/v1/namespaces/default/pods/web/exec?{query}",
                                       subprotocols=["v5.channel.k8s.io"], timeout=30)


def keystrokes_via_api(api_port: int) -> list[float]:
    ws = exec_socket(api_port, ["cat"], stdin=True)
    times = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        ws.send_binary(b"\x00x")
        while ws.recv() != b"\x01x":
            pass
        times.append(time.perf_counter() - started)
    ws.send_binary(b"\xff\x00")          # stdin's end: cat exits
    ws.close()
    return times


def whole_exec_via_api(api_port: int) -> float:
    started = time.perf_counter()
    ws = exec_socket(api_port, ["echo", "x"], stdin=False)
    while not ws.recv().startswith(b"\x03"):      # until the exit status
        pass
    ws.close()
    return time.perf_counter() - started


# ----- straight on Docker -----

def keystrokes_via_docker(api: docker.APIClient, container: str) -> list[float]:
    run = api.exec_create(container, ["cat"], stdin=True)
    sock = api.exec_start(run["Id"], socket=True)._sock
    times = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        sock.sendall(b"x")
        received = b""
        while len(received) < 9:               # Docker's 8-byte frame header, then the byte
            received += sock.recv(9 - len(received))
        times.append(time.perf_counter() - started)
    sock.close()
    return times


def whole_exec_via_docker(api: docker.APIClient, container: str) -> float:
    started = time.perf_counter()
    run = api.exec_create(container, ["echo", "x"])
    api.exec_start(run["Id"])
    api.exec_inspect(run["Id"])
    return time.perf_counter() - started


def download(url: str) -> float:
    """MB/s for the whole file, read and thrown away."""
    started = time.perf_counter()
    with requests.get(url, stream=True, timeout=120) as response:
        got = sum(len(chunk) for chunk in response.iter_content(1 << 20))
    if got != SIZE:
        raise SystemExit(f"got {got} bytes of {SIZE} from {url}")
    return SIZE / (time.perf_counter() - started) / 1e6


def port_forward_throughput(api_url: str, workdir: Path, websockets: bool, direct_url: str) -> tuple[float, float]:
    """(through port-forward, straight to the pod IP), alternating, so that both see the same machine."""
    port = free_port()
    out = workdir / f"pf-{port}.log"
    env = {**os.environ, "HOME": str(workdir), "KUBECTL_PORT_FORWARD_WEBSOCKETS": str(websockets).lower()}
    process = subprocess.Popen(["kubectl", "-s", api_url, "--cache-dir", str(workdir / "cache"), "port-forward",
                                "pod/web", f"{port}:80"], stdout=open(out, "wb"), stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(lambda: b"Forwarding from 127.0.0.1" in out.read_bytes(), 30, interval=0.05,
                 what="kubectl port-forward")
        forwarded, direct = [], []
        for _ in range(RUNS):
            forwarded.append(download(f"http://127.0.0.1:{port}/big.bin"))
            direct.append(download(direct_url))
        return max(forwarded), max(direct)
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> int:
    workdir = Path(tempfile.mkdtemp(prefix="bench-exec-"))
    token = workdir / "kubelet.token"
    token.write_text("bench-token\n")
    api_port, kubelet_port = free_port(), free_port()
    api_url = f"http://127.0.0.1:{api_port}"
    log = open(workdir / "components.log", "wb")
    processes = [subprocess.Popen([sys.executable, str(ROOT / "02-apiserver/apiserver.py"), "--data-dir",
                                   str(workdir / "data"), "--port", str(api_port),
                                   "--kubelet-client-token-file", str(token)], stdout=log, stderr=log)]
    client = docker.from_env()
    try:
        wait_for(lambda: requests.get(f"{api_url}/readyz", timeout=1).ok, 30, interval=0.05, what="the API server")
        processes.append(subprocess.Popen(
            [sys.executable, str(ROOT / "01-kubelet/kubelet.py"), "--node-name", NODE, "--apiserver", api_url,
             "--address", "127.0.0.1", "--read-only-port", str(kubelet_port), "--node-ip", "127.0.0.1",
             "--authentication-token-file", str(token)], stdout=log, stderr=log))
        wait_for(lambda: requests.get(f"{api_url}/api/v1/nodes/{NODE}", timeout=1).ok, 30, interval=0.05,
                 what="the node")
        script = f"mkdir -p /www && head -c {SIZE} /dev/urandom > /www/big.bin && exec httpd -f -p 80 -h /www"
        pod = {"metadata": {"name": "web"}, "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 1,
               "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sh", "-c", script]}]}}
        requests.post(f"{api_url}/api/v1/namespaces/default/pods", json=pod, timeout=5).raise_for_status()

        def pod_ip():
            status = requests.get(f"{api_url}/api/v1/namespaces/default/pods/web", timeout=2).json().get("status", {})
            return status.get("phase") == "Running" and status.get("podIP")
        ip = wait_for(pod_ip, 60, interval=0.05, what="the pod to run")
        wait_for(lambda: requests.head(f"http://{ip}/big.bin", timeout=2).ok, 30, interval=0.05, what="the file")
        container = next(c for c in client.containers.list(filters={"label": "io.groundup.node-name=" + NODE})
                         if c.labels.get("io.kubernetes.container.name") == "app")

        api_keys, docker_keys = keystrokes_via_api(api_port), keystrokes_via_docker(client.api, container.id)
        api_whole = statistics.median(whole_exec_via_api(api_port) for _ in range(WHOLE_EXECS))
        docker_whole = statistics.median(whole_exec_via_docker(client.api, container.id) for _ in range(WHOLE_EXECS))
        tunnel, direct = port_forward_throughput(api_url, workdir, True, f"http://{ip}/big.bin")
        spdy, direct_too = port_forward_throughput(api_url, workdir, False, f"http://{ip}/big.bin")

        ms = lambda seconds: f"{seconds * 1000:.2f} ms"       # noqa: E731
        keys, docker_keys_median = statistics.median(api_keys), statistics.median(docker_keys)
        print("| measurement | through API server + kubelet | straight on Docker | ratio |")
        print("|---|---|---|---|")
        print(f"| a keystroke's round trip (median of {ROUND_TRIPS}) | {ms(keys)} | {ms(docker_keys_median)} "
              f"| {keys / docker_keys_median:.1f}x |")
        print(f"| a whole exec of `echo x` (median of {WHOLE_EXECS}) | {ms(api_whole)} | {ms(docker_whole)} "
              f"| {api_whole / docker_whole:.1f}x |")
        for transport, forwarded, straight in (("WebSocket tunnel", tunnel, direct), ("plain SPDY", spdy, direct_too)):
            print(f"| port-forward, {transport} ({SIZE >> 20} MB) | {forwarded:.0f} MB/s "
                  f"| {straight:.0f} MB/s to the pod IP | {forwarded / straight:.0%} of direct |")
        return 0
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)
        for leftover in client.containers.list(all=True, filters={"label": "io.groundup.node-name=" + NODE}):
            leftover.remove(force=True)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
