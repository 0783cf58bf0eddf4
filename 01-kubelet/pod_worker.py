"""Carrying out one pod's actions: the part of the kubelet that changes things.

compute_pod_actions (pod_actions.py) decides; the functions here act, in a
pod worker thread, so that a slow image pull or a 30-second graceful stop
holds up only its own pod. What went wrong on the way (an image that would
not pull, a port already taken) is remembered as a Waiting reason, which
the next decision and the pod's status both read. What it does and what
fails is also told as Events (Pulling, Pulled, Created, Started, Killing,
Failed, FailedMount), which `kubectl describe pod` lists when the kubelet
has an API server to tell (without one, the recorder drops them).
"""
from __future__ import annotations

import threading
import time

import docker.errors

import pod_config as cfg
import pod_fields
from common.client.backoff import Backoff
from common.client.events import EventRecorder
from common.log import EventLogger
from docker_runtime import ContainerInfo, DockerRuntime, ImagePullError, StartError
from lifecycle_hooks import field_path, run_hook, stop_container, termination_order
from pod_actions import PodActions, Start
from pod_status import Waiting


class WaitingReasons:
    """Why containers wait, per pod: written by pod workers, read by the
    sync loop (for decisions and status), so every access takes the lock."""

    def __init__(self):
        self._reasons: dict[str, dict[str, Waiting]] = {}
        self._lock = threading.Lock()

    def of(self, uid: str) -> dict[str, Waiting]:
        with self._lock:
            return dict(self._reasons.get(uid, {}))

    def set(self, uid: str, name: str, waiting: Waiting) -> None:
        with self._lock:
            self._reasons.setdefault(uid, {})[name] = waiting

    def clear(self, uid: str, name: str) -> None:
        with self._lock:
            self._reasons.get(uid, {}).pop(name, None)

    def keep_only(self, uids: set[str]) -> None:
        with self._lock:
            for uid in [u for u in self._reasons if u not in uids]:
                del self._reasons[uid]


class PodWorker:
    def __init__(self, runtime: DockerRuntime, log: EventLogger, waiting: WaitingReasons,
                 crash_backoff: Backoff, start_backoff: Backoff, pause_image: str, host_ip: str,
                 events: EventRecorder):
        self.runtime, self.log, self.waiting, self.events = runtime, log, waiting, events
        self.crash_backoff, self.start_backoff = crash_backoff, start_backoff
        self.pause_image, self.host_ip = pause_image, host_ip
        # The Services' variables for a pod's containers (chapter 05); alone,
        # without an API server, there are none.
        self.service_env = lambda pod: {}
        # Chapter 02: ConfigMaps and Secrets, for variables (api_objects.EnvResolver)
        # and volumes (volumes.ApiVolumes), both in api_volumes/; kubelet.py
        # sets them when it joins a cluster. Alone there are none.
        self.env_api = None
        self.volumes = None
        self.claims = None                # persistentVolumeClaim volumes (api_volumes/persistent.py), in a cluster
        self.allocatable: dict = {}      # the node's, for resourceFieldRef limits a container leaves unset
        # (pod uid, container name) being started with a postStart hook, until
        # the hook returns: not yet started, as far as the status goes (marked
        # before Docker starts it, so no status can show it running early).
        self.starting: set[tuple[str, str]] = set()

    def apply(self, pod: dict, containers: list[ContainerInfo], actions: PodActions) -> None:
        key = cfg.pod_key(pod)
        self.stop_all(actions.kill, key, pod, overrides=actions.kill_grace)
        for container in actions.remove:
            self.runtime.remove(container.id)
        if actions.stop_sandbox:
            for sandbox in (c for c in containers if c.name == cfg.SANDBOX_NAME and c.running):
                self.runtime.stop(sandbox.id, cfg.grace_period(pod))
            self.log.info("pod finished, sandbox stopped", obj=key)
        if not actions.start and not actions.create_sandbox:
            return
        if self.volumes is not None and not self.volumes.ready(pod):
            return                               # FailedMount: the pod waits in ContainerCreating
        if self.claims is not None and not self.claims.ready(pod):
            return                               # a claim not bound, or bound elsewhere: it waits too
        sandbox = self.ensure_sandbox(pod, containers, actions)
        if sandbox is None:
            return
        sandbox_id, pod_ip = sandbox
        for start in actions.start:
            self.start_container(pod, start, sandbox_id, pod_ip)

    def ensure_sandbox(self, pod: dict, containers: list[ContainerInfo],
                       actions: PodActions) -> tuple[str, str] | None:
        """The pod's sandbox (id, pod IP): the running one, or a new one."""
        host_network = bool(pod["spec"].get("hostNetwork"))
        if not actions.create_sandbox:
            current = next(c for c in containers if c.name == cfg.SANDBOX_NAME and c.running
                           and c not in actions.remove)
            return current.id, self.host_ip if host_network else current.ip
        key, uid = cfg.pod_key(pod), pod["metadata"]["uid"]
        backoff_key = cfg.BackoffKey(uid, cfg.SANDBOX_NAME, cfg.sandbox_hash(pod))
        if actions.sandbox_attempt:          # there was one: it died, or the pod's network changed
            self.events.event(pod, "Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
        try:
            self.runtime.ensure_image(self.pause_image, "IfNotPresent")
            sandbox_id = self.runtime.run_sandbox(pod, self.pause_image, actions.sandbox_attempt)
        except (ImagePullError, docker.errors.APIError) as error:
            message = f"failed to create pod sandbox: {getattr(error, 'explanation', None) or error}"
            self._remember_failure(key, backoff_key, "FailedCreatePodSandBox", message, "sandbox not started")
            self.events.event(pod, "Warning", "FailedCreatePodSandBox", message[0].upper() + message[1:])
            return None
        self.waiting.clear(uid, cfg.SANDBOX_NAME)
        self.start_backoff.forget(backoff_key)
        self.log.info("sandbox started", obj=key, container=sandbox_id[:12])
        return sandbox_id, self.host_ip if host_network else self.runtime.inspect(sandbox_id).ip

    def start_container(self, pod: dict, start: Start, sandbox_id: str, pod_ip: str) -> None:
        """Pull, create and start one container, then run its postStart hook."""
        # Marked before Docker starts it, so that no status shows it running
        # (started) before its postStart hook has returned.
        marker = (pod["metadata"]["uid"], start.container["name"])
        if (start.container.get("lifecycle") or {}).get("postStart"):
            self.starting.add(marker)
        try:
            self._start_container(pod, start, sandbox_id, pod_ip)
        finally:
            self.starting.discard(marker)

    def _start_container(self, pod: dict, start: Start, sandbox_id: str, pod_ip: str) -> None:
        key, uid, name = cfg.pod_key(pod), pod["metadata"]["uid"], start.container["name"]
        container = start.container
        field = field_path(pod, name)               # what the events point at

        def event(type_: str, reason: str, message: str) -> None:
            self.events.event(pod, type_, reason, message, field_path=field)

        try:
            refused = pod_fields.refused(pod)
            if refused:      # an API pod asks for what this kubelet cannot do: say so, run nothing
                raise cfg.ConfigError(f"{refused[0]}: this kubelet does not support it")
            self._pull(container, event)
            env = cfg.container_env(pod, container, pod_ip, self.host_ip, self.service_env(pod),
                                    api=self.env_api, allocatable=self.allocatable)
            mounts = self._mounts(pod, container, event)
            if start.after_crash:
                self.crash_backoff.next(start.backoff_key)
            container_id = self.runtime.run_container(pod, container, sandbox_id, pod_ip, start.restart_count,
                                                      env, mounts)
        except ImagePullError as error:
            if error.reason == "ErrImagePull":
                event("Warning", "Failed", str(error)[0].upper() + str(error)[1:])   # Failed to pull image "…": …
                event("Warning", "Failed", f"Error: {error.reason}")
            else:
                event("Warning", error.reason, str(error))
            return self._remember_failure(key, start.backoff_key, error.reason, str(error))
        except cfg.ConfigError as error:
            event("Warning", "Failed", f"Error: {error}")
            return self._remember_failure(key, start.backoff_key, "CreateContainerConfigError", str(error))
        except StartError as error:
            # Created but not started: the status shows it terminated with
            # StartError, and the crash-loop back-off spaces the retries.
            self.waiting.clear(uid, name)
            self.crash_backoff.next(start.backoff_key)
            self.log.warning("container failed to start", obj=key, container=name,
                             id=error.container_id[:12], error=str(error))
            event("Normal", "Created", f"Created container {name}")
            event("Warning", "Failed", f"Error: {error}")
            return None
        except docker.errors.APIError as error:
            message = getattr(error, "explanation", None) or str(error)
            event("Warning", "Failed", f"Error: {message}")
            return self._remember_failure(key, start.backoff_key, "CreateContainerError", message)
        self.waiting.clear(uid, name)
        self.start_backoff.forget(start.backoff_key)
        self.log.info("container started", obj=key, container=name, id=container_id[:12],
                      restartCount=start.restart_count or None)
        event("Normal", "Created", f"Created container {name}")
        event("Normal", "Started", f"Started container {name}")
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start:
            self.run_post_start(pod, container, post_start, container_id, pod_ip, event)
        return None

    # [START post-start]
    def run_post_start(self, pod: dict, container: dict, hook: dict, container_id: str, pod_ip: str,
                       event) -> None:
        """The container counts as started only once its postStart hook has
        returned; a hook that fails kills it, and the restartPolicy decides
        what next (as for any container that died)."""
        key, name = cfg.pod_key(pod), container["name"]
        error = run_hook(hook, pod, container, container_id, pod_ip, self.runtime)
        if error is None:
            return
        self.log.warning("PostStart hook failed", obj=key, container=name, error=error)
        # The Event leaves the hook's output out: it may hold a secret.
        event("Warning", "FailedPostStartHook", "PostStartHook failed")
        event("Normal", "Killing", "FailedPostStartHook")
        stopping = self.runtime.inspect(container_id)
        stop_container(self.runtime, self.events, self.log, pod, container, stopping, stopping.grace_period)
    # [END post-start]

    def _pull(self, container: dict, event) -> None:
        """Make sure the image is here, telling Pulling/Pulled as the kubelet does."""
        image = container["image"]
        began = time.monotonic()
        pulled = self.runtime.ensure_image(image, container.get("imagePullPolicy", "IfNotPresent"),
                                           on_pull=lambda: event("Normal", "Pulling", f'Pulling image "{image}"'))
        if pulled:
            event("Normal", "Pulled", f'Successfully pulled image "{image}" in {time.monotonic() - began:.3f}s')
        else:
            event("Normal", "Pulled", f'Container image "{image}" already present on machine')

    def _mounts(self, pod: dict, container: dict, event) -> list:
        try:
            return self.runtime.mounts(pod, container)
        except cfg.ConfigError as error:
            event("Warning", "FailedMount", f"MountVolume.SetUp failed: {error}")
            raise

    def _remember_failure(self, key: str, backoff_key: tuple, reason: str, message: str,
                          event: str = "container not started") -> None:
        """A start that failed before anything ran: the next decision holds
        back that spec (pod_actions._held_back) until its back-off is over."""
        uid, name, spec_hash = backoff_key
        delay = self.start_backoff.next(backoff_key)
        self.waiting.set(uid, name, Waiting(reason, message, time.time(), spec_hash))
        self.log.warning(event, obj=key, container=name, reason=reason, error=message, retry_in=f"{delay:g}s")

    def kill_pod(self, key: str, uid: str, containers: list[ContainerInfo], pod: dict | None = None,
                 grace: int | None = None) -> None:
        """The pod is no longer wanted: stop its containers gracefully (preStop
        hooks first, sidecars last), then the pause container, then remove
        them all and its volumes. pod: its last known spec, for the hooks
        (None after a kubelet restart: then no hooks, all stop at once);
        grace: the deletion's grace period, if it set one."""
        apps = [c for c in containers if c.name != cfg.SANDBOX_NAME and c.running]
        namespace, name = key.split("/", 1)
        ref = pod or {"kind": "Pod", "apiVersion": "v1", "metadata": {"namespace": namespace, "name": name, "uid": uid}}
        self.stop_all([(c, "the pod was deleted") for c in apps], key, ref, grace)
        for sandbox in (c for c in containers if c.name == cfg.SANDBOX_NAME and c.running):
            self.runtime.stop(sandbox.id, sandbox.grace_period)
        for container in containers:
            self.runtime.remove(container.id)
        self.remove_volumes(lambda owner: owner == uid)
        self.log.info("pod removed", obj=key)

    def remove_volumes(self, unwanted) -> None:
        for volume, owner in self.runtime.list_volume_pods().items():
            if unwanted(owner):
                self.runtime.remove_volume(volume)
                self.log.info("volume removed", obj=volume)
        for uid in self.volumes.remove(unwanted) if self.volumes else []:
            self.log.info("configMap/secret volumes removed", obj=uid)
        if self.claims is not None:
            self.claims.forget(unwanted)         # the data stays: only what we knew of the pod goes

    # [START stop-all]
    def stop_all(self, kills: list[tuple[ContainerInfo, str]], key: str, pod: dict, grace: int | None = None,
                 overrides: dict[str, int] | None = None) -> None:
        """Stop containers in parallel, so a pod takes one grace period to
        stop; sidecars wait for the app containers (lifecycle_hooks.py).
        pod: the pod, or a bare reference when its spec is unknown.
        grace: overrides each container's own (a deletion's); overrides:
        by container id (a failed probe's own grace period)."""
        specs = {c["name"]: c for c in pod.get("spec", {}).get("containers", [])
                 + (pod.get("spec", {}).get("initContainers") or [])}
        order = termination_order(pod, [c.name for c, _ in kills])
        stopped = {c.name: threading.Event() for c, _ in kills}
        threads = []
        for container, why in kills:
            seconds = (overrides or {}).get(container.id, container.grace_period if grace is None else grace)
            self.log.info("stopping container", obj=key, container=container.name, reason=why, grace=f"{seconds}s")
            self.events.event(pod, "Normal", "Killing", killing_message(container.name, why),
                              field_path=field_path(pod, container.name))

            def stop(container=container, seconds=seconds):
                try:
                    stop_container(self.runtime, self.events, self.log, pod, specs.get(container.name), container,
                                   seconds, [stopped[name] for name in order.get(container.name, [])])
                finally:
                    stopped[container.name].set()
            thread = threading.Thread(target=stop, name=f"stop-{key}-{container.name}")
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
    # [END stop-all]


def killing_message(name: str, why: str) -> str:
    """The Killing event's text, as the kubelet words it."""
    for kind in ("Liveness", "Startup"):
        if why.startswith(f"{kind} probe failed"):
            return f"Container {name} failed {kind.lower()} probe, will be restarted"
    return f"Stopping container {name}"
