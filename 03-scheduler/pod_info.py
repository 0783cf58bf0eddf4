"""PodInfo: a pod, read once into the shape the plugins ask about.

A pod is a deeply nested dict. Filters run once per node, so reading
"the pod's cpu request" or "its tolerations" out of that dict every time
would repeat the same work a thousand times per pod. PodInfo reads it all
once, when the scheduler first sees this version of the pod (Kubernetes
keeps a PodInfo beside every pod in its cache for the same reason).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from common.model.selectors import Selector, SelectorError, selector_from_label_selector
from node_resources import pod_requests

HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class AffinityTerm:
    """One required pod (anti-)affinity term: pods matching `selector` in
    `namespaces` (None: every namespace), counted per `topology_key` domain."""

    selector: Selector
    namespaces: frozenset[str] | None
    topology_key: str

    def matches(self, other: "PodInfo") -> bool:
        in_namespace = self.namespaces is None or other.namespace in self.namespaces
        return in_namespace and self.selector.matches(other.labels)


@dataclass
class PodInfo:
    pod: dict
    key: str                       # "namespace/name"
    namespace: str
    name: str
    uid: str
    labels: dict
    priority: int
    scheduler_name: str
    node_name: str                 # spec.nodeName ("" until bound)
    requests: dict[str, int]       # what the filter compares (cpu in millicores)
    non_zero_requests: dict[str, int]   # what the scores compare (defaults for request-less containers)
    best_effort: bool              # no container requests or limits cpu or memory
    host_ports: list[tuple[str, str, int]]   # (hostIP, protocol, hostPort)
    tolerations: list[dict]
    node_selector: dict
    required_node_terms: list[dict] | None   # None: the pod has no required node affinity
    preferred_node_terms: list[dict]
    owner_uid: str | None          # the controller that made this pod (a ReplicaSet, ...)
    affinity_terms: list[AffinityTerm] = field(default_factory=list)
    anti_affinity_terms: list[AffinityTerm] = field(default_factory=list)

    @classmethod
    def of(cls, pod: dict) -> "PodInfo":
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace = meta.get("namespace") or "default"
        affinity = spec.get("affinity") or {}
        node_affinity = affinity.get("nodeAffinity") or {}
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        owner = next((ref.get("uid") for ref in meta.get("ownerReferences") or [] if ref.get("controller")), None)
        return cls(
            pod=pod, key=f"{namespace}/{meta.get('name')}", namespace=namespace, name=meta.get("name", ""),
            uid=meta.get("uid", ""), labels=meta.get("labels") or {},
            priority=spec.get("priority") if isinstance(spec.get("priority"), int) else 0,
            scheduler_name=spec.get("schedulerName") or "default-scheduler",
            node_name=spec.get("nodeName") or "",
            requests=_in_report_order(pod_requests(spec)),
            non_zero_requests=pod_requests(spec, non_zero=True),
            best_effort=_best_effort(spec),
            host_ports=_host_ports(spec),
            tolerations=[t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
            node_selector=spec.get("nodeSelector") or {},
            required_node_terms=None if required is None else list(required.get("nodeSelectorTerms") or []),
            preferred_node_terms=list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []),
            owner_uid=owner,
            affinity_terms=_terms(affinity.get("podAffinity"), namespace),
            anti_affinity_terms=_terms(affinity.get("podAntiAffinity"), namespace),
        )

    @property
    def terminated(self) -> bool:
        """Succeeded or Failed: it holds nothing on its node any more."""
        return (self.pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    @property
    def deleting(self) -> bool:
        return bool((self.pod.get("metadata") or {}).get("deletionTimestamp"))


def _in_report_order(requests: dict[str, int]) -> dict[str, int]:
    """cpu, memory, ephemeral-storage first, as Kubernetes checks them, then the rest by name."""
    first = [name for name in ("cpu", "memory", "ephemeral-storage") if name in requests]
    rest = sorted(name for name in requests if name not in first)
    return {name: requests[name] for name in first + rest}


def _best_effort(spec: dict) -> bool:
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            if any(name in (resources.get(section) or {}) for name in ("cpu", "memory")):
                return False
    return True


def _host_ports(spec: dict) -> list[tuple[str, str, int]]:
    """The ports this pod takes on its node's own addresses."""
    ports = []
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            if isinstance(port, dict) and port.get("hostPort"):
                ports.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", int(port["hostPort"])))
    return ports


def _terms(section: dict | None, own_namespace: str) -> list[AffinityTerm]:
    """The required terms of a podAffinity or podAntiAffinity section."""
    terms = []
    for term in (section or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
        try:
            selector = selector_from_label_selector(term.get("labelSelector")) \
                if term.get("labelSelector") is not None else Selector.nothing()
        except SelectorError:
            selector = Selector.nothing()      # the API server validates; a bad one selects no pod
        namespaces = set(term.get("namespaces") or [])
        namespace_selector = term.get("namespaceSelector")
        if namespace_selector == {}:
            scope = None                       # an empty namespaceSelector means every namespace
        else:
            # A namespaceSelector with labels would need the namespaces' labels,
            # which this scheduler does not watch: only the listed names count.
            scope = frozenset(namespaces or ([] if namespace_selector else [own_namespace]))
        terms.append(AffinityTerm(selector, scope, term.get("topologyKey") or HOSTNAME_LABEL))
    return terms
