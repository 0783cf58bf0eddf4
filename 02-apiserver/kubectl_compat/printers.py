"""Server-side printing: the columns of `kubectl get`, computed by the API server.

kubectl does not know how to summarise a Pod. For `get` it asks for a
`meta.k8s.io/v1` Table (Accept: application/json;as=Table;...), and the
server answers with column definitions and one row of cells per object.
That is why a new kubectl can print an old cluster's custom types, and why
a server that cannot make tables leaves kubectl with only NAME and AGE.

A printer is a list of columns plus a function from one object to its cells.
Like Kubernetes' server, we always send every column, including the
`-o wide` ones (priority 1); kubectl hides those unless asked for them.

Watch events (`kubectl get -w`) carry a one-row Table per event; there is no
separate function for that: call `to_table(resource, [obj], None, ...)`, and
the table takes its resourceVersion from the object, as for a single GET.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from common.model.quantity import QuantityError, parse_quantity

from . import pod_printer
from .printer_formats import (NONE, UNKNOWN, as_dict, as_int, as_list, as_str, between, dicts,
                             dig, format_label_selector, format_labels, join_host_port, since)

log = logging.getLogger(__name__)

INCLUDE_OBJECT = ("None", "Metadata", "Object")


@dataclass(frozen=True)
class Column:
    name: str              # kubectl prints it upper-cased: "Nominated Node" -> NOMINATED NODE
    description: str
    type: str = "string"   # an OpenAPI type: string, integer, number, boolean, date
    priority: int = 0      # 0 always shown; 1 only with -o wide
    format: str = ""       # "name" marks the column holding the object's name

    def definition(self) -> dict:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    cells: Callable[[dict, datetime], list]   # (object, now) -> one cell per column
    # Row conditions, e.g. a finished pod's Completed=True (see pod_printer).
    conditions: Callable[[dict], list[dict]] = lambda obj: []


# [START to-table]
def to_table(resource, objects: list[dict], list_metadata: dict | None = None,
             include_object: str = "Metadata", now: datetime | None = None) -> dict:
    """A meta.k8s.io/v1 Table with one row per object, for `kubectl get`.

    include_object is the request's ?includeObject=: "Metadata" (kubectl's
    choice: enough for the -A NAMESPACE column and --show-labels), "Object"
    or "None". Raises ValueError for any other value.
    """
    if include_object not in INCLUDE_OBJECT:
        raise ValueError(f"includeObject={include_object!r} is not one of {', '.join(INCLUDE_OBJECT)}")
    now = _aware(now or datetime.now(timezone.utc))
    printer = printer_for(resource)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": _table_metadata(objects, list_metadata),
        "columnDefinitions": [column.definition() for column in printer.columns],
        "rows": [_row(printer, obj, include_object, now) for obj in objects],
    }


def _row(printer: Printer, obj: dict, include_object: str, now: datetime) -> dict:
    row = {"cells": _cells(printer, obj, now)}
    if conditions := printer.conditions(obj):
        row["conditions"] = conditions
    if include_object == "Metadata":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": as_dict(obj.get("metadata"))}
    elif include_object == "Object":
        row["object"] = obj
    return row
# [END to-table]


def _cells(printer: Printer, obj: dict, now: datetime) -> list:
    """The row's cells; never raises, so one broken object cannot fail a list."""
    try:
        cells = printer.cells(obj, now)
        if len(cells) == len(printer.columns):
            return cells
        log.error("printer gave %d cells for %d columns", len(cells), len(printer.columns))
    except Exception:  # noqa: BLE001 - a printing bug must not become a failed `kubectl get`
        log.exception("cannot print %s %s", obj.get("kind"), name_of(obj))
    # Keep the row recognisable by its name; say honestly that the rest is unknown.
    return [name_of(obj) if column.format == "name" else UNKNOWN for column in printer.columns]


def _table_metadata(objects: list[dict], list_metadata: dict | None) -> dict:
    if list_metadata is not None:
        return dict(list_metadata)   # resourceVersion, and continue for paged lists
    if len(objects) == 1:
        # A single GET or a watch event: the table is as new as its object.
        version = dig(objects[0], "metadata", "resourceVersion")
        return {"resourceVersion": version} if isinstance(version, str) else {}
    return {}


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo else now.replace(tzinfo=timezone.utc)


def printer_for(resource) -> Printer:
    """The printer for a registry.Resource; NAME and AGE for kinds without one."""
    if getattr(resource, "printer_columns", ()):     # a custom kind's additionalPrinterColumns
        return custom_printer(resource.printer_columns)
    return PRINTERS.get((resource.group, resource.kind), DEFAULT)


# [START printer-columns]
def custom_printer(columns: tuple[dict, ...]) -> Printer:
    """NAME, then the columns a CustomResourceDefinition lists, each a
    JSONPath into the object: {name: Replicas, type: integer, jsonPath: .spec.replicas}.
    As in Kubernetes, a "date" column prints as an age, like AGE."""
    def cells(obj: dict, now: datetime) -> list:
        values = [json_path(obj, column["jsonPath"]) for column in columns]
        return [name_of(obj)] + [since(value, now) if column["type"] == "date" and value is not None
                                 else value for column, value in zip(columns, values)]
    return Printer((NAME,) + tuple(Column(c["name"], c.get("description", ""), c["type"],
                                          c.get("priority", 0), c.get("format", "")) for c in columns), cells)
# [END printer-columns]


_STEP = re.compile(r'\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)==["\']([^"\']*)["\']\)\]')


def json_path(obj, path: str):
    """The value at a simple JSONPath (.status.url, .spec.ports[0].port,
    .status.conditions[?(@.type=="Ready")].status), or None."""
    value = obj
    for field_name, position, key, wanted in _STEP.findall(path.strip().strip("{}")):
        if field_name:
            value = value.get(field_name) if isinstance(value, dict) else None
        elif position:
            value = value[int(position)] if isinstance(value, list) and int(position) < len(value) else None
        else:
            value = next((item for item in value if isinstance(item, dict)
                          and str(dig(item, *key.split("."))) == wanted), None) if isinstance(value, list) else None
        if value is None:
            return None
    return value


def name_of(obj: dict) -> str:
    return as_str(dig(obj, "metadata", "name"))


def age(obj: dict, now: datetime) -> str:
    return since(dig(obj, "metadata", "creationTimestamp"), now)


# Descriptions shared by many kinds.
NAME = Column("Name", "The object's name, unique in its namespace.", format="name")
AGE = Column("Age", "Time since the object was created (metadata.creationTimestamp).")
CONTAINERS = Column("Containers", "Names of the containers in the pod template.", priority=1)
IMAGES = Column("Images", "Images of the containers in the pod template.", priority=1)
SELECTOR = Column("Selector", "The label selector picking this object's pods.", priority=1)


def template_containers(obj: dict) -> tuple[str, str]:
    """The CONTAINERS and IMAGES cells of a workload: "web,log" and "nginx:1.27,busybox"."""
    containers = dicts(dig(obj, "spec", "template", "spec", "containers"))
    return (",".join(as_str(c.get("name")) for c in containers),
            ",".join(as_str(c.get("image")) for c in containers))


# --- Node, Namespace, Event ------------------------------------------------------

def node_cells(node: dict, now: datetime) -> list:
    status = as_dict(node.get("status"))
    info = as_dict(status.get("nodeInfo"))
    # Only the Ready condition counts; a node whose kubelet never reported
    # has none, and its status is Unknown rather than NotReady.
    ready = [c for c in dicts(status.get("conditions")) if c.get("type") == "Ready"]
    states = ["Ready" if ready[-1].get("status") == "True" else "NotReady"] if ready else ["Unknown"]
    if dig(node, "spec", "unschedulable") is True:
        states.append("SchedulingDisabled")   # cordoned: kubectl cordon
    addresses = dicts(status.get("addresses"))

    def address(kind: str) -> str:
        return next((as_str(a.get("address")) for a in addresses if a.get("type") == kind), "") or NONE

    return [name_of(node), ",".join(states), ",".join(node_roles(node)) or NONE, age(node, now),
            as_str(info.get("kubeletVersion")), address("InternalIP"), address("ExternalIP"),
            as_str(info.get("osImage")) or UNKNOWN, as_str(info.get("kernelVersion")) or UNKNOWN,
            as_str(info.get("containerRuntimeVersion")) or UNKNOWN]


def node_roles(node: dict) -> list[str]:
    """Roles come from labels: node-role.kubernetes.io/control-plane="" gives control-plane."""
    roles = set()
    for key, value in as_dict(dig(node, "metadata", "labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key.partition("/")[2]:
            roles.add(key.partition("/")[2])
        elif key == "kubernetes.io/role" and isinstance(value, str) and value:
            roles.add(value)   # the older spelling
    return sorted(roles)


def namespace_cells(ns: dict, now: datetime) -> list:
    return [name_of(ns), as_str(dig(ns, "status", "phase")), age(ns, now)]


def event_cells(event: dict, now: datetime) -> list:
    # Old-style events (core/v1, our kubelet's) have first/lastTimestamp and
    # count; events.k8s.io-style ones have eventTime and a series instead.
    first = since(event.get("firstTimestamp") or event.get("eventTime"), now)
    last = since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first
    count = as_int(event.get("count"))
    series = event.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = as_int(series.get("count"))
    elif count == 0:
        count = 1   # a singleton event may leave count unset
    involved = as_dict(event.get("involvedObject"))
    kind, name = as_str(involved.get("kind")).lower(), as_str(involved.get("name"))
    source = as_dict(event.get("source"))
    component = as_str(source.get("component")) or as_str(event.get("reportingComponent"))
    host = as_str(source.get("host")) or as_str(event.get("reportingInstance"))
    return [last, as_str(event.get("type")), as_str(event.get("reason")),
            f"{kind}/{name}" if name else kind, as_str(involved.get("fieldPath")),
            f"{component}, {host}" if host else component,
            as_str(event.get("message")).strip(), first, count, name_of(event)]


# --- Service, Endpoints, ConfigMap, Secret ----------------------------------------

def service_cells(svc: dict, now: datetime) -> list:
    spec = as_dict(svc.get("spec"))
    kind = as_str(spec.get("type")) or "ClusterIP"   # the API's default type
    cluster_ips = [ip for ip in as_list(spec.get("clusterIPs")) if isinstance(ip, str)]
    cluster_ip = (cluster_ips[0] if cluster_ips else as_str(spec.get("clusterIP"))) or NONE
    return [name_of(svc), kind, cluster_ip, service_external_ip(svc, kind),
            service_ports(spec) or NONE, age(svc, now), format_labels(spec.get("selector"))]


def service_external_ip(svc: dict, kind: str) -> str:
    external = [ip for ip in as_list(dig(svc, "spec", "externalIPs")) if isinstance(ip, str)]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or NONE
    if kind == "ExternalName":
        return as_str(dig(svc, "spec", "externalName"))
    if kind == "LoadBalancer":
        ingress = dicts(dig(svc, "status", "loadBalancer", "ingress"))
        balancer = sorted({as_str(i.get("ip")) or as_str(i.get("hostname")) for i in ingress} - {""})
        # No address from the cloud yet: the load balancer is still being made.
        return ",".join(balancer + external) or "<pending>"
    return UNKNOWN


def service_ports(spec: dict) -> str:
    """ "80/TCP,443:30443/TCP": port, then the node port if there is one."""
    pieces = []
    for port in dicts(spec.get("ports")):
        protocol = as_str(port.get("protocol")) or "TCP"
        node_port = as_int(port.get("nodePort"))
        via_node = f":{node_port}" if node_port > 0 else ""
        pieces.append(f"{as_int(port.get('port'))}{via_node}/{protocol}")
    return ",".join(pieces)


MAX_ENDPOINTS = 3   # more would make the column too wide to read


def endpoints_cells(endpoints: dict, now: datetime) -> list:
    subsets = dicts(endpoints.get("subsets"))
    if not subsets:
        return [name_of(endpoints), NONE, age(endpoints, now)]
    shown, total = [], 0
    for subset in subsets:
        # Only ready addresses are listed; not-ready ones wait outside the service.
        ips = [as_str(a.get("ip")) for a in dicts(subset.get("addresses"))]
        ports = dicts(subset.get("ports"))
        # A headless service may have no ports: list the bare addresses.
        pairs = [join_host_port(ip, as_int(p.get("port"))) for p in ports for ip in ips] if ports else ips
        total += len(pairs)
        shown += pairs[:MAX_ENDPOINTS - len(shown)]
    text = ",".join(shown)
    if total > len(shown):
        text += f" + {total - len(shown)} more..."
    return [name_of(endpoints), text, age(endpoints, now)]


def endpointslice_cells(slice_: dict, now: datetime) -> list:
    """As Kubernetes prints a slice: its ports and the first 3 addresses."""
    ports = [str(p["port"]) if isinstance(p.get("port"), int) else "<unset>" for p in dicts(slice_.get("ports"))]
    addresses = [as_str(a) for e in dicts(slice_.get("endpoints")) for a in e.get("addresses") or []]
    return [name_of(slice_), as_str(slice_.get("addressType")), _first_few(ports), _first_few(addresses),
            age(slice_, now)]


def _first_few(items: list[str]) -> str:
    if not items:
        return "<unset>"
    text = ",".join(items[:MAX_ENDPOINTS])
    return text + (f" + {len(items) - MAX_ENDPOINTS} more..." if len(items) > MAX_ENDPOINTS else "")


def configmap_cells(cm: dict, now: datetime) -> list:
    keys = len(as_dict(cm.get("data"))) + len(as_dict(cm.get("binaryData")))
    return [name_of(cm), keys, age(cm, now)]


def created_at_cells(obj: dict, now: datetime) -> list:
    """Kubernetes' generic columns for kinds without their own: NAME, CREATED AT."""
    return [name_of(obj), as_str(as_dict(obj.get("metadata")).get("creationTimestamp")) or "<unknown>"]


def service_account_cells(account: dict, now: datetime) -> list:
    return [name_of(account), len(account.get("secrets") or []), age(account, now)]


def secret_cells(secret: dict, now: datetime) -> list:
    return [name_of(secret), as_str(secret.get("type")), len(as_dict(secret.get("data"))), age(secret, now)]


# --- Workloads ---------------------------------------------------------------------

def replicaset_cells(rs: dict, now: datetime) -> list:
    status = as_dict(rs.get("status"))
    containers, images = template_containers(rs)
    return [name_of(rs), as_int(dig(rs, "spec", "replicas"), 1), as_int(status.get("replicas")),
            as_int(status.get("readyReplicas")), age(rs, now),
            containers, images, format_label_selector(dig(rs, "spec", "selector"))]


def replication_controller_cells(rc: dict, now: datetime) -> list:
    """A ReplicaSet's columns; the selector is a plain label map, printed as labels."""
    status = as_dict(rc.get("status"))
    containers, images = template_containers(rc)
    return [name_of(rc), as_int(dig(rc, "spec", "replicas"), 1), as_int(status.get("replicas")),
            as_int(status.get("readyReplicas")), age(rc, now),
            containers, images, format_labels(dig(rc, "spec", "selector"))]


def deployment_cells(deploy: dict, now: datetime) -> list:
    status = as_dict(deploy.get("status"))
    desired = as_int(dig(deploy, "spec", "replicas"), 1)   # the API's default
    containers, images = template_containers(deploy)
    return [name_of(deploy), f"{as_int(status.get('readyReplicas'))}/{desired}",
            as_int(status.get("updatedReplicas")), as_int(status.get("availableReplicas")),
            age(deploy, now), containers, images,
            format_label_selector(dig(deploy, "spec", "selector"), empty="", invalid="<invalid>")]


def daemonset_cells(ds: dict, now: datetime) -> list:
    status = as_dict(ds.get("status"))
    containers, images = template_containers(ds)
    counts = [as_int(status.get(field)) for field in ("desiredNumberScheduled", "currentNumberScheduled",
                                                      "numberReady", "updatedNumberScheduled",
                                                      "numberAvailable")]
    return [name_of(ds), *counts, format_labels(dig(ds, "spec", "template", "spec", "nodeSelector")),
            age(ds, now), containers, images, format_label_selector(dig(ds, "spec", "selector"))]


def job_cells(job: dict, now: datetime) -> list:
    spec, status = as_dict(job.get("spec")), as_dict(job.get("status"))
    succeeded = as_int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{as_int(spec['completions'])}"
    else:
        # No completion count: the job is done when any one pod succeeds.
        parallelism = as_int(spec.get("parallelism"), 1)
        completions = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start, end = status.get("startTime"), status.get("completionTime")
    if not start:
        duration = ""
    else:
        duration = between(start, end) if end else since(start, now)
    containers, images = template_containers(job)
    return [name_of(job), job_status(job), completions, duration, age(job, now),
            containers, images, format_label_selector(spec.get("selector"))]


def cronjob_cells(cj: dict, now: datetime) -> list:
    spec, status = as_dict(cj.get("spec")), as_dict(cj.get("status"))
    last = status.get("lastScheduleTime")
    job_spec = as_dict(dig(cj, "spec", "jobTemplate", "spec"))
    containers = dicts(dig(job_spec, "template", "spec", "containers"))
    return [name_of(cj), as_str(spec.get("schedule")), as_str(spec.get("timeZone")) or NONE,
            "True" if spec.get("suspend") is True else "False", len(as_list(status.get("active"))),
            since(last, now) if last else NONE, age(cj, now),
            ",".join(as_str(c.get("name")) for c in containers), ",".join(as_str(c.get("image")) for c in containers),
            format_label_selector(job_spec.get("selector"))]


def job_status(job: dict) -> str:
    true = {c.get("type") for c in dicts(dig(job, "status", "conditions")) if c.get("status") == "True"}
    # Finished states win over Terminating: a deleted job that completed still says so.
    if "Complete" in true:
        return "Complete"
    if "Failed" in true:
        return "Failed"
    if dig(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if condition in true:
            return condition
    return "Running"


# --- Lease ------------------------------------------------------------------------

def lease_cells(lease: dict, now: datetime) -> list:
    # A released lease has no holder: the cell is empty, as in Kubernetes.
    return [name_of(lease), as_str(dig(lease, "spec", "holderIdentity")), age(lease, now)]


# --- Ingress, IngressClass ------------------------------------------------------

MAX_HOSTS = 3


def ingress_cells(ingress: dict, now: datetime) -> list:
    spec = as_dict(ingress.get("spec"))
    rules = dicts(spec.get("rules"))
    # kubectl's formatHosts: up to three hosts; "+ N more..." (N counting
    # rules, not hosts) only if some rule comes after the third host. A rule
    # without a host matches every host: "*" when no rule names one.
    hosts, more = [], False
    for rule in rules:
        more = more or len(hosts) == MAX_HOSTS
        if not more and rule.get("host"):
            hosts.append(as_str(rule.get("host")))
    host_text = ",".join(hosts) or "*"
    if hosts and more:
        host_text += f" + {len(rules) - MAX_HOSTS} more..."
    addresses = {as_str(i.get("ip")) or as_str(i.get("hostname"))
                 for i in dicts(dig(ingress, "status", "loadBalancer", "ingress"))}
    # A set, sorted, as kubectl's; uncut, like Kubernetes' server, which prints as for -o wide.
    address = ",".join(sorted(a for a in addresses if a))
    # The ports a controller listens on for this Ingress: 443 too once it has TLS.
    ports = "80, 443" if dicts(spec.get("tls")) else "80"
    return [name_of(ingress), as_str(spec.get("ingressClassName")) or NONE, host_text, address, ports,
            age(ingress, now)]


def ingress_class_cells(ingress_class: dict, now: datetime) -> list:
    spec = as_dict(ingress_class.get("spec"))
    params = as_dict(spec.get("parameters"))
    parameters = NONE
    if params:
        kind = as_str(params.get("kind")) + (f".{params['apiGroup']}" if params.get("apiGroup") else "")
        parameters = f"{kind}/{as_str(params.get('name'))}"
    return [name_of(ingress_class), as_str(spec.get("controller")), parameters, age(ingress_class, now)]


def default_cells(obj: dict, now: datetime) -> list:
    return [name_of(obj), age(obj, now)]


# [START printers]
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): Printer((
        NAME,
        Column("Ready", "Ready containers out of all the pod's containers."),
        Column("Status", "A summary of the pod's state, e.g. Running, CrashLoopBackOff, Completed."),
        Column("Restarts", "Container restarts, and how long ago the last one was."),
        AGE,
        Column("IP", "The pod's IP address.", priority=1),
        Column("Node", "The node the pod is bound to.", priority=1),
        Column("Nominated Node", "The node the scheduler made room on, before binding.", priority=1),
        Column("Readiness Gates", "Extra readiness conditions that hold, out of all.", priority=1),
    ), pod_printer.pod_cells, pod_printer.row_conditions),
    ("", "Node"): Printer((
        NAME,
        Column("Status", "Ready, NotReady or Unknown, from the Ready condition; "
                         "SchedulingDisabled when cordoned."),
        Column("Roles", "Roles from the node's node-role.kubernetes.io/ labels."),
        AGE,
        Column("Version", "The kubelet's version."),
        Column("Internal-IP", "The node's InternalIP address.", priority=1),
        Column("External-IP", "The node's ExternalIP address.", priority=1),
        Column("OS-Image", "The operating system the kubelet reports.", priority=1),
        Column("Kernel-Version", "The kernel the kubelet reports.", priority=1),
        Column("Container-Runtime", "The container runtime and its version.", priority=1),
    ), node_cells),
    ("", "Namespace"): Printer((NAME, Column("Status", "Active, or Terminating while being deleted."),
                                AGE), namespace_cells),
    ("", "Service"): Printer((
        NAME,
        Column("Type", "ClusterIP, NodePort, LoadBalancer or ExternalName."),
        Column("Cluster-IP", "The virtual IP inside the cluster."),
        Column("External-IP", "Addresses reachable from outside the cluster."),
        Column("Port(s)", "Service ports, with the node port after a colon."),
        AGE,
        Column("Selector", "Labels of the pods behind the service.", priority=1),
    ), service_cells),
    ("", "Endpoints"): Printer((NAME, Column("Endpoints", "Ready addresses and ports behind the service."),
                                AGE), endpoints_cells),
    ("discovery.k8s.io", "EndpointSlice"): Printer((
        NAME, Column("AddressType", "The type of every address in the slice: IPv4, IPv6 or FQDN."),
        Column("Ports", "The port numbers every endpoint in the slice serves."),
        Column("Endpoints", "Addresses in the slice, ready or not."), AGE), endpointslice_cells),
    ("", "Event"): Printer((
        Column("Last Seen", "Time since the event last happened."),
        Column("Type", "Normal or Warning."),
        Column("Reason", "A short machine-readable cause."),
        Column("Object", "The object the event is about, as kind/name."),
        Column("Subobject", "The part of the object, e.g. a container.", priority=1),
        Column("Source", "The component that reported the event.", priority=1),
        Column("Message", "What happened, for a person."),
        Column("First Seen", "Time since the event first happened.", priority=1),
        Column("Count", "How many times it happened.", priority=1),
        Column("Name", "The event object's own name.", priority=1, format="name"),
    ), event_cells),
    ("", "ConfigMap"): Printer((NAME, Column("Data", "Number of keys."), AGE), configmap_cells),
    ("", "LimitRange"): Printer((NAME, Column("Created At", "When the object was created.", "date")),
                                created_at_cells),
    ("", "ServiceAccount"): Printer((NAME, Column("Secrets", "Secrets the account lists (legacy tokens).",
                                                  "integer"), AGE), service_account_cells),
    ("", "Secret"): Printer((NAME, Column("Type", "What the secret holds, e.g. Opaque."),
                             Column("Data", "Number of keys."), AGE), secret_cells),
    ("apps", "ReplicaSet"): Printer((
        NAME,
        Column("Desired", "Pods asked for (spec.replicas).", "integer"),
        Column("Current", "Pods that exist.", "integer"),
        Column("Ready", "Pods that are ready.", "integer"),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), replicaset_cells),
    ("", "ReplicationController"): Printer((
        NAME,
        Column("Desired", "Pods asked for (spec.replicas).", "integer"),
        Column("Current", "Pods that exist.", "integer"),
        Column("Ready", "Pods that are ready.", "integer"),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), replication_controller_cells),
    ("apps", "Deployment"): Printer((
        NAME,
        Column("Ready", "Ready pods out of those asked for."),
        Column("Up-to-date", "Pods running the latest template."),
        Column("Available", "Pods ready for at least minReadySeconds."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), deployment_cells),
    ("apps", "DaemonSet"): Printer((
        NAME,
        Column("Desired", "Nodes that should run the pod.", "integer"),
        Column("Current", "Nodes that run the pod.", "integer"),
        Column("Ready", "Nodes whose pod is ready.", "integer"),
        Column("Up-to-date", "Nodes running the latest template.", "integer"),
        Column("Available", "Nodes whose pod is available.", "integer"),
        Column("Node Selector", "Labels a node needs to run the pod."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), daemonset_cells),
    ("batch", "Job"): Printer((
        NAME,
        Column("Status", "Running, Complete, Failed, Suspended or Terminating."),
        Column("Completions", "Succeeded pods out of those needed."),
        Column("Duration", "How long the job ran, or has run so far."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), job_cells),
    ("batch", "CronJob"): Printer((
        NAME,
        Column("Schedule", "When Jobs start, in cron format."),
        Column("Timezone", "The time zone the schedule is read in (none: the controller's, UTC)."),
        Column("Suspend", "Whether new Jobs are held back."),
        Column("Active", "Jobs running now.", "integer"),
        Column("Last Schedule", "Time since a Job was last started."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), cronjob_cells),
    ("networking.k8s.io", "Ingress"): Printer((
        NAME, Column("Class", "The IngressClass whose controller serves it (spec.ingressClassName)."),
        Column("Hosts", "Host names the rules match; * for any."),
        Column("Address", "Where the controller can be reached (status.loadBalancer)."),
        Column("Ports", "Ports the controller serves it on: 80, and 443 with TLS."), AGE,
    ), ingress_cells),
    ("networking.k8s.io", "IngressClass"): Printer((
        NAME, Column("Controller", "The controller serving Ingresses of this class."),
        Column("Parameters", "Extra configuration for the controller, as kind/name."), AGE,
    ), ingress_class_cells),
    ("coordination.k8s.io", "Lease"): Printer((
        NAME, Column("Holder", "Who holds the lease (spec.holderIdentity): for a node's, the node."), AGE,
    ), lease_cells),
}
# [END printers]

# For a kind with no printer of its own (a later chapter's, say): what
# kubectl shows for a custom resource without printer columns.
DEFAULT = Printer((NAME, AGE), default_cells)

# RBAC, with Kubernetes' columns (pkg/printers/internalversion/printers.go):
# a role prints its creation time; a binding its role, and with -o wide who
# holds it.
CREATED_AT = Column("Created At", "When the object was created (metadata.creationTimestamp).", "date")


def role_cells(role: dict, now: datetime) -> list:
    return [name_of(role), dig(role, "metadata", "creationTimestamp")]


def binding_cells(binding: dict, now: datetime) -> list:
    ref = as_dict(binding.get("roleRef"))
    subjects = dicts(binding.get("subjects"))

    def names(kind: str) -> str:
        return ", ".join(as_str(s.get("name")) for s in subjects if s.get("kind") == kind)
    # A service account is shown as namespace/name.
    accounts = ", ".join(f"{as_str(s.get('namespace'))}/{as_str(s.get('name'))}"
                         for s in subjects if s.get("kind") == "ServiceAccount")
    return [name_of(binding), f"{as_str(ref.get('kind'))}/{as_str(ref.get('name'))}", age(binding, now),
            names("User"), names("Group"), accounts]


ROLE = Printer((NAME, CREATED_AT), role_cells)
BINDING = Printer((
    NAME, Column("Role", "The role this binding grants (roleRef)."), AGE,
    Column("Users", "Users in the roleBinding", priority=1),
    Column("Groups", "Groups in the roleBinding", priority=1),
    Column("ServiceAccounts", "ServiceAccounts in the roleBinding", priority=1),
), binding_cells)
for _kind, _printer in (("Role", ROLE), ("ClusterRole", ROLE),
                        ("RoleBinding", BINDING), ("ClusterRoleBinding", BINDING)):
    PRINTERS[("rbac.authorization.k8s.io", _kind)] = _printer

# StatefulSets and their history, with Kubernetes' columns.
def statefulset_cells(sts: dict, now: datetime) -> list:
    desired = as_int(dig(sts, "spec", "replicas"), 1)   # the API's default
    containers, images = template_containers(sts)
    return [name_of(sts), f"{as_int(dig(sts, 'status', 'readyReplicas'))}/{desired}", age(sts, now),
            containers, images]


def controller_revision_cells(revision: dict, now: datetime) -> list:
    """CONTROLLER is kind.group/name of the owner, as kubectl writes a resource."""
    owner = next((ref for ref in dicts(dig(revision, "metadata", "ownerReferences")) if ref.get("controller")),
                 None)
    if owner is None:
        controller = NONE
    else:
        group = as_str(owner.get("apiVersion")).rpartition("/")[0]
        kind = as_str(owner.get("kind")).lower()
        controller = f"{kind}.{group}/{as_str(owner.get('name'))}" if group else f"{kind}/{as_str(owner.get('name'))}"
    return [name_of(revision), controller, as_int(revision.get("revision")), age(revision, now)]


PRINTERS[("apps", "StatefulSet")] = Printer((
    NAME, Column("Ready", "Ready pods out of those asked for."), AGE, CONTAINERS, IMAGES,
), statefulset_cells)
PRINTERS[("apps", "ControllerRevision")] = Printer((
    NAME, Column("Controller", "The object whose history this is (kind.group/name)."),
    Column("Revision", "The revision number, counting up from 1.", "integer"), AGE,
), controller_revision_cells)

# As Kubernetes prints definitions: the creation time itself, not an age.
PRINTERS[("apiextensions.k8s.io", "CustomResourceDefinition")] = Printer((
    NAME, Column("Created At", "When the definition was created (metadata.creationTimestamp).", "date"),
), lambda obj, now: [name_of(obj), dig(obj, "metadata", "creationTimestamp")])


# --- Storage: PersistentVolume, PersistentVolumeClaim, StorageClass ------------------
# Kubernetes' columns (pkg/printers/internalversion/printers.go, 1.33): a
# volume's size, who may mount it how, what happens to it when its claim
# goes, and which claim holds it; a claim's volume once it is bound.

UNSET = "<unset>"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def access_modes(modes) -> str:
    """ "RWO,RWX": the short names, in Kubernetes' fixed order, each once."""
    given = set(m for m in as_list(modes) if isinstance(m, str))
    short = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
             ("ReadWriteOncePod", "RWOP"))
    return ",".join(abbreviation for mode, abbreviation in short if mode in given)


def storage_size(amounts) -> str:
    """The storage quantity as Kubernetes writes it back ("5Gi"); "0" if there is none."""
    try:
        return str(parse_quantity(as_dict(amounts).get("storage", 0)))
    except (QuantityError, TypeError, ValueError):
        return UNKNOWN


def storage_class_of(obj: dict) -> str:
    """The class a volume or claim names; the old annotation, where set, wins (as in Kubernetes)."""
    annotation = as_dict(dig(obj, "metadata", "annotations")).get(BETA_CLASS_ANNOTATION)
    return as_str(annotation) if annotation else as_str(dig(obj, "spec", "storageClassName"))


def phase_or_terminating(obj: dict) -> str:
    return "Terminating" if dig(obj, "metadata", "deletionTimestamp") else as_str(dig(obj, "status", "phase"))


def persistent_volume_cells(pv: dict, now: datetime) -> list:
    spec = as_dict(pv.get("spec"))
    ref = as_dict(spec.get("claimRef"))
    claim = f"{as_str(ref.get('namespace'))}/{as_str(ref.get('name'))}" if spec.get("claimRef") else ""
    return [name_of(pv), storage_size(spec.get("capacity")), access_modes(spec.get("accessModes")),
            as_str(spec.get("persistentVolumeReclaimPolicy")), phase_or_terminating(pv), claim,
            storage_class_of(pv), as_str(spec.get("volumeAttributesClassName")) or UNSET,
            as_str(dig(pv, "status", "reason")), age(pv, now), as_str(spec.get("volumeMode")) or UNSET]


def persistent_volume_claim_cells(pvc: dict, now: datetime) -> list:
    spec, status = as_dict(pvc.get("spec")), as_dict(pvc.get("status"))
    volume = as_str(spec.get("volumeName"))
    # Size and modes are the volume's, known once the claim has one.
    capacity = storage_size(status.get("capacity")) if volume else ""
    modes = access_modes(status.get("accessModes")) if volume else ""
    return [name_of(pvc), phase_or_terminating(pvc), volume, capacity, modes, storage_class_of(pvc),
            as_str(spec.get("volumeAttributesClassName")) or UNSET, age(pvc, now),
            as_str(spec.get("volumeMode")) or UNSET]


def is_default_class(storage_class: dict) -> bool:
    annotations = as_dict(dig(storage_class, "metadata", "annotations"))
    return any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


def storage_class_cells(storage_class: dict, now: datetime) -> list:
    name = name_of(storage_class) + (" (default)" if is_default_class(storage_class) else "")
    return [name, as_str(storage_class.get("provisioner")),
            as_str(storage_class.get("reclaimPolicy")) or "Delete",         # the API's defaults
            as_str(storage_class.get("volumeBindingMode")) or "Immediate",
            storage_class.get("allowVolumeExpansion") is True, age(storage_class, now)]


VOLUME_MODE = Column("VolumeMode", "Filesystem (a directory) or Block (a raw device).", priority=1)
VOLUME_ATTRIBUTES_CLASS = Column("VolumeAttributesClass", "The volume's attributes class, if any (not served here).")
PRINTERS[("", "PersistentVolume")] = Printer((
    NAME,
    Column("Capacity", "How much the volume holds (spec.capacity.storage)."),
    Column("Access Modes", "How it may be mounted: RWO one node, ROX many read-only, RWX many, RWOP one pod."),
    Column("Reclaim Policy", "What happens to it when its claim goes: Retain or Delete."),
    Column("Status", "Available, Bound, Released, Failed, or Pending before the binder saw it."),
    Column("Claim", "The claim bound to it, namespace/name."),
    Column("StorageClass", "The class it belongs to."),
    VOLUME_ATTRIBUTES_CLASS,
    Column("Reason", "Why it is in its phase, for a Failed volume."),
    AGE, VOLUME_MODE,
), persistent_volume_cells)
PRINTERS[("", "PersistentVolumeClaim")] = Printer((
    NAME,
    Column("Status", "Pending until bound to a volume, then Bound (Lost if the volume goes)."),
    Column("Volume", "The volume bound to the claim."),
    Column("Capacity", "The bound volume's size."),
    Column("Access Modes", "The bound volume's access modes."),
    Column("StorageClass", "The class the claim asks for."),
    VOLUME_ATTRIBUTES_CLASS, AGE, VOLUME_MODE,
), persistent_volume_claim_cells)
PRINTERS[("storage.k8s.io", "StorageClass")] = Printer((
    NAME,
    Column("Provisioner", "The program that makes volumes of this class."),
    Column("ReclaimPolicy", "What happens to its volumes when their claims go: Delete or Retain."),
    Column("VolumeBindingMode", "Immediate, or WaitForFirstConsumer: bind once a pod using the claim is scheduled."),
    Column("AllowVolumeExpansion", "Whether a claim of this class may grow."),
    AGE,
), storage_class_cells)
