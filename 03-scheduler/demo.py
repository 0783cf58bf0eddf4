"""The main demo (`make demo`) as of chapter 03: the scheduler places pods.

An API server and two kubelets on this machine (common/tooling/local_cluster.py),
and now the scheduler. Six identical pods are created with no node: the
scheduler filters, scores, breaks the ties round robin and binds them,
three to each node, and the kubelets run them. One more pod asks for more
CPU than any node has and stays Pending with the scheduler's reason.

    python 03-scheduler/demo.py [--scheduler path/to/your_scheduler.py]

--scheduler runs your own scheduler (03-scheduler/build-it-yourself/) in
place of the reference: the same command line, the same cluster.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import requests

from common.tooling.local_cluster import Cluster, console, pod

REPLICAS = 6


def unschedulable(cluster: Cluster, name: str) -> str | None:
    """The scheduler's reason for leaving the pod Pending, once it has one:
    the PodScheduled condition, or (a scheduler of your own may write only
    that) the FailedScheduling event."""
    pod_now = requests.get(f"{cluster.url}/api/v1/namespaces/default/pods/{name}", timeout=5).json()
    for condition in pod_now.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return condition["message"]
    events = requests.get(f"{cluster.url}/api/v1/namespaces/default/events", timeout=5).json()["items"]
    for event in events:
        if event["involvedObject"].get("name") == name and event.get("reason") == "FailedScheduling":
            return event["message"]
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", type=Path,
                        help="your scheduler, to run in place of ours (03-scheduler/build-it-yourself/)")
    args = parser.parse_args()
    console.rule("chapter 03: the scheduler spreads pods over two kubelets")
    with Cluster(["demo-node1", "demo-node2"]) as cluster:
        if args.scheduler:
            cluster.start_yours("scheduler", "scheduler", args.scheduler, ["--apiserver", cluster.url])
        else:
            cluster.start_process("scheduler", ["03-scheduler/scheduler.py", "--apiserver", cluster.url])
        names = [f"web-{i}" for i in range(1, REPLICAS + 1)]
        for name in names:
            cluster.create(pod(name, cpu="100m"))
        cluster.create(pod("too-big", cpu="1000"))
        scheduler = f"your scheduler ({args.scheduler})" if args.scheduler else "the scheduler"
        console.print(f"API server {cluster.url}, kubelets demo-node1 and demo-node2, {scheduler}; created "
                      f"{', '.join(names)} (no nodeName) and too-big (1000 CPUs)")
        cluster.wait(lambda: all(cluster.pod_phase(n) == "Running" for n in names), "the pods to run")
        cluster.show()
        cluster.wait(lambda: unschedulable(cluster, "too-big"), "the scheduler to give up on too-big")
        pods = requests.get(f"{cluster.url}/api/v1/namespaces/default/pods", timeout=5).json()["items"]
        spread = Counter(p["spec"].get("nodeName") for p in pods if p["metadata"]["name"] in names)
        console.print("\nspread: " + ", ".join(f"{node} {count}" for node, count in sorted(spread.items())))
        console.print(f"too-big stays Pending: {unschedulable(cluster, 'too-big')}")
    console.rule("done: see 03-scheduler/README.md for the lesson")
    return 0


if __name__ == "__main__":
    sys.exit(main())
