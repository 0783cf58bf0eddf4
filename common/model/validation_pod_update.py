"""What may change in a Pod that already exists, and in its status.

A pod is a promise the kubelet has started to keep: its containers run with
the spec they were given. So an update may change only a few fields, those
the kubelet can apply in place (a new image restarts one container; a
shorter deadline; more tolerations). Everything else needs a new pod, which
is why Deployments replace pods instead of editing them. Messages follow
ValidatePodUpdate and ValidatePodStatusUpdate in pkg/apis/core/validation.
"""

from __future__ import annotations

import copy

from common.model.field_errors import FieldError, forbidden, format_value, index, invalid, not_supported
from common.model.validation import INT32_MAX, _as_int, _get_dict, _get_str, is_ip, _items

UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)")
# Kubernetes 1.32 does not check status.phase at all: this check is ours.
POD_PHASES = ("Failed", "Pending", "Running", "Succeeded", "Unknown")
IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _spec_of(pod: dict) -> dict:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


# [START validate-pod-update]
def validate_pod_update(new: dict, old: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    new_spec, old_spec = _spec_of(new), _spec_of(old)
    if not _check_active_deadline(errs, new_spec, old_spec):
        return errs
    _check_only_added_tolerations(errs, new_spec, old_spec)
    # Copy the allowed changes from the new spec onto the old one: if the
    # result differs from the new spec, something else changed too.
    allowed = _with_allowed_changes(old_spec, new_spec)
    if allowed != new_spec:
        changed = _differences(allowed, new_spec, "spec")
        errs.append(forbidden("spec", "pod updates may not change fields other than "
                              f"{UPDATABLE_POD_SPEC_FIELDS}\n" + _describe(changed)))
    return errs
# [END validate-pod-update]


def _check_active_deadline(errs: list, new_spec: dict, old_spec: dict) -> bool:
    """activeDeadlineSeconds may be set or lowered, never raised or removed:
    the kubelet may already be counting down."""
    path = "spec.activeDeadlineSeconds"
    new_value, old_value = new_spec.get("activeDeadlineSeconds"), \
        old_spec.get("activeDeadlineSeconds")
    if new_value is not None:
        number = _as_int(new_value)
        if number is None or not 0 <= number <= INT32_MAX:
            errs.append(invalid(path, new_value, f"must be between 0 and {INT32_MAX}, inclusive"))
            return False
        old_number = _as_int(old_value)
        if old_number is not None and old_number < number:
            errs.append(invalid(path, number, "must be less than or equal to previous value"))
            return False
    elif old_value is not None:
        errs.append(invalid(path, None, "must not update from a positive integer to nil value"))
    return True


def _with_allowed_changes(old_spec: dict, new_spec: dict) -> dict:
    result = copy.deepcopy(old_spec)
    for field in ("containers", "initContainers"):
        new_list, old_list = new_spec.get(field), result.get(field)
        if isinstance(new_list, list) and isinstance(old_list, list) \
                and len(new_list) == len(old_list):
            for new_ctr, old_ctr in zip(new_list, old_list):
                if isinstance(new_ctr, dict) and isinstance(old_ctr, dict) \
                        and "image" in new_ctr:
                    old_ctr["image"] = new_ctr["image"]
    for field in ("activeDeadlineSeconds",):
        if field in new_spec:
            result[field] = new_spec[field]
        else:
            result.pop(field, None)
    # Tolerations are checked on their own (_check_only_added_tolerations).
    if "tolerations" in new_spec:
        result["tolerations"] = new_spec["tolerations"]
    else:
        result.pop("tolerations", None)
    grace_old = _as_int(old_spec.get("terminationGracePeriodSeconds"))
    if grace_old is not None and grace_old < 0 \
            and _as_int(new_spec.get("terminationGracePeriodSeconds")) == 1:
        result["terminationGracePeriodSeconds"] = new_spec["terminationGracePeriodSeconds"]
    return result


def _check_only_added_tolerations(errs: list, new_spec: dict, old_spec: dict) -> None:
    """Tolerations may be added (a taint manager may then leave the pod
    alone); an existing one may change only its tolerationSeconds
    (validateOnlyAddedTolerations)."""
    new_tol = new_spec.get("tolerations") if isinstance(new_spec.get("tolerations"), list) else []
    old_tol = old_spec.get("tolerations") if isinstance(old_spec.get("tolerations"), list) else []

    def without_seconds(tol):
        return {k: v for k, v in tol.items() if k != "tolerationSeconds"} \
            if isinstance(tol, dict) else tol
    kept = [without_seconds(t) for t in new_tol]
    if any(without_seconds(t) not in kept for t in old_tol):
        errs.append(forbidden("spec.tolerations",
                              "existing toleration can not be modified except its tolerationSeconds"))


def _differences(a, b, path: str, limit: int = 5) -> list[tuple[str, object, object]]:
    """The first few paths where a and b differ, to show in the message."""
    out: list = []
    stack = [(a, b, path)]
    while stack and len(out) < limit:
        x, y, p = stack.pop(0)
        if isinstance(x, dict) and isinstance(y, dict):
            for k in list(x) + [k for k in y if k not in x]:
                if x.get(k) != y.get(k):
                    stack.append((x.get(k), y.get(k), f"{p}.{k}"))
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (xi, yi) in enumerate(zip(x, y)):
                if xi != yi:
                    stack.append((xi, yi, index(p, i)))
        else:
            out.append((p, x, y))
    return out


def _describe(changes) -> str:
    return "\n".join(f"  {p}: {format_value(old)} -> {format_value(new)}"
                     for p, old, new in changes)


# ----------------------------------------------------------------- status

def validate_pod_status(new: dict, old: dict | None = None) -> list[FieldError]:
    """What the kubelet and scheduler write: the phase, IPs, the nominated node."""
    errs: list[FieldError] = []
    status = _get_dict(errs, new.get("status"), "status") or {}
    phase = _get_str(errs, status.get("phase"), "status.phase")
    if phase and phase not in POD_PHASES:
        errs.append(not_supported("status.phase", phase, POD_PHASES))
    # Kubernetes keeps no podIP of its own: a lone podIP becomes podIPs[0],
    # and a bad IP is reported at its list index. A lone hostIP it does not
    # check at all; that check (at status.hostIP) is ours.
    pod_ip = _get_str(errs, status.get("podIP"), "status.podIP")
    if pod_ip and not status.get("podIPs") and not is_ip(pod_ip):
        errs.append(invalid("status.podIPs[0]", pod_ip, IP_MSG))
    host_ip = _get_str(errs, status.get("hostIP"), "status.hostIP")
    if host_ip and not is_ip(host_ip):
        errs.append(invalid("status.hostIP", host_ip, IP_MSG))
    for plural in ("podIPs", "hostIPs"):
        for _, item_path, item in _items(errs, status.get(plural), f"status.{plural}", "IPs"):
            ip = _get_str(errs, item.get("ip"), f"{item_path}.ip")
            if ip is not None and not is_ip(ip):
                errs.append(invalid(item_path, ip, IP_MSG))
    for field in ("conditions", "containerStatuses", "initContainerStatuses"):
        for _ in _items(errs, status.get(field), f"status.{field}", field):
            pass
    for field in ("message", "reason", "nominatedNodeName", "startTime", "qosClass"):
        _get_str(errs, status.get(field), f"status.{field}")
    return errs
