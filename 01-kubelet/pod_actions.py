"""Compare one pod's desired spec with its Docker containers; decide what to do.

This is the heart of the kubelet's reconcile loop, named after
computePodActions in Kubernetes' kuberuntime_manager.go. It only decides;
kubelet.py carries the actions out. Because the decision rests on nothing
but the pod (its spec, and whether the API server has it finished),
Docker's labels and a few back-off timers, a kubelet that was killed at
any moment decides the same thing when it comes back.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import pod_config as cfg
from common.client.backoff import Backoff
from docker_runtime import ContainerInfo
from pod_status import Waiting, finished_in_api, latest_two

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
    kill_pod: bool = False                     # done for good: stop whatever still runs (sidecars)
    kill: list[tuple[ContainerInfo, str]] = field(default_factory=list)   # (container, why)
    start: list[Start] = field(default_factory=list)    # in this order (init containers one at a time)
    remove: list[ContainerInfo] = field(default_factory=list)             # no longer needed
    waiting: dict[str, Waiting] = field(default_factory=dict)             # name -> why it waits
    # A probe's own terminationGracePeriodSeconds, for the containers it kills.
    kill_grace: dict[str, int] = field(default_factory=dict)              # container id -> seconds

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
                        probes: ProbeResults, crash_backoff: Backoff,
                        start_backoff: Backoff, now: float | None = None) -> PodActions:
    """Compare the pod's spec with what runs; say what to do, do nothing."""
    now = time.time() if now is None else now
    if finished_in_api(pod):                  # Succeeded or Failed: it never runs again
        return _leave_finished(containers)
    actions = PodActions()
    sandboxes = sorted((c for c in containers if c.name == cfg.SANDBOX_NAME), key=_order, reverse=True)
    sandbox = sandboxes[0] if sandboxes else None
    sandbox_ok = bool(sandbox and sandbox.running and sandbox.hash == cfg.sandbox_hash(pod))
    actions.remove += sandboxes[1:]            # leftovers of earlier attempts

    apps = [c for c in containers if c.name != cfg.SANDBOX_NAME]
    # Init containers first; the app containers wait until they are done.
    initialized = plan_init_containers(pod, apps, sandbox if sandbox_ok else None, actions, probes,
                                       crash_backoff, now)
    for container in pod["spec"]["containers"] if initialized else []:
        start = plan_container(pod, container, apps, sandbox if sandbox_ok else None, actions,
                               probes, crash_backoff, now)
        if start:
            actions.start.append(start)
    if initialized:
        _finish_with_sidecars(pod, apps, actions)
    _hold_back_failed_starts(actions, waiting, start_backoff)

    # Containers no longer in the spec (edited out of the manifest) go.
    names = {c["name"] for c in pod["spec"]["containers"] + init_containers(pod)}
    for stray in (c for c in apps if c.name not in names):
        if stray.running:
            actions.kill.append((stray, "no longer in the pod's spec"))
        actions.remove.append(stray)
    plan_sandbox(pod, sandbox, sandbox_ok, apps, waiting, start_backoff, actions)
    return actions
# [END compute-pod-actions]


def _leave_finished(containers: list[ContainerInfo]) -> PodActions:
    """A pod the API server has as Succeeded or Failed is done for good,
    whatever became of its containers (removed by hand, or by a clean-up):
    as Kubernetes' kubelet refuses a terminal pod's way back, nothing is
    started again, and whatever still runs is stopped."""
    running = [c for c in containers if c.running]
    return PodActions(kill=[(c, "the pod has finished") for c in running if c.name != cfg.SANDBOX_NAME],
                      stop_sandbox=any(c.name == cfg.SANDBOX_NAME for c in running))


def _hold_back_failed_starts(actions: PodActions, waiting: dict[str, Waiting], start_backoff: Backoff) -> None:
    """A start whose last attempt failed before anything ran (a pull, a
    config error) waits out its back-off instead."""
    for start in list(actions.start):
        before = waiting.get(start.container["name"])
        if _held_back(before, start.backoff_key, start_backoff):
            reason = "ImagePullBackOff" if before.reason == "ErrImagePull" else before.reason
            actions.waiting[start.container["name"]] = Waiting(reason, before.message, before.since, before.hash)
            actions.start.remove(start)


# [START plan-container]
def plan_container(pod: dict, container: dict, apps: list[ContainerInfo], sandbox: ContainerInfo | None,
                   actions: PodActions, probes: ProbeResults, crash_backoff: Backoff,
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
        kill = _why_kill(pod, container, current, sandbox, probes)
        if kill is None:
            return None                        # running as specified: nothing to do
        _kill(actions, current, kill)
        if policy == "Never" and kill.cause != SPEC_CHANGED:
            return None                        # stopped for good
        return Start(container, current.restart_count + 1, after_crash=kill.cause == PROBE_FAILED, backoff_key=key)
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
    are all done for good no longer needs one (nor its sidecars)."""
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
    elif sandbox_ok and (actions.kill_pod or not (actions.start or actions.waiting or actions.kill or still_running)):
        # Done for good; what still runs (sidecars) is stopped, after the
        # others and in reverse order (pod_worker.stop_all).
        actions.kill += [(c, "the pod has finished") for c in still_running]
        actions.stop_sandbox = True
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
    cause: str          # SANDBOX_CHANGED, SPEC_CHANGED or PROBE_FAILED: what decides the restart
    message: str        # what the log and the Event say
    grace: int | None = None   # the failed probe's terminationGracePeriodSeconds, if it sets one


def _kill(actions: PodActions, container: ContainerInfo, kill: Kill) -> None:
    actions.kill.append((container, kill.message))
    if kill.grace is not None:
        actions.kill_grace[container.id] = kill.grace


SANDBOX_CHANGED, SPEC_CHANGED, PROBE_FAILED = "sandbox changed", "spec changed", "probe failed"


# [START why-kill]
def _why_kill(pod: dict, container: dict, current: ContainerInfo, sandbox: ContainerInfo | None,
              probes: ProbeResults) -> Kill | None:
    """Why a running container must be stopped now, or None. First: is it
    in the pod's current sandbox? Its label remembers the sandbox it
    joined; a new sandbox is a new network namespace, so it restarts there."""
    if sandbox is None or current.sandbox_id != sandbox.id:
        return Kill(SANDBOX_CHANGED, "the pod's sandbox changed")
    if current.hash != cfg.container_hash(pod, container):
        return Kill(SPEC_CHANGED, "its spec changed")
    # A probe may shorten the grace period of the kill it causes (a stuck
    # app need not get the pod's full grace); Kubernetes' probe-level
    # terminationGracePeriodSeconds.
    if current.id in probes.failed_startup:
        return Kill(PROBE_FAILED, f"Startup probe failed: {probes.failed_startup[current.id]}",
                    (container.get("startupProbe") or {}).get("terminationGracePeriodSeconds"))
    if current.id in probes.failed_liveness:
        return Kill(PROBE_FAILED, f"Liveness probe failed: {probes.failed_liveness[current.id]}",
                    (container.get("livenessProbe") or {}).get("terminationGracePeriodSeconds"))
    return None
# [END why-kill]


@dataclass
class ProbeResults:
    """What the probes found, by container id, for the decisions."""
    failed_liveness: dict[str, str] = field(default_factory=dict)   # -> why
    failed_startup: dict[str, str] = field(default_factory=dict)    # -> why
    # Containers with a startupProbe that has not succeeded yet: not
    # "started", so a sidecar among them still holds back the next one.
    not_started: set[str] = field(default_factory=set)


# --- init containers ----------------------------------------------------------

def init_containers(pod: dict) -> list[dict]:
    return pod["spec"].get("initContainers") or []


def is_sidecar(container: dict) -> bool:
    """A sidecar is an init container with restartPolicy Always (1.29+):
    started in order like the others, but kept running beside the app."""
    return container.get("restartPolicy") == "Always"


# [START plan-init-containers]
def plan_init_containers(pod: dict, apps: list[ContainerInfo], sandbox: ContainerInfo | None,
                         actions: PodActions, probes: ProbeResults, crash_backoff: Backoff, now: float) -> bool:
    """Init containers run one at a time, in order, each to success before
    the next (a sidecar: until it has started). True once they all have,
    in this sandbox: the app containers may run (computeInitContainerActions)."""
    specs = init_containers(pod)
    if not specs:
        return True
    if sandbox is None:             # a new sandbox starts from the first init container
        if not _pod_is_finished(pod, apps):
            actions.start.append(_first_start(pod, specs[0], apps))
        return False
    # An app container in this sandbox means initialization was done: then
    # only sidecars still need care (a restart when they exit).
    initialized = any(c.sandbox_id == sandbox.id for c in apps if c.name in _app_names(pod))
    for spec in specs:
        if is_sidecar(spec):
            if not plan_sidecar(pod, spec, apps, sandbox, actions, probes, crash_backoff, now) and not initialized:
                return False
        elif not initialized and not _init_done(pod, spec, apps, sandbox, actions, crash_backoff, now):
            return False
    return True
# [END plan-init-containers]


def _init_done(pod: dict, spec: dict, apps: list[ContainerInfo], sandbox: ContainerInfo, actions: PodActions,
               crash_backoff: Backoff, now: float) -> bool:
    """Has this (regular) init container succeeded in this sandbox? If not,
    start it, wait for it, or give up on the pod (restartPolicy Never)."""
    name, key = spec["name"], cfg.backoff_key(pod, spec)
    current, previous = latest_two(apps, name)
    actions.remove += [c for c in apps if c.name == name and c not in (current, previous)]
    if current is None or current.sandbox_id != sandbox.id:
        actions.start.append(_first_start(pod, spec, apps))
        return False
    if current.running:
        return False                                  # still at work
    if current.never_started:                         # the kubelet died between create and start
        actions.remove.append(current)
        actions.start.append(Start(spec, current.restart_count, after_crash=False, backoff_key=key))
        return False
    if current.exit_code == 0 and not current.error:
        return True
    if pod["spec"].get("restartPolicy", "Always") == "Never":
        actions.kill_pod = True                       # the pod has failed
        return False
    _restart_after_crash(pod, spec, current, key, crash_backoff, now, actions)
    return False


def plan_sidecar(pod: dict, spec: dict, apps: list[ContainerInfo], sandbox: ContainerInfo, actions: PodActions,
                 probes: ProbeResults, crash_backoff: Backoff, now: float) -> bool:
    """Is this sidecar up (running and started)? If not, (re)start it,
    whatever the pod's restartPolicy: a sidecar always restarts."""
    name, key = spec["name"], cfg.backoff_key(pod, spec)
    current, previous = latest_two(apps, name)
    actions.remove += [c for c in apps if c.name == name and c not in (current, previous)]
    if current is None or (current.sandbox_id != sandbox.id and not current.running):
        actions.start.append(_first_start(pod, spec, apps))
        return False
    if current.running:
        kill = _why_kill(pod, spec, current, sandbox, probes)
        if kill is None:
            return current.id not in probes.not_started
        _kill(actions, current, kill)
        actions.start.append(Start(spec, current.restart_count + 1, after_crash=kill.cause == PROBE_FAILED,
                                   backoff_key=key))
        return False
    if current.never_started:
        actions.remove.append(current)
        actions.start.append(Start(spec, current.restart_count, after_crash=False, backoff_key=key))
    else:
        _restart_after_crash(pod, spec, current, key, crash_backoff, now, actions)
    return False


def _finish_with_sidecars(pod: dict, apps: list[ContainerInfo], actions: PodActions) -> None:
    """Sidecars do not keep a pod alive: once no regular container runs or
    will run again, they are not restarted but stopped (KillPod)."""
    sidecars = {c["name"] for c in init_containers(pod) if is_sidecar(c)}
    regular = _app_names(pod)
    killed = [k for k, _ in actions.kill]
    if not sidecars or any(s.container["name"] in regular for s in actions.start) \
            or any(name in regular for name in actions.waiting) \
            or any(c.running and c.name in regular and c not in killed for c in apps):
        return
    actions.start = [s for s in actions.start if s.container["name"] not in sidecars]
    for name in sidecars:
        actions.waiting.pop(name, None)
    actions.kill_pod = True


def _restart_after_crash(pod: dict, spec: dict, current: ContainerInfo, key: cfg.BackoffKey,
                         crash_backoff: Backoff, now: float, actions: PodActions) -> None:
    """An init container or sidecar that exited: start it again, or wait out
    its crash-loop back-off first, as plan_container does for app containers."""
    if crash_backoff.in_backoff_since(key, current.finished_at or now):
        message = _crash_message(pod, spec["name"], crash_backoff.delay(key))
        actions.waiting[spec["name"]] = Waiting("CrashLoopBackOff", message, now, key.spec_hash)
    else:
        actions.start.append(Start(spec, current.restart_count + 1, after_crash=True, backoff_key=key))


def _first_start(pod: dict, spec: dict, apps: list[ContainerInfo]) -> Start:
    """Its first start in this sandbox; the restart count goes on from any
    earlier sandbox's run, as Kubernetes counts it."""
    current, _ = latest_two(apps, spec["name"])
    return Start(spec, current.restart_count + 1 if current else 0, after_crash=False,
                 backoff_key=cfg.backoff_key(pod, spec))


def _app_names(pod: dict) -> set[str]:
    return {c["name"] for c in pod["spec"]["containers"]}


def _pod_is_finished(pod: dict, apps: list[ContainerInfo]) -> bool:
    """Without a sandbox: is the pod done for good, so that no new sandbox
    (and no init container) may start? Under Never, once anything ran;
    under OnFailure, once every app container has succeeded."""
    policy = pod["spec"].get("restartPolicy", "Always")
    if policy == "Never":
        return bool(apps)
    if policy == "OnFailure":
        latest = [latest_two(apps, name)[0] for name in _app_names(pod)]
        return all(c is not None and not c.running and c.exit_code == 0 and not c.error for c in latest)
    return False
