"""The Node object a kubelet registers, and the heartbeat that keeps it Ready.

A kubelet that joins a cluster first says who it is: a Node named after the
machine, with its addresses, what it can hold (capacity: CPUs, memory,
disk for containers' writable layers and logs, pods), how much of that
pods may be given (allocatable: capacity minus what --system-reserved and
--kube-reserved keep back) and what it runs (nodeInfo). The scheduler (chapter 03) places pods by
these numbers. Then, every few seconds, it renews the node's Ready
condition: a node whose heartbeat goes stale is presumed dead (chapter 04's
node lifecycle controller acts on that).

These functions only build objects; the kubelet sends them.
"""
from __future__ import annotations

import platform
import socket

from common.times import rfc3339 as now  # noqa: F401 (node_status.now() for this chapter's callers)
from node_allocatable import allocatable, machine_capacity


def _arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


# [START node-object]
def node_object(node_name: str, node_ip: str, kubelet_port: int, docker_version: str,
                reserved: tuple[dict, ...] = ()) -> dict:
    """The Node as this kubelet registers it, measured from the real machine."""
    capacity = machine_capacity()
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name, "labels": {
            "kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux", "kubernetes.io/arch": _arch()}},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable(capacity, *reserved),
            "addresses": [{"type": "InternalIP", "address": node_ip},
                          {"type": "Hostname", "address": socket.gethostname()}],
            # Where the API server finds this kubelet (for `kubectl logs`).
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "nodeInfo": {"operatingSystem": "linux", "architecture": _arch(),
                         "kernelVersion": platform.release(), "osImage": _os_image(),
                         "containerRuntimeVersion": f"docker://{docker_version}",
                         "kubeletVersion": "v1.32.0-groundup", "kubeProxyVersion": "",
                         "machineID": "", "systemUUID": "", "bootID": ""},
            "conditions": [ready_condition(True, "KubeletReady", "kubelet is posting ready status")],
        },
    }
# [END node-object]


def ready_condition(ready: bool, reason: str, message: str, since: str | None = None) -> dict:
    """The Ready condition; lastHeartbeatTime is what a heartbeat renews."""
    stamp = now()
    return {"type": "Ready", "status": "True" if ready else "False", "reason": reason, "message": message,
            "lastHeartbeatTime": stamp, "lastTransitionTime": since or stamp}


def heartbeat(node: dict, not_ready: str | None = None) -> dict:
    """The node's status with a fresh Ready heartbeat (the transition time kept
    while the status stays the same, as Kubernetes reports it). not_ready:
    why the node cannot run pods yet (its pod network), if it cannot."""
    status = dict(node.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    ready = not_ready is None
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == str(ready) else None
    if ready:
        condition = ready_condition(True, "KubeletReady", "kubelet is posting ready status", since)
    else:
        condition = ready_condition(False, "KubeletNotReady", not_ready, since)
    status["conditions"] = conditions + [condition]
    return status


def _os_image() -> str:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()
