"""Timestamps the way Kubernetes writes them: one formatter for every component.
And durations the way its flags take them: one parser for every duration flag.

metav1.Time is RFC 3339 in UTC with whole seconds (2026-11-22T08:36:33Z):
creation times, conditions, container states. metav1.MicroTime adds
microseconds (2026-11-22T08:36:33.123456Z): Leases and Events use it.
"""
from __future__ import annotations

import argparse
import re
import time
from datetime import datetime, timezone


def rfc3339(moment: float | None = None) -> str:
    """A metav1.Time: now, or `moment` (seconds since the epoch)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def micro_time() -> str:
    """Now as a metav1.MicroTime."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Go's time.ParseDuration, which every Kubernetes duration flag uses: one or
# more numbers, each with its unit ("40s", "5m", "1h30m", "500ms").
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_PLAIN_SECONDS = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A duration flag's value in seconds: Kubernetes' form ("40s", "5m",
    "1h30m", "500ms") or a plain number of seconds ("40"), which this
    project's flags took first. For argparse's type=: a bad value is a
    usage error that shows the forms."""
    text = text.strip()
    if _PLAIN_SECONDS.fullmatch(text):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:   # nothing left over
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: write it as 40s, 5m, 1h30m or 500ms")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
