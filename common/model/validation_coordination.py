"""Validate coordination.k8s.io/v1 Lease: a name, a holder and a clock.

A Lease is the smallest object in the API: who holds it (holderIdentity),
for how long a silent holder keeps it (leaseDurationSeconds), and when it
last said so (renewTime). Every kubelet renews one in kube-node-lease as its
cheap heartbeat; leader election uses the same kind. Messages and paths
follow k8s.io/kubernetes pkg/apis/coordination/validation; the time and
type checks stand in for the errors Kubernetes gives while decoding.
"""

from __future__ import annotations

import re
from datetime import datetime

from common.model.field_errors import FieldError, child, invalid
from common.model.validation import INT32_MAX, _get_dict, _get_int, _get_str

SPEC = "spec"
# MicroTime on the wire: RFC 3339 with (for Kubernetes' writers) six digits
# of fraction, e.g. 2026-11-22T08:36:33.123456Z.
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")
TIME_MSG = "must be a time in RFC 3339 form, e.g. 2026-11-22T08:36:33.123456Z"


def validate_lease(obj: dict) -> list[FieldError]:
    """On create and on update alike: nothing in a Lease is fixed, since a
    new holder may take it over."""
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), SPEC) or {}
    for field in ("holderIdentity", "strategy", "preferredHolder"):
        _get_str(errs, spec.get(field), child(SPEC, field))
    duration = _get_int(errs, spec.get("leaseDurationSeconds"), child(SPEC, "leaseDurationSeconds"),
                        -INT32_MAX - 1)
    if duration is not None and duration <= 0:
        # A lease that lasts no time at all could never be held.
        errs.append(invalid(child(SPEC, "leaseDurationSeconds"), duration, "must be greater than 0"))
    _get_int(errs, spec.get("leaseTransitions"), child(SPEC, "leaseTransitions"), 0)
    for field in ("acquireTime", "renewTime"):
        _check_time(errs, spec.get(field), child(SPEC, field))
    return errs


def _check_time(errs: list, value, path: str) -> None:
    """A MicroTime: a string Go's decoder (kubectl's too) can read back."""
    value = _get_str(errs, value, path)
    if value is None:
        return
    if not _TIME.fullmatch(value):
        errs.append(invalid(path, value, TIME_MSG))
        return
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:   # the right shape, but a 31st of February or a 25th hour
        errs.append(invalid(path, value, TIME_MSG))


__all__ = ["TIME_MSG", "validate_lease"]
