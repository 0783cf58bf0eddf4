"""Readers that take fields out of an object that may be half-filled or garbled.

The API server's store keeps whatever a client sent and the schema allowed,
and a `kubectl get` table must print even for an object a buggy controller
mangled; chapter 01's own table reads the kubelet's pods the same way.
Each reader returns the field if it has the expected type, and an empty
value of that type otherwise: it never raises.
"""
from __future__ import annotations

from datetime import datetime, timezone


def parse_time(value) -> datetime | None:
    """An RFC 3339 timestamp ("2026-11-22T05:30:00Z", maybe with fractions), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    # A timestamp without a zone is not RFC 3339; read it as UTC rather than
    # as this machine's local time, which would shift ages by hours.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def as_str(value) -> str:
    return value if isinstance(value, str) else ""


def as_int(value, default: int = 0) -> int:
    # bool is an int in Python; "true" replicas is garbage, not 1.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def dig(obj, *path):
    """obj["a"]["b"]..., or None as soon as a step is missing or not a map."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def dicts(value) -> list[dict]:
    """The maps in a list, skipping entries that are not maps."""
    return [item for item in as_list(value) if isinstance(item, dict)]
