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
    subresources: tuple[str, ...] = ()   # "status", "scale", "binding", "log", "exec"...
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
    def group_version(self) -> str:      # the same as api_version, by the name chapter 04 uses
        return self.api_version

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


ALL = ("all",)

# [START resource-table]
# Each row: group ("" = core), version, kind, plural, namespaced?, short
# names, subresources, categories (ALL: `kubectl get all` shows it).
RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize"),
             selectable_fields=("status.phase",)),
    Resource("", "v1", "Pod", "pods", True, ("po",),
             ("status", "binding", "log", "exec", "attach", "portforward"), ALL,
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
    # The original blog posts' replication controller: a ReplicaSet whose selector is a plain label map.
    Resource("", "v1", "ReplicationController", "replicationcontrollers", True, ("rc",),
             ("status", "scale"), ALL),
    Resource("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("status", "scale"), ALL),
    Resource("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("status", "scale"), ALL),
    Resource("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), ALL),
    Resource("batch", "v1", "Job", "jobs", True, (), ("status",), ALL),
    Resource("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",), ALL),
    # Kubelets' heartbeats (kube-node-lease/<node>) and leader election.
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True),
    Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
             ("crd", "crds"), ("status",), ("api-extensions",)),    # your own kinds: extensions/custom_resources.py
    Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),  # Endpoints, in pieces
)
# [END resource-table]
# Pods with names that last (web-0, web-1...) and disks of their own; the
# controller keeps its template history as ControllerRevisions.
RESOURCES += (
    Resource("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), ("status", "scale"), ALL),
    Resource("apps", "v1", "ControllerRevision", "controllerrevisions", True),
)
# Who may do what, as API objects (rbac.py reads them to authorize).
RESOURCES += (
    Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
)
# HTTP routes into the cluster, and who serves them (chapter 05's ingress controller).
RESOURCES += (
    Resource("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",), ("status",)),
    Resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
)
# Data that outlives its pod: volumes, claims on them, classes that make them.
RESOURCES += (
    Resource("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
)
# Who a program in a pod is: its token (sa_tokens.py) names one of these.
RESOURCES += (
    Resource("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
)
# Not stored: questions for the authorizer, see access_review.py.
RESOURCES += (
    Resource("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
             verbs=("create",)),          # `kubectl auth can-i`
    Resource("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
             verbs=("create",)),          # `kubectl auth can-i --list`
    Resource("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False,
             verbs=("create",)),          # `kubectl auth whoami`
    Resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False,
             verbs=("create",)),          # a component checking a caller's token
    Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False,
             verbs=("create",)),          # ... and what that caller may do
)

# Not stored, and in Kubernetes not even the API server's own: metrics-server
# serves metrics.k8s.io behind it (an aggregated API). Ours asks the
# kubelets when a request comes (resource_metrics.py). Kept out of
# RESOURCES, whose kinds are stored, printed and published in OpenAPI.
METRICS: tuple[Resource, ...] = (
    Resource("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", True, verbs=("get", "list")),
    Resource("metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", False, verbs=("get", "list")),
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES + METRICS}
_BY_KIND = {(r.group, r.kind): r for r in RESOURCES + METRICS}

# Kinds defined at run time by CustomResourceDefinitions, by URL path:
# extensions/custom_resources.py replaces the whole table (never changes it) whenever
# a definition is established or goes. The static table above never
# changes; every lookup below sees both.
_custom: dict[tuple[str, str, str], Resource] = {}
_custom_generation = 0       # counts replacements, for caches built from the served kinds


def serve_custom(resources) -> None:
    """Serve exactly these custom resources from now on (one assignment, so a
    request in flight finds a kind by path and by name in one table, the old
    one or the new)."""
    global _custom, _custom_generation
    _custom = {(r.group, r.version, r.plural): r for r in resources}
    _custom_generation += 1


def custom_generation() -> int:
    return _custom_generation


def served() -> tuple[Resource, ...]:
    """Every kind served right now: the static table, metrics, then the custom kinds."""
    return RESOURCES + METRICS + tuple(_custom.values())


def lookup(group: str, version: str, plural: str) -> Resource | None:
    """The resource a URL names, e.g. ("apps", "v1", "deployments")."""
    key = (group, version, plural)
    return _BY_PATH.get(key) or _custom.get(key)


def for_kind(group: str, kind: str) -> Resource | None:
    custom = (r for r in _custom.values() if (r.group, r.kind) == (group, kind))
    return _BY_KIND.get((group, kind)) or next(custom, None)
