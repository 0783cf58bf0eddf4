"""How the API server spells values in `kubectl get` columns.

The printers in printers.py decide *which* values go in a row; this module
decides how each is written, following Kubernetes' own conventions so that
our output reads like a real cluster's: ages such as "5m3s" or "2d3h",
label maps as "app=web,tier=db", "<none>" for an empty list.

The printers take fields out of objects with the small readers of
common/model/lenient.py (re-exported here), which never raise: the store keeps
whatever a client sent and the schema allowed, and one bad pod must never
turn `kubectl get pods` into an error.
"""
from __future__ import annotations

from datetime import datetime

from common.model.lenient import as_dict, as_int, as_list, as_str, dicts, dig, parse_time  # noqa: F401 (the printers' readers)
from common.model.selectors import SelectorError, selector_from_label_selector

NONE = "<none>"
UNKNOWN = "<unknown>"


# [START human-duration]
def human_duration(seconds: float) -> str:
    """A duration as kubectl's AGE column writes it: short, and coarser as it grows.

    Precision drops with size because a reader cares whether a pod is 2m5s
    or 2m40s old, but not whether it is 3d4h or 3d5h old after a week.
    """
    whole = int(seconds)  # truncates toward zero, like Go's int(d.Seconds())
    # Clocks on two machines disagree a little: up to a second in the
    # future still reads as "just now"; more than that is a real error.
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return _two_units(minutes, "m", whole % 60, "s")
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return _two_units(days, "d", hours % 24, "h")
    if days < 2 * 365:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return _two_units(years, "y", days % 365, "d")
    return f"{years}y"


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    """ "3h5m", or just "3h" when the smaller unit is zero."""
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"
# [END human-duration]


def since(value, now: datetime) -> str:
    """Time from a timestamp to now ("5m"), or "<unknown>" if there is none."""
    moment = parse_time(value)
    if moment is None:
        return UNKNOWN
    return human_duration((now - moment).total_seconds())


def between(start, end) -> str:
    """Time from one timestamp to another, or "" if either is missing."""
    first, last = parse_time(start), parse_time(end)
    if first is None or last is None:
        return ""
    return human_duration((last - first).total_seconds())


def format_labels(labels) -> str:
    """A label map as "a=1,b=2" (sorted by key), or "<none>"."""
    pairs = sorted(f"{key}={value}" for key, value in as_dict(labels).items())
    return ",".join(pairs) or NONE


def format_label_selector(selector, empty: str = NONE, invalid: str = "<error>") -> str:
    """A {matchLabels, matchExpressions} selector in kubectl's -l syntax.

    Kubernetes is not consistent here: most kinds print an empty selector as
    "<none>" and a broken one as "<error>", Deployments as "" and "<invalid>".
    The caller picks.
    """
    try:
        text = str(selector_from_label_selector(selector))
    except SelectorError:
        return invalid
    return text or empty


def join_host_port(host: str, port) -> str:
    """ "10.0.0.1:80", with brackets for an IPv6 address: "[fd00::1]:80"."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
