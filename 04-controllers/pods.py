"""What a controller asks of a pod: is it active, ready, available, and which
to delete first when there are too many.

Pure functions of the pod object (and the time), so tables of pods test them.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import NamedTuple


def parse_time(text: str | None) -> float | None:
    """RFC 3339 "2026-11-23T10:00:00Z" -> seconds since the epoch."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).timestamp()


def is_active(pod: dict) -> bool:
    """Counts towards replicas: not finished, not being deleted. A Failed pod
    (evicted, or restartPolicy Never) is replaced, not counted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _ready_condition(pod: dict) -> dict | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def is_ready(pod: dict) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: dict) -> float | None:
    """When the pod last became ready, or None if it is not."""
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_time(condition.get("lastTransitionTime"))


def is_available(pod: dict, min_ready_seconds: int, now: float) -> bool:
    """Ready, and for at least minReadySeconds: a pod that crashes a second
    after its first readiness probe is not yet counted as serving."""
    since = ready_since(pod)
    if since is None:
        return False
    return min_ready_seconds == 0 or now - since >= min_ready_seconds


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


class DeletionRank(NamedTuple):
    """Sorts the pods to delete first to the front, as Kubernetes' ActivePods
    order does: the least useful pod goes first."""
    scheduled: bool          # a pod not yet on a node costs nothing to drop
    phase: int               # Pending, then Unknown, then Running
    ready: bool              # not ready before ready
    ready_for: float         # ready for a short time before a long time
    restarts_negated: int    # more restarts before fewer
    age: float               # newer before older


def deletion_rank(pod: dict, now: float) -> DeletionRank:
    status = pod.get("status") or {}
    since = ready_since(pod)
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    created = parse_time(pod["metadata"].get("creationTimestamp")) or now
    return DeletionRank(
        scheduled=bool((pod.get("spec") or {}).get("nodeName")),
        phase=_PHASE_RANK.get(status.get("phase"), 0),
        ready=since is not None,
        ready_for=0.0 if since is None else now - since,
        restarts_negated=-restarts,
        age=now - created)


def pods_to_delete(pods: list[dict], count: int, now: float) -> list[dict]:
    return sorted(pods, key=lambda pod: deletion_rank(pod, now))[:count]
