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
4. StatefulSets: a set of --replicas (10) pods with a claim each, under
   OrderedReady and then Parallel: time until web-1 is Ready (the second
   pod: OrderedReady makes it only once web-0 is), and until all are.
   An instant kubelet stands in (this process marks each pod Running and
   Ready as soon as it sees it), so the figure is the controllers' own:
   the StatefulSet controller's round trips, one per pod in order.

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


def statefulset(name: str, replicas: int, policy: str) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"serviceName": name, "replicas": replicas, "podManagementPolicy": policy,
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def instantly_ready(url: str, session: requests.Session) -> None:
    """What a kubelet with instant containers would write: every new pod Running and Ready."""
    for pod in session.get(f"{url}/api/v1/namespaces/default/pods", timeout=30).json()["items"]:
        if (pod.get("status") or {}).get("phase") != "Running":
            ready = {"type": "Ready", "status": "True", "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                        time.gmtime())}
            session.patch(f"{url}/api/v1/namespaces/default/pods/{pod['metadata']['name']}/status",
                          json={"status": {"phase": "Running", "conditions": [ready]}},
                          headers={"Content-Type": "application/merge-patch+json"}, timeout=30)


def time_statefulset(url: str, name: str, replicas: int, policy: str) -> tuple[float, float]:
    """Seconds from the set's create to web-1 Ready, and to every pod Ready."""
    session = requests.Session()
    began = time.perf_counter()
    session.post(f"{url}/apis/apps/v1/namespaces/default/statefulsets", json=statefulset(name, replicas, policy),
                 timeout=30).raise_for_status()
    second = None

    def ready() -> bool:
        nonlocal second
        instantly_ready(url, session)
        status = session.get(f"{url}/apis/apps/v1/namespaces/default/statefulsets/{name}", timeout=30).json()
        count = (status.get("status") or {}).get("readyReplicas") or 0
        if second is None and count >= 2:
            second = time.perf_counter() - began
        return count >= replicas
    wait(ready, 300, f"every pod of {name} to be Ready")
    return second, time.perf_counter() - began


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=10, help="pods of each StatefulSet (default 10)")
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

        ordered = time_statefulset(server.url, "ordered", args.replicas, "OrderedReady")
        parallel = time_statefulset(server.url, "parallel", args.replicas, "Parallel")
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
    for policy, (second, every) in (("OrderedReady", ordered), ("Parallel", parallel)):
        print(f"| a StatefulSet of {args.replicas} with a claim each, {policy}: web-1 Ready, all Ready | "
              f"{second:.2f} s, {every:.2f} s | | {floor:.0f} creates/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
