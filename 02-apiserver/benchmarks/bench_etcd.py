"""Chapter 02's etcd benchmark (`make bench-02-etcd`): the two stores side by
side, and how long a client waits when the API server it uses dies.

1. Creates/s and GETs/s with 8 clients, and a list of 10,000 pods, against
   an API server on the JSON files and one on etcd, in the same run.
2. The floor under the etcd backend: etcd's own put rate through the same
   HTTP/JSON gateway, 8 clients each on a kept-alive connection, each put a
   pod-sized value. Our creates/s on etcd as a fraction of it is the cost
   of the API server (admission, validation, JSON, the watch cache).
3. Failover: two API servers on one etcd behind HAProxy; a client writes
   through HAProxy, the API server it uses is killed (SIGKILL), and we time
   until its next successful write. HAProxy balances `first` here, so the
   client's server is known: the first one that is up.

`--quick`: 1,000 pods and 5 failover trials instead of 10,000 and 20.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))           # the chapter's modules
sys.path.insert(0, str(HERE))

from bench import call, free_port, list_latency, machine, percentile, pod, pods_path, populate, python_rate  # noqa: E402
from etcd_cluster import EtcdCluster  # noqa: E402
from ha_control_plane import APIServerProcess, HAProxy  # noqa: E402
from common.tooling.processes import stop_within  # noqa: E402

APISERVER = HERE.parent / "apiserver.py"
CLIENTS = 8


def etcd_putter(url: str, seconds: float, worker: int, results) -> None:
    """One client of etcd's gateway: put pod-sized values for `seconds`."""
    session = requests.Session()
    value = base64.b64encode(json.dumps(pod("floor", "bench")).encode()).decode()
    done, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        key = base64.b64encode(f"/floor/{worker}/{done}".encode()).decode()
        session.post(f"{url}/v3/kv/put", data=json.dumps({"key": key, "value": value})).raise_for_status()
        done += 1
    results.put(done)


def etcd_put_rate(url: str, clients: int, seconds: float) -> float:
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=etcd_putter, args=(url, seconds, w, results)) for w in range(clients)]
    for worker in workers:
        worker.start()
    total = sum(results.get() for _ in workers)
    for worker in workers:
        worker.join()
    return total / seconds


def start_apiserver(workdir: Path, name: str, *flags: str):
    import subprocess
    port = free_port()
    log = open(workdir / f"{name}.log", "ab")
    process = subprocess.Popen([sys.executable, str(APISERVER), "--port", str(port), *flags],
                               stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + 30
    while True:
        try:
            call(port, "GET", "/readyz")
            return process, port
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start; see {workdir / name}.log")
            time.sleep(0.05)


def measure_backend(workdir: Path, name: str, flags: list[str], seconds: float, pods: int) -> dict:
    process, port = start_apiserver(workdir, name, *flags)
    try:
        call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
        call(port, "POST", pods_path("bench"), pod("get-me", "bench"))
        creates = python_rate(port, pods_path("bench"), CLIENTS, seconds, "c", "bench", workdir)
        gets = python_rate(port, pods_path("bench") + "/get-me", CLIENTS, seconds, None, "bench", workdir)
        call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "listed"}})
        began = time.monotonic()
        asyncio.run(populate(port, "listed", 0, pods))
        fill = pods / (time.monotonic() - began)
        times, body = list_latency(port, 5)
        assert len(json.loads(body)["items"]) >= pods
        return {"creates": creates, "gets": gets, "fill": fill, "list_p50": statistics.median(times),
                "list_max": max(times), "list_mb": len(body) / 1e6}
    finally:
        stop_within(process, 10)


def failover(workdir: Path, etcd: EtcdCluster, trials: int) -> list[float]:
    """Seconds from SIGKILL of the client's API server to its next 201."""
    servers = [APIServerProcess(f"failover{i}", free_port(), etcd.client_urls, workdir, "--etcd-prefix", "/failover")
               for i in range(2)]
    for server in servers:
        server.start()
    balancer = HAProxy(free_port(), {s.name: s.port for s in servers}, workdir, balance="first").start()
    victim, waits = servers[0], []
    try:
        for trial in range(trials):
            session = requests.Session()
            url = f"{balancer.url}{pods_path('default')}"
            assert session.post(url, json=pod(f"before-{trial}", "default"), timeout=5).status_code == 201
            victim.kill()
            killed = time.monotonic()
            attempt = 0
            while True:
                attempt += 1
                try:
                    if session.post(url, json=pod(f"after-{trial}-{attempt}", "default"), timeout=2).status_code == 201:
                        break
                except requests.RequestException:
                    pass                      # the connection died with the server: a client retries
            waits.append(time.monotonic() - killed)
            victim.start()
            time.sleep(1.5)                   # HAProxy's "rise 2" checks, 0.5 s apart, see it up again
    finally:
        balancer.stop()
        for server in servers:
            server.stop()
    return waits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds, pods, trials = (3, 1000, 5) if args.quick else (10, 10_000, 20)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-02-etcd-") as directory:
        workdir = Path(directory)
        etcd = EtcdCluster(workdir / "etcd").start()
        try:
            floor = etcd_put_rate(etcd.members[0].client_url, CLIENTS, seconds)
            files = measure_backend(workdir, "json-files", ["--data-dir", str(workdir / "data")], seconds, pods)
            on_etcd = measure_backend(workdir, "etcd3", ["--storage-backend", "etcd3", "--etcd-servers",
                                                         etcd.client_urls], seconds, pods)
            waits = failover(workdir, etcd, trials)
        finally:
            etcd.stop()
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}, Python {platform.python_version()}, "
          f"etcd 3.4 (one member) over its HTTP/JSON gateway; load: {CLIENTS} Python client processes"
          f"{'; --quick' if args.quick else ''}\n")
    print("| measure | JSON files | etcd | etcd's own floor (same run) | etcd backend / floor |")
    print("|---|---|---|---|---|")
    print(f"| creates/s, {CLIENTS} clients | {files['creates']:.0f} | {on_etcd['creates']:.0f} | "
          f"puts/s through the gateway {floor:.0f} | {on_etcd['creates'] / floor:.2f} |")
    print(f"| GETs/s (one pod), {CLIENTS} clients | {files['gets']:.0f} | {on_etcd['gets']:.0f} | | |")
    print(f"| list of {pods:,} pods ({on_etcd['list_mb']:.1f} MB), p50 / max | "
          f"{files['list_p50'] * 1000:.0f} / {files['list_max'] * 1000:.0f} ms | "
          f"{on_etcd['list_p50'] * 1000:.0f} / {on_etcd['list_max'] * 1000:.0f} ms | | |")
    print(f"| populating {pods:,} pods through the API, 8 clients | {files['fill']:.0f}/s | {on_etcd['fill']:.0f}/s | | |")
    print(f"\n| failover through HAProxy ({len(waits)} trials) | p50 | max | target |")
    print("|---|---|---|---|")
    print(f"| SIGKILL of the client's API server → its next 201 | {statistics.median(waits) * 1000:.0f} ms | "
          f"{max(waits) * 1000:.0f} ms | ≤ 2 s: {'yes' if max(waits) <= 2 else 'NO'} |")
    print(f"(p90 {percentile(waits, 0.9) * 1000:.0f} ms)\n\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
