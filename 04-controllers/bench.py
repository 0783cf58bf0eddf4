"""Chapter 04 benchmark (`make bench-04`): what do the controllers cost, and
are they ever the slow part?

On a real API server process over loopback, with the controller manager in
its own process, and a fake kubelet (a thread here) that marks every pod
Running and Ready as soon as it appears, so that no Docker start is timed:

1. The floor: the same API server's own create rate, pods created directly
   by 8 client threads.
2. A Deployment of --replicas (100) created: time until every replica is
   available, and API writes per replica (from the server's /metrics).
3. The same Deployment rolled to a new template: time for the whole
   rollout, its writes, and their rate as a share of the floor. The
   rollout is bounded by the server's write rate if that share is high.
4. Idle: with every object settled (1,000 objects or more), how many
   requests the controller manager sends in --idle seconds. An informer
   never polls: only lease renewals (with --leader-elect) should remain.

It prints a Markdown table for 04-controllers/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import platform
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from common.tooling.apiserver_process import APIServer
from common.times import rfc3339 as now

ROOT = Path(__file__).resolve().parents[1]

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
_REQUEST_LINE = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$', re.M)


def request_counts(url: str, writes_only: bool = True) -> tuple[float, float]:
    """Requests served so far, from the server's own /metrics: (those not
    about Leases, those about Leases). A leader renews its Lease on a timer;
    everything else should come from a change."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    others = leases = 0.0
    for match in _REQUEST_LINE.finditer(text):
        verb = re.search(r'verb="([A-Z]+)"', match["labels"])
        if writes_only and not (verb and verb.group(1) in ("POST", "PUT", "PATCH", "DELETE")):
            continue
        if re.search(r'resource="leases"', match["labels"]):
            leases += float(match["value"])
        else:
            others += float(match["value"])
    return others, leases


def writes(url: str) -> float:
    return sum(request_counts(url))


class FakeKubelet(threading.Thread):
    """Marks pods Running and Ready on a watch, as a kubelet with instant containers would."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.session = requests.Session()

    def run(self) -> None:
        try:
            self.mark_pods_ready()
        except requests.RequestException:
            return                       # the server stopped at the end of the run

    def mark_pods_ready(self) -> None:
        with self.session.get(f"{self.url}/api/v1/namespaces/default/pods", params={"watch": "true"},
                              stream=True, timeout=3600) as watch:
            import json
            for line in watch.iter_lines(chunk_size=None):
                event = json.loads(line)
                pod = event["object"]
                if event["type"] != "ADDED" or pod["metadata"].get("deletionTimestamp"):
                    continue
                status = {"phase": "Running", "podIP": "10.244.0.1",
                          "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now()}]}
                self.session.patch(f"{self.url}/api/v1/namespaces/default/pods/{pod['metadata']['name']}/status",
                                   json={"status": status}, timeout=30,
                                   headers={"Content-Type": "application/merge-patch+json"})


def deployment(replicas: int, version: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "busybox:1.35",
                                                           "env": [{"name": "VERSION", "value": version}]}]}}}}


def rolled_out(url: str, replicas: int) -> bool:
    d = requests.get(f"{url}{DEPLOYMENTS}/web", timeout=10).json()
    status = d.get("status") or {}
    return (status.get("observedGeneration") == d["metadata"]["generation"]
            and status.get("updatedReplicas") == replicas == status.get("availableReplicas")
            and status.get("replicas") == replicas)


def wait(check, timeout: float, what: str) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if check():
            return time.perf_counter() - began
        time.sleep(0.05)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


def create_floor(url: str, count: int) -> float:
    """The API server's own create rate: pods created by 8 threads, in a
    namespace of their own so the controllers never see them."""
    requests.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": "floor"}}, timeout=10).raise_for_status()
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.35"}]}}
    session = requests.Session()

    def create(i: int) -> None:
        session.post(f"{url}/api/v1/namespaces/floor/pods", timeout=30,
                     json={**body, "metadata": {"name": f"floor-{i}"}}).raise_for_status()

    began = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))
    return count / (time.perf_counter() - began)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--idle", type=float, default=30, help="seconds to count an idle manager's requests")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="bench-04-"))
    server = APIServer(workdir / "data").start()
    manager = None
    try:
        import subprocess
        floor = create_floor(server.url, max(args.replicas, 200))
        manager = subprocess.Popen([sys.executable, str(ROOT / "04-controllers" / "controller_manager.py"),
                                    "--apiserver", server.url, "--leader-elect"],
                                   stdout=open(workdir / "controller-manager.log", "wb"), stderr=subprocess.STDOUT)
        FakeKubelet(server.url).start()

        before = writes(server.url)
        requests.post(f"{server.url}{DEPLOYMENTS}", json=deployment(args.replicas, "1"), timeout=10).raise_for_status()
        up = wait(lambda: rolled_out(server.url, args.replicas), 600, "the Deployment to come up")
        up_writes = writes(server.url) - before

        before = writes(server.url)
        requests.patch(f"{server.url}{DEPLOYMENTS}/web", json=deployment(args.replicas, "2"), timeout=10,
                       headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        wait(lambda: requests.get(f"{server.url}{DEPLOYMENTS}/web", timeout=10).json()
             .get("status", {}).get("observedGeneration", 0) >= 2, 60, "the rollout to be observed")
        rollout = wait(lambda: rolled_out(server.url, args.replicas), 600, "the rollout")
        rollout_writes = writes(server.url) - before

        # Idle: everything settled; count what the manager still asks.
        time.sleep(2)
        objects = len(requests.get(f"{server.url}/api/v1/pods", timeout=30).json()["items"])
        others, leases = request_counts(server.url, writes_only=False)
        time.sleep(args.idle)
        others_after, leases_after = request_counts(server.url, writes_only=False)
        idle_requests = others_after - others - 1            # less our first /metrics read itself
        lease_requests = leases_after - leases
    finally:
        if manager is not None:
            manager.terminate()
            manager.wait(30)
        server.stop()

    n = args.replicas
    rollout_rate = rollout_writes / rollout
    print(f"\nchapter 04, {n} replicas, {platform.processor() or platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}, fake kubelet (no containers)\n")
    print("| measure | controllers | floor (same run) | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    print(f"| {n} replicas created to all available | {up:.1f} s ({n / up:.0f} pods/s) | "
          f"{floor:.0f} creates/s | {n / up / floor:.2f} |  |  |")
    print(f"| API writes per replica, creation | {up_writes / n:.1f} |  |  |  |  |")
    print(f"| full rollout to a new template | {rollout:.1f} s |  |  |  |  |")
    print(f"| API writes per replica, rollout | {rollout_writes / n:.1f} |  |  |  |  |")
    print(f"| write rate during the rollout | {rollout_rate:.0f} writes/s | {floor:.0f} creates/s | "
          f"{rollout_rate / floor:.2f} | ≥ 0.50 | {'yes' if rollout_rate / floor >= 0.5 else 'NO'} |")
    print(f"| idle manager, {objects} pods and their ReplicaSet, {args.idle:.0f} s | "
          f"{idle_requests / args.idle:.2f} requests/s, and {lease_requests / args.idle:.2f}/s for its Lease |  |  "
          f"| 0 but the Lease | {'yes' if idle_requests <= 0 else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
