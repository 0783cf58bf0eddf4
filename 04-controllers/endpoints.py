"""The endpoints controller: which pod IPs and ports stand behind a Service.

A Service names its pods by label (`selector: {app: web}`), but a proxy
needs addresses. For every Service with a selector this controller keeps an
Endpoints object of the same name listing the IP of every matching pod:
ready pods under `addresses` (traffic may go there), the others under
`notReadyAddresses` (they exist, but are starting, or failing their
readiness probe). Chapter 05's proxy and DNS read nothing else.

A port may be named: `targetPort: http` means "the container port called
http", which can be a different number in different pods (during a rollout
from 8080 to 9090, say). So ports are resolved per pod, and pods that
resolve a port differently land in different subsets.
"""
from __future__ import annotations

from common.model.selectors import Selector
from controller import Controller, split_key

# Kubernetes marks the Endpoints it manages; a Service without a selector
# has Endpoints someone writes by hand, which we never touch.
LAST_CHANGE = "endpoints.kubernetes.io/last-change-trigger-time"


def resolve_port(service_port: dict, pod: dict) -> int | None:
    """The container port a Service port sends to in this pod, or None if
    the pod has no port by that name."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target and port.get("protocol", "TCP") == service_port.get("protocol", "TCP"):
                return port["containerPort"]
    return None


def service_selects(service: dict, pod: dict) -> bool:
    """A Service's selector is a plain map of labels (not a LabelSelector
    with matchLabels/matchExpressions), and an empty one selects nothing."""
    selector = service["spec"].get("selector")
    return bool(selector) and pod["metadata"]["namespace"] == service["metadata"]["namespace"] \
        and Selector.from_labels(selector).matches(pod["metadata"].get("labels"))


def dns_hostname(service: dict, pod: dict) -> str:
    """The pod's own DNS label under this Service, or "". A pod whose
    subdomain is the Service's name (a StatefulSet's: hostname web-0,
    subdomain nginx) is web-0.nginx.<namespace>.svc.cluster.local: the DNS
    server learns that name from the address's hostname."""
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        return spec["hostname"]
    return ""


def is_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


# [START endpoints-subsets]
def subsets_for(service: dict, pods: list[dict]) -> list[dict]:
    """Group the pods' addresses by the ports they resolve to, as Kubernetes
    does: one subset per distinct set of ports."""
    groups: dict[tuple, dict] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or pod["metadata"].get("deletionTimestamp"):
            continue                     # no address yet, or on its way out
        ports = []
        for service_port in service["spec"].get("ports") or []:
            number = resolve_port(service_port, pod)
            if number is not None:
                port = {"port": number, "protocol": service_port.get("protocol", "TCP")}
                if service_port.get("name"):
                    port["name"] = service_port["name"]
                ports.append(port)
        address = {"ip": ip, "nodeName": pod["spec"].get("nodeName"),
                   "targetRef": {"kind": "Pod", "namespace": pod["metadata"]["namespace"],
                                 "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}}
        if hostname := dns_hostname(service, pod):
            address["hostname"] = hostname
        subset = groups.setdefault(tuple(sorted((p.get("name", ""), p["port"]) for p in ports)),
                                   {"addresses": [], "notReadyAddresses": [], "ports": ports})
        subset["addresses" if is_ready(pod) else "notReadyAddresses"].append(address)
    return [{key: value for key, value in subset.items() if value} for subset in groups.values()]
# [END endpoints-subsets]


class EndpointsController(Controller):
    name = "endpoints"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.services = self.informers.get("v1", "services")
        self.pods = self.informers.get("v1", "pods")
        self.endpoints = self.informers.get("v1", "endpoints")
        self.services.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                                  on_delete=self.enqueue)
        self.pods.add_handler(on_add=self.pod_changed, on_update=lambda old, new: self.pod_changed(old, new),
                              on_delete=self.pod_changed)
        # Someone edited or deleted the Endpoints: put them back.
        self.endpoints.add_handler(on_update=lambda old, new: self.enqueue(new), on_delete=self.enqueue)

    def pod_changed(self, pod: dict, new: dict | None = None) -> None:
        """Every Service whose selector picks the pod, before or after the change."""
        for version in (pod, new):
            if version is None:
                continue
            for service in self.services.list():
                if service_selects(service, version):
                    self.enqueue(service)

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(namespace, name)
        current = self.endpoints.get(namespace, name)
        if service is None or not service["spec"].get("selector"):
            # Deleted, or selector-less (its Endpoints are written by hand): not ours.
            if service is None and current is not None and _managed(current):
                self.client.delete("v1", "endpoints", namespace, name)
            return
        pods = [p for p in self.pods.list() if service_selects(service, p)]
        subsets = subsets_for(service, pods)
        labels = {**(service["metadata"].get("labels") or {}), "endpoints.kubernetes.io/managed-by": "endpoint-controller"}
        if current is None:
            self.client.create("v1", "endpoints", {"apiVersion": "v1", "kind": "Endpoints",
                                                   "metadata": {"name": name, "namespace": namespace, "labels": labels},
                                                   "subsets": subsets})
        elif (current.get("subsets") or []) != subsets or current["metadata"].get("labels") != labels:
            self.client.update("v1", "endpoints", {**current, "metadata": {**current["metadata"], "labels": labels},
                                                   "subsets": subsets})


def _managed(endpoints: dict) -> bool:
    return (endpoints["metadata"].get("labels") or {}).get("endpoints.kubernetes.io/managed-by") == "endpoint-controller"
