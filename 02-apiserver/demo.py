"""The main demo (`make demo`): a small cluster on one machine.

It starts an API server (insecure port, data in a temporary directory) and
two kubelets that join it as demo-node1 and demo-node2, all on this
machine's Docker. Then it creates three pods through the API: one bound to
each node, and one with no node at all. The bound pods run; the third
stays Pending, since nothing chooses a node for it yet (chapter 03's
scheduler will). It shows the cluster as `kubectl get nodes,pods -o wide`
does, then stops everything and removes the containers.

The cluster itself (processes, waiting, clean-up) is common/tooling/local_cluster.py,
which later chapters' demos reuse with their component added.

    python 02-apiserver/demo.py [--apiserver path/to/your_apiserver.py]

--apiserver runs your own API server (02-apiserver/build-it-yourself/) in
place of ours, with the real kubectl. Without the kubelets: they also need
nodes, services, pod status, events and field selectors, which the
starting file does not serve (it serves pods, as its stages ask).
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import requests

from common.tooling.local_cluster import Cluster, console, pod

PODS = "/api/v1/namespaces/default/pods"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apiserver", type=Path,
                        help="your API server, to run in place of ours (02-apiserver/build-it-yourself/)")
    args = parser.parse_args()
    return with_yours(args.apiserver) if args.apiserver else with_ours()


def with_ours() -> int:
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



def with_yours(path: Path) -> int:
    """Your API server, what its stages grade, shown with the real kubectl:
    pods created, listed, kept across kill -9, deleted."""
    console.rule("chapter 02: your API server, with the real kubectl")
    with Cluster([], apiserver=path) as cluster:
        console.print(f"your API server ({path}) on {cluster.url}, its data in {cluster.workdir / 'data'}")
        console.print("[dim]no kubelets here: they also need nodes, services, pod status, events and "
                      "field selectors, which the starting file does not serve; they join ours "
                      "(make demo-02 without APISERVER)[/dim]")
        for name in ("web", "db", "cache"):
            expect(requests.post(f"{cluster.url}{PODS}", json=pod(name), timeout=5), 201, f"POST of pod {name}")
        console.print("created pods web, db and cache (POST, as any client)")
        kubectl(cluster, "get", "pods")

        console.print("\n[bold]kill -9 your API server, start it again on the same data[/bold]")
        before = versions(cluster)
        cluster.processes["apiserver"].send_signal(signal.SIGKILL)
        cluster.processes["apiserver"].wait()
        cluster.start_apiserver()
        kubectl(cluster, "get", "pods")
        after = versions(cluster)
        console.print("every pod back at its resourceVersion" if after == before else
                      f"[red]not as they were[/red]: resourceVersions {before} before, {after} after")

        kubectl(cluster, "delete", "pod", "db", "--wait=false")
        kubectl(cluster, "get", "pods")
    console.rule("done: see 02-apiserver/README.md for the lesson")
    return 0


def kubectl(cluster: Cluster, *args: str) -> None:
    """The real kubectl against your server, the command shown first; without
    kubectl, the pods' names from a GET (the server has no tables to ask for)."""
    console.print(f"\n[bold]$ kubectl -s {cluster.url} {' '.join(args)}[/bold]")
    if shutil.which("kubectl"):
        # (no credentials of the user's own kubeconfig go to a plain-HTTP server)
        subprocess.run(["kubectl", "--kubeconfig", "/dev/null", "-s", cluster.url, "--request-timeout", "10s", *args],
                       check=False)
    elif args[0] == "get":
        console.print("(kubectl is not on PATH; your server lists: "
                      f"{', '.join(sorted(versions(cluster)))})")
    else:
        console.print("(kubectl is not on PATH: skipped)")
    cluster.check_processes()


def versions(cluster: Cluster) -> dict[str, str]:
    """Each pod's resourceVersion, by name, as your server lists them."""
    listed = expect(requests.get(f"{cluster.url}{PODS}", timeout=5), 200, "GET of the pods")
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in listed["items"]}


def expect(response: requests.Response, code: int, what: str) -> dict:
    """The answer's JSON, if its code is `code`; else stop, saying what came back."""
    if response.status_code != code:
        raise SystemExit(f"{what}: expected {code} from your API server, it answered "
                         f"{response.status_code} {response.text.strip()[:300]}")
    return response.json()


if __name__ == "__main__":
    sys.exit(main())
