"""The resource registry: one table of every kind the API server serves.

Kubernetes calls a served type a *resource* and names it three ways: the
`kind` in the object (`Pod`), the `plural` in the URL (`pods`) and the short
names kubectl accepts (`po`). Everything else in the server (routing,
discovery, OpenAPI, validation, printing) looks the kind up here, so adding a
kind is one entry in RESOURCES plus, if it needs one, its validation.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Resource:
    group: str                   # "" is the core group, served under /api/v1
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()   # "status", "scale", "binding", "log"
    categories: tuple[str, ...] = ()     # "all" makes `kubectl get all` show it
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get",
                              "list", "patch", "update", "watch")
    # Field selectors the kind supports beyond metadata.name/namespace, as in
    # Kubernetes (pods: spec.nodeName, status.phase, ...).
    selectable_fields: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_version(self) -> str:
        return self.api_version

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


ALL = ("all",)

# [START resource-table]
RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize"),
             selectable_fields=("status.phase",)),
    Resource("", "v1", "Pod", "pods", True, ("po",), ("status", "binding", "log"), ALL,
             selectable_fields=("spec.nodeName", "spec.schedulerName", "spec.restartPolicy",
                                "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                                "status.podIP", "status.nominatedNodeName")),
    Resource("", "v1", "Node", "nodes", False, ("no",), ("status",),
             selectable_fields=("spec.unschedulable",)),
    Resource("", "v1", "Service", "services", True, ("svc",), ("status",), ALL),
    Resource("", "v1", "Endpoints", "endpoints", True, ("ep",)),
    Resource("", "v1", "Event", "events", True, ("ev",),
             selectable_fields=("involvedObject.kind", "involvedObject.namespace",
                                "involvedObject.name", "involvedObject.uid",
                                "involvedObject.apiVersion", "involvedObject.resourceVersion",
                                "involvedObject.fieldPath", "reason", "reportingComponent",
                                "source", "type")),
    Resource("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    Resource("", "v1", "Secret", "secrets", True, (), selectable_fields=("type",)),
    Resource("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    # The seed posts' replication controller: a ReplicaSet whose selector is a plain label map.
    Resource("", "v1", "ReplicationController", "replicationcontrollers", True, ("rc",),
             ("status", "scale"), ALL),
    Resource("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("status", "scale"), ALL),
    Resource("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("status", "scale"), ALL),
    Resource("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), ALL),
    Resource("batch", "v1", "Job", "jobs", True, (), ("status",), ALL),
    Resource("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",), ALL),
    # Kubelets' heartbeats (kube-node-lease/<node>) and leader election.
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True),
    Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),  # Endpoints, in pieces
    # Not stored: a question for the authorizer (`kubectl auth can-i`), see access_review.py.
    Resource("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
             verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
             verbs=("create",)),          # `kubectl auth can-i --list`
    Resource("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False,
             verbs=("create",)),          # `kubectl auth whoami`
)
# [END resource-table]

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.group, r.kind): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    """The resource a URL names, e.g. ("apps", "v1", "deployments")."""
    return _BY_PATH.get((group, version, plural))


def for_kind(group: str, kind: str) -> Resource | None:
    return _BY_KIND.get((group, kind))


def group_versions() -> dict[str, list[str]]:
    """{"": ["v1"], "apps": ["v1"], ...} in the order of RESOURCES."""
    out: dict[str, list[str]] = {}
    for r in RESOURCES:
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


def in_group_version(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if r.group == group and r.version == version]
