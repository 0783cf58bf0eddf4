"""The Node object a kubelet registers, and the heartbeat that keeps it Ready.

A kubelet that joins a cluster first says who it is: a Node named after the
machine, with its addresses, what it can hold (capacity: CPUs, memory,
disk for containers' writable layers and logs, pods), how much of that
pods may be given (allocatable: capacity minus what --system-reserved and
--kube-reserved keep back) and what it runs (nodeInfo). The scheduler (chapter 03) places pods by
these numbers. Then, every few seconds, it renews the node's Ready
condition: a node whose heartbeat goes stale is presumed dead (chapter 04's
node lifecycle controller acts on that).

These functions only build objects; the kubelet sends them.
"""
from __future__ import annotations

import os
import platform
import shutil
import socket

from common.quantity import QuantityError, parse_quantity
from common.times import rfc3339 as now  # noqa: F401 (node_status.now() for this chapter's callers)

MAX_PODS = 110            # Kubernetes' default --max-pods
RESERVABLE = ("cpu", "memory", "ephemeral-storage")


class ReservationError(ValueError):
    pass


def parse_reservation(flag: str, text: str) -> dict:
    """`cpu=250m,memory=256Mi` (--system-reserved, --kube-reserved) as
    {resource: Quantity}; a clear error naming the flag and the pair."""
    reserved = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = pair.partition("=")
        if not sep or name not in RESERVABLE:
            raise ReservationError(f"{flag}: {pair!r}: give resource=quantity pairs, the resource one of "
                                   f"{', '.join(RESERVABLE)} (e.g. cpu=250m,memory=256Mi)")
        try:
            reserved[name] = parse_quantity(value)
        except QuantityError as error:
            raise ReservationError(f"{flag}: {pair!r}: {error}") from None
        if reserved[name].sign() < 0:
            raise ReservationError(f"{flag}: {pair!r}: a reservation cannot be negative")
    return reserved


# [START node-allocatable]
def allocatable(capacity: dict, *reservations: dict) -> dict:
    """What pods may be given: capacity minus what is kept for the system
    and the kubelet (--system-reserved, --kube-reserved). The real kubelet
    also subtracts its hard eviction thresholds (memory.available<100Mi by
    default), since it evicts pods before the node runs that low; ours
    never evicts, so it keeps nothing back for that."""
    result = dict(capacity)
    for resource in RESERVABLE:
        kept = sum((r[resource] for r in reservations if resource in r), parse_quantity("0"))
        if kept.is_zero():
            continue
        left = parse_quantity(capacity[resource]) - kept
        if left.sign() < 0:
            raise ReservationError(f"the reservations keep {kept} of {resource}, "
                                   f"more than the node has ({capacity[resource]})")
        result[resource] = str(left)
    return result
# [END node-allocatable]


def machine_memory_bytes() -> int:
    """MemTotal from /proc/meminfo (Linux), in bytes."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def ephemeral_storage_bytes(path: str = "/var/lib/docker") -> int:
    """The size of the filesystem Docker keeps containers on (the root
    filesystem if that directory is not there): what pods' ephemeral-storage
    requests are counted against."""
    return shutil.disk_usage(path if os.path.isdir(path) else "/").total


def machine_capacity() -> dict:
    """What this machine has, as a Node's status.capacity writes it."""
    return {"cpu": str(os.cpu_count() or 1), "memory": f"{machine_memory_bytes() // 1024}Ki",
            "ephemeral-storage": f"{ephemeral_storage_bytes() // 1024}Ki", "pods": str(MAX_PODS)}


def _arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


# [START node-object]
def node_object(node_name: str, node_ip: str, kubelet_port: int, docker_version: str,
                reserved: tuple[dict, ...] = ()) -> dict:
    """The Node as this kubelet registers it, measured from the real machine."""
    capacity = machine_capacity()
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name, "labels": {
            "kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux", "kubernetes.io/arch": _arch()}},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable(capacity, *reserved),
            "addresses": [{"type": "InternalIP", "address": node_ip},
                          {"type": "Hostname", "address": socket.gethostname()}],
            # Where the API server finds this kubelet (for `kubectl logs`).
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "nodeInfo": {"operatingSystem": "linux", "architecture": _arch(),
                         "kernelVersion": platform.release(), "osImage": _os_image(),
                         "containerRuntimeVersion": f"docker://{docker_version}",
                         "kubeletVersion": "v1.32.0-groundup", "kubeProxyVersion": "",
                         "machineID": "", "systemUUID": "", "bootID": ""},
            "conditions": [ready_condition(True, "KubeletReady", "kubelet is posting ready status")],
        },
    }
# [END node-object]


def ready_condition(ready: bool, reason: str, message: str, since: str | None = None) -> dict:
    """The Ready condition; lastHeartbeatTime is what a heartbeat renews."""
    stamp = now()
    return {"type": "Ready", "status": "True" if ready else "False", "reason": reason, "message": message,
            "lastHeartbeatTime": stamp, "lastTransitionTime": since or stamp}


def heartbeat(node: dict, not_ready: str | None = None) -> dict:
    """The node's status with a fresh Ready heartbeat (the transition time kept
    while the status stays the same, as Kubernetes reports it). not_ready:
    why the node cannot run pods yet (its pod network), if it cannot."""
    status = dict(node.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    ready = not_ready is None
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == str(ready) else None
    if ready:
        condition = ready_condition(True, "KubeletReady", "kubelet is posting ready status", since)
    else:
        condition = ready_condition(False, "KubeletNotReady", not_ready, since)
    status["conditions"] = conditions + [condition]
    return status


def _os_image() -> str:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()
