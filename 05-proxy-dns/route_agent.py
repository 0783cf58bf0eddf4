"""The route agent: on every node, a route to every other node's pods.

    python 05-proxy-dns/route_agent.py --kubeconfig node1.kubeconfig [--node-name node1]

Each node's pods live in the node's own range (spec.podCIDR) behind its
bridge, cbr0. A pod on node1 sending to 10.244.1.7 needs its node to know
that 10.244.1.0/24 is on node2, so the agent keeps, for every other node,

    ip route replace 10.244.1.0/24 via 10.213.0.12      (node2's podCIDR via node2's InternalIP)

and removes the route when the node goes. That is all: the packet leaves
with the pod's own source address, node2 forwards it into its bridge, and
the reply comes back the same way. flannel's host-gw backend and
kube-router work like this; it needs the nodes on one layer-2 network (as
our machines are, and VMs on one subnet). Across routers, an overlay
(VXLAN) or BGP carries the same information.

The agent owns its routes: it marks them with a protocol number of its own
(`proto 213`), so that at start, and on every resync, it can find its
routes from before (a node deleted while the agent was down) and remove
the stale ones without touching anyone else's. It calls the `ip` tool,
the commands a learner types to look: `ip route show proto 213`.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import socket
import subprocess
import sys
import threading

from common.client import kubeconfig
from common.client.client import APIClient, client_from_args
from common.client.informer import Informer
from common.log import get_logger
from common.tooling.processes import stop_on_signals
from common.times import duration

PROTO = "213"      # marks our routes; any number iproute2 does not name will do


class RouteError(Exception):
    pass


class Invalid(Exception):
    """A Node field that cannot be routed: says which and why."""


# [START desired-routes]
def desired_routes(nodes: list[dict], me: str, cluster_cidr: str | None = None) -> tuple[dict[str, str], list[str]]:
    """{podCIDR: InternalIP} for every other node that has both, and why
    any node was left out: a range outside the cluster's pod network (a
    Node that says 0.0.0.0/0 must not become a default route), or one that
    overlaps this node's own or one already routed (never send a range's
    traffic to two places)."""
    cluster = ipaddress.ip_network(cluster_cidr) if cluster_cidr else None
    taken = [cidr for node in nodes if node["metadata"]["name"] == me for cidr in [safe_pod_cidr(node)] if cidr]
    routes, problems = {}, []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        if name == me or node["metadata"].get("deletionTimestamp"):
            continue
        try:
            cidr, address = pod_cidr(node), internal_ip(node)
            if cidr is None or address is None:
                continue                                   # not ready for traffic yet
            if cluster is not None and not cidr.subnet_of(cluster):
                raise Invalid(f"podCIDR {cidr} is outside the cluster's {cluster}")
            clash = next((t for t in taken if cidr.overlaps(t)), None)
            if clash is not None:
                raise Invalid(f"podCIDR {cidr} overlaps {clash}, routed already or this node's")
        except Invalid as problem:
            problems.append(f"node {name}: {problem}")
            continue
        taken.append(cidr)
        routes[str(cidr)] = str(address)
    return routes, problems
# [END desired-routes]


def pod_cidr(node: dict) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The node's pod range; None if it has none yet."""
    cidr = (node.get("spec") or {}).get("podCIDR")
    if not cidr:
        return None
    try:
        return ipaddress.ip_network(cidr)
    except ValueError as error:
        raise Invalid(f"podCIDR {cidr!r} is not a network: {error}") from None


def safe_pod_cidr(node: dict):
    try:
        return pod_cidr(node)
    except Invalid:
        return None


def internal_ip(node: dict) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The node's InternalIP; None if it has reported none yet."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            try:
                return ipaddress.ip_address(address.get("address"))
            except ValueError:
                raise Invalid(f"InternalIP {address.get('address')!r} is not an address") from None
    return None


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RouteError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def current_routes() -> dict[str, str]:
    """{destination: gateway} of the routes we made (and only those); `ip`
    writes a /32 without its length, so destinations are normalised."""
    routes = json.loads(ip("-json", "route", "show", "proto", PROTO) or "[]")
    return {str(ipaddress.ip_network(r["dst"], strict=False)): r.get("gateway", "") for r in routes}


class RouteAgent:
    def __init__(self, client: APIClient, node_name: str, log, resync: float = 30.0, cluster_cidr: str | None = None):
        self.node_name, self.log, self.cluster_cidr = node_name, log, cluster_cidr
        self.nodes = Informer(client, "v1", "nodes", resync_seconds=resync)
        # Any change to any node may change the routes: recompute them all
        # (a cluster has tens of nodes, not millions; one `ip` call each).
        self.nodes.add_handler(on_add=self._changed, on_update=lambda old, new: self._changed(new),
                               on_delete=self._changed)
        self._lock = threading.Lock()
        self._told: set[str] = set()        # problems already logged: once each, not every pass

    def _changed(self, _node: dict) -> None:
        if self.nodes.has_synced():
            self.sync()

    # [START sync-routes]
    def sync(self) -> None:
        """Make the routing table say what the Nodes say: add what is missing,
        fix what points elsewhere, remove what no node has any more."""
        with self._lock:
            want, problems = desired_routes(self.nodes.list(), self.node_name, self.cluster_cidr)
            for problem in sorted(set(problems) - self._told):
                self.log.error("node left out", problem=problem)
            self._told = set(problems)
            have = current_routes()
            for cidr, via in sorted(want.items()):
                if have.get(cidr) != via:
                    try:
                        ip("route", "replace", cidr, "via", via, "proto", PROTO)
                        self.log.info("route added", obj=cidr, via=via)
                    except RouteError as error:    # e.g. the node's address is not on our network
                        self.log.error("cannot add route", obj=cidr, via=via, error=str(error))
            for cidr in sorted(set(have) - set(want)):
                try:
                    ip("route", "del", cidr, "proto", PROTO)
                    self.log.info("route removed", obj=cidr, via=have[cidr])
                except RouteError as error:              # gone already: someone else's hand
                    self.log.warning("cannot remove route", obj=cidr, error=str(error))
    # [END sync-routes]

    def run(self, stop: threading.Event) -> None:
        self.nodes.start()
        while not self.nodes.wait_for_sync(timeout=1):
            if stop.is_set():
                return
        self.sync()           # the first full pass: stale routes from before go now
        self.log.info("routes in sync", obj=self.node_name, routes=len(current_routes()))
        stop.wait()
        self.nodes.stop()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="route_agent.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-name", default=socket.gethostname(), help="this node's name (default: hostname)")
    parser.add_argument("--resync", type=duration, default=30.0, metavar="DURATION",
                        help="how often a full pass runs (default 30s)")
    parser.add_argument("--cleanup", action="store_true", help="remove every route this agent made, then exit")
    parser.add_argument("--cluster-cidr", default="10.244.0.0/16",
                        help="the pod network: only ranges inside it are routed (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    kubeconfig.add_flags(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("route-agent", "DEBUG" if args.verbose else None)
    if args.cleanup:
        for cidr in current_routes():
            ip("route", "del", cidr, "proto", PROTO)
        return 0
    client = client_from_args(args, f"route-agent/{args.node_name}", log)
    if client is None:
        return 2
    stop = stop_on_signals()
    # The routes stay when the agent stops: pods keep reaching each other
    # while it restarts, and the next agent takes them over by their proto.
    RouteAgent(client, args.node_name, log, args.resync, args.cluster_cidr).run(stop)
    log.info("route agent stopped; its routes stay", obj=args.node_name, routes=len(current_routes()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
