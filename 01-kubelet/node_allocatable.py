"""What this machine has, and what of it pods may be given.

Capacity is measured (CPUs, memory, the disk Docker keeps containers on,
a pod count); allocatable is capacity minus what --system-reserved and
--kube-reserved keep back. A container's downward API reads allocatable
for a limit it leaves unset (resourceFieldRef, pod_config.py), so the
kubelet needs these figures even alone; in a cluster they also go into
the Node it registers (apiserver_join/node_status.py), which the
scheduler places pods by.
"""
from __future__ import annotations

import os
import shutil

from common.model.quantity import QuantityError, parse_quantity

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
