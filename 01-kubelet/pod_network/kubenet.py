"""The pod network on one node, as Kubernetes' kubenet plugin made it (chapter 05).

With Docker's default bridge every node gives its first pod 172.17.0.2: two
nodes, two pods, one address. Kubernetes' network model wants the opposite:
every pod has an IP unique in the cluster, and reaches every other pod
without NAT. kubenet, the kubelet's built-in network plugin until 1.24, did
it the simplest way, and so do we with `--network-plugin kubenet`:

1. The node's pods take their IPs from the node's own slice of the pod
   network, `spec.podCIDR` (chapter 04's node IPAM controller gives it:
   node1 10.244.0.0/24, node2 10.244.1.0/24). Until the node has one, its
   pods wait and the node reports NotReady, as the real kubelet does.
2. A bridge, cbr0, holds that slice: here a Docker network of that subnet,
   so Docker hands out the addresses and every pause container joins it.
3. Traffic from a pod to another pod keeps its source address (the server
   sees who called); traffic to anywhere else (outside --non-masquerade-cidr)
   is masqueraded behind the node's address, since the world has no route
   back to pod IPs.

Reaching a pod on another node takes a route there: 10.244.1.0/24 via
node2. That is the route agent's work (05-proxy-dns/route_agent.py), on
every node.
"""
from __future__ import annotations

import ipaddress
import json
import subprocess
import threading

import docker

NETWORK = "kubenet"          # the Docker network's name
BRIDGE = "cbr0"              # and its Linux bridge's, as kubenet named it
NOT_READY = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
             "message:docker: network plugin is not ready: Kubenet does not have netConfig. "
             "This is most likely due to lack of PodCIDR")


class PodNetworkError(Exception):
    pass


class Kubenet:
    def __init__(self, api: docker.APIClient, non_masquerade_cidr: str, log):
        self.api, self.log = api, log
        self.non_masquerade_cidr = non_masquerade_cidr
        self.pod_cidr: str | None = None      # set once: a node keeps its range for life
        self._ready = threading.Event()

    def not_ready(self) -> str | None:
        """Why pods cannot start yet (the node's Ready message), or None."""
        return None if self._ready.is_set() else NOT_READY

    # [START kubenet-setup]
    def set_up(self, pod_cidr: str) -> None:
        """Make the bridge for this node's range and the rules around it.
        Safe to call again (a restarted kubelet finds them made)."""
        try:
            subnet = ipaddress.ip_network(pod_cidr)
        except ValueError as error:
            raise PodNetworkError(f"the node's podCIDR {pod_cidr!r} is not a network: {error}") from None
        gateway = str(subnet.network_address + 1)     # the bridge's own address: the pods' default route
        existing = self.api.networks(names=[NETWORK])
        if existing:
            configs = (self.api.inspect_network(existing[0]["Id"]).get("IPAM") or {}).get("Config") or []
            if [c.get("Subnet") for c in configs] != [str(subnet)]:
                raise PodNetworkError(f"Docker network {NETWORK} has {configs}, not the node's podCIDR {subnet}: "
                                      f"remove it (docker network rm {NETWORK}) after removing its containers")
        else:
            self.api.create_network(
                NETWORK, driver="bridge",
                ipam=docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(subnet),
                                                                                  gateway=gateway)]),
                # No masquerading by Docker: we decide which traffic is NATed.
                options={"com.docker.network.bridge.name": BRIDGE,
                         "com.docker.network.bridge.enable_ip_masquerade": "false"})
        # Leaving the cluster's addresses: masquerade, as kubenet did.
        ensure_rule("nat", "POSTROUTING", "-s", str(subnet), "!", "-d", self.non_masquerade_cidr,
                    "-m", "comment", "--comment", "kubenet: SNAT for outbound traffic from cluster",
                    "-j", "MASQUERADE")
        # Docker lets into its bridges only replies and published ports (on a
        # machine where it owns forwarding, FORWARD's policy is DROP); pods
        # must take new connections from other nodes' pods: DOCKER-USER is
        # the chain Docker keeps for rules like these.
        ensure_rule("filter", "DOCKER-USER", "-d", str(subnet), "-j", "ACCEPT")
        self.pod_cidr = str(subnet)
        self._ready.set()
        self.log.info("pod network ready", obj=NETWORK, podCIDR=self.pod_cidr, bridge=BRIDGE, gateway=gateway)
    # [END kubenet-setup]

    def allow_hairpin(self) -> None:
        """Let a pod reach itself through a Service. The proxy sends the
        connection back to the pod it came from, and the bridge forwards
        it (bridge netfilter: the DNAT is done on the bridge), to the very
        port it came in by, which a bridge refuses unless that port is in
        hairpin mode. The real kubelet's --hairpin-mode=hairpin-veth does
        this for each pod's veth; we do it for every port of cbr0 not yet
        in that mode, each time a pod's sandbox starts."""
        try:
            shown = subprocess.run(["ip", "-d", "-json", "link", "show", "master", BRIDGE],
                                   capture_output=True, text=True)
            ports = json.loads(shown.stdout or "[]")
        except (OSError, ValueError) as error:      # no `ip`, or output it cannot read: the pod runs anyway
            self.log.warning("hairpin mode not set", obj=BRIDGE, error=str(error))
            return
        for port in ports:
            if not (port.get("linkinfo") or {}).get("info_slave_data", {}).get("hairpin"):
                done = subprocess.run(["ip", "link", "set", "dev", port["ifname"], "type", "bridge_slave",
                                       "hairpin", "on"], capture_output=True, text=True)
                if done.returncode:              # the port went meanwhile, or no root
                    self.log.debug("hairpin mode not set", obj=port["ifname"], error=done.stderr.strip())

    def wait_for_pod_cidr(self, client, node_name: str, stop: threading.Event, interval: float = 1.0) -> None:
        """Ask for our Node until it has a podCIDR, then set up. Runs in a
        thread of its own; the kubelet starts no pod meanwhile."""
        told = False
        while not stop.is_set() and not self._ready.is_set():
            try:
                node = client.get("v1", "nodes", None, node_name)
                cidr = (node.get("spec") or {}).get("podCIDR")
                if cidr:
                    self.set_up(cidr)
                    return
                if not told:
                    self.log.warning("waiting for the node's podCIDR (is the node IPAM controller running?)",
                                     obj=node_name)
                    told = True
            except PodNetworkError as error:      # needs a person: say so, and keep trying
                self.log.error("cannot set up the pod network", obj=node_name, error=str(error))
                stop.wait(10 * interval)
            except Exception as error:   # not registered yet, API server away, Docker refusing: try again
                self.log.debug("pod network not set up yet", obj=node_name, error=str(error))
            stop.wait(interval)


def ensure_rule(table: str, chain: str, *rule: str) -> None:
    """Insert an iptables rule unless it is there already (-C checks)."""
    if subprocess.run(["iptables", "-w", "-t", table, "-C", chain, *rule], capture_output=True).returncode == 0:
        return
    done = subprocess.run(["iptables", "-w", "-t", table, "-I", chain, *rule], capture_output=True, text=True)
    if done.returncode != 0:
        raise PodNetworkError(f"iptables -t {table} -I {chain} {' '.join(rule)}: {done.stderr.strip()}")
