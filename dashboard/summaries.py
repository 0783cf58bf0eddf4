"""What the page needs of each object: a small flat dict, worked out here once.

A Pod as the API server stores it runs to a few kilobytes (its spec, every
container's status, managed fields); the page needs a dozen facts: where it
runs, what `kubectl get pods` would say of it (STATUS, READY, RESTARTS),
its IP and its owner, and why it waits if it waits. Summarising on the
server keeps the stream to the browser small (a tab on a projector may sit
on a slow network) and keeps the rules in Python, where tests read them,
instead of in JavaScript.

Every reader is lenient (common/model/lenient.py): an object a buggy client
half-filled still gets a card rather than a broken page.

Each summary has a `key` (namespace/name, or name for a cluster-wide kind),
which is how the browser finds the element to update or remove.
"""
from __future__ import annotations

from common.model.lenient import as_dict, as_int, as_list, as_str, dicts, dig
from common.model.pod_summary import summarize
from common.model.quantity import QuantityError, parse_quantity

SERVICE_NAME_LABEL = "kubernetes.io/service-name"     # ties an EndpointSlice to its Service


def key_of(obj: dict) -> str:
    meta = as_dict(obj.get("metadata"))
    namespace, name = as_str(meta.get("namespace")), as_str(meta.get("name"))
    return f"{namespace}/{name}" if namespace else name


def _milli(value) -> int:
    """CPU as millicores ("250m" -> 250, "2" -> 2000); 0 when unreadable."""
    try:
        return parse_quantity(value).milli_value() if value is not None else 0
    except QuantityError:
        return 0


def _bytes(value) -> int:
    try:
        return parse_quantity(value).value() if value is not None else 0
    except QuantityError:
        return 0


# ---------------------------------------------------------------- nodes

# [START node-summary]
def summarize_node(node: dict) -> dict:
    """A node's column header: is it Ready, may pods land on it, and its room.

    The words are kubectl's (`kubectl get nodes` STATUS): Ready, NotReady
    when the Ready condition is False or Unknown (the node lifecycle
    controller sets Unknown when the kubelet stops posting its status),
    Unknown when there is no Ready condition yet; and SchedulingDisabled
    beside it when the node is cordoned."""
    spec, status = as_dict(node.get("spec")), as_dict(node.get("status"))
    ready = next((c for c in dicts(status.get("conditions")) if c.get("type") == "Ready"), None)
    if ready is None:
        readiness, words = "Unknown", "Unknown"
    else:
        readiness = as_str(ready.get("status")) or "Unknown"
        words = "Ready" if readiness == "True" else "NotReady"
    allocatable = as_dict(status.get("allocatable")) or as_dict(status.get("capacity"))
    return {
        "key": key_of(node),
        "name": key_of(node),
        "ready": readiness,                           # True, False or Unknown: the colour
        "status": words,                              # the text beside the colour
        "reason": " ".join(filter(None, (as_str((ready or {}).get("reason")),
                                         as_str((ready or {}).get("message"))))),
        "cordoned": spec.get("unschedulable") is True,
        "taints": [_taint(t) for t in dicts(spec.get("taints"))],
        "cpu": _milli(allocatable.get("cpu")),        # millicores the scheduler may hand out
        "memory": _bytes(allocatable.get("memory")),
        "pods": _quantity_int(allocatable.get("pods")),
        "address": next((as_str(a.get("address")) for a in dicts(status.get("addresses"))
                         if a.get("type") == "InternalIP"), ""),
    }
# [END node-summary]


def _taint(taint: dict) -> str:
    value = as_str(taint.get("value"))
    return f"{as_str(taint.get('key'))}{'=' + value if value else ''}:{as_str(taint.get('effect'))}"


def _quantity_int(value) -> int:
    try:
        return int(parse_quantity(value).value()) if value is not None else 0
    except QuantityError:
        return 0


# ---------------------------------------------------------------- pods

# Colour families, always shown with the status text beside them (never
# colour alone): a room with a colour-blind learner in it reads the words.
TONES = {
    "Running": "ok", "Completed": "done", "Succeeded": "done",
    "Pending": "pending", "ContainerCreating": "pending", "PodInitializing": "pending",
    "SchedulingGated": "pending", "Terminating": "leaving",
}


def tone_of(status: str, ready: bool) -> str:
    """ok (running and ready), warn (running, not ready), pending, done,
    leaving, or bad (anything else kubectl would print: Error,
    CrashLoopBackOff, ImagePullBackOff, OOMKilled, Init:Error...)."""
    tone = TONES.get(status)
    if tone is None:
        return "pending" if status.startswith("Init:") and not status.endswith(("Error", "BackOff")) else "bad"
    if tone == "ok" and not ready:
        return "warn"
    return tone


# [START pod-summary]
def summarize_pod(pod: dict) -> dict:
    """A pod's card: where it runs, what kubectl would say of it, and why
    it waits when the scheduler could not place it."""
    meta, spec, status = as_dict(pod.get("metadata")), as_dict(pod.get("spec")), as_dict(pod.get("status"))
    summary = summarize(pod)                          # READY, STATUS, RESTARTS as kubectl prints them
    text = "Terminating" if meta.get("deletionTimestamp") else summary.status
    ready = summary.total > 0 and summary.ready == summary.total
    scheduled = next((c for c in dicts(status.get("conditions")) if c.get("type") == "PodScheduled"), {})
    owner = next((o for o in dicts(meta.get("ownerReferences")) if o.get("controller")), None)
    containers = dicts(spec.get("containers"))
    return {
        "key": key_of(pod),
        "namespace": as_str(meta.get("namespace")),
        "name": as_str(meta.get("name")),
        "node": as_str(spec.get("nodeName")),         # "" while Pending: the Pending column
        "status": text,
        "tone": tone_of(text, ready),
        "ready": f"{summary.ready}/{summary.total}",
        "restarts": summary.restarts,
        "ip": as_str(status.get("podIP")),
        "owner": f"{as_str(owner.get('kind'))}/{as_str(owner.get('name'))}" if owner else "",
        # The scheduler's FailedScheduling reason lands in this condition too
        # ("0/2 nodes are available: 2 Insufficient cpu."), not only in an Event.
        "waiting": as_str(scheduled.get("message")) if scheduled.get("status") == "False" else "",
        "cpu": sum(_milli(dig(c, "resources", "requests", "cpu")) for c in containers),
        "memory": sum(_bytes(dig(c, "resources", "requests", "memory")) for c in containers),
        "labels": {str(k): str(v) for k, v in as_dict(meta.get("labels")).items()},
    }
# [END pod-summary]


# ---------------------------------------------------------------- services and endpoints

def summarize_service(service: dict) -> dict:
    meta, spec = as_dict(service.get("metadata")), as_dict(service.get("spec"))
    return {
        "key": key_of(service),
        "namespace": as_str(meta.get("namespace")),
        "name": as_str(meta.get("name")),
        "type": as_str(spec.get("type")) or "ClusterIP",
        "clusterIP": as_str(spec.get("clusterIP")),
        "ports": [_service_port(p) for p in dicts(spec.get("ports"))],
    }


def _service_port(port: dict) -> str:
    """80/TCP, with the NodePort as kubectl prints it: 80:30080/TCP."""
    node_port = as_int(port.get("nodePort"))
    return f"{as_int(port.get('port'))}{f':{node_port}' if node_port else ''}/{as_str(port.get('protocol')) or 'TCP'}"


def summarize_endpoint_slice(endpoint_slice: dict) -> dict:
    """The addresses behind a Service, from one of its EndpointSlices (the
    endpointslice controller cuts a Service's endpoints into slices, and
    labels each with the Service's name)."""
    meta = as_dict(endpoint_slice.get("metadata"))
    return {
        "key": key_of(endpoint_slice),
        "namespace": as_str(meta.get("namespace")),
        "service": as_str(as_dict(meta.get("labels")).get(SERVICE_NAME_LABEL)),
        "addresses": [_endpoint(e) for e in dicts(endpoint_slice.get("endpoints"))],
    }


def _endpoint(endpoint: dict) -> dict:
    """One endpoint: its first address (a pod has one per family), whether it
    takes traffic (a missing ready condition means ready, as the API says),
    and the pod behind it."""
    addresses = [a for a in as_list(endpoint.get("addresses")) if isinstance(a, str)]
    return {"ip": addresses[0] if addresses else "",
            "ready": dig(endpoint, "conditions", "ready") is not False,
            "pod": as_str(dig(endpoint, "targetRef", "name"))}


# ---------------------------------------------------------------- events and namespaces

def summarize_event(event: dict) -> dict:
    meta, involved = as_dict(event.get("metadata")), as_dict(event.get("involvedObject"))
    return {
        "key": key_of(event),
        "namespace": as_str(meta.get("namespace")),
        "type": as_str(event.get("type")) or "Normal",
        "reason": as_str(event.get("reason")),
        "message": as_str(event.get("message")),
        "object": f"{as_str(involved.get('kind'))}/{as_str(involved.get('name'))}",
        "count": as_int(event.get("count"), 1),
        # The newest of the times an Event may carry: series, last, first, created.
        "time": (as_str(event.get("lastTimestamp")) or as_str(event.get("eventTime"))
                 or as_str(event.get("firstTimestamp")) or as_str(meta.get("creationTimestamp"))),
        "source": as_str(dig(event, "source", "component")) or as_str(event.get("reportingComponent")),
    }


def summarize_namespace(namespace: dict) -> dict:
    return {"key": key_of(namespace), "name": key_of(namespace),
            "phase": as_str(dig(namespace, "status", "phase")) or "Active"}
