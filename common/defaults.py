"""Fill in the fields Kubernetes fills in when a Pod is created.

    pod = apply_pod_defaults(manifest.obj)   # a new dict; the input is untouched

The API server defaults an object before it validates and stores it, so a
three-line manifest comes back from `kubectl get -o yaml` with restartPolicy,
dnsPolicy, imagePullPolicy and a dozen more fields set. These are the values
of Kubernetes' SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container
and friends (pkg/apis/core/v1/defaults.go) that our components rely on.

Defaulting runs before validation, so the input may be wrong in any way. A
default is applied only where the shape allows it (spec is an object,
containers is a list of objects, ...); everything else is left exactly as
it was for validation to report. This function never raises.
"""

from __future__ import annotations

from common.quantity import QuantityError, parse_quantity
from common.validation import VOLUME_SOURCES


# [START apply-pod-defaults]
def apply_pod_defaults(obj) -> dict:
    """A deep copy of obj with Kubernetes' Pod defaults filled in."""
    pod = _copy(obj)
    if not isinstance(pod, dict):
        return pod
    metadata = _object_at(pod, "metadata", create=True)
    if metadata is not None and not metadata.get("namespace"):
        # Strictly the API server does this, from the request's namespace.
        metadata["namespace"] = "default"
    spec = _object_at(pod, "spec")
    if spec is not None:
        _default_pod_spec(spec)
    return pod
# [END apply-pod-defaults]


def _default_pod_spec(spec: dict) -> None:
    _set_default(spec, "restartPolicy", "Always")
    _set_default(spec, "terminationGracePeriodSeconds", 30)
    _set_default(spec, "dnsPolicy", "ClusterFirst")
    _set_default(spec, "schedulerName", "default-scheduler")
    _set_default(spec, "securityContext", {})
    # Service environment variables (DB_SERVICE_HOST, ...) are on by default.
    _set_default(spec, "enableServiceLinks", True)
    host_network = spec.get("hostNetwork") is True
    for field in ("initContainers", "containers"):
        for container in _objects_in(spec, field):
            _default_container(container, host_network)
    for volume in _objects_in(spec, "volumes"):
        _default_volume(volume)


def _default_container(container: dict, host_network: bool) -> None:
    if not container.get("imagePullPolicy") and isinstance(container.get("image"), str):
        container["imagePullPolicy"] = default_pull_policy(container["image"])
    _set_default(container, "terminationMessagePath", "/dev/termination-log")
    _set_default(container, "terminationMessagePolicy", "File")
    for port in _objects_in(container, "ports"):
        _set_default(port, "protocol", "TCP")
        # On the host's network the container listens on the host's port.
        container_port = port.get("containerPort")
        if host_network and not port.get("hostPort") and type(container_port) is int:
            port["hostPort"] = container_port
    for var in _objects_in(container, "env"):
        value_from = _object_at(var, "valueFrom")
        field_ref = _object_at(value_from, "fieldRef") if value_from is not None else None
        if field_ref is not None:
            _set_default(field_ref, "apiVersion", "v1")
    _default_requests_from_limits(container)
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _object_at(container, probe_name)
        if probe is not None:
            _default_probe(probe)


def default_pull_policy(image: str) -> str:
    """Always for an untagged or :latest image (it may change under the same
    name), IfNotPresent for a pinned tag or digest."""
    name, _, digest = image.partition("@")
    last_part = name.rsplit("/", 1)[-1]   # a registry port (host:5000/app) is no tag
    tag = last_part.partition(":")[2]
    if tag == "latest" or (not tag and not digest):
        return "Always"
    return "IfNotPresent"


def _is_quantity(value) -> bool:
    try:
        parse_quantity(value)
        return True
    except (QuantityError, TypeError, ValueError):
        return False


def _default_requests_from_limits(container: dict) -> None:
    """A resource with a limit but no request requests its limit."""
    resources = _object_at(container, "resources")
    if resources is None or not isinstance(resources.get("limits"), dict):
        return
    limits = resources["limits"]
    if not limits:
        return
    requests = _object_at(resources, "requests", create=True)
    if requests is None:
        return
    for name, amount in limits.items():
        # An unreadable limit is reported once, where it was written; copied
        # into requests it would be reported again on a line nobody wrote.
        if name not in requests and _is_quantity(amount):
            requests[name] = amount


def _default_probe(probe: dict) -> None:
    # Plain int32 fields in Kubernetes, so 0 means "not set" there.
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                         ("successThreshold", 1), ("failureThreshold", 3)):
        _set_default(probe, field, value, zero_is_unset=True)
    http_get = _object_at(probe, "httpGet")
    if http_get is not None:
        _set_default(http_get, "path", "/")
        _set_default(http_get, "scheme", "HTTP")


_VOLUME_SOURCES_WITH_MODE = ("configMap", "secret", "downwardAPI", "projected")


def _default_volume(volume: dict) -> None:
    if all(volume.get(source) is None for source in VOLUME_SOURCES):
        # Kubernetes: a volume that names no source is an emptyDir.
        volume["emptyDir"] = {}
    host_path = _object_at(volume, "hostPath")
    if host_path is not None:
        _set_default(host_path, "type", "")
    for source in _VOLUME_SOURCES_WITH_MODE:
        mode_holder = _object_at(volume, source)
        if mode_holder is not None:
            _set_default(mode_holder, "defaultMode", 0o644)


# ----------------------------------------------------------------- helpers

def _set_default(obj: dict, field: str, value, zero_is_unset: bool = False) -> None:
    """Set field unless it has a value. Kubernetes defaults typed structs, where
    an empty string is the same as unset; so is 0 for plain (non-pointer) ints."""
    current = obj.get(field)
    if current is None or current == "" or (
            zero_is_unset and type(current) is int and current == 0):
        obj[field] = value


def _object_at(obj: dict, field: str, create: bool = False):
    """obj[field] if it is an object; with create, {} when it is unset."""
    value = obj.get(field)
    if value is None and create:
        value = obj[field] = {}
    return value if isinstance(value, dict) else None


def _objects_in(obj: dict, field: str):
    """The objects in the list obj[field]; anything else yields nothing."""
    items = obj.get(field)
    if isinstance(items, list):
        return [item for item in items if isinstance(item, dict)]
    return []


def _copy(value):
    """Deep copy of JSON-like data without recursion (input may nest deeply).

    Anything that is not a dict or list (str, int, a date) is immutable in
    practice and shared. A cycle is copied as a cycle.
    """
    copies: dict[int, object] = {}

    def shell(item):
        if isinstance(item, dict):
            new = {}
        elif isinstance(item, list):
            new = []
        else:
            return item, False
        if id(item) in copies:
            return copies[id(item)], False
        copies[id(item)] = new
        return new, True

    root, fresh = shell(value)
    stack = [(value, root)] if fresh else []
    while stack:
        original, new = stack.pop()
        if isinstance(original, dict):
            for k, v in original.items():
                new[k], fresh = shell(v)
                if fresh:
                    stack.append((v, new[k]))
        else:
            for v in original:
                copied, fresh = shell(v)
                new.append(copied)
                if fresh:
                    stack.append((v, copied))
    return root
