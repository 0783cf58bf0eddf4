"""Chapter 05 benchmark: cluster DNS queries per second against a bare UDP echo.

    make bench-05-dns        (no root needed: everything on loopback)

An API server with 100 Services, cluster_dns.py on a loopback port, and
client processes that each send queries one after the other (A for a
Service name) for a few seconds. The floor, in the same run and with the
same clients: a UDP server that sends every datagram straight back, in
Python too, so the ratio is the cost of our DNS work (parsing, the lookup,
building the answer), not of Python's sockets. CoreDNS publishes about
33,000 queries per second on two vCPUs; that figure is printed beside
ours for scale, not as a floor (another language, another machine).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import dns.message
import requests

from common.tooling.apiserver_process import APIServer
from common.tooling.polling import wait_for
from common.tooling.ports import free_port

ROOT = Path(__file__).resolve().parents[2]

COREDNS_QPS = 33_000


def echo_server(port: int, stop: threading.Event) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(4096)
            except socket.timeout:
                continue
            sock.sendto(data, peer)


def client(port: int, wire: bytes, seconds: float, results) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.5)
        done, lost, deadline = 0, 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            sock.sendto(wire, ("127.0.0.1", port))
            try:
                sock.recv(4096)
                done += 1
            except socket.timeout:
                lost += 1                 # UDP: a datagram may be dropped; a real resolver asks again
        results.put((done, lost))


def queries_per_second(port: int, wire: bytes, clients: int, seconds: float) -> tuple[float, int]:
    """(answered queries per second, queries lost)."""
    results = multiprocessing.Queue()
    processes = [multiprocessing.Process(target=client, args=(port, wire, seconds, results)) for _ in range(clients)]
    for process in processes:
        process.start()
    counts = [results.get() for _ in processes]
    for process in processes:
        process.join()
    return sum(done for done, _ in counts) / seconds, sum(lost for _, lost in counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4, help="client processes (default 4)")
    parser.add_argument("--seconds", type=float, default=5, help="per measurement (default 5)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="groundup-bench-dns-"))
    server = APIServer(work / "data", "--secure-port", "0").start()
    dns_process = None
    try:
        for i in range(100):
            requests.post(f"{server.url}/api/v1/namespaces/default/services", timeout=30,
                          json={"metadata": {"name": f"svc-{i}"}, "spec": {"ports": [{"port": 80}]}})
        port = free_port()
        log = open(work / "dns.log", "w")
        dns_process = subprocess.Popen([sys.executable, str(ROOT / "05-proxy-dns" / "cluster_dns.py"),
                                        "--apiserver", server.url, "--address", "127.0.0.1", "--port", str(port)],
                                       stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: "serving" in (work / "dns.log").read_text(), 30, what="the DNS server")
        wire = dns.message.make_query("svc-42.default.svc.cluster.local.", "A").to_wire()
        answer = dns.message.from_wire(_ask(port, wire))
        assert answer.answer, "the DNS server did not answer the benchmark's question"
        ours, ours_lost = queries_per_second(port, wire, args.clients, args.seconds)
        stop, echo_port = threading.Event(), free_port()
        echo = threading.Thread(target=echo_server, args=(echo_port, stop), daemon=True)
        echo.start()
        floor, floor_lost = queries_per_second(echo_port, wire, args.clients, args.seconds)
        stop.set()
    finally:
        if dns_process:
            dns_process.terminate()
            dns_process.wait(10)
        server.stop()
    print(f"\n{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {args.clients} clients, {args.seconds:g} s each\n")
    print("| server | queries/s | lost | ratio |\n|---|---|---|---|")
    print(f"| bare UDP echo (floor, same clients) | {floor:,.0f} | {floor_lost} | 1.00 |")
    print(f"| cluster_dns.py, A for a Service of 100 | {ours:,.0f} | {ours_lost} | {ours / floor:.2f} |")
    print(f"| CoreDNS, published, 2 vCPU (for scale) | {COREDNS_QPS:,} | | |")
    print(f"\ntarget ≥ 5,000 queries/s: {'met' if ours >= 5000 else 'NOT met'}")
    return 0


def _ask(port: int, wire: bytes) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(wire, ("127.0.0.1", port))
        return sock.recv(4096)


if __name__ == "__main__":
    sys.exit(main())
