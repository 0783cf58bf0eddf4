"""Chapter 05 benchmark: requests through the ingress controller against straight to the pod.

    make bench-05-ingress        (no root needed: processes on this machine)

An API server, one "pod" (a Python HTTP/1.1 server in a process of its own,
on this machine's address, since an EndpointSlice may not hold a loopback
one), an Ingress for it, and ingress_controller.py. Client processes send
small GET requests for a few seconds, first straight to the pod, then
through the controller, the same clients the same way: with keep-alive
(one connection per client, as a browser or a service mesh would) and with
a new connection per request. The floor is the direct run of the same
kind, so the ratio is what the controller's hop costs. The issue's targets:
at least half the direct throughput, and a p99 at most twice the direct one.

A second table says where the time goes: the CPU each party used per
request in each run (the clients, the pod, the controller), read from
/proc. On a machine whose cores are all busy, requests/s is the cores
divided by the CPU a request costs all parties, so through the controller
the ratio can reach 0.5 only if the controller costs no more per request
than the clients and the pod together.
"""
from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from common.addresses import this_machines_address
from common.tooling.bench_tools import cpu_seconds, machine, percentile, print_rows, start_apiserver
from common.tooling.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "05-proxy-dns" / "ingress_controller.py"
HOST = "bench.example"
BODY = b"hello from the pod\n"


class PodHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True         # as any serious server: no 40 ms wait between headers and body

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def serve_pod(address: str, port: int) -> None:
    server = ThreadingHTTPServer((address, port), PodHandler)
    server.daemon_threads = True
    server.serve_forever()


def client(host: str, port: int, keep_alive: bool, seconds: float, results) -> None:
    """Requests one after the other for `seconds`; puts the latencies (s)
    and the CPU seconds this client used in results."""
    latencies, conn = [], None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        if conn is None:
            conn = http.client.HTTPConnection(host, port, timeout=10)
        conn.request("GET", "/", headers={"Host": HOST, **({} if keep_alive else {"Connection": "close"})})
        response = conn.getresponse()
        assert response.status == 200 and response.read() == BODY, response.status
        if not keep_alive:
            conn.close()
            conn = None
        latencies.append(time.perf_counter() - start)
    results.put((latencies, time.process_time()))


def run(host: str, port: int, keep_alive: bool, clients: int, seconds: float,
        servers: dict[str, int]) -> tuple[float, float, dict[str, float]]:
    """(requests per second, p99 in ms, CPU µs per request of the clients
    and of each of `servers`, by name: pid) for `clients` client processes."""
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(host, port, keep_alive, seconds, results))
               for _ in range(clients)]
    before = {name: cpu_seconds(pid) for name, pid in servers.items()}
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=seconds + 60) for _ in workers]
    for worker in workers:
        worker.join()
    latencies = [value for report in reports for value in report[0]]
    cpu = {"clients": sum(report[1] for report in reports)}
    cpu.update({name: cpu_seconds(pid) - before[name] for name, pid in servers.items()})
    per_request = {name: used / len(latencies) * 1e6 for name, used in cpu.items()}
    return len(latencies) / seconds, percentile(latencies, 0.99) * 1000, per_request


def publish(api: str, address: str, pod_port: int) -> None:
    """Service, EndpointSlice and Ingress, through the API."""
    for path, body in (
        ("/api/v1/namespaces/default/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "pod"},
            "spec": {"ports": [{"name": "http", "port": 80}]}}),
        ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "pod-1", "labels": {"kubernetes.io/service-name": "pod"}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": pod_port}],
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}]}),
        ("/apis/networking.k8s.io/v1/namespaces/default/ingresses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "bench"},
            "spec": {"ingressClassName": "groundup", "rules": [{"host": HOST, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "pod", "port": {"number": 80}}}}]}}]}})):
        response = requests.post(api + path, json=body, timeout=10)
        assert response.status_code == 201, response.text


def wait_routed(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/", headers={"Host": HOST})
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("the ingress controller did not route the benchmark's Ingress within 30 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4, help="client processes (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=5, help="seconds per run (default %(default)s)")
    args = parser.parse_args(argv)
    address = this_machines_address()
    if address.startswith("127."):
        raise SystemExit("this machine has no address but loopback, and an EndpointSlice may not hold one")
    processes = []
    with tempfile.TemporaryDirectory(prefix="bench-ingress-") as workdir:
        try:
            apiserver, api_port = start_apiserver(Path(workdir), "apiserver")
            processes.append(apiserver)
            pod_port, ingress_port = free_port(), free_port()
            pod = multiprocessing.Process(target=serve_pod, args=(address, pod_port), daemon=True)
            pod.start()
            publish(f"http://127.0.0.1:{api_port}", address, pod_port)
            with open(Path(workdir) / "ingress.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, str(CONTROLLER), "--apiserver", f"http://127.0.0.1:{api_port}",
                     "--port", str(ingress_port), "--https-port", "0", "--bind-address", "127.0.0.1",
                     "--publish-address", address], stdout=log, stderr=subprocess.STDOUT,
                    env={**os.environ, "GROUNDUP_LOG_LEVEL": "WARNING"}))
            wait_routed(ingress_port)
            rows, costs = [], []
            for keep_alive, kind in ((True, "keep-alive"), (False, "a new connection per request")):
                direct = run(address, pod_port, keep_alive, args.clients, args.seconds, {"pod": pod.pid})
                through = run("127.0.0.1", ingress_port, keep_alive, args.clients, args.seconds,
                              {"pod": pod.pid, "controller": processes[-1].pid})
                costs += [(f"direct, {kind}", direct[2]), (f"through the ingress, {kind}", through[2])]
                ratio = through[0] / direct[0]
                rows.append((f"requests/s, {kind}", f"{through[0]:,.0f}", f"{direct[0]:,.0f} direct",
                             f"{ratio:.2f}", "≥ 0.5", ratio >= 0.5))
                p99_ratio = through[1] / direct[1]
                rows.append((f"p99, {kind}", f"{through[1]:.1f} ms", f"{direct[1]:.1f} ms direct",
                             f"{p99_ratio:.2f}", "≤ 2×", p99_ratio <= 2))
            pod.terminate()
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)
    print(f"{date.today().isoformat()}, {machine()}, {args.clients} client processes, {args.seconds:g} s a run, "
          f"GET of {len(BODY)} bytes")
    print_rows(rows, "through the ingress")
    print("\nCPU per request (µs, user + system), by party:\n")
    print("| run | clients | pod | controller | all |")
    print("|---|---|---|---|---|")
    for run_name, cost in costs:
        controller = f"{cost['controller']:.0f}" if "controller" in cost else "-"
        print(f"| {run_name} | {cost['clients']:.0f} | {cost['pod']:.0f} | {controller} | {sum(cost.values()):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
