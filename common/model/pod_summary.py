"""READY, STATUS and RESTARTS of `kubectl get pods`, worked out from a pod's status.

STATUS is not a field of the pod. A pod's phase is coarse (Pending, Running,
Succeeded, Failed); what a person wants to know is *why*: the image is still
being pulled (ContainerCreating), the app keeps crashing (CrashLoopBackOff),
an init container failed (Init:Error). Kubernetes computes that summary from
the container statuses the kubelet reports, in a fixed order of precedence
(printPod in kubectl's printers.go), and so do we, once, here: the API
server's Table (02-apiserver/kubectl_compat/pod_printer.py) and chapter 01's
own `get_pods.py` both print it, so a learner's pod reads the same in both
and as it would on a real cluster.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from common.model.lenient import as_dict, as_int, as_str, dicts, dig, parse_time

TERMINAL_PHASES = ("Succeeded", "Failed")


class PodSummary(NamedTuple):
    ready: int                      # containers ready (sidecars count)
    total: int                      # containers (sidecars count)
    status: str                     # the STATUS column
    restarts: int
    last_restart: datetime | None


# [START pod-status]
def summarize(pod: dict) -> PodSummary:
    """READY, STATUS and RESTARTS of a pod, from its spec and status."""
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
    return PodSummary(ready, total, reason, restarts, last_restart)
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
