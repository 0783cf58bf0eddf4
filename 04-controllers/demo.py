"""The main demo (`make demo`) as of chapter 04: controllers keep pods running.

An API server, two kubelets, the scheduler and now the controller manager,
all on this machine (common/tooling/local_cluster.py). A Deployment of four
replicas comes up through its ReplicaSet; a change to its template rolls it
to a new ReplicaSet, never below three ready pods; then one node's kubelet
is killed, the node lifecycle controller marks the node unreachable and
evicts its pods, and the ReplicaSet replaces them on the node that is left.

    python 04-controllers/demo.py [--controller path/to/your_replicaset_controller.py]

--controller runs your own ReplicaSet controller (04-controllers/build-it-yourself/)
in place of ours: the controller manager runs every controller but its
ReplicaSet one (`--controllers '*,-replicaset'`), and yours beside it.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import requests

from common.tooling.local_cluster import Cluster, console

NODES = ["demo-node1", "demo-node2"]
REPLICAS = 4
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "web"}},
             "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"terminationGracePeriodSeconds": 1,
                                   # Evicted within seconds of its node going silent
                                   # (Kubernetes' default is 300 s).
                                   "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                                    "effect": "NoExecute", "tolerationSeconds": 2}],
                                   "containers": [{"name": "web", "image": "busybox:1.35",
                                                   "command": ["sleep", "3600"],
                                                   "env": [{"name": "VERSION", "value": "1"}],
                                                   "resources": {"requests": {"cpu": "50m"}}}]}}}}


def deployment_status(cluster: Cluster) -> dict:
    return requests.get(f"{cluster.url}{DEPLOYMENTS}/web", timeout=5).json().get("status") or {}


def rolled_out(cluster: Cluster) -> bool:
    status = deployment_status(cluster)
    return status.get("updatedReplicas") == REPLICAS == status.get("availableReplicas") == status.get("replicas")


def running_on(cluster: Cluster, node: str) -> int:
    pods = requests.get(f"{cluster.url}/api/v1/namespaces/default/pods", timeout=5).json()["items"]
    return sum(1 for p in pods if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")
               and (p.get("status") or {}).get("phase") == "Running")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--controller", type=Path,
                        help="your ReplicaSet controller, to run in place of ours (04-controllers/build-it-yourself/)")
    args = parser.parse_args()
    console.rule("chapter 04: controllers keep a Deployment running")
    with Cluster(NODES) as cluster:
        cluster.start_process("scheduler", ["03-scheduler/scheduler.py", "--apiserver", cluster.url])
        controllers = "*,-replicaset" if args.controller else "*"
        cluster.start_process("controller-manager", [
            "04-controllers/controller_manager.py", "--apiserver", cluster.url, "--controllers", controllers,
            "--node-monitor-grace-period", "6", "--node-monitor-period", "1"])
        if args.controller:
            cluster.start_yours("replicaset-controller", "ReplicaSet controller", args.controller,
                                ["--apiserver", cluster.url])
        requests.post(f"{cluster.url}{DEPLOYMENTS}", json=DEPLOYMENT, timeout=5).raise_for_status()
        managers = (f"the controller manager (--controllers '{controllers}') and your ReplicaSet controller "
                    f"({args.controller})" if args.controller else "the controller manager")
        console.print(f"API server {cluster.url}, kubelets {' and '.join(NODES)}, the scheduler, {managers}; "
                      f"created Deployment web ({REPLICAS} replicas)")
        cluster.wait(lambda: rolled_out(cluster), "the Deployment to come up", timeout=120)
        cluster.show("deployments,replicasets,pods")

        console.print("\n[bold]rolling out a new template (VERSION=2): a new ReplicaSet takes over[/bold]")
        template = DEPLOYMENT["spec"]["template"]["spec"]["containers"][0]
        patch = {"spec": {"template": {"spec": {"containers": [{"name": template["name"],
                                                                "env": [{"name": "VERSION", "value": "2"}]}]}}}}
        requests.patch(f"{cluster.url}{DEPLOYMENTS}/web", json=patch, timeout=5,
                       headers={"Content-Type": "application/strategic-merge-patch+json"}).raise_for_status()
        cluster.wait(lambda: deployment_status(cluster).get("observedGeneration", 0) >= 2 and rolled_out(cluster),
                     "the rollout", timeout=120)
        cluster.show("replicasets")

        console.print(f"\n[bold]killing {NODES[1]}'s kubelet: its node goes silent[/bold]")
        cluster.processes[NODES[1]].send_signal(signal.SIGKILL)
        cluster.processes.pop(NODES[1]).wait()
        cluster.wait(lambda: running_on(cluster, NODES[0]) == REPLICAS, f"all {REPLICAS} pods on {NODES[0]}",
                     timeout=120)
        cluster.show("nodes,pods")
        console.print(f"\nevery pod runs on {NODES[0]} now; the ones on {NODES[1]} stay Terminating until "
                      "their node comes back (or is deleted), as in Kubernetes")
    console.rule("done: see 04-controllers/README.md for the lesson")
    return 0


if __name__ == "__main__":
    sys.exit(main())
