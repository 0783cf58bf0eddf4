"""Chapter 04 storage benchmark (`python 04-controllers/bench_storage.py`): how
long does a claim wait for its volume?

On a real API server process over loopback, with the controller manager in
its own process (the binder and the local-path provisioner):

1. The floor: the same API server's own create rate (8 client threads).
2. Binding: --claims (100) static PersistentVolumes of assorted sizes, then
   as many claims created at once: time until every claim is Bound, and
   each claim's wait (from its create to the first poll that sees it Bound).
3. Provisioning: as many claims of the default local-path class, each
   created with the scheduler's choice of node already on it: time until
   every claim is Bound to a volume made for it.

It prints a Markdown table for 04-controllers/BENCHMARKS.md. No kubelet:
nothing is mounted, only API objects are made and bound.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench import create_floor, wait
from common.tooling.apiserver_process import APIServer

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def volume(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"disk-{i}"},
            "spec": {"capacity": {"storage": f"{1 + i % 4}Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "manual", "hostPath": {"path": f"/tmp/disk-{i}"}}}


def claim(name: str, storage_class: str, node: str | None = None) -> dict:
    meta = {"name": name, **({"annotations": {SELECTED_NODE: node}} if node else {})}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def post_all(url: str, path: str, bodies: list[dict]) -> dict[str, float]:
    """Create every body with 8 threads; name -> when its create returned."""
    session = requests.Session()

    def create(body: dict) -> tuple[str, float]:
        session.post(f"{url}{path}", json=body, timeout=30).raise_for_status()
        return body["metadata"]["name"], time.perf_counter()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(pool.map(create, bodies))


def bound_times(url: str, created: dict[str, float], timeout: float) -> dict[str, float]:
    """Poll the claims until all are Bound; name -> seconds from its create to Bound."""
    waits: dict[str, float] = {}

    def all_bound() -> bool:
        now = time.perf_counter()
        for item in requests.get(f"{url}{CLAIMS}", timeout=30).json()["items"]:
            name = item["metadata"]["name"]
            if name in created and name not in waits and (item.get("status") or {}).get("phase") == "Bound":
                waits[name] = now - created[name]
        return len(waits) == len(created)
    wait(all_bound, timeout, "every claim to be Bound")
    return waits


def summary(waits: dict[str, float], total: float) -> str:
    values = sorted(waits.values())
    p95 = values[max(int(len(values) * 0.95) - 1, 0)]
    return (f"{total:.1f} s ({len(values) / total:.0f} claims/s) | median {statistics.median(values):.2f} s, "
            f"p95 {p95:.2f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=100)
    args = parser.parse_args(argv)
    n = args.claims

    workdir = Path(tempfile.mkdtemp(prefix="bench-04-storage-"))
    server = APIServer(workdir / "data").start()
    manager = None
    try:
        floor = create_floor(server.url, max(n, 200))
        manager = subprocess.Popen([sys.executable, str(ROOT / "04-controllers" / "controller_manager.py"),
                                    "--apiserver", server.url, "--local-path-root", str(workdir / "volumes")],
                                   stdout=open(workdir / "controller-manager.log", "wb"), stderr=subprocess.STDOUT)
        wait(lambda: requests.get(f"{server.url}/apis/storage.k8s.io/v1/storageclasses/local-path",
                                  timeout=10).status_code == 200, 60, "the default class")

        post_all(server.url, "/api/v1/persistentvolumes", [volume(i) for i in range(n)])
        began = time.perf_counter()
        created = post_all(server.url, CLAIMS, [claim(f"static-{i}", "manual") for i in range(n)])
        binding = bound_times(server.url, created, 600)
        binding_total = time.perf_counter() - began

        began = time.perf_counter()
        created = post_all(server.url, CLAIMS, [claim(f"made-{i}", "local-path", f"node{i % 3 + 1}")
                                                for i in range(n)])
        provisioning = bound_times(server.url, created, 600)
        provisioning_total = time.perf_counter() - began
    finally:
        if manager is not None:
            manager.terminate()
            manager.wait(30)
        server.stop()

    print(f"\nchapter 04 storage, {n} claims, {platform.processor() or platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}, no kubelet\n")
    print("| measure | all bound | each claim's wait | floor (same run) |")
    print("|---|---|---|---|")
    print(f"| {n} claims bound to {n} existing volumes | {summary(binding, binding_total)} | "
          f"{floor:.0f} creates/s |")
    print(f"| {n} claims of local-path, node chosen, volumes made | {summary(provisioning, provisioning_total)} | "
          f"{floor:.0f} creates/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
