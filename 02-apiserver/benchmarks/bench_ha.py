"""Chapter 02's HA benchmark (`make bench-02-ha`): how long nobody schedules
after the leading scheduler dies, and how late a watch event reaches 100
watchers on each store.

1. Leader handover: two schedulers with --leader-elect and `make ha`'s
   timings (ha_control_plane.py: 6 s lease, 0.4 s retry period) on an API
   server on etcd. SIGKILL the leader, time until the standby holds the
   Lease; start a new standby and repeat. Issue 22's target: a lease
   duration + 2 s.
2. Watch delivery: 100 watchers of one namespace's ConfigMaps (threads of
   one process, each its own connection), one writer creating a ConfigMap
   every 50 ms; the latency of each event is from just before the POST to
   the moment a watcher has read its line. On the JSON files and on etcd.

`--quick`: 3 handovers and 20 writes instead of 10 and 100.
"""
from __future__ import annotations

import argparse
import json
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))           # the chapter's modules
sys.path.insert(0, str(HERE))

from bench import machine, percentile  # noqa: E402
from bench_etcd import start_apiserver  # noqa: E402
from etcd_cluster import EtcdCluster  # noqa: E402
from ha_control_plane import LEASE_DURATION, ElectedComponent  # noqa: E402
from common.tooling.processes import stop_within  # noqa: E402

WATCHERS = 100
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def wait(check, timeout: float, what: str, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(interval)


def scheduler(workdir: Path, url: str, number: int) -> ElectedComponent:
    return ElectedComponent(f"scheduler{number}", "03-scheduler/scheduler.py", "kube-scheduler", url, workdir).start()


def handovers(workdir: Path, url: str, trials: int) -> list[float]:
    """Seconds from SIGKILL of the leading scheduler to the standby's hold on the Lease."""
    leader = scheduler(workdir, url, 0)
    wait(leader.leads, 30, "the first scheduler to lead")
    times, number = [], 1
    try:
        for _ in range(trials):
            standby = scheduler(workdir, url, number)
            number += 1
            # It must have read the Lease once: it counts the silence from there.
            wait(lambda: "new leader elected" in standby.log_path.read_text(), 30, "the standby to see the leader")
            leader.process.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            wait(standby.leads, LEASE_DURATION + 30, "the standby to lead")
            times.append(time.monotonic() - killed)
            leader.process.wait()
            leader = standby
    finally:
        stop_within(leader.process, 10)
    return times


def watcher(url: str, since: str, expected: int, latencies: list, ready: threading.Barrier) -> None:
    with requests.get(f"{url}{CONFIGMAPS}", params={"watch": "true", "resourceVersion": since,
                                                    "timeoutSeconds": "300"}, stream=True, timeout=300) as watch:
        ready.wait()
        seen = 0
        for line in watch.iter_lines():
            received = time.time()
            event = json.loads(line)
            latencies.append(received - float(event["object"]["data"]["sent"]))
            seen += 1
            if seen == expected:
                return


def watch_latencies(url: str, writes: int) -> list[float]:
    since = requests.get(f"{url}{CONFIGMAPS}", timeout=10).json()["metadata"]["resourceVersion"]
    latencies: list[float] = []
    ready = threading.Barrier(WATCHERS + 1)
    threads = [threading.Thread(target=watcher, args=(url, since, writes, latencies, ready), daemon=True)
               for _ in range(WATCHERS)]
    for thread in threads:
        thread.start()
    ready.wait(timeout=60)
    time.sleep(0.5)                        # (the last watch requests reach the server)
    writer = requests.Session()
    for i in range(writes):
        body = {"metadata": {"name": f"w{i}"}, "data": {"sent": repr(time.time())}}
        assert writer.post(f"{url}{CONFIGMAPS}", json=body, timeout=10).status_code == 201
        time.sleep(0.05)
    for thread in threads:
        thread.join(timeout=60)
    assert len(latencies) == WATCHERS * writes, f"{len(latencies)} events of {WATCHERS * writes}"
    return latencies


def measure_watch(workdir: Path, name: str, flags: list[str], writes: int) -> list[float]:
    process, port = start_apiserver(workdir, name, *flags)
    try:
        return watch_latencies(f"http://127.0.0.1:{port}", writes)
    finally:
        stop_within(process, 10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    trials, writes = (3, 20) if args.quick else (10, 100)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-02-ha-") as directory:
        workdir = Path(directory)
        etcd = EtcdCluster(workdir / "etcd").start()
        try:
            process, port = start_apiserver(workdir, "apiserver", "--storage-backend", "etcd3",
                                            "--etcd-servers", etcd.client_urls, "--etcd-prefix", "/handover")
            try:
                took = handovers(workdir, f"http://127.0.0.1:{port}", trials)
            finally:
                stop_within(process, 10)
            files = measure_watch(workdir, "json-files", ["--data-dir", str(workdir / "data")], writes)
            on_etcd = measure_watch(workdir, "etcd3", ["--storage-backend", "etcd3", "--etcd-servers",
                                                       etcd.client_urls, "--etcd-prefix", "/watch"], writes)
        finally:
            etcd.stop()
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}, Python {platform.python_version()}, "
          f"etcd (one member){'; --quick' if args.quick else ''}\n")
    target = LEASE_DURATION + 2
    print(f"| scheduler leader handover ({len(took)} trials, lease {LEASE_DURATION:g} s) | p50 | max | target |")
    print("|---|---|---|---|")
    print(f"| SIGKILL of the leader → the standby holds the Lease | {statistics.median(took):.2f} s | "
          f"{max(took):.2f} s | ≤ {target:g} s: {'yes' if max(took) <= target else 'NO'} |")
    print(f"(each: {', '.join(f'{t:.2f}' for t in took)} s)")
    print(f"\n| watch event delivery, {WATCHERS} watchers × {writes} writes | p50 | p99 | max |")
    print("|---|---|---|---|")
    for name, values in (("JSON files", files), ("etcd", on_etcd)):
        print(f"| {name} | {statistics.median(values) * 1000:.1f} ms | {percentile(values, 0.99) * 1000:.1f} ms | "
              f"{max(values) * 1000:.1f} ms |")
    print(f"\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
