"""The finale, scripted: a two-tier application answers through everything done to it.

The lesson's part 3 does this by hand with kubectl; the demo (`make demo`)
and the tests (tests/network/test_finale.py) do it with this module, on a
machine_cluster.Cluster whose controller manager runs every controller
and whose master runs the scheduler, with an ingress controller on port
80 of each node. manifests/two-tier.yaml is deployed with an Ingress
sending the host shop.example to the frontend, a RequestLoop
(request_loop.py) on this computer, outside the cluster, asks node1 and
node2 for shop.example through their ingress controllers ten times a
second, and three things happen to the cluster in turn, each waited out
before the next:

1. a backend pod is deleted (the ReplicaSet replaces it);
2. node2's kubelet is stopped: its node goes NotReady, its pods are
   evicted and replaced on node1; then the kubelet is started again and
   finishes off the evicted pods' containers;
3. the backend is rolled to v2 (VERSION=v2 in its template).

`run` returns, for each, how many requests were made and which failed
while it happened.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import yaml

from common.tooling.polling import wait_for
from machine_cluster import Cluster
from request_loop import RequestLoop, Tally

MANIFEST = Path(__file__).resolve().parent / "manifests" / "two-tier.yaml"
HOST = "shop.example"               # the name a browser would ask for; the ingress routes by it
NAMESPACE = "default"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
PATHS = {"Deployment": DEPLOYMENTS, "Service": f"/api/v1/namespaces/{NAMESPACE}/services",
         "Ingress": f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/ingresses"}
INGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop"},
           "spec": {"ingressClassName": "groundup", "rules": [{"host": HOST, "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "frontend", "port": {"number": 80}}}}
           ]}}]}}


@dataclass
class Outcome:
    event: str
    requests: int
    failures: list[str]


def deploy(cluster: Cluster) -> None:
    """Create every object of two-tier.yaml, as `kubectl apply -f` would the
    first time, and the Ingress in front of it."""
    for obj in [*yaml.safe_load_all(MANIFEST.read_text()), INGRESS]:
        created = cluster.request("POST", PATHS[obj["kind"]], obj)
        if created.status_code != 201:
            raise RuntimeError(f"{MANIFEST.name}: {obj['kind']} {obj['metadata']['name']}: {created.text}")


def rolled_out(cluster: Cluster, name: str, version: str | None = None) -> bool:
    """Every replica updated and available, and (if given) the template's VERSION."""
    deployment = cluster.get(f"{DEPLOYMENTS}/{name}")
    status, replicas = deployment.get("status") or {}, deployment["spec"]["replicas"]
    env = deployment["spec"]["template"]["spec"]["containers"][0].get("env") or []
    return (status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 1)
            and status.get("updatedReplicas") == status.get("availableReplicas") == status.get("replicas") == replicas
            and (version is None or {"name": "VERSION", "value": version} in env))


def pods(cluster: Cluster, app: str) -> list[dict]:
    return cluster.get(f"{PODS}?labelSelector=app%3D{app}")["items"]


def urls(cluster: Cluster) -> list[str]:
    """Port 80 of node1 and node2: their ingress controllers (with Host: shop.example)."""
    return [f"http://{cluster.machines.address(node)}/" for node in ("node1", "node2")]


def wait_answering(cluster: Cluster, timeout: float = 120) -> None:
    """Both tiers rolled out, and shop.example answering from the backend through the ingress."""
    wait_for(lambda: rolled_out(cluster, "backend") and rolled_out(cluster, "frontend"), timeout,
             what="backend and frontend rolled out")
    probe = RequestLoop(urls(cluster), host=HOST)
    wait_for(lambda: all(probe.ask(url) is None for url in urls(cluster)), 60,
             what=f"{HOST} answering with the backend's page through the ingress on node1 and node2")


# --- the three things done to the cluster: (what is said, do it, wait until it is over)

def delete_a_backend_pod(cluster: Cluster) -> None:
    victim = pods(cluster, "backend")[0]["metadata"]["name"]
    cluster.request("DELETE", f"{PODS}/{victim}")
    wait_for(lambda: victim not in {p["metadata"]["name"] for p in pods(cluster, "backend")}
             and rolled_out(cluster, "backend"), 90, what=f"{victim} gone and its replacement ready")


def stop_and_restart_node2s_kubelet(cluster: Cluster) -> None:
    cluster.stop("kubelet-node2")

    def replaced_on_node1() -> bool:
        alive = [p for app in ("backend", "frontend") for p in pods(cluster, app)
                 if not p["metadata"].get("deletionTimestamp")]
        return (all(p["spec"].get("nodeName") == "node1" for p in alive)
                and rolled_out(cluster, "backend") and rolled_out(cluster, "frontend"))
    wait_for(replaced_on_node1, 120, what="node2's pods evicted and replaced on node1")
    cluster.start_kubelet("node2")
    wait_for(lambda: all(p["spec"].get("nodeName") == "node1" for app in ("backend", "frontend")
                         for p in pods(cluster, app)), 90,
             what="the restarted kubelet finishing off node2's evicted pods")


def roll_the_backend_to_v2(cluster: Cluster) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "backend",
                                                            "env": [{"name": "VERSION", "value": "v2"}]}]}}}}
    done = cluster.request("PATCH", f"{DEPLOYMENTS}/backend", patch,
                           content_type="application/strategic-merge-patch+json")
    done.raise_for_status()
    replicas = cluster.get(f"{DEPLOYMENTS}/backend")["spec"]["replicas"]
    wait_for(lambda: rolled_out(cluster, "backend", "v2")
             and len(pods(cluster, "backend")) == replicas, 120, what="backend rolled out at v2, the v1 pods gone")


EVENTS = [("a backend pod deleted", delete_a_backend_pod),
          ("node2's kubelet stopped, then started again", stop_and_restart_node2s_kubelet),
          ("the backend rolled to v2", roll_the_backend_to_v2)]


def run(cluster: Cluster, report=print) -> tuple[list[Outcome], Tally]:
    """Deploy, start the loop, do each event in turn; the failures during
    each (and the loop's whole tally at the end)."""
    deploy(cluster)
    wait_answering(cluster)
    loop = RequestLoop(urls(cluster), rate=10, host=HOST)
    worker = threading.Thread(target=loop.run, daemon=True)
    worker.start()
    outcomes = []
    try:
        for event, do in EVENTS:
            before = loop.tally()
            report(f"{event} ...")
            do(cluster)
            after = loop.tally()
            outcomes.append(Outcome(event, after.requests - before.requests,
                                    after.failures[len(before.failures):]))
            report(f"  {outcomes[-1].requests} requests meanwhile, {len(outcomes[-1].failures)} failed")
    finally:
        loop.stop()
        worker.join(10)
    return outcomes, loop.tally()
