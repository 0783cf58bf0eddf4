"""The cells of `kubectl get pods`: READY, STATUS and RESTARTS from a pod's status.

STATUS is not a field of the pod: it is worked out from the container
statuses the kubelet reports, as kubectl's printPod does, in
common/model/pod_summary.py (chapter 01's get_pods.py prints the same).
"""
from __future__ import annotations

from datetime import datetime

from common.model.pod_summary import summarize
from .printer_formats import NONE, as_dict, as_str, dicts, dig, human_duration, since

TERMINAL_PHASES = ("Succeeded", "Failed")


# [START pod-cells]
def pod_cells(pod: dict, now: datetime) -> list:
    """NAME, READY, STATUS, RESTARTS, AGE, then the -o wide IP, NODE, NOMINATED NODE, READINESS GATES."""
    spec, status = as_dict(pod.get("spec")), as_dict(pod.get("status"))
    ready, total, reason, restarts, last_restart = summarize(pod)
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text += f" ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = dicts(status.get("podIPs"))
    ip = (as_str(pod_ips[0].get("ip")) if pod_ips else "") or as_str(status.get("podIP"))
    return [as_str(dig(pod, "metadata", "name")), f"{ready}/{total}", reason, restarts_text,
            since(dig(pod, "metadata", "creationTimestamp"), now),
            ip or NONE, as_str(spec.get("nodeName")) or NONE,
            as_str(status.get("nominatedNodeName")) or NONE, readiness_gates(pod)]
# [END pod-cells]


def readiness_gates(pod: dict) -> str:
    """ "1/2": extra conditions (set by e.g. a load balancer controller) that must hold."""
    gates = dicts(dig(pod, "spec", "readinessGates"))
    if not gates:
        return NONE
    conditions = {}
    for condition in dicts(dig(pod, "status", "conditions")):
        conditions.setdefault(condition.get("type"), condition.get("status"))   # the first one counts
    passed = sum(conditions.get(gate.get("conditionType")) == "True" for gate in gates)
    return f"{passed}/{len(gates)}"


def row_conditions(pod: dict) -> list[dict]:
    """Marks a finished pod's row Completed, so a client may dim or hide it."""
    phase = dig(pod, "status", "phase")
    if phase not in TERMINAL_PHASES:
        return []
    message = "The pod ran to completion." if phase == "Succeeded" else "The pod failed."
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]
