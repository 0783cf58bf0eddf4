"""From a pod spec to the settings of its Docker containers.

Pure functions, no Docker calls: what environment a container sees, what
its command line is, which volumes it mounts, what limits it gets, and the
hash that tells the kubelet whether a running container still matches its
spec. The Docker runtime (docker_runtime.py) turns these into API calls.
"""
from __future__ import annotations

from typing import NamedTuple

import hashlib
import json
import re

from common.model.quantity import parse_quantity
from common.model.keys import object_key as pod_key  # noqa: F401 (a defaulted pod always has a namespace)

# Labels the kubelet puts on every container it creates. They are how it
# finds its containers again after a restart: the kubelet keeps no state of
# its own, Docker's labels are the record (the names are dockershim's).
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_POD_NAME = "io.kubernetes.pod.name"
LABEL_POD_NAMESPACE = "io.kubernetes.pod.namespace"
LABEL_CONTAINER_NAME = "io.kubernetes.container.name"
LABEL_CONTAINER_HASH = "io.kubernetes.container.hash"
LABEL_RESTART_COUNT = "io.kubernetes.container.restartCount"
LABEL_SANDBOX_ID = "io.kubernetes.sandbox.id"
LABEL_GRACE_PERIOD = "io.kubernetes.pod.terminationGracePeriod"
LABEL_POD_IP = "io.groundup.pod-ip"

LABEL_NODE_NAME = "io.groundup.node-name"  # ours: several kubelets share one Docker
SANDBOX_NAME = "POD"  # the container name Kubernetes gives the pause container

EMPTY_DIR_PREFIX = "k8s-emptydir"


def docker_name(pod: dict, container_name: str, attempt: int) -> str:
    """dockershim's naming scheme, so `docker ps` reads like a node's."""
    meta = pod["metadata"]
    return f"k8s_{container_name}_{meta['name']}_{meta['namespace']}_{meta['uid']}_{attempt}"


def pod_labels(pod: dict, node_name: str, container_name: str) -> dict[str, str]:
    meta = pod["metadata"]
    return {
        LABEL_POD_UID: meta["uid"],
        LABEL_POD_NAME: meta["name"],
        LABEL_POD_NAMESPACE: meta["namespace"],
        LABEL_CONTAINER_NAME: container_name,
        LABEL_NODE_NAME: node_name,
        LABEL_GRACE_PERIOD: str(grace_period(pod)),
    }


def grace_period(pod: dict) -> int:
    return int(pod["spec"].get("terminationGracePeriodSeconds", 30))


def deletion_grace(pod: dict | None) -> int | None:
    """The grace period a deletion asked for (kubectl delete --grace-period=N
    sets deletionGracePeriodSeconds); None when the pod was not deleted
    through the API. Never below 1 s, as the kubelet's own floor."""
    seconds = ((pod or {}).get("metadata") or {}).get("deletionGracePeriodSeconds")
    return None if seconds is None else max(1, int(seconds))


# --- hashes: has the spec changed under a running container? -------------

def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def container_hash(pod: dict, container: dict) -> str:
    """Changes when anything that shapes this container changes: its own
    spec, or the source of a volume it mounts."""
    volumes = {v.get("name"): v for v in pod["spec"].get("volumes") or []}
    mounted = [volumes.get(m.get("name")) for m in container.get("volumeMounts") or []]
    shaped = {"container": container, "volumes": mounted}
    if pod["spec"].get("securityContext"):      # who it runs as (only when set: older hashes stay)
        shaped["podSecurityContext"] = pod["spec"]["securityContext"]
    return _digest(shaped)


def sandbox_hash(pod: dict) -> str:
    """The pause container owns what the pod's containers share: the network
    (host ports, host network or not, hostname) and the emptyDir volumes it
    keeps mounted. A change here recreates the whole pod."""
    spec = pod["spec"]
    ports = [p for c in spec["containers"] for p in c.get("ports") or [] if p.get("hostPort")]
    shaped = {"ports": ports, "hostNetwork": spec.get("hostNetwork", False),
              "hostname": spec.get("hostname"), "dnsPolicy": spec.get("dnsPolicy"),
              "emptyDirs": empty_dirs(pod)}
    context = spec.get("securityContext") or {}
    if context.get("sysctls") or context.get("fsGroup") is not None:   # set on the sandbox and its volumes
        shaped["sysctls"], shaped["fsGroup"] = context.get("sysctls"), context.get("fsGroup")
    return _digest(shaped)


def empty_dirs(pod: dict) -> list[dict]:
    return [v for v in pod["spec"].get("volumes") or [] if "emptyDir" in v]


class BackoffKey(NamedTuple):
    pod_uid: str
    container: str
    spec_hash: str


def backoff_key(pod: dict, container: dict) -> BackoffKey:
    """Back-off belongs to one container *spec* (Kubernetes keys it with the
    spec's hash too): fixing a crashing container's image starts it at once."""
    return BackoffKey(pod["metadata"]["uid"], container["name"], container_hash(pod, container))


# --- environment ------------------------------------------------------------

# [START env-expansion]
_REFERENCE = re.compile(r"\$\$|\$\(([^)]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: $(NAME) becomes the variable's value if
    NAME is defined, else stays as written; $$ is an escaped $."""
    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _REFERENCE.sub(replace, text)


def container_env(pod: dict, container: dict, pod_ip: str, host_ip: str,
                  given: dict[str, str] | None = None, api=None, allocatable: dict | None = None) -> dict[str, str]:
    """The container's variables, in order; each may refer to the ones
    defined before it (as in Kubernetes, later ones are not yet known), and
    to those it is given anyway (chapter 05's service variables), which its
    own override. envFrom's come first, and env's override them. api: the
    kubelet's reader of ConfigMaps and Secrets (api_volumes/api_objects.EnvResolver)."""
    env: dict[str, str] = dict(given or {})
    if container.get("envFrom"):
        env.update(_needs_api(api, "envFrom").env_from(pod, container))
    for var in container.get("env") or []:
        if "valueFrom" in var:
            value = value_from(pod, container, var["valueFrom"], pod_ip, host_ip, api, allocatable)
            if value is not None:       # None: optional, and its ConfigMap or Secret (or key) is missing
                env[var["name"]] = value
        else:
            env[var["name"]] = expand(str(var.get("value", "")), env)
    return env
# [END env-expansion]


class ConfigError(Exception):
    """The pod asks for something this kubelet cannot provide
    (the container waits with reason CreateContainerConfigError)."""


def value_from(pod: dict, container: dict, source: dict, pod_ip: str, host_ip: str, api=None,
               allocatable: dict | None = None) -> str | None:
    """One variable's valueFrom: a field of the pod, a resource of a
    container (the downward API), or a key of a ConfigMap or Secret."""
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"], pod_ip, host_ip)
    if "resourceFieldRef" in source:
        ref = source["resourceFieldRef"]
        return resource_value(pod, ref.get("containerName") or container["name"], ref, allocatable or {})
    kind = next((k for k in ("configMapKeyRef", "secretKeyRef") if k in source), None)
    if kind is None:
        raise ConfigError(f"valueFrom.{next(iter(source), '?')} is not supported by this kubelet")
    return _needs_api(api, f"valueFrom.{kind}").key_ref(pod, kind, source[kind])


def _needs_api(api, field: str):
    if api is None:
        raise ConfigError(f"{field} needs the API server (chapter 02): this kubelet has none")
    return api


def field_value(pod: dict, field_ref: dict, pod_ip: str = "", host_ip: str = "") -> str:
    """The downward API: the value of a field of the pod."""
    path = field_ref.get("fieldPath", "")
    meta = pod["metadata"]
    simple = {
        "metadata.name": meta["name"], "metadata.namespace": meta["namespace"],
        "metadata.uid": meta["uid"], "spec.nodeName": pod["spec"].get("nodeName", ""),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
        "status.podIP": pod_ip, "status.podIPs": pod_ip, "status.hostIP": host_ip,
    }
    if path in simple:
        return simple[path]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']*)'\]", path)
    if match:
        return (meta.get(match.group(1)) or {}).get(match.group(2), "")
    raise ConfigError(f"unsupported fieldRef.fieldPath {path!r}")


def resource_value(pod: dict, container_name: str, ref: dict, allocatable: dict) -> str:
    """The downward API's resourceFieldRef: a container's request or limit
    in units of `divisor` (default 1), rounded up. A limit the container
    does not set reads as the node's allocatable, which is what it may use."""
    resource = ref.get("resource", "")
    container = next((c for c in pod["spec"]["containers"] if c["name"] == container_name), None)
    if container is None:
        raise ConfigError(f"resourceFieldRef: no container named {container_name!r} in the pod")
    which, _, name = resource.partition(".")
    amounts = (container.get("resources") or {}).get(which) or {}
    amount = amounts.get(name)
    if amount is None:
        amount = allocatable.get(name, "0") if which == "limits" else "0"
    value, divisor = parse_quantity(amount), parse_quantity(ref.get("divisor") or "1")
    if divisor.sign() <= 0:
        raise ConfigError(f"resourceFieldRef: divisor {ref.get('divisor')!r} must be above zero")
    if name == "cpu":
        return str(-(-value.milli_value() // divisor.milli_value()))      # ceil, in millicores
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return str(-(-value.value() // divisor.value()))
    raise ConfigError(f"resourceFieldRef: unsupported resource {resource!r}")


def command_line(container: dict, env: dict[str, str]) -> tuple[list[str] | None, list[str] | None]:
    """(entrypoint, cmd) for Docker. Kubernetes' command replaces the image's
    ENTRYPOINT and args its CMD; a command without args drops the image's CMD
    too (Docker does the same when it is given an entrypoint)."""
    command = container.get("command")
    args = container.get("args")
    entrypoint = [expand(str(a), env) for a in command] if command else None
    cmd = [expand(str(a), env) for a in args] if args else None
    return entrypoint, cmd


# --- resources ---------------------------------------------------------------

def docker_resources(container: dict) -> dict:
    """limits.memory -> a hard memory limit with no swap on top (as the
    kubelet sets it); limits.cpu -> a CPU quota; requests.cpu -> CPU shares,
    the relative weight under contention (1 CPU = 1024 shares)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    settings: dict = {}
    if "memory" in limits:
        settings["mem_limit"] = settings["memswap_limit"] = parse_quantity(limits["memory"]).value()
    if "cpu" in limits:
        settings["nano_cpus"] = parse_quantity(limits["cpu"]).milli_value() * 1_000_000
    cpu_request = requests.get("cpu", limits.get("cpu"))
    # No request means the smallest weight (as Kubernetes sets it), not
    # Docker's default of 1024, which would outweigh a pod that asked.
    milli = parse_quantity(cpu_request).milli_value() if cpu_request is not None else 0
    settings["cpu_shares"] = max(2, milli * 1024 // 1000)
    return settings


def host_port_bindings(pod: dict) -> dict[str, tuple[str, int]]:
    """Host ports are published on the pause container, which owns the
    pod's network namespace: {"80/tcp": ("0.0.0.0", 8080)}."""
    bindings = {}
    for container in pod["spec"]["containers"]:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                key = f"{port['containerPort']}/{port.get('protocol', 'TCP').lower()}"
                bindings[key] = (port.get("hostIP") or "0.0.0.0", port["hostPort"])
    return bindings
