"""The node IPAM controller: give every node its own range of pod IPs.

Kubernetes' network model says every pod has an IP that every other pod
reaches without NAT. The simplest way to keep pod IPs unique across
machines is to cut the cluster's pod network into one slice per node:

    --cluster-cidr 10.244.0.0/16, --node-cidr-mask-size 24
        node1  spec.podCIDR 10.244.0.0/24   (pods 10.244.0.2, .3, ...)
        node2  spec.podCIDR 10.244.1.0/24
        ...    256 nodes in all

A kubelet then hands out IPs from its own slice with nobody to ask, and
chapter 05 routes 10.244.1.0/24 to node2. Two rules make it work: a
range is never given to two nodes, and a node keeps its range for life
(its pods already use those IPs). The API server enforces the second: it
lets spec.podCIDR go from empty to a value once, and never change again.

What is taken is not remembered anywhere but on the nodes themselves, so a
restarted controller rebuilds its set from every node's spec.podCIDRs
before it gives out anything. A deleted node's range goes back to the pool.
"""
from __future__ import annotations

import ipaddress
import threading

from controller import Controller, key_for


class RangeFull(Exception):
    pass


# [START cidr-set]
class CIDRSet:
    """The cluster CIDR cut into equal subnets, numbered 0, 1, 2, ...; which are taken."""

    def __init__(self, cluster_cidr: str, mask_size: int):
        self.cluster = ipaddress.ip_network(cluster_cidr)
        bits = self.cluster.max_prefixlen
        if not self.cluster.prefixlen <= mask_size <= bits:
            raise ValueError(f"--node-cidr-mask-size {mask_size} must be between the cluster CIDR's "
                             f"prefix length ({self.cluster.prefixlen}) and {bits}")
        self.mask_size = mask_size
        self.shift = bits - mask_size                  # address bits inside one node's subnet
        self.count = 1 << (mask_size - self.cluster.prefixlen)
        self.used: set[int] = set()

    def indexes(self, cidr: str) -> range:
        """The subnets a CIDR covers (none if it lies outside the cluster's):
        a /23 given by hand to one node takes two /24s from the pool."""
        network = ipaddress.ip_network(cidr, strict=False)
        if network.version != self.cluster.version or not network.overlaps(self.cluster):
            return range(0)
        base = int(self.cluster.network_address)
        first = max(int(network.network_address), base) - base
        last = min(int(network.broadcast_address), int(self.cluster.broadcast_address)) - base
        return range(first >> self.shift, (last >> self.shift) + 1)

    def occupy(self, cidr: str) -> None:
        self.used.update(self.indexes(cidr))

    def release(self, cidr: str) -> None:
        self.used.difference_update(self.indexes(cidr))

    def allocate(self) -> str:
        """The first free subnet, now taken."""
        for index in range(self.count):
            if index not in self.used:
                self.used.add(index)
                first = int(self.cluster.network_address) + (index << self.shift)
                return str(ipaddress.ip_network((first, self.mask_size)))
        raise RangeFull(f"all {self.count} /{self.mask_size} ranges of {self.cluster} are taken")
# [END cidr-set]


def pod_cidrs(node: dict) -> list[str]:
    spec = node.get("spec") or {}
    return list(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))


class NodeIpamController(Controller):
    name = "nodeipam"

    def __init__(self, *args, cluster_cidr: str = "10.244.0.0/16", node_cidr_mask_size: int = 24, **kwargs):
        super().__init__(*args, **kwargs)
        self.cidrs = CIDRSet(cluster_cidr, node_cidr_mask_size)
        self.held: dict[str, str] = {}       # node name -> the range counted as its own
        self.waiting: set[str] = set()       # nodes that found the pool empty
        self.lock = threading.Lock()         # workers allocate in parallel
        self.nodes = self.informers.get("v1", "nodes")
        self.nodes.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                               on_delete=self.enqueue)

    # [START ipam-start]
    def start(self) -> None:
        """Called once the caches are full: count every range the nodes
        already have as taken before the first allocation, so that a
        restart never gives a second node the same range."""
        with self.lock:
            for node in self.nodes.list():
                for cidr in pod_cidrs(node):
                    self._hold(node["metadata"]["name"], cidr)
        super().start()
    # [END ipam-start]

    def _hold(self, node_name: str, cidr: str) -> None:
        previous = self.held.get(node_name)
        if previous is not None and previous != cidr:
            self.cidrs.release(previous)
        self.cidrs.occupy(cidr)
        self.held[node_name] = cidr

    def _release(self, node_name: str) -> None:
        cidr = self.held.pop(node_name, None)
        if cidr is None:
            return
        self.cidrs.release(cidr)
        self.log.info("released pod CIDR", controller=self.name, obj=node_name, cidr=cidr)
        for waiting in self.waiting:         # room again for whoever found the pool empty
            self.queue.add(waiting)
        self.waiting.clear()

    # [START ipam-reconcile]
    def reconcile(self, key: str) -> None:
        node = self.nodes.get(None, key)
        with self.lock:
            if node is None:
                self._release(key)                     # deleted: its range goes back
                return
            assigned = pod_cidrs(node)
            if assigned:
                self._hold(key, assigned[0])           # ours, or set by hand: taken either way
                self.waiting.discard(key)
                return
            # Ours already if an earlier write is not in the cache yet (or
            # failed): reuse it, so a retry never takes a second range.
            cidr = self.held.get(key)
            if cidr is None:
                try:
                    cidr = self.cidrs.allocate()
                except RangeFull as error:
                    self.waiting.add(key)
                    self.log.warning("no pod CIDR for node", controller=self.name, obj=key, error=str(error))
                    self.events.event(node, "Normal", "CIDRNotAvailable", f"Node {key} status is now: CIDRNotAvailable")
                    return
                self.held[key] = cidr
        # resourceVersion makes this a compare-and-swap: if the node changed
        # meanwhile, Conflict, and the retry reads it again.
        spec = {**(node.get("spec") or {}), "podCIDR": cidr, "podCIDRs": [cidr]}
        self.client.update("v1", "nodes", {**node, "spec": spec})
        self.log.info("allocated pod CIDR", controller=self.name, obj=key_for(node), cidr=cidr)
    # [END ipam-reconcile]
