"""The main demo (`make demo`): a small cluster on one machine.

It starts an API server (insecure port, data in a temporary directory) and
two kubelets that join it as demo-node1 and demo-node2, all on this
machine's Docker. Then it creates three pods through the API: one bound to
each node, and one with no node at all. The bound pods run; the third
stays Pending, since nothing chooses a node for it yet (chapter 03's
scheduler will). It shows the cluster as `kubectl get nodes,pods -o wide`
does, then stops everything and removes the containers.

The cluster itself (processes, waiting, clean-up) is local_cluster.py,
which later chapters' demos reuse with their component added.
"""
from __future__ import annotations

import sys

from local_cluster import Cluster, console, pod


def main() -> int:
    console.rule("chapter 02: an API server and two kubelets on this machine")
    with Cluster(["demo-node1", "demo-node2"]) as cluster:
        console.print(f"API server {cluster.url}; kubelets demo-node1 and demo-node2 registered (logs in "
                      f"{cluster.workdir})")
        cluster.create(pod("on-node1", "demo-node1", containers=2))
        cluster.create(pod("on-node2", "demo-node2"))
        cluster.create(pod("nowhere", None))
        console.print("created on-node1 (nodeName demo-node1), on-node2 (demo-node2) and nowhere (no nodeName)")
        cluster.wait(lambda: all(cluster.pod_phase(p) == "Running" for p in ("on-node1", "on-node2")),
                     "the bound pods to run")
        cluster.show()
        console.print("\n[bold]nowhere[/bold] stays Pending: nothing picks a node for it yet (chapter 03).")
    console.rule("done: see 02-apiserver/README.md for the lesson")
    return 0


if __name__ == "__main__":
    sys.exit(main())
