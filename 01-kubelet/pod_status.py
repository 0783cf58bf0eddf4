"""Pod status as Kubernetes reports it, computed from what Docker shows.

A pure function of its inputs: the pod's spec, its Docker containers, what
the kubelet remembers about containers it could not start (waiting
reasons), and the readiness probes' results. The phase rule is the
kubelet's own (getPhase in kubelet_pods.go), simplified where noted.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from common.model.qos import qos_class     # the API server's rule too: one rule, one place
from common import times
from docker_runtime import ContainerInfo


@dataclass
class Waiting:
    """Why a container is not running, when Docker alone cannot tell:
    ErrImagePull, ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError..."""
    reason: str
    message: str
    since: float
    hash: str = ""   # the spec it happened to: a changed spec is not held back by it


def rfc3339(moment: float | None) -> str | None:
    """A container's time as Kubernetes writes it; None (never happened) stays None."""
    return None if moment is None else times.rfc3339(moment)


def latest_two(containers: list[ContainerInfo], name: str) -> tuple[ContainerInfo | None, ContainerInfo | None]:
    """The current container of that name and the one before it."""
    mine = sorted((c for c in containers if c.name == name),
                  key=lambda c: (c.restart_count, c.created), reverse=True)
    return (mine[0] if mine else None), (mine[1] if len(mine) > 1 else None)


def terminated(container: ContainerInfo) -> dict:
    if container.error:
        reason = "StartError"
    elif container.oom_killed:
        reason = "OOMKilled"
    else:
        reason = "Completed" if container.exit_code == 0 else "Error"
    state = {"exitCode": container.exit_code if not container.error else 128, "reason": reason,
             "startedAt": rfc3339(container.started_at), "finishedAt": rfc3339(container.finished_at),
             "containerID": f"docker://{container.id}"}
    if container.error:
        state["message"] = container.error
    return {"terminated": state}


@dataclass
class Starting:
    """Running containers that have not "started" in Kubernetes' sense."""
    hooks: frozenset = frozenset()     # names: their postStart hook still runs, shown as still being created
    probes: frozenset = frozenset()    # their startupProbe has not succeeded yet: started false, not ready
    # What a container that has not run yet waits for: ContainerCreating,
    # or PodInitializing in a pod with init containers (as the kubelet says).
    reason: str = "ContainerCreating"


def container_status(spec: dict, containers: list[ContainerInfo], waiting: Waiting | None,
                     ready: dict[str, bool], starting: Starting = Starting()) -> dict:
    """One entry of status.containerStatuses."""
    current, previous = latest_two(containers, spec["name"])
    status = {"name": spec["name"], "image": spec["image"], "imageID": "",
              "restartCount": current.restart_count if current else 0,
              "ready": False, "started": False, "state": {}, "lastState": {}}
    if current is not None:
        status["containerID"] = f"docker://{current.id}"
        status["imageID"] = f"docker://{current.image_id}"
    if current is not None and current.running and spec["name"] not in starting.hooks:
        status["state"] = {"running": {"startedAt": rfc3339(current.started_at)}}
        status["started"] = current.id not in starting.probes
        # Without a readiness probe a started container is ready.
        status["ready"] = status["started"] and ready.get(current.id, "readinessProbe" not in spec)
        if previous is not None and not previous.never_started:
            status["lastState"] = terminated(previous)
    elif waiting is not None or current is None or current.never_started or current.running:
        reason = waiting.reason if waiting else starting.reason
        status["state"] = {"waiting": {"reason": reason, **({"message": waiting.message} if waiting else {})}}
        if current is not None and not current.never_started:
            status["lastState"] = terminated(current)
    else:
        status["state"] = terminated(current)
        if previous is not None and not previous.never_started:
            status["lastState"] = terminated(previous)
    return status


def init_container_status(spec: dict, containers: list[ContainerInfo], waiting: Waiting | None,
                          ready: dict[str, bool], starting: Starting) -> dict:
    """One entry of status.initContainerStatuses: a container status, but a
    regular init container that succeeded is ready (its job is done)."""
    status = container_status(spec, containers, waiting, ready, starting)
    if spec.get("restartPolicy") != "Always":
        status["ready"] = status["state"].get("terminated", {}).get("exitCode", 1) == 0
    return status


# [START pod-phase]
def pod_phase(spec: dict, statuses: list[dict]) -> str:
    """Pending until every container has started once; then Running while
    any runs or will be restarted; Succeeded or Failed once all have
    stopped for good under the pod's restartPolicy."""
    running = waiting = stopped = succeeded = 0
    for status in statuses:
        state = status["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        elif "terminated" in status["lastState"]:   # waiting to restart
            stopped += 1
        else:                                       # waiting, never ran
            waiting += 1
    policy = spec.get("restartPolicy", "Always")
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if policy == "Always":
        return "Running"    # stopped containers are about to restart
    if stopped == succeeded:
        return "Succeeded"
    return "Failed" if policy == "Never" else "Running"
# [END pod-phase]


def init_phase(spec: dict, init_statuses: list[dict]) -> str | None:
    """What the init containers say of the phase (getPhase): Failed when
    one failed under restartPolicy Never, Pending while one has yet to
    succeed (a sidecar: to start); None once they have had their say."""
    failed = pending = False
    for container, status in zip(spec.get("initContainers") or [], init_statuses):
        state, last = status["state"], status["lastState"]
        if container.get("restartPolicy") == "Always":      # a sidecar: it need only have started
            pending |= ("running" in state and not status["started"]) or \
                ("waiting" in state and "terminated" not in last)
        elif "terminated" in state:
            failed |= state["terminated"]["exitCode"] != 0
        elif "waiting" in state and "terminated" in last:
            failed |= last["terminated"]["exitCode"] != 0
        else:
            pending = True
    if failed and spec.get("restartPolicy", "Always") == "Never":
        return "Failed"
    return "Pending" if pending else None


def initialized_condition(spec: dict, phase: str, init_statuses: list[dict], statuses: list[dict]) -> tuple:
    """(status, reason, message) of the Initialized condition."""
    incomplete = []
    for container, status in zip(spec.get("initContainers") or [], init_statuses):
        if container.get("restartPolicy") == "Always":
            done = status["started"]
        else:
            done = status["state"].get("terminated", {}).get("exitCode", 1) == 0
        if not done:
            incomplete.append(container["name"])
    if phase == "Succeeded":
        return ("True", "PodCompleted", None)
    # An app container that has run means the pod was initialized (its
    # sidecars may be restarting since).
    if not incomplete or any("running" in s["state"] or "terminated" in s["state"] for s in statuses):
        return ("True", None, None)
    return ("False", "ContainersNotInitialized", f"containers with incomplete status: [{' '.join(incomplete)}]")


def conditions(phase: str, statuses: list[dict], previous: list[dict], now: float,
               initialized: tuple = ("True", None, None)) -> list[dict]:
    """PodScheduled, Initialized, ContainersReady, Ready; a condition's
    lastTransitionTime moves only when its status flips. statuses: the app
    containers' and the sidecars' (both count for readiness)."""
    unready = [s["name"] for s in statuses if not s["ready"]]
    if phase in ("Succeeded", "Failed"):
        ready = ("False", "PodCompleted", None)
    elif unready:
        ready = ("False", "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]")
    else:
        ready = ("True", None, None)
    wanted = [("PodScheduled", ("True", None, None)), ("Initialized", initialized),
              ("ContainersReady", ready), ("Ready", ready)]
    before = {c["type"]: c for c in previous}
    result = []
    for kind, (status, reason, message) in wanted:
        old = before.get(kind)
        since = old["lastTransitionTime"] if old and old["status"] == status else rfc3339(now)
        condition = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        result.append(condition)
    return result


def finished_in_api(pod: dict) -> bool:
    """Has the API server the pod as Succeeded or Failed? (A pod from a
    manifest file has no status there.)"""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_status(pod: dict, containers: list[ContainerInfo], waiting: dict[str, Waiting],
               ready: dict[str, bool], pod_ip: str, host_ip: str, start_time: float,
               previous: dict | None = None, now: float | None = None, starting: Starting | None = None) -> dict:
    now = time.time() if now is None else now
    spec = pod["spec"]
    inits = spec.get("initContainers") or []
    starting = starting or Starting()
    if inits:
        starting = Starting(starting.hooks, starting.probes, "PodInitializing")
    statuses = [container_status(c, containers, waiting.get(c["name"]), ready, starting) for c in spec["containers"]]
    init_statuses = [init_container_status(c, containers, waiting.get(c["name"]), ready, starting) for c in inits]
    # Running sidecars count as the pod's containers: for the phase, and for readiness.
    sidecars = [s for c, s in zip(inits, init_statuses) if c.get("restartPolicy") == "Always"]
    phase = init_phase(spec, init_statuses) or pod_phase(spec, statuses + [s for s in sidecars if "running" in s["state"]])
    if finished_in_api(pod) and phase != pod["status"]["phase"]:
        return pod["status"]     # a finished pod's containers went (by hand?): what it had stays true
    initialized = initialized_condition(spec, phase, init_statuses, statuses)
    status = {
        "phase": phase,
        "conditions": conditions(phase, sidecars + statuses, (previous or {}).get("conditions", []), now, initialized),
        "hostIP": host_ip,
        "startTime": rfc3339(start_time),
        "containerStatuses": statuses,
        "qosClass": qos_class(spec),
    }
    if inits:
        status["initContainerStatuses"] = init_statuses
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return status
