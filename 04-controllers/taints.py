"""Taints and tolerations, as the node lifecycle controller needs them:
does a pod tolerate a taint, for how long, and so when must it leave?

A taint on a node says "pods stay away", with an effect:

    NoSchedule        the scheduler places no new pod here
    PreferNoSchedule  ... if it can help it
    NoExecute         and pods already running here are evicted

A toleration on a pod lets it ignore a taint. On a NoExecute taint it may
say for how long (tolerationSeconds): "I can wait 300 s for an unreachable
node to come back; after that, delete me so my ReplicaSet makes a new pod
elsewhere". Without tolerationSeconds it tolerates the taint forever.

Pure functions of the pod's tolerations, the node's taints and the time,
so tables test them. Whether a toleration matches a taint is the
scheduler's own rule, shared through common/model/scheduling.py so that the
scheduler and this controller never disagree about a pod.
"""
from __future__ import annotations

from common.model.scheduling import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, tolerates  # noqa: F401
from pods import parse_time

# The taints Kubernetes' node lifecycle controller manages (its names, kept).
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
PID_PRESSURE = "node.kubernetes.io/pid-pressure"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"


# [START default-tolerations]
def with_default_tolerations(tolerations: list[dict], seconds: int) -> list[dict]:
    """The pod's tolerations, plus `seconds` of patience for a not-ready and
    an unreachable node if it says nothing about them.

    Kubernetes' API server adds these to every pod as it is created (the
    DefaultTolerationSeconds admission plugin, 300 s), so that a node that
    blinks does not empty itself at once. Our API server has no such
    plugin, so the controller assumes them when it judges a pod."""
    result = list(tolerations)
    for key in (NOT_READY, UNREACHABLE):
        # Kubernetes' test: any toleration naming the key (or no key), for
        # NoExecute (or every effect), means the pod has chosen for itself.
        chosen = any((t.get("key") or "") in ("", key) and (t.get("effect") or "") in ("", NO_EXECUTE)
                     for t in tolerations)
        if not chosen:
            result.append({"key": key, "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": seconds})
    return result
# [END default-tolerations]


# [START eviction-time]
def eviction_time(tolerations: list[dict], taints: list[dict], now: float) -> float | None:
    """When a pod with these tolerations must leave a node with these taints:
    `now` (at once), a later time, or None (it may stay).

    Only NoExecute taints evict. One the pod does not tolerate evicts it at
    once. A tolerated one lets it stay until the taint's timeAdded plus the
    shortest tolerationSeconds among the tolerations that match it (none
    given: forever). With several taints the earliest deadline wins. (A
    taint without timeAdded counts from now: the caller fills in when it
    first saw it.)"""
    deadline = None
    for taint in taints:
        if taint.get("effect") != NO_EXECUTE:
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return now
        limits = [t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None]
        if not limits:
            continue                                   # tolerated forever
        added = parse_time(taint.get("timeAdded")) or now
        leave_at = added + max(0, min(limits))         # 0 or less: at once
        deadline = leave_at if deadline is None else min(deadline, leave_at)
    return None if deadline is None else max(deadline, now)
# [END eviction-time]
