"""The arithmetic of a rolling update, as pure functions.

A Deployment of 10 replicas rolls from ReplicaSet `old` to `new` within two
bounds the user sets:

- **maxSurge**: how many pods above `replicas` may exist at once (extra
  capacity to start new pods before old ones stop). Default 25%, rounded up.
- **maxUnavailable**: how many below `replicas` may be unavailable at once
  (how much capacity the rollout may take away). Default 25%, rounded down.

Each reconcile takes one step: scale `new` up as far as the surge allows,
then scale old ReplicaSets down as far as availability allows. New pods
become available, which allows the next step down, which allows the next
step up... until `new` has everything. Kubernetes rounds a percentage of
surge up and of unavailability down, and if both come to 0, allows one
unavailable pod, or the rollout could never move.
"""
from __future__ import annotations

import math


def resolve(value: int | str | None, replicas: int, default: str, round_up: bool) -> int:
    """An int-or-percentage ("25%") as a number of pods."""
    if value is None:
        value = default
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        return int(value)
    exact = replicas * int(value[:-1]) / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def surge_and_unavailable(strategy: dict, replicas: int) -> tuple[int, int]:
    rolling = (strategy or {}).get("rollingUpdate") or {}
    surge = resolve(rolling.get("maxSurge"), replicas, "25%", round_up=True)
    unavailable = resolve(rolling.get("maxUnavailable"), replicas, "25%", round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


# [START rolling-step]
def scale_up_new(replicas: int, surge: int, new_replicas: int, all_replicas: int) -> int:
    """How many replicas the new ReplicaSet may have now: up to `replicas`,
    with every ReplicaSet's pods together at most replicas + maxSurge."""
    if new_replicas >= replicas:          # scaled down: the new set simply shrinks
        return replicas
    room = replicas + surge - all_replicas
    return new_replicas + max(0, min(room, replicas - new_replicas))


def scale_down_limit(replicas: int, unavailable: int, all_replicas: int, new_unavailable: int) -> int:
    """How many old pods may go in this step, counting every pod as capacity
    except the new ReplicaSet's not yet available ones. Spent first on old
    pods that are not available anyway (they give no capacity)."""
    return max(0, all_replicas - (replicas - unavailable) - new_unavailable)


def healthy_scale_down(replicas: int, unavailable: int, available: int) -> int:
    """How many available old pods may then go, keeping at least
    replicas - maxUnavailable available pods."""
    return max(0, available - (replicas - unavailable))
# [END rolling-step]
