"""The main demo (`make demo`) as of chapter 05: an application that survives its pods.

Three machines made of namespaces (machines.py, with a prefix and a subnet
of their own, so a learner's `make machines` is left alone): the API
server, the controller manager and the scheduler on master; a kubelet on
the pod network, a route agent, the proxy in iptables mode and cluster
DNS and an ingress controller on node1 and node2. Then the finale of the
lesson's part 3 (finale.py): a frontend that asks its backend by name,
asked ten times a second from this computer, outside the cluster, as
shop.example through the ingress on both nodes (part 5), while a backend
pod is deleted, node2's kubelet is stopped and started again, and the
backend is rolled to v2.
The demo prints what failed during each, and removes the machines.

The machines need root (namespaces, iptables) and Docker; without them
the demo says so and runs chapter 04's, on this one machine.

    python 05-proxy-dns/demo.py [--dns path/to/your_cluster_dns.py]

--dns runs your own cluster DNS (05-proxy-dns/build-it-yourself/) on
node1 and node2 in place of ours: the frontend finds the backend by name
through yours.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
PRIVATE = Path("/tmp")
sys.path.insert(0, str(HERE))

from common.tooling.polling import wait_for  # noqa: E402
from common.tooling.your_program import YourProgramExited  # noqa: E402
from finale import HOST, run, urls  # noqa: E402
from machine_cluster import Cluster, free_subnet  # noqa: E402
from machines import Machines, missing_requirements  # noqa: E402


def hidden_from_the_machines(path: Path) -> bool:
    """Under /tmp, which each machine mounts its own of (machines.py keeps
    only this repository there visible); /var/tmp they share."""
    path = path.resolve()
    return path.is_relative_to(PRIVATE) and not path.is_relative_to(HERE.parent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dns", type=Path,
                        help="your cluster DNS, to run on the nodes in place of ours (05-proxy-dns/build-it-yourself/)")
    args = parser.parse_args()
    if args.dns and hidden_from_the_machines(args.dns):
        sys.exit(f"your cluster DNS ({args.dns}) is under {PRIVATE}, which each machine has its own of, so the "
                 "nodes would not find it: keep it in this repository or under /var/tmp")
    problem = missing_requirements()
    if problem:
        without = " (without your DNS server: it needs the machines)" if args.dns else ""
        print(f"chapter 05's demo: {problem}; running chapter 04's on this machine instead{without}\n", flush=True)
        return subprocess.call([sys.executable, str(HERE.parent / "04-controllers" / "demo.py")])
    print("chapter 05: an application that survives its pods, on three machines", flush=True)
    machines = Machines(prefix="gd", subnet=free_subnet(), names=("master", "node1", "node2"))
    workdir = Path(tempfile.mkdtemp(prefix="groundup-demo-", dir="/var/tmp"))  # every machine sees /var/tmp
    cluster = Cluster(machines, workdir, your_dns=args.dns)
    dns = f"your cluster DNS ({args.dns})" if args.dns else "DNS"
    try:
        machines.up()
        print(f"machines up: master {machines.address('master')}, node1 {machines.address('node1')}, "
              f"node2 {machines.address('node2')}", flush=True)
        # A node monitor of seconds, not Kubernetes' 40: the demo waits less.
        cluster.bring_up("--node-monitor-grace-period", "6", "--node-monitor-period", "1", scheduler=True,
                         proxy_mode="iptables", ingress=True)
        print("cluster up: API server, controller manager, scheduler; kubelet, route agent, proxy "
              f"(iptables mode), {dns} and an ingress controller on each node\n"
              f"deploying 05-proxy-dns/manifests/two-tier.yaml and an Ingress for {HOST}, then asking "
              f"{HOST} through the ingress on both nodes ten times a second while:", flush=True)
        outcomes, tally = run(cluster, report=lambda line: print(" ", line, flush=True))
        print(f"\n{'what happened':48} {'requests':>8} {'failed':>6}")
        for outcome in outcomes:
            print(f"{outcome.event:48} {outcome.requests:8} {len(outcome.failures):6}")
            for failure in outcome.failures:
                print(f"  {failure}")
        print(f"\nall told: {tally.line()}")
        answer = wait_for(lambda: (asked := requests.get(urls(cluster)[0], headers={"Host": HOST}, timeout=5)).ok
                          and asked.text.strip(), 30, what="the frontend's answer")
        print(f"asked once more, the frontend says: {answer}")
        if args.dns:
            print(f"the frontend found the backend by its name through {dns} on each node")
        print("see 05-proxy-dns/lesson-3-an-application-that-survives.md for why nothing failed")
        return 0 if all(not outcome.failures for outcome in outcomes) else 1
    except YourProgramExited:
        raise                   # its message says it all: not every component's log
    except BaseException:
        print(f"\nthe demo failed; the components' logs:\n{cluster.logs()}", file=sys.stderr)
        raise
    finally:
        cluster.tear_down()
        machines.down()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
