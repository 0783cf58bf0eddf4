"""Timestamps the way Kubernetes writes them: one formatter for every component.

metav1.Time is RFC 3339 in UTC with whole seconds (2026-11-22T08:36:33Z):
creation times, conditions, container states. metav1.MicroTime adds
microseconds (2026-11-22T08:36:33.123456Z): Leases and Events use it.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone


def rfc3339(moment: float | None = None) -> str:
    """A metav1.Time: now, or `moment` (seconds since the epoch)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def micro_time() -> str:
    """Now as a metav1.MicroTime."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
