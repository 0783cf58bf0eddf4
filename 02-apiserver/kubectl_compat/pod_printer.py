"""The cells of `kubectl get pods`: READY, STATUS and RESTARTS from a pod's status.

STATUS is not a field of the pod. A pod's phase is coarse (Pending, Running,
Succeeded, Failed); what a person wants to know is *why*: the image is still
being pulled (ContainerCreating), the app keeps crashing (CrashLoopBackOff),
an init container failed (Init:Error). Kubernetes computes that summary from
the container statuses the kubelet reports, in a fixed order of precedence,
and so do we, so that a learner's pod reads exactly as it would on a real
cluster.
"""
from __future__ import annotations

from datetime import datetime

from .printer_formats import NONE, as_dict, as_int, as_str, dicts, dig, human_duration, parse_time, since

TERMINAL_PHASES = ("Succeeded", "Failed")


# [START pod-status]
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


def summarize(pod: dict) -> tuple[int, int, str, int, datetime | None]:
    """(ready containers, containers, STATUS text, restarts, time of the last restart)."""
    spec, status = as_dict(pod.get("spec")), as_dict(pod.get("status"))
    # The API server sets phase Pending when a pod is created; a pod with no
    # status at all has simply not been looked at by anyone yet.
    phase = as_str(status.get("phase")) or "Pending"
    reason = as_str(status.get("reason")) or phase
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in dicts(status.get("conditions"))):
        reason = "SchedulingGated"

    init_specs = dicts(spec.get("initContainers"))
    # Sidecars are init containers with restartPolicy Always: they keep
    # running beside the app, so they count as containers of the pod.
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(dicts(spec.get("containers"))) + len(sidecars)
    ready = 0

    # Restarts of every init container matter only while the pod is still
    # initialising; afterwards only sidecars' restarts still count.
    init_restarts, init_last = 0, None
    sidecar_restarts, sidecar_last = 0, None
    initializing = False
    for index, container in enumerate(dicts(status.get("initContainerStatuses"))):
        count, finished = as_int(container.get("restartCount")), _last_finished(container)
        init_restarts, init_last = init_restarts + count, _later(init_last, finished)
        is_sidecar = container.get("name") in sidecars
        if is_sidecar:
            sidecar_restarts, sidecar_last = sidecar_restarts + count, _later(sidecar_last, finished)
        state = as_dict(container.get("state"))
        terminated, waiting = state.get("terminated"), as_dict(state.get("waiting"))
        if isinstance(terminated, dict) and as_int(terminated.get("exitCode")) == 0:
            continue                                  # finished its job
        if is_sidecar and container.get("started") is True:
            ready += container.get("ready") is True
            continue                                  # a sidecar that is up
        # The first init container that is neither done nor up explains the pod.
        initializing = True
        if isinstance(terminated, dict):
            reason = "Init:" + _termination(terminated)
        elif as_str(waiting.get("reason")) not in ("", "PodInitializing"):
            reason = "Init:" + as_str(waiting.get("reason"))
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        break

    restarts, last_restart = init_restarts, init_last
    if not initializing or _condition_true(status, "Initialized"):
        restarts, last_restart = sidecar_restarts, sidecar_last
        any_running = False
        # Backwards, so that when several containers have a story to tell,
        # the first container's wins: it is usually the main one.
        for container in reversed(dicts(status.get("containerStatuses"))):
            restarts += as_int(container.get("restartCount"))
            last_restart = _later(last_restart, _last_finished(container))
            state = as_dict(container.get("state"))
            terminated, waiting = state.get("terminated"), as_dict(state.get("waiting"))
            if as_str(waiting.get("reason")):
                reason = as_str(waiting.get("reason"))   # CrashLoopBackOff, ContainerCreating, ...
            elif isinstance(terminated, dict):
                reason = _termination(terminated)         # Completed, Error, OOMKilled, ...
            elif container.get("ready") is True and isinstance(state.get("running"), dict):
                any_running = True
                ready += 1
        # One container finished while another still runs (a sidecar-style
        # pod): the pod is not Completed.
        if reason == "Completed" and any_running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"

    if dig(pod, "metadata", "deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"       # its node stopped answering; nobody knows its fate
        elif phase not in TERMINAL_PHASES:
            reason = "Terminating"
    return ready, total, reason, restarts, last_restart
# [END pod-status]


def _termination(terminated: dict) -> str:
    """Why a container stopped: its reason, else the signal or exit code."""
    if as_str(terminated.get("reason")):
        return as_str(terminated.get("reason"))
    if as_int(terminated.get("signal")):
        return f"Signal:{as_int(terminated.get('signal'))}"
    return f"ExitCode:{as_int(terminated.get('exitCode'))}"


def _last_finished(container: dict) -> datetime | None:
    """When the container's previous run ended: the moment of its last restart."""
    return parse_time(dig(container, "lastState", "terminated", "finishedAt"))


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return max(a, b)


def _condition_true(status: dict, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in dicts(status.get("conditions")))


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
