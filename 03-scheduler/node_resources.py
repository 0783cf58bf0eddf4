"""Resources: what a pod asks for, what a node has, and the three plugins that compare them.

The scheduler never measures a machine. It adds up *requests*: what each
container said it needs. A node with 2 CPUs holds pods whose cpu requests
sum to at most 2, however idle those pods really are. That is what makes
placement predictable, and it is why a pod without requests can land
anywhere (and why the scores pretend it asked for a little, see below).

Units, so that everything is an exact integer: cpu in millicores ("500m" is
500, "2" is 2000), memory and everything else in bytes or plain counts.

Plugins here:

- NodeResourcesFit (filter): do the pod's requests fit in what the node has
  left? "Too many pods", "Insufficient cpu", "Insufficient memory", ...
- NodeResourcesLeastAllocated (score): prefer the emptiest node, so load spreads.
  (In Kubernetes 1.32 this is not a plugin of its own but NodeResourcesFit's
  default scoring strategy, LeastAllocated; a plugin here reads more simply.)
- NodeResourcesBalancedAllocation (score): prefer nodes where cpu and memory
  fill up evenly, so no node ends with free cpu and no memory to use it.
"""
from __future__ import annotations

from common.model.quantity import QuantityError, parse_quantity
from framework import MAX_NODE_SCORE, SKIP, Plugin

# A container that requests nothing still uses something. For *scoring*
# only, Kubernetes counts such a container as asking for 100m cpu and
# 200Mi memory, otherwise a hundred request-less pods would all score a
# node as empty and pile onto it. The filter never uses these.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

SCORED_RESOURCES = ("cpu", "memory")       # both weight 1, as Kubernetes' default


def amount(name: str, value) -> int:
    """One quantity as an integer in the scheduler's units (cpu: millicores).
    Rounded up, so a request never shrinks. Unreadable values count as 0:
    the API server validated them, so this only guards against hand-made objects."""
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        return 0
    return quantity.milli_value() if name == "cpu" else quantity.value()


def container_requests(container: dict, non_zero: bool = False) -> dict[str, int]:
    """A container's requests. A resource with a limit and no request
    requests its limit (the API server writes that default too; a pod
    stored before the default existed, or made by hand, still counts right)."""
    resources = container.get("resources") or {}
    wanted = dict(resources.get("limits") or {})
    wanted.update(resources.get("requests") or {})
    result = {name: amount(name, value) for name, value in wanted.items()}
    if non_zero:
        result.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
        result.setdefault("memory", DEFAULT_MEMORY_REQUEST)
    return result


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _take_max(into: dict[str, int], other: dict[str, int]) -> None:
    for name, value in other.items():
        if value > into.get(name, 0):
            into[name] = value


def pod_requests(spec: dict, non_zero: bool = False) -> dict[str, int]:
    """What the whole pod needs on a node, at its busiest moment.

    App containers run together, so their requests add up. Init containers
    run one at a time before them, so the pod needs the largest of them, or
    the sum of the app containers, whichever is more. A "sidecar" (an init
    container with restartPolicy: Always) starts in the init sequence and
    then keeps running: it adds to every later init container and to the
    app containers. The pod's overhead (its sandbox, if the runtime class
    declares one) comes on top.
    """
    running: dict[str, int] = {}
    for container in spec.get("containers") or []:
        _add(running, container_requests(container, non_zero))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or []:
        own = container_requests(container, non_zero)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _add(running, own)
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            _add(during, own)
        _take_max(init_peak, during)
    _take_max(running, init_peak)
    for name, value in (spec.get("overhead") or {}).items():
        running[name] = running.get(name, 0) + amount(name, value)
    running.pop("pods", None)                # a pod is one pod, counted apart
    return running


def node_allocatable(node: dict) -> dict[str, int]:
    """What a node offers pods: status.allocatable (capacity minus what the
    system keeps for itself), or capacity if the kubelet did not say."""
    status = node.get("status") or {}
    offered = status.get("allocatable") or status.get("capacity") or {}
    return {name: amount(name, value) for name, value in offered.items()}


# ---------------------------------------------------------------- the filter

class NodeResourcesFit(Plugin):
    name = "NodeResourcesFit"

    # [START filter-resources-fit]
    def filter(self, pod, node, state) -> tuple[str, ...]:
        """Every resource the pod requests must fit in what the node has
        left: allocatable minus the requests of the pods already there
        (including pods this scheduler has just placed, the assumed ones)."""
        reasons = []
        if len(node.pods) + 1 > node.allocatable.get("pods", 0):
            reasons.append("Too many pods")
        for name, wanted in pod.requests.items():
            if wanted <= 0:
                continue                     # asking for none always fits
            free = node.allocatable.get(name, 0) - node.requested.get(name, 0)
            if wanted > free:
                reasons.append(f"Insufficient {name}")
        return tuple(reasons)
    # [END filter-resources-fit]


# ---------------------------------------------------------------- the scores

class NodeResourcesLeastAllocated(Plugin):
    name = "NodeResourcesLeastAllocated"

    # [START score-least-allocated]
    def score(self, pod, node, state) -> int:
        """0-100: the share of the node's cpu and memory still free once
        this pod is on it, averaged. An empty node scores near 100, a full
        one 0. Request-less containers count as 100m cpu and 200Mi memory."""
        total = 0
        for name in SCORED_RESOURCES:
            capacity = node.allocatable.get(name, 0)
            used = node.non_zero_requested.get(name, 0) + pod.non_zero_requests.get(name, 0)
            if capacity > 0 and used <= capacity:
                total += (capacity - used) * MAX_NODE_SCORE // capacity
        return total // len(SCORED_RESOURCES)
    # [END score-least-allocated]


class NodeResourcesBalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"

    def prepare(self, pod, nodes, state):
        # A pod that requests nothing cannot unbalance anything; scoring it
        # would only pull every such pod onto the same node (recent
        # Kubernetes skips such pods too).
        if not any(pod.requests.get(name) for name in SCORED_RESOURCES):
            return SKIP

    def score(self, pod, node, state) -> int:
        """0-100: how evenly cpu and memory would be used with this pod on
        the node. 100 when both are at the same fraction of allocatable,
        less as they drift apart: 1 minus their standard deviation, which
        for two numbers is half their difference."""
        fractions = []
        for name in SCORED_RESOURCES:
            capacity = node.allocatable.get(name, 0)
            if capacity > 0:
                used = node.requested.get(name, 0) + pod.requests.get(name, 0)
                fractions.append(min(used / capacity, 1.0))
        if len(fractions) < 2:
            return MAX_NODE_SCORE             # nothing to balance against
        cpu, memory = fractions
        return int((1 - abs(cpu - memory) / 2) * MAX_NODE_SCORE)
