"""Compare one pod's desired spec with its Docker containers; decide what to do.

This is the heart of the kubelet's reconcile loop, named after
computePodActions in Kubernetes' kuberuntime_manager.go. It only decides;
kubelet.py carries the actions out. Because the decision rests on nothing
but the spec, Docker's labels and a few back-off timers, a kubelet that was
killed at any moment decides the same thing when it comes back.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import pod_config as cfg
from common.backoff import Backoff
from docker_runtime import ContainerInfo
from pod_status import Waiting, latest_two

# Failures before a container exists; retried with back-off.
START_FAILURES = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull",
                  "CreateContainerConfigError", "CreateContainerError", "FailedCreatePodSandBox")


@dataclass
class Start:
    container: dict       # the container's spec
    restart_count: int
    after_crash: bool     # counts toward the crash-loop back-off
    backoff_key: cfg.BackoffKey


@dataclass
class PodActions:
    create_sandbox: bool = False
    sandbox_attempt: int = 0
    stop_sandbox: bool = False                 # the pod has finished: release its network
    kill: list[tuple[ContainerInfo, str]] = field(default_factory=list)   # (container, why)
    start: list[Start] = field(default_factory=list)
    remove: list[ContainerInfo] = field(default_factory=list)             # no longer needed
    waiting: dict[str, Waiting] = field(default_factory=dict)             # name -> why it waits

    def __bool__(self) -> bool:
        return bool(self.create_sandbox or self.stop_sandbox or self.kill or self.start or self.remove)


def should_restart(policy: str, container: ContainerInfo) -> bool:
    """restartPolicy for a container that has stopped."""
    if policy == "Always":
        return True
    failed = container.exit_code != 0 or bool(container.error)
    return policy == "OnFailure" and failed


def _order(c: ContainerInfo):
    return (c.restart_count, c.created)


# [START compute-pod-actions]
def compute_pod_actions(pod: dict, containers: list[ContainerInfo], waiting: dict[str, Waiting],
                        failed_liveness: dict[str, str], crash_backoff: Backoff,
                        start_backoff: Backoff, now: float | None = None) -> PodActions:
    """Compare the pod's spec with what runs; say what to do, do nothing."""
    now = time.time() if now is None else now
    actions = PodActions()
    sandboxes = sorted((c for c in containers if c.name == cfg.SANDBOX_NAME), key=_order, reverse=True)
    sandbox = sandboxes[0] if sandboxes else None
    sandbox_ok = bool(sandbox and sandbox.running and sandbox.hash == cfg.sandbox_hash(pod))
    actions.remove += sandboxes[1:]            # leftovers of earlier attempts

    apps = [c for c in containers if c.name != cfg.SANDBOX_NAME]
    for container in pod["spec"]["containers"]:
        start = plan_container(pod, container, apps, sandbox if sandbox_ok else None, actions,
                               failed_liveness, crash_backoff, now)
        before = waiting.get(container["name"])
        if start and _held_back(before, start.backoff_key, start_backoff):
            reason = "ImagePullBackOff" if before.reason == "ErrImagePull" else before.reason
            actions.waiting[container["name"]] = Waiting(reason, before.message, before.since, before.hash)
        elif start:
            actions.start.append(start)

    # Containers no longer in the spec (edited out of the manifest) go.
    names = {c["name"] for c in pod["spec"]["containers"]}
    for stray in (c for c in apps if c.name not in names):
        if stray.running:
            actions.kill.append((stray, "no longer in the pod's spec"))
        actions.remove.append(stray)
    plan_sandbox(pod, sandbox, sandbox_ok, apps, waiting, start_backoff, actions)
    return actions
# [END compute-pod-actions]


# [START plan-container]
def plan_container(pod: dict, container: dict, apps: list[ContainerInfo], sandbox: ContainerInfo | None,
                   actions: PodActions, failed_liveness: dict[str, str], crash_backoff: Backoff,
                   now: float) -> Start | None:
    """One container of the spec: the Start it needs, or None. Kills,
    removals and crash-loop waits go into `actions` on the way."""
    name, key = container["name"], cfg.backoff_key(pod, container)
    policy = pod["spec"].get("restartPolicy", "Always")
    current, previous = latest_two(apps, name)
    # Keep the current container and the one before it (for
    # `logs --previous` and lastState); older ones go.
    actions.remove += [c for c in apps if c.name == name and c not in (current, previous)]
    if current is None:
        return Start(container, restart_count=0, after_crash=False, backoff_key=key)
    if current.running:
        kill = _why_kill(pod, container, current, sandbox, failed_liveness)
        if kill is None:
            return None                        # running as specified: nothing to do
        actions.kill.append((current, kill.message))
        if policy == "Never" and kill.cause != SPEC_CHANGED:
            return None                        # stopped for good
        return Start(container, current.restart_count + 1, after_crash=kill.cause == LIVENESS_FAILED, backoff_key=key)
    if current.never_started:                  # the kubelet died between create and start
        actions.remove.append(current)
        return Start(container, current.restart_count, after_crash=False, backoff_key=key)
    if current.hash != key.spec_hash:          # a new spec runs, whatever the restartPolicy
        return Start(container, current.restart_count + 1, after_crash=False, backoff_key=key)
    if not should_restart(policy, current):
        return None                            # finished for good under restartPolicy
    if crash_backoff.in_backoff_since(key, current.finished_at or now):
        message = _crash_message(pod, name, crash_backoff.delay(key))
        actions.waiting[name] = Waiting("CrashLoopBackOff", message, now, key.spec_hash)
        return None
    return Start(container, current.restart_count + 1, after_crash=True, backoff_key=key)
# [END plan-container]


# [START plan-sandbox]
def plan_sandbox(pod: dict, sandbox: ContainerInfo | None, sandbox_ok: bool, apps: list[ContainerInfo],
                 waiting: dict[str, Waiting], start_backoff: Backoff, actions: PodActions) -> None:
    """Containers to start need a running sandbox; a pod whose containers
    are all done for good no longer needs one."""
    killed = [k for k, _ in actions.kill]
    still_running = [c for c in apps if c.running and c not in killed]
    if actions.start and not sandbox_ok:
        failed = waiting.get(cfg.SANDBOX_NAME)
        key = cfg.BackoffKey(pod["metadata"]["uid"], cfg.SANDBOX_NAME, cfg.sandbox_hash(pod))
        if _held_back(failed, key, start_backoff):   # the last sandbox failed: wait
            for start in actions.start:
                actions.waiting[start.container["name"]] = Waiting("ContainerCreating", failed.message, failed.since)
            actions.start = []
            return
        # A new sandbox is a new network namespace: everything restarts in it.
        actions.create_sandbox = True
        actions.sandbox_attempt = sandbox.restart_count + 1 if sandbox else 0
        actions.kill += [(c, "the pod's sandbox changed") for c in still_running]
        if sandbox:
            actions.remove.append(sandbox)
    elif sandbox_ok and not (actions.start or actions.waiting or actions.kill or still_running):
        actions.stop_sandbox = True            # every container is done for good
# [END plan-sandbox]


def _held_back(failure: Waiting | None, key: cfg.BackoffKey, start_backoff: Backoff) -> bool:
    """Did the last attempt to start this very spec fail, and is its
    back-off still running?"""
    return (failure is not None and failure.reason in START_FAILURES and failure.hash == key.spec_hash
            and start_backoff.in_backoff_since(key, failure.since))


def _crash_message(pod: dict, name: str, delay: float) -> str:
    meta = pod["metadata"]
    return f"back-off {delay:g}s restarting failed container={name} pod={meta['name']}_{meta['namespace']}({meta['uid']})"


class Kill(NamedTuple):
    cause: str          # SANDBOX_CHANGED, SPEC_CHANGED or LIVENESS_FAILED: what decides the restart
    message: str        # what the log and the Event say


SANDBOX_CHANGED, SPEC_CHANGED, LIVENESS_FAILED = "sandbox changed", "spec changed", "liveness failed"


def _why_kill(pod: dict, container: dict, current: ContainerInfo, sandbox: ContainerInfo | None,
              failed_liveness: dict[str, str]) -> Kill | None:
    if sandbox is None or current.sandbox_id != sandbox.id:
        return Kill(SANDBOX_CHANGED, "the pod's sandbox changed")
    if current.hash != cfg.container_hash(pod, container):
        return Kill(SPEC_CHANGED, "its spec changed")
    if current.id in failed_liveness:
        return Kill(LIVENESS_FAILED, f"Liveness probe failed: {failed_liveness[current.id]}")
    return None
