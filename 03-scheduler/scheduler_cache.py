"""The scheduler's cache: per node, what is already committed there.

Why a cache of our own, when the informers already hold every pod and node?
Because the informers only know what the API server has *confirmed*. After
the scheduler decides "web-1 goes to node1", the binding takes a round trip
to the API server and the change takes another to come back through the
watch. If the next pod were scheduled from the informers alone, node1 would
still look empty, and two pods could land on a node with room for one.

So the scheduler *assumes*: the moment it decides, it adds the pod to the
node here, before the binding is even sent. Then one of three things happens:

- the watch shows the pod bound: the assumption is **confirmed** (replaced
  by the real pod, on whichever node the API server says);
- the binding fails (the pod was deleted, or bound by someone else): the
  scheduler **forgets** the assumption and the room is free again;
- the binding succeeded but the watch never shows it (the pod was deleted
  straight after, while the watch was reconnecting): the assumption
  **expires** a while after the binding finished.

Each NodeInfo keeps running totals (requested cpu, memory, pods, host ports)
so filters never add up a node's pods themselves.

Threads: the informers' handlers, the binder threads and the scheduling loop
all use the cache; everything goes through `lock`. The scheduling loop holds
it for a whole cycle, so a cycle sees one consistent picture.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass

from node_resources import SCORED_RESOURCES, node_allocatable
from pod_info import PodInfo


class NodeInfo:
    """A node and the pods committed to it (bound or assumed)."""

    def __init__(self, name: str):
        self.name = name
        self.node: dict | None = None        # None: we know pods there, not yet the Node itself
        self.labels: dict = {}
        self.taints: list[dict] = []
        self.unschedulable = False
        self.conditions: dict[str, str] = {}   # type -> status ("True", "False", "Unknown")
        self.allocatable: dict[str, int] = {}
        self.pods: dict[str, PodInfo] = {}
        self.requested: Counter = Counter()
        self.non_zero_requested: Counter = Counter()
        self.used_ports: Counter = Counter()   # (hostIP, protocol, port) -> how many pods
        self.with_anti_affinity: dict[str, PodInfo] = {}   # the pods here that keep others away

    def set_node(self, node: dict | None) -> None:
        self.node = node
        if node is None:
            return
        meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
        self.labels = meta.get("labels") or {}
        self.taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
        self.unschedulable = bool(spec.get("unschedulable"))
        self.conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []
                           if isinstance(c, dict)}
        self.allocatable = node_allocatable(node)

    def add_pod(self, pod: PodInfo) -> None:
        self.pods[pod.key] = pod
        self.requested.update(pod.requests)
        self.non_zero_requested.update({k: pod.non_zero_requests.get(k, 0) for k in SCORED_RESOURCES})
        self.used_ports.update(pod.host_ports)
        if pod.anti_affinity_terms:
            self.with_anti_affinity[pod.key] = pod

    def remove_pod(self, key: str) -> PodInfo | None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self.requested.subtract(pod.requests)
            self.non_zero_requested.subtract({k: pod.non_zero_requests.get(k, 0) for k in SCORED_RESOURCES})
            self.used_ports.subtract(pod.host_ports)
            self.used_ports += Counter()       # drop ports no pod holds any more
            self.with_anti_affinity.pop(key, None)
        return pod

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)}, requested={dict(self.requested)})"


@dataclass
class _Placed:
    node: str
    pod: PodInfo
    assumed: bool
    expires: float | None = None       # for an assumed pod whose binding finished


class SchedulerCache:
    def __init__(self, assumed_ttl: float = 30.0, clock=time.monotonic):
        self.lock = threading.RLock()
        self.assumed_ttl = assumed_ttl
        self._clock = clock
        self._nodes: dict[str, NodeInfo] = {}
        self._placed: dict[str, _Placed] = {}     # pod key -> where we count it
        self._sorted: list[NodeInfo] | None = None

    # ------------------------------------------------ nodes (from the node informer)

    def set_node(self, node: dict) -> None:
        with self.lock:
            name = node["metadata"]["name"]
            info = self._nodes.get(name)
            if info is None:
                info = self._nodes[name] = NodeInfo(name)
            if info.node is None:
                self._sorted = None          # a node to schedule onto from now on
            info.set_node(node)

    def remove_node(self, name: str) -> None:
        """The Node is gone. Its pods stay counted until they are deleted too
        (their kubelet, or chapter 04's controllers, will see to that)."""
        with self.lock:
            info = self._nodes.get(name)
            if info is None:
                return
            if info.pods:
                info.set_node(None)
            else:
                del self._nodes[name]
            self._sorted = None

    def nodes(self) -> list[NodeInfo]:
        """The nodes pods can be placed on, by name (call with lock held)."""
        if self._sorted is None:
            self._sorted = sorted((n for n in self._nodes.values() if n.node is not None), key=lambda n: n.name)
        return self._sorted

    def node(self, name: str) -> NodeInfo | None:
        return self._nodes.get(name)

    # ------------------------------------------------ bound pods (from the pod informer)

    def add_pod(self, pod: PodInfo) -> None:
        """A pod the API server says is bound: count it, confirming our assumption if we made one."""
        with self.lock:
            self._unplace(pod.key)
            self._place(pod.key, pod.node_name, pod, assumed=False)

    def remove_pod(self, key: str) -> None:
        with self.lock:
            self._unplace(key)

    # ------------------------------------------------ our own decisions

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Count pod on node_name now, before the binding is sent."""
        with self.lock:
            if pod.key in self._placed:
                raise ValueError(f"pod {pod.key} is already counted on {self._placed[pod.key].node}")
            self._place(pod.key, node_name, pod, assumed=True)

    def finish_binding(self, key: str) -> None:
        """The binding went through; the watch should confirm it soon. If
        it never does, the assumption expires after assumed_ttl."""
        with self.lock:
            placed = self._placed.get(key)
            if placed is not None and placed.assumed:
                placed.expires = self._clock() + self.assumed_ttl

    def forget(self, key: str) -> None:
        """The binding failed: take back an assumption (a confirmed pod stays)."""
        with self.lock:
            placed = self._placed.get(key)
            if placed is not None and placed.assumed:
                self._unplace(key)

    def is_assumed(self, key: str) -> bool:
        with self.lock:
            placed = self._placed.get(key)
            return placed is not None and placed.assumed

    def is_placed(self, key: str) -> bool:
        with self.lock:
            return key in self._placed

    def expire_assumed(self) -> list[str]:
        """Drop assumptions the watch never confirmed; called at every cycle,
        so no timer is needed (a cache nobody schedules from can be stale)."""
        now = self._clock()
        with self.lock:
            expired = [key for key, placed in self._placed.items()
                       if placed.assumed and placed.expires is not None and placed.expires <= now]
            for key in expired:
                self._unplace(key)
            return expired

    # ------------------------------------------------ bookkeeping

    def _place(self, key: str, node_name: str, pod: PodInfo, assumed: bool) -> None:
        info = self._nodes.get(node_name)
        if info is None:
            # A pod bound to a node we have not seen (yet): keep its place
            # ready, so the node arrives already holding it.
            info = self._nodes[node_name] = NodeInfo(node_name)
        info.add_pod(pod)
        self._placed[key] = _Placed(node_name, pod, assumed)

    def _unplace(self, key: str) -> None:
        placed = self._placed.pop(key, None)
        if placed is None:
            return
        info = self._nodes.get(placed.node)
        if info is not None:
            info.remove_pod(key)
            if info.node is None and not info.pods:
                del self._nodes[placed.node]

    def counts(self) -> dict[str, int]:
        """node -> pods counted there (for logs and tests)."""
        with self.lock:
            return {name: len(info.pods) for name, info in self._nodes.items()}
