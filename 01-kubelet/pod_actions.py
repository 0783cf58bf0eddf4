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
    backoff_key: tuple


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
    now = time.time() if now is None else now
    spec = pod["spec"]
    policy = spec.get("restartPolicy", "Always")
    actions = PodActions()
    sandboxes = sorted((c for c in containers if c.name == cfg.SANDBOX_NAME), key=_order, reverse=True)
    sandbox = sandboxes[0] if sandboxes else None
    sandbox_ok = bool(sandbox and sandbox.running and sandbox.hash == cfg.sandbox_hash(pod))
    actions.remove += sandboxes[1:]            # leftovers of earlier attempts

    apps = [c for c in containers if c.name != cfg.SANDBOX_NAME]
    for container in spec["containers"]:
        name, key = container["name"], cfg.backoff_key(pod, container)
        current, previous = latest_two(apps, name)
        # Keep the current container and the one before it (for
        # `logs --previous` and lastState); older ones go.
        actions.remove += [c for c in apps if c.name == name and c not in (current, previous)]
        if current is None:
            start = Start(container, 0, False, key)
        elif current.running:
            why = _why_kill(pod, container, current, sandbox if sandbox_ok else None, failed_liveness)
            if why is None:
                continue                       # running as specified: nothing to do
            actions.kill.append((current, why))
            if policy == "Never" and not why.startswith("its spec"):
                continue                       # stopped for good
            start = Start(container, current.restart_count + 1, why.startswith("Liveness"), key)
        elif current.never_started:            # the kubelet died between create and start
            actions.remove.append(current)
            start = Start(container, current.restart_count, False, key)
        elif current.hash != key[2]:           # a new spec runs, whatever the restartPolicy
            start = Start(container, current.restart_count + 1, False, key)
        elif should_restart(policy, current):
            if crash_backoff.in_backoff_since(key, current.finished_at or now):
                actions.waiting[name] = Waiting("CrashLoopBackOff", _crash_message(pod, name, crash_backoff.delay(key)),
                                                now, key[2])
                continue
            start = Start(container, current.restart_count + 1, True, key)
        else:
            continue                           # finished for good under restartPolicy
        before = waiting.get(name)
        if _held_back(before, key, start_backoff):
            reason = "ImagePullBackOff" if before.reason == "ErrImagePull" else before.reason
            actions.waiting[name] = Waiting(reason, before.message, before.since, before.hash)
            continue
        actions.start.append(start)

    # Containers no longer in the spec (edited out of the manifest) go.
    names = {c["name"] for c in spec["containers"]}
    for stray in (c for c in apps if c.name not in names):
        if stray.running:
            actions.kill.append((stray, "no longer in the pod's spec"))
        actions.remove.append(stray)

    still_running = [c for c in apps if c.running and c not in (k for k, _ in actions.kill)]
    if actions.start and not sandbox_ok:
        failed = waiting.get(cfg.SANDBOX_NAME)
        key = (pod["metadata"]["uid"], cfg.SANDBOX_NAME, cfg.sandbox_hash(pod))
        if _held_back(failed, key, start_backoff):   # the last sandbox failed: wait
            for start in actions.start:
                actions.waiting[start.container["name"]] = Waiting("ContainerCreating", failed.message, failed.since)
            actions.start = []
            return actions
        # A new sandbox is a new network namespace: everything restarts in it.
        actions.create_sandbox = True
        actions.sandbox_attempt = sandbox.restart_count + 1 if sandbox else 0
        actions.kill += [(c, "the pod's sandbox changed") for c in still_running]
        if sandbox:
            actions.remove.append(sandbox)
    elif sandbox_ok and not (actions.start or actions.waiting or actions.kill or still_running):
        actions.stop_sandbox = True            # every container is done for good
    return actions
# [END compute-pod-actions]


def _held_back(failure: Waiting | None, key: tuple, start_backoff: Backoff) -> bool:
    """Did the last attempt to start this very spec fail, and is its
    back-off still running?"""
    return (failure is not None and failure.reason in START_FAILURES and failure.hash == key[2]
            and start_backoff.in_backoff_since(key, failure.since))


def _crash_message(pod: dict, name: str, delay: float) -> str:
    meta = pod["metadata"]
    return f"back-off {delay:g}s restarting failed container={name} pod={meta['name']}_{meta['namespace']}({meta['uid']})"


def _why_kill(pod: dict, container: dict, current: ContainerInfo, sandbox: ContainerInfo | None,
              failed_liveness: dict[str, str]) -> str | None:
    if sandbox is None or current.sandbox_id != sandbox.id:
        return "the pod's sandbox changed"
    if current.hash != cfg.container_hash(pod, container):
        return "its spec changed"
    if current.id in failed_liveness:
        return f"Liveness probe failed: {failed_liveness[current.id]}"
    return None
