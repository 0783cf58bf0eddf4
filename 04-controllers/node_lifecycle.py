"""The node lifecycle controller: notice a node that went quiet, taint it,
and move its pods elsewhere.

A kubelet proves it is alive by writing: it renews its Lease in
kube-node-lease and the Ready condition's lastHeartbeatTime (chapter 01).
Nobody can tell the API server "my node died": a dead node simply stops
writing. So the signal here is time passing, and the controller looks at
every node every --node-monitor-period, as well as on every change:

    heartbeat older than --node-monitor-grace-period
        -> Ready=Unknown ("Kubelet stopped posting node status.")
    Ready=Unknown  -> taints unreachable:NoExecute and unreachable:NoSchedule
    Ready=False    -> taints not-ready:NoExecute and not-ready:NoSchedule
    spec.unschedulable (kubectl cordon) -> unschedulable:NoSchedule
    Ready=True again -> those taints removed

NoSchedule keeps the scheduler away. NoExecute also evicts: each pod on the
node is deleted once its toleration of the taint runs out (tolerationSeconds,
300 s by default), or at once if it has none. Its ReplicaSet then makes a
replacement, which the scheduler puts on a healthy node.

Everything the decisions need is in the API server (heartbeats, conditions,
each taint's timeAdded), so a restarted controller carries on where the
last one stopped: a pod's 300 s count from when the taint was added, not
from when this process started.
"""
from __future__ import annotations

import copy
import threading
import time

from common.client.client import NotFound
from common.times import rfc3339
from controller import Controller, key_for
from pods import parse_time
from taints import (DISK_PRESSURE, MEMORY_PRESSURE, NETWORK_UNAVAILABLE, NO_EXECUTE, NO_SCHEDULE, NOT_READY,
                    PID_PRESSURE, UNREACHABLE, UNSCHEDULABLE, eviction_time, with_default_tolerations)

LEASE_NAMESPACE = "kube-node-lease"
COORDINATION = "coordination.k8s.io/v1"

# Conditions a kubelet reports, which go Unknown with Ready when it falls silent.
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")

# Condition (type, status) -> the NoSchedule taint it puts on the node
# (Kubernetes' TaintNodesByCondition).
CONDITION_TAINTS = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): MEMORY_PRESSURE,
    ("DiskPressure", "True"): DISK_PRESSURE,
    ("PIDPressure", "True"): PID_PRESSURE,
    ("NetworkUnavailable", "True"): NETWORK_UNAVAILABLE,
}
# Ready's status -> the NoExecute taint that evicts pods.
READY_NO_EXECUTE = {"False": NOT_READY, "Unknown": UNREACHABLE}

# Every (key, effect) this controller may add, and so may take away again.
# Taints with other keys belong to people (kubectl taint) and are left alone.
MANAGED = {(key, NO_SCHEDULE) for key in CONDITION_TAINTS.values()} | {(UNSCHEDULABLE, NO_SCHEDULE)} \
    | {(key, NO_EXECUTE) for key in READY_NO_EXECUTE.values()}


def condition(node: dict, kind: str) -> dict | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def ready_status(node: dict) -> str:
    """"True", "False" or "Unknown"; a node whose kubelet never reported is Unknown."""
    ready = condition(node, "Ready")
    return (ready or {}).get("status") or "Unknown"


# ------------------------------------------------------------ is the node alive?

def last_heartbeat(node: dict, lease: dict | None) -> float | None:
    """The newer of the Lease's renewTime and Ready's lastHeartbeatTime, or
    None if the kubelet never wrote either."""
    times = [parse_time(((lease or {}).get("spec") or {}).get("renewTime")),
             parse_time((condition(node, "Ready") or {}).get("lastHeartbeatTime"))]
    times = [t for t in times if t is not None]
    return max(times) if times else None


# [START silent-node]
def silent_node_status(node: dict, lease: dict | None, now: float, grace_period: float) -> dict | None:
    """The node's status with its kubelet's conditions set to Unknown, if the
    kubelet has been silent for longer than grace_period; None if the node
    is fine, or already marked."""
    heartbeat = last_heartbeat(node, lease)
    # A node that never reported gets its grace from when it was registered.
    since = heartbeat if heartbeat is not None else parse_time(node["metadata"].get("creationTimestamp"))
    if since is not None and now - since <= grace_period:
        return None
    if heartbeat is None:
        reason, message = "NodeStatusNeverUpdated", "Kubelet never posted node status."
    else:
        reason, message = "NodeStatusUnknown", "Kubelet stopped posting node status."
    status = copy.deepcopy(node.get("status") or {})
    conditions = status.setdefault("conditions", [])
    changed = False
    for kind in KUBELET_CONDITIONS:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            if kind != "Ready" and heartbeat is not None:
                continue                # the kubelet never reported this one: leave it out
            current = {"type": kind, "lastHeartbeatTime": rfc3339(since or now)}
            conditions.append(current)
        if current.get("status") == "Unknown":
            continue
        current.update(status="Unknown", reason=reason, message=message, lastTransitionTime=rfc3339(now))
        changed = True
    return status if changed else None
# [END silent-node]


# ------------------------------------------------------------ which taints

# [START wanted-taints]
def wanted_taints(node: dict) -> list[dict]:
    """The taints the node's conditions and cordon call for (no timeAdded)."""
    wanted = []
    for item in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get((item.get("type"), item.get("status")))
        if key:
            wanted.append({"key": key, "effect": NO_SCHEDULE})
    if condition(node, "Ready") is None:            # registered, never reported: not ready yet
        wanted.append({"key": NOT_READY, "effect": NO_SCHEDULE})
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append({"key": UNSCHEDULABLE, "effect": NO_SCHEDULE})
    no_execute = READY_NO_EXECUTE.get(ready_status(node)) if condition(node, "Ready") else None
    if no_execute:
        wanted.append({"key": no_execute, "effect": NO_EXECUTE})
    return wanted


def merged_taints(current: list[dict], wanted: list[dict], now: float) -> list[dict]:
    """current with our taints brought in line with wanted: people's taints
    kept as they are, ours kept (with their timeAdded) if still wanted,
    added if missing (NoExecute ones stamped with now), dropped if not."""
    wanted_pairs = {(t["key"], t["effect"]) for t in wanted}
    result = [t for t in current if (t.get("key"), t.get("effect")) not in MANAGED
              or (t.get("key"), t.get("effect")) in wanted_pairs]
    have = {(t.get("key"), t.get("effect")) for t in result}
    for taint in wanted:
        if (taint["key"], taint["effect"]) not in have:
            added = dict(taint)
            if taint["effect"] == NO_EXECUTE:
                added["timeAdded"] = rfc3339(now)    # tolerationSeconds count from here
            result.append(added)
    return result
# [END wanted-taints]


# ------------------------------------------------------------ the controller

class NodeLifecycleController(Controller):
    name = "nodelifecycle"

    def __init__(self, *args, monitor_period: float = 5.0, grace_period: float = 40.0,
                 default_toleration_seconds: int = 300, **kwargs):
        super().__init__(*args, **kwargs)
        self.monitor_period, self.grace_period = monitor_period, grace_period
        self.default_toleration_seconds = default_toleration_seconds
        self.nodes = self.informers.get("v1", "nodes")
        self.leases = self.informers.get(COORDINATION, "leases")
        self.pods = self.informers.get("v1", "pods")
        self.nodes.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                               on_delete=self.enqueue)
        self.leases.add_handler(on_add=self.lease_changed, on_update=lambda old, new: self.lease_changed(new))
        self.pods.add_handler(on_add=self.pod_changed, on_update=self.pod_changed)
        self._ready_seen: dict[str, str] = {}        # node -> Ready status last seen, for events
        self._first_seen: dict[tuple, float] = {}    # (node, key, effect) of taints without timeAdded
        self._stop = threading.Event()

    def lease_changed(self, lease: dict) -> None:
        if lease["metadata"].get("namespace") == LEASE_NAMESPACE:
            self.queue.add(lease["metadata"]["name"])          # a node's lease is named after it

    def pod_changed(self, old: dict, new: dict | None = None) -> None:
        """A pod bound to (or changed on) a node with a NoExecute taint: judge it."""
        pod = new or old
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.get(None, node_name) if node_name else None
        if node and any(t.get("effect") == NO_EXECUTE for t in (node.get("spec") or {}).get("taints") or []):
            self.queue.add(node_name)

    # [START node-monitor]
    def monitor(self) -> None:
        """Time passing is the signal: look at every node every monitor_period."""
        while not self._stop.wait(self.monitor_period):
            for node in self.nodes.list():
                self.enqueue(node)
    # [END node-monitor]

    def start(self) -> None:
        super().start()
        threading.Thread(target=self.monitor, name=f"{self.name}-monitor", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        super().stop()

    # [START node-lifecycle-reconcile]
    def reconcile(self, key: str) -> None:
        node = self.nodes.get(None, key)
        if node is None:
            self._forget(key)
            return
        now = time.time()
        ready_before = self._ready_seen.get(key, ready_status(node))
        node = self.mark_silent_node(node, now)      # Ready=Unknown if the kubelet went quiet
        self.record_ready_change(node, ready_before)
        node = self.update_taints(node, now)         # taints follow Ready and cordon
        self.evict_pods(node, now)                   # NoExecute: pods whose tolerations ran out
    # [END node-lifecycle-reconcile]

    def mark_silent_node(self, node: dict, now: float) -> dict:
        lease = self.leases.get(LEASE_NAMESPACE, node["metadata"]["name"])
        status = silent_node_status(node, lease, now, self.grace_period)
        if status is None:
            return node
        self.log.info("node stopped posting status", controller=self.name, obj=key_for(node),
                      grace_period=self.grace_period)
        return self.client.update_status("v1", "nodes", {**node, "status": status})

    def record_ready_change(self, node: dict, before: str) -> None:
        """NodeReady / NodeNotReady events when Ready changes, as Kubernetes records them."""
        name, ready = node["metadata"]["name"], ready_status(node)
        self._ready_seen[name] = ready
        if (before == "True") != (ready == "True"):
            status = "NodeReady" if ready == "True" else "NodeNotReady"
            self.events.event(node, "Normal", status, f"Node {name} status is now: {status}")

    def update_taints(self, node: dict, now: float) -> dict:
        current = (node.get("spec") or {}).get("taints") or []
        taints = merged_taints(current, wanted_taints(node), now)
        if taints == current:
            return node
        self.log.info("taints", controller=self.name, obj=key_for(node),
                      taints=",".join(f"{t['key']}:{t['effect']}" for t in taints) or "none")
        spec = {**(node.get("spec") or {}), "taints": taints}
        if not taints:
            spec.pop("taints")
        return self.client.update("v1", "nodes", {**node, "spec": spec})

    # [START evict-pods]
    def evict_pods(self, node: dict, now: float) -> None:
        name = node["metadata"]["name"]
        taints = [self._with_time_added(name, t, now) for t in (node.get("spec") or {}).get("taints") or []
                  if t.get("effect") == NO_EXECUTE]
        if not taints:
            return
        for pod in self.pods.list():
            if (pod.get("spec") or {}).get("nodeName") != name or pod["metadata"].get("deletionTimestamp"):
                continue
            tolerations = with_default_tolerations((pod.get("spec") or {}).get("tolerations") or [],
                                                   self.default_toleration_seconds)
            leave_at = eviction_time(tolerations, taints, now)
            if leave_at is None:
                continue                             # tolerates the taints forever
            if leave_at > now:
                self.queue.add_after(name, leave_at - now)   # nothing else will say the time has come
                continue
            self.events.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key_for(pod)}")
            self.log.info("evicting pod", controller=self.name, obj=key_for(pod), node=name)
            try:
                self.client.delete("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            except NotFound:
                pass                                 # gone already: what we wanted
    # [END evict-pods]

    def _with_time_added(self, node_name: str, taint: dict, now: float) -> dict:
        """A NoExecute taint someone added without timeAdded counts from when
        we first saw it (this process only: after a restart it starts again)."""
        if taint.get("timeAdded"):
            return taint
        seen = self._first_seen.setdefault((node_name, taint.get("key"), taint.get("effect")), now)
        return {**taint, "timeAdded": rfc3339(seen)}

    def _forget(self, node_name: str) -> None:
        self._ready_seen.pop(node_name, None)
        for key in [k for k in self._first_seen if k[0] == node_name]:
            del self._first_seen[key]
