"""Container lifecycle hooks, postStart and preStop, and the graceful stop around them.

A hook is a handler the kubelet runs at a moment of a container's life:
postStart right after the container starts (the container does not count
as started until it returns, and a failing one kills it), preStop right
before the SIGTERM (it eats into the termination grace period, and is cut
off when that runs out). The handlers are a probe's: exec a command in the
container, or GET a URL; plus `sleep`, which the kubelet does itself.

The failure texts are Kubernetes' own (pkg/kubelet/lifecycle/handlers.go);
the Events say only "PostStartHook failed" / "PreStopHook failed", as the
real kubelet does, so that a hook's output (which may hold a secret) stays
in the kubelet's log and out of the API.
"""
from __future__ import annotations

import json
import threading
import time

import docker.errors
import requests

from probes import resolve_port

# However short the grace period, the container gets at least this long
# after its SIGTERM (minimumGracePeriodInSeconds in kuberuntime_container.go).
MINIMUM_GRACE = 2


def pod_name(pod: dict) -> str:
    """format.Pod: name_namespace(uid)."""
    meta = pod["metadata"]
    return f"{meta['name']}_{meta['namespace']}({meta['uid']})"


# [START run-hook]
def run_hook(handler: dict, pod: dict, container: dict, container_id: str, pod_ip: str, runtime) -> str | None:
    """Run one hook handler to its end; None if it succeeded, else what
    went wrong, worded as Kubernetes words it."""
    who = f'Container "{container["name"]}" in Pod "{pod_name(pod)}"'
    if "exec" in handler:
        command = handler["exec"].get("command") or []
        try:      # no timeout: a hook runs until it ends (preStop is cut off by its caller)
            code, output = runtime.exec(container_id, command, timeout=None)
        except (docker.errors.DockerException, requests.RequestException) as error:
            code, output = None, str(error).encode()
        if code == 0:
            return None
        error = f"command '{' '.join(command)}' exited with {code}: " if code is not None else "exec failed"
        text = output.decode(errors="replace")
        return f'Exec lifecycle hook ([{" ".join(command)}]) for {who} failed - error: {error}, message: {json.dumps(text)}'
    if "httpGet" in handler:
        get = handler["httpGet"]
        try:
            host = get.get("host") or pod_ip or "127.0.0.1"
            url = f"{get.get('scheme', 'HTTP').lower()}://{host}:{resolve_port(get['port'], container)}{get.get('path', '/')}"
            headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
            # Only a failed request fails the hook: unlike a probe, the
            # kubelet does not look at the status code.
            requests.get(url, headers=headers, verify=False).close()
            return None
        except (OSError, requests.RequestException, ValueError) as error:
            return f"HTTP lifecycle hook ({get.get('path', '')}) for {who} failed - error: {error}"
    if "sleep" in handler:
        time.sleep(handler["sleep"]["seconds"])
        return None
    # tcpSocket is accepted by the API for old manifests' sake, but has never
    # been a working hook: it fails when it runs, as in Kubernetes.
    return f"Cannot run handler: invalid handler: {json.dumps(handler, sort_keys=True)}"
# [END run-hook]


# [START graceful-stop]
# [START kill-container]
def stop_container(runtime, events, log, pod: dict, spec: dict | None, container, grace: int,
                   wait_for: list[threading.Event] = ()) -> None:
    """Kubernetes' killContainer: the preStop hook first, within the grace
    period; then wait for the containers that must stop before this one
    (a sidecar waits for the app); then SIGTERM, and SIGKILL when what is
    left of the grace period (at least MINIMUM_GRACE seconds) runs out."""
    began = time.monotonic()
    hook = ((spec or {}).get("lifecycle") or {}).get("preStop")
    if hook and grace > 0:
        run_pre_stop(runtime, events, log, pod, spec, container, hook, grace)
    for event in wait_for:
        event.wait(max(0.0, grace - (time.monotonic() - began)))
    # The real kubelet counts whole seconds spent, so do we.
    left = grace - int(time.monotonic() - began)
    runtime.stop(container.id, max(left, MINIMUM_GRACE))
# [END kill-container]


def run_pre_stop(runtime, events, log, pod: dict, spec: dict, container, hook: dict, grace: int) -> None:
    """Run the preStop hook in a thread of its own, and wait for it no longer
    than the grace period: a hook that hangs must not keep the pod alive."""
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"

    def run():
        error = run_hook(hook, pod, spec, container.id, container.ip, runtime)
        if error:
            log.warning("PreStop hook failed", obj=key, container=spec["name"], error=error)
            events.event(pod, "Warning", "FailedPreStopHook", "PreStopHook failed",
                         field_path=field_path(pod, spec["name"]))
    thread = threading.Thread(target=run, daemon=True, name=f"prestop-{key}-{spec['name']}")
    thread.start()
    thread.join(grace)
    if thread.is_alive():
        log.warning("PreStop hook not completed in grace period", obj=key, container=spec["name"],
                    grace=f"{grace}s")
# [END graceful-stop]


def field_path(pod: dict, name: str) -> str:
    """What an event about one of the pod's containers points at."""
    is_init = any(c["name"] == name for c in pod.get("spec", {}).get("initContainers") or [])
    return f"spec.initContainers{{{name}}}" if is_init else f"spec.containers{{{name}}}"


def termination_order(pod: dict, stopping: list[str]) -> dict[str, list[str]]:
    """Who waits for whom when the pod stops: regular containers stop at
    once, together; each sidecar once the regular containers and the
    sidecars started after it have stopped (reverse order, as it started)."""
    sidecars = [c["name"] for c in pod.get("spec", {}).get("initContainers") or []
                if c.get("restartPolicy") == "Always"]
    regular = [name for name in stopping if name not in sidecars]
    order = {name: [] for name in regular}
    for index, name in enumerate(sidecars):
        if name in stopping:
            order[name] = regular + [later for later in sidecars[index + 1:] if later in stopping]
    return order
