"""The endpointslice controller: a Service's endpoints, in slices of at most 100.

The endpoints controller (endpoints.py) keeps one Endpoints object per
Service. With 5,000 pods behind a Service that object is large, and every
pod that becomes ready rewrites all of it and sends all of it to every
proxy watching. Kubernetes' answer is to cut the list into EndpointSlices
(discovery.k8s.io/v1) of at most `--max-endpoints-per-slice` endpoints
(100 by default): one pod's change rewrites one slice.

For every Service with a selector this controller keeps slices that are:

- named `<service>-<random>` (generateName), since a Service has many;
- labelled `kubernetes.io/service-name: <service>` (how readers find them)
  and `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`
  (slices someone else manages for the same Service are never touched);
- owned by the Service (ownerReferences), so they go when it goes.

Each endpoint is one pod: its IP, its node, a reference to it, and three
conditions: `serving` (the pod is Ready), `terminating` (it is being
deleted) and `ready` (serving and not terminating: where new traffic may
go). Ports are resolved per pod as the endpoints controller resolves them,
and all endpoints in a slice share its ports, so pods that resolve a named
port differently land in different slices.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from common.client.client import NotFound
from controller import Controller, split_key
from endpoints import dns_hostname, resolve_port, service_selects
from expectations import Expectations
from pods import is_ready

GROUP_VERSION = "discovery.k8s.io/v1"
PLURAL = "endpointslices"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
FINISHED_PHASES = ("Succeeded", "Failed")


# ------------------------------------------------------------ one pod

def address_type_of(service: dict) -> str:
    """The Service's primary IP family: the type of address its slices hold."""
    families = service["spec"].get("ipFamilies") or ["IPv4"]
    return families[0]


def pod_ip(pod: dict, address_type: str) -> str | None:
    """The pod's first IP of the family, from status.podIPs (or podIP)."""
    status = pod.get("status") or {}
    candidates = [entry.get("ip") for entry in status.get("podIPs") or []] or [status.get("podIP")]
    version = 6 if address_type == "IPv6" else 4
    for ip in candidates:
        try:
            if ip and ipaddress.ip_address(ip).version == version:
                return ip
        except ValueError:
            continue
    return None


# [START endpoint-for-pod]
def endpoint_for(service: dict, pod: dict, address_type: str) -> dict | None:
    """One pod as an endpoint, or None if it has no address yet or has finished.

    A terminating pod stays in its slice, marked terminating, so a proxy can
    let its open connections drain; only `ready` says "send new traffic here".
    """
    ip = pod_ip(pod, address_type)
    if ip is None or (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return None
    serving = is_ready(pod)
    terminating = bool(pod["metadata"].get("deletionTimestamp"))
    # publishNotReadyAddresses: the Service's clients want every pod (a
    # StatefulSet's peers finding each other before they are ready).
    ready = bool(service["spec"].get("publishNotReadyAddresses")) or (serving and not terminating)
    endpoint = {"addresses": [ip],
                "conditions": {"ready": ready, "serving": serving, "terminating": terminating}}
    if pod["spec"].get("nodeName"):
        endpoint["nodeName"] = pod["spec"]["nodeName"]
    meta = pod["metadata"]
    endpoint["targetRef"] = {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}
    if hostname := dns_hostname(service, pod):
        endpoint["hostname"] = hostname
    return endpoint
# [END endpoint-for-pod]


def ports_for(service: dict, pod: dict) -> list[dict]:
    """The Service's ports as this pod resolves them; a port the pod lacks is left out."""
    ports = []
    for service_port in service["spec"].get("ports") or []:
        number = resolve_port(service_port, pod)
        if number is None:
            continue
        port = {"name": service_port.get("name", ""), "protocol": service_port.get("protocol", "TCP"),
                "port": number}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def ports_key(ports: list[dict] | None) -> tuple:
    """Ports compared as a set: two slices with the same key may hold the same endpoints."""
    return tuple(sorted((p.get("name") or "", p.get("protocol") or "TCP", p.get("port") or 0) for p in ports or []))


# ------------------------------------------------------------ the plan

@dataclass
class PortGroup:
    """Endpoints whose pods resolve the Service's ports alike: they may share slices."""
    ports: list[dict]
    endpoints: list[dict] = field(default_factory=list)


@dataclass
class SlicePlan:
    create: list[dict] = field(default_factory=list)   # new slices (generateName, no name yet)
    update: list[dict] = field(default_factory=list)   # existing slices, changed
    delete: list[dict] = field(default_factory=list)


def endpoints_by_ports(service: dict, pods: list[dict], address_type: str) -> dict[tuple, PortGroup]:
    groups: dict[tuple, PortGroup] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        endpoint = endpoint_for(service, pod, address_type)
        if endpoint is not None:
            ports = ports_for(service, pod)
            groups.setdefault(ports_key(ports), PortGroup(ports)).endpoints.append(endpoint)
    return groups


def owned_by(slice_: dict, service: dict) -> bool:
    return any(ref.get("uid") == service["metadata"]["uid"]
               for ref in slice_["metadata"].get("ownerReferences") or [])


# [START endpointslice-plan]
def plan_slices(service: dict, pods: list[dict], existing: list[dict], max_endpoints: int) -> SlicePlan:
    """What to create, update and delete so that the slices we manage for
    the Service (`existing`) hold exactly the endpoints of its pods.

    Slices with the same ports are filled together; a slice of a Service
    since deleted and recreated (another uid), of another address type, or
    of ports no pod has any more, is deleted. A Service with no endpoints
    keeps one empty slice, so readers can tell "no pods" from "not yet done".
    """
    address_type = address_type_of(service)
    groups = endpoints_by_ports(service, pods, address_type) or {(): PortGroup(ports=[])}
    plan = SlicePlan()
    unclaimed = [s for s in existing if owned_by(s, service) and s.get("addressType") == address_type]
    plan.delete += [s for s in existing if s not in unclaimed]
    for key, group in groups.items():
        same_ports = [s for s in unclaimed if ports_key(s.get("ports")) == key]
        unclaimed = [s for s in unclaimed if s not in same_ports]
        fill_slices(service, group, same_ports, max_endpoints, plan)
    plan.delete += unclaimed
    return plan
# [END endpointslice-plan]


def fill_slices(service: dict, group: PortGroup, slices: list[dict], max_endpoints: int, plan: SlicePlan) -> None:
    """Endpoints stay in the slice they are in, so a pod's change rewrites
    one slice; new ones fill the room in existing slices, then new slices."""
    wanted = {endpoint["targetRef"]["uid"]: endpoint for endpoint in group.endpoints}
    placed: set[str] = set()
    contents: list[tuple[dict, list[dict]]] = []
    for slice_ in sorted(slices, key=lambda s: s["metadata"]["name"]):
        kept = []
        for old in slice_.get("endpoints") or []:
            uid = (old.get("targetRef") or {}).get("uid")
            if uid in wanted and uid not in placed and len(kept) < max_endpoints:
                kept.append(wanted[uid])
                placed.add(uid)
        contents.append((slice_, kept))
    rest = [endpoint for uid, endpoint in wanted.items() if uid not in placed]
    for slice_, kept in contents:
        room = max(0, max_endpoints - len(kept))
        kept += rest[:room]
        rest = rest[room:]
    for number, (slice_, kept) in enumerate(contents):
        if not kept and (group.endpoints or number > 0):
            plan.delete.append(slice_)
            continue
        desired = slice_body(service, group.ports, kept, base=slice_)
        if desired != slice_:
            plan.update.append(desired)
    for start in range(0, len(rest), max_endpoints):
        plan.create.append(slice_body(service, group.ports, rest[start:start + max_endpoints]))
    if not contents and not group.endpoints:
        plan.create.append(slice_body(service, group.ports, []))


def slice_body(service: dict, ports: list[dict], endpoints: list[dict], base: dict | None = None) -> dict:
    """A slice of the Service holding these endpoints: `base` (an existing
    slice) with its labels, owner, ports and endpoints set, or a new one."""
    meta = service["metadata"]
    labels = {**(meta.get("labels") or {}), SERVICE_NAME_LABEL: meta["name"], MANAGED_BY_LABEL: MANAGED_BY}
    owner = {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}
    if base is None:
        base = {"apiVersion": GROUP_VERSION, "kind": "EndpointSlice",
                "metadata": {"generateName": meta["name"] + "-", "namespace": meta["namespace"]}}
    return {**base, "metadata": {**base["metadata"], "labels": labels, "ownerReferences": [owner]},
            "addressType": address_type_of(service), "ports": ports, "endpoints": endpoints}


# ------------------------------------------------------------ the controller

def is_managed(slice_: dict) -> bool:
    return (slice_["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def service_key(slice_: dict) -> str | None:
    """The key of the Service a slice we manage belongs to."""
    name = (slice_["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
    return f"{slice_['metadata']['namespace']}/{name}" if name and is_managed(slice_) else None


class EndpointSliceController(Controller):
    name = "endpointslice"

    def __init__(self, *args, max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        # A slice we created shows up in our cache a moment later; until it
        # does, a second reconcile would create it again.
        self.expectations = Expectations()
        self.services = self.informers.get("v1", "services")
        self.pods = self.informers.get("v1", "pods")
        self.slices = self.informers.get(GROUP_VERSION, PLURAL)
        self.services.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                                  on_delete=self.enqueue)
        self.pods.add_handler(on_add=self.pod_changed, on_update=self.pod_changed, on_delete=self.pod_changed)
        self.slices.add_handler(on_add=self.slice_added, on_update=lambda old, new: self.slice_changed(new),
                                on_delete=self.slice_changed)

    def pod_changed(self, pod: dict, new: dict | None = None) -> None:
        """Every Service whose selector picks the pod, before or after the change."""
        for version in (pod, new):
            for service in self.services.list() if version is not None else ():
                if service_selects(service, version):
                    self.enqueue(service)

    def slice_added(self, slice_: dict) -> None:
        if (key := service_key(slice_)) is not None:
            self.expectations.created(key)
            self.queue.add(key)

    def slice_changed(self, slice_: dict) -> None:
        """Someone edited or deleted one of our slices: put it back."""
        if (key := service_key(slice_)) is not None:
            self.queue.add(key)

    def slices_of(self, namespace: str, name: str) -> list[dict]:
        return [s for s in self.slices.list()
                if s["metadata"]["namespace"] == namespace and service_key(s) == f"{namespace}/{name}"]

    # [START endpointslice-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(namespace, name)
        ours = self.slices_of(namespace, name)
        if service is None or not service["spec"].get("selector"):
            # Gone (the garbage collector would follow the owner references
            # too), or selector-less, whose endpoints someone writes by hand.
            self.expectations.forget(key)
            self.delete_slices(ours)
            return
        if not self.expectations.satisfied(key):
            return        # the slices we created are not in the cache yet; their arrival requeues the key
        pods = [pod for pod in self.pods.list() if service_selects(service, pod)]
        plan = plan_slices(service, pods, ours, self.max_endpoints_per_slice)
        self.expectations.expect_creates(key, len(plan.create))
        for slice_ in plan.create:
            try:
                self.client.create(GROUP_VERSION, PLURAL, slice_, namespace)
            except Exception:
                self.expectations.created(key)      # it will never arrive
                raise
        for slice_ in plan.update:
            self.client.update(GROUP_VERSION, PLURAL, slice_)   # resourceVersion: Conflict if stale
        self.delete_slices(plan.delete)
    # [END endpointslice-reconcile]

    def delete_slices(self, slices: list[dict]) -> None:
        for slice_ in slices:
            try:
                self.client.delete(GROUP_VERSION, PLURAL, slice_["metadata"]["namespace"], slice_["metadata"]["name"])
            except NotFound:
                pass                                  # already gone: what we wanted
