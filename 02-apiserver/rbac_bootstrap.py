"""The roles and bindings every cluster starts with, reconciled at start-up.

Kubernetes' API server writes its default policy (bootstrappolicy) each time
it starts, whatever --authorization-mode says (wherever it serves the
rbac.authorization.k8s.io API), so a cluster that turns RBAC on later finds
them there. Roles for people (cluster-admin, admin, edit, view), for every
signed-in client (system:discovery, system:basic-user,
system:public-info-viewer) and for the components (system:node,
system:kube-scheduler, system:kube-controller-manager), and bindings that
hand them out by group. Ours are the same roles, trimmed to the kinds we
serve.

Reconciling, Kubernetes' rule: a default role or binding that is missing is
created; one that exists gets back any default rule (or subject) it lacks,
and keeps whatever was added to it; one annotated
`rbac.authorization.kubernetes.io/autoupdate: "false"` is left exactly as it
is. So an administrator may extend `view`, and may take a default right
away for good only by setting that annotation.

The users of our own certificates (certs.py) are not Kubernetes' names, so
four bindings of ours, `groundup:*`, give them the rights the lessons'
ABAC policy (policy.jsonl) gives them, through the default roles where one
fits: `scheduler` gets system:kube-scheduler, every node (group
system:nodes) system:node, `viewer` view. Our controller manager runs every
controller as one user, where Kubernetes runs each as its own service
account, so it gets a role of its own, groundup:controller-manager. Why
bindings rather than renaming the users to Kubernetes' (system:kube-scheduler):
the lessons' tokens, kubeconfigs and ABAC policy keep working unchanged,
and a learner can see in `kubectl get clusterrolebindings` which of the
defaults are Kubernetes' and which are this cluster's. `viewer` loses two
things ABAC gave it: Secrets and cluster-scoped kinds such as nodes, which
Kubernetes' `view` leaves out on purpose.
(Kubernetes binds system:node to no one and leaves kubelets to the Node
authorizer; ours binds it so that RBAC alone runs the lessons' cluster,
and removes that binding when the Node authorizer runs.)
"""
from __future__ import annotations

import copy

import api_errors
import objects
from common.log import get_logger
from post_start import create_if_missing
from rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, GROUP, PolicyRule
from rbac_aggregation import aggregate
from rbac_escalation import missing_rules

log = get_logger("apiserver")

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
NODES_BINDING = "groundup:nodes"
READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")


def rule(verbs, groups=("",), resources=(), names=(), urls=()) -> dict:
    return PolicyRule(tuple(verbs), () if urls else tuple(groups), tuple(resources),
                      tuple(names), tuple(urls)).to_dict()


def cluster_role(name: str, rules: list[dict], labels: dict | None = None, aggregate_to: str = "") -> dict:
    metadata = {"name": name, "annotations": {AUTOUPDATE: "true"},
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})}}
    role = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": metadata, "rules": rules}
    if aggregate_to:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{aggregate_to}": "true"}}]}
    return role


def binding(name: str, role: str, *subjects: tuple[str, str]) -> dict:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "annotations": {AUTOUPDATE: "true"},
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": GROUP, "kind": kind, "name": who} for kind, who in subjects]}


def aggregated_to(role: str) -> dict:
    return {f"rbac.authorization.k8s.io/aggregate-to-{role}": "true"}


WORKLOADS = ("pods", "configmaps", "services", "replicationcontrollers", "events", "endpoints")
APPS = ("deployments", "replicasets", "daemonsets", "statefulsets")
STATUS_AND_SCALE = ("pods/log", "pods/status", "services/status", "replicationcontrollers/status",
                    "replicationcontrollers/scale", "namespaces/status")
APPS_STATUS_AND_SCALE = ("deployments/status", "deployments/scale", "replicasets/status",
                         "replicasets/scale", "daemonsets/status", "statefulsets/status", "statefulsets/scale")


# [START default-roles]
def cluster_roles() -> list[dict]:
    return [
        cluster_role("cluster-admin", [rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])]),
        cluster_role("system:discovery", [rule(["get"], urls=[
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
            "/readyz", "/version", "/version/"])]),
        cluster_role("system:public-info-viewer", [rule(["get"], urls=[
            "/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        cluster_role("system:monitoring", [rule(["get"], urls=[
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/readyz", "/readyz/*"])]),
        cluster_role("system:basic-user", [
            rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])]),
        # The issuer's public documents (oidc_discovery.py), for verifiers of pods' tokens.
        cluster_role("system:service-account-issuer-discovery", [rule(["get"], urls=[
            "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
            "/openid/v1/jwks", "/openid/v1/jwks/"])]),
        # For components that check their own callers with the API server's help.
        cluster_role("system:auth-delegator", [
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"])]),
        # admin, edit and view are filled from the roles labelled to aggregate into them.
        cluster_role("admin", [], aggregate_to="admin"),
        cluster_role("edit", [], aggregated_to("admin"), aggregate_to="edit"),
        cluster_role("view", [], aggregated_to("edit"), aggregate_to="view"),
        cluster_role("system:aggregate-to-admin", [
            rule(READ + WRITE, [GROUP], ["roles", "rolebindings"])], aggregated_to("admin")),
        cluster_role("system:aggregate-to-edit", [
            rule(WRITE, [""], ["pods", "configmaps", "secrets", "services", "replicationcontrollers",
                               "replicationcontrollers/scale", "persistentvolumeclaims"]),
            # A shell in a pod is editing it: exec, attach, port-forward (`create` since 1.35 for WebSockets too).
            rule(WRITE, [""], ["pods/attach", "pods/exec", "pods/portforward"]),
            rule(READ, [""], ["secrets", "pods/attach", "pods/exec", "pods/portforward"]),
            rule(WRITE, ["apps"], APPS + ("deployments/scale", "replicasets/scale", "statefulsets/scale")),
            rule(WRITE, ["batch"], ["jobs", "cronjobs"]),
            rule(WRITE, ["networking.k8s.io"], ["ingresses"])], aggregated_to("edit")),
        cluster_role("system:aggregate-to-view", [
            rule(READ, [""], WORKLOADS + STATUS_AND_SCALE + ("limitranges", "namespaces", "persistentvolumeclaims",
                                                             "persistentvolumeclaims/status")),
            rule(READ, ["apps"], APPS + APPS_STATUS_AND_SCALE + ("controllerrevisions",)),
            rule(READ, ["batch"], ["jobs", "cronjobs", "jobs/status", "cronjobs/status"]),
            rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
            rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status"])], aggregated_to("view")),
        # `kubectl top` for whoever may view: in Kubernetes this role comes with
        # metrics-server's manifest, which serves the group (resource_metrics.py).
        cluster_role("system:aggregated-metrics-reader", [
            rule(READ, ["metrics.k8s.io"], ["pods", "nodes"])],
            {**aggregated_to("view"), **aggregated_to("edit"), **aggregated_to("admin")}),
        *component_roles(),
    ]
# [END default-roles]


def node_rules() -> list[PolicyRule]:
    """What every kubelet may do; the Node authorizer narrows Secrets, ConfigMaps and Leases."""
    role = next(r for r in component_roles() if r["metadata"]["name"] == "system:node")
    return [PolicyRule.from_dict(r) for r in role["rules"]]


def component_roles() -> list[dict]:
    return [
        cluster_role("system:node", [
            rule(["create", "get", "list", "watch", "update", "patch"], [""], ["nodes"]),
            rule(["update", "patch"], [""], ["nodes/status", "pods/status"]),
            rule(READ + ("create", "delete"), [""], ["pods"]),
            rule(READ, [""], ["services", "endpoints", "configmaps", "secrets"]),
            rule(["create", "update", "patch"], [""], ["events"]),
            # Its pods' ServiceAccount tokens (the Node authorizer narrows it to those pods).
            rule(["create"], [""], ["serviceaccounts/token"]),
            rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),     # what its pods mount
            rule(["get", "update", "patch"], [""], ["persistentvolumeclaims/status"]),
            rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"])]),
        cluster_role("system:kube-scheduler", [
            rule(["create", "update", "patch"], [""], ["events"]),
            rule(["create"], ["coordination.k8s.io"], ["leases"]),
            rule(["get", "update"], ["coordination.k8s.io"], ["leases"], names=["kube-scheduler"]),
            rule(READ, [""], ["nodes", "services", "replicationcontrollers", "namespaces"]),
            rule(READ + ("delete",), [""], ["pods"]),
            rule(["create"], [""], ["bindings", "pods/binding"]),
            rule(["patch", "update"], [""], ["pods/status"]),
            rule(READ, ["apps"], ["replicasets"]),
            rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"])]),
        # The scheduler's volume binding: it writes its choice of node on a
        # WaitForFirstConsumer claim (volume.kubernetes.io/selected-node).
        cluster_role("system:volume-scheduler", [
            rule(READ + ("update", "patch"), [""], ["persistentvolumes", "persistentvolumeclaims"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"])]),
        # For a provisioner running outside the controller manager.
        cluster_role("system:persistent-volume-provisioner", [
            rule(READ + ("create", "delete"), [""], ["persistentvolumes"]),
            rule(READ + ("update",), [""], ["persistentvolumeclaims"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"]),
            rule(["list", "watch", "create", "update", "patch"], [""], ["events"])]),
        cluster_role("system:kube-controller-manager", [
            rule(["create", "update", "patch"], [""], ["events"]),
            rule(["create"], ["coordination.k8s.io"], ["leases"]),
            rule(["get", "update"], ["coordination.k8s.io"], ["leases"], names=["kube-controller-manager"]),
            rule(READ, ["*"], ["*"])]),
        # Ours: every controller of chapter 04 under one name (see the docstring). The
        # namespace controller empties a namespace of every kind and the garbage collector
        # updates or deletes dependents of any kind, as Kubernetes' namespace-controller and
        # generic-garbage-collector roles allow; what it creates is listed.
        cluster_role("groundup:controller-manager", [
            rule(READ + ("update", "patch", "delete", "deletecollection"), ["*"], ["*"]),
            rule(["create"], [""], ["pods", "endpoints", "events", "serviceaccounts", "configmaps",
                                   "persistentvolumes", "persistentvolumeclaims"]),
            rule(["create"], ["storage.k8s.io"], ["storageclasses"]),     # the default class, at start
            rule(["create"], ["apps"], ["replicasets", "controllerrevisions"]),
            rule(["create"], ["batch"], ["jobs"]),
            rule(["create"], ["discovery.k8s.io"], ["endpointslices"]),
            rule(["create"], ["coordination.k8s.io"], ["leases"])]),
    ]


def cluster_role_bindings() -> list[dict]:
    return [
        binding("cluster-admin", "cluster-admin", ("Group", "system:masters")),
        binding("system:discovery", "system:discovery", ("Group", "system:authenticated")),
        binding("system:basic-user", "system:basic-user", ("Group", "system:authenticated")),
        binding("system:public-info-viewer", "system:public-info-viewer",
                ("Group", "system:authenticated"), ("Group", "system:unauthenticated")),
        binding("system:monitoring", "system:monitoring", ("Group", "system:monitoring")),
        binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                ("Group", "system:serviceaccounts")),
        binding("system:kube-scheduler", "system:kube-scheduler", ("User", "system:kube-scheduler")),
        binding("system:kube-controller-manager", "system:kube-controller-manager",
                ("User", "system:kube-controller-manager")),
        # The users of certs.py (see the docstring).
        binding("system:volume-scheduler", "system:volume-scheduler", ("User", "system:kube-scheduler")),
        binding("groundup:scheduler", "system:kube-scheduler", ("User", "scheduler")),
        binding("groundup:volume-scheduler", "system:volume-scheduler", ("User", "scheduler")),
        binding("groundup:controller-manager", "groundup:controller-manager", ("User", "controller-manager")),
        binding(NODES_BINDING, "system:node", ("Group", "system:nodes")),
        binding("groundup:viewer", "view", ("User", "viewer")),
    ]


# [START reconcile]
def ensure(store, node_authorizer: bool = False) -> None:
    """Create what is missing, give back what was taken, keep what was added.
    With the Node authorizer, kubelets need no binding (see the docstring)."""
    bindings = cluster_role_bindings()
    if node_authorizer:
        bindings = [b for b in bindings if b["metadata"]["name"] != NODES_BINDING]
        _remove_our_nodes_binding(store)
    outcomes = [reconcile(store, CLUSTER_ROLES, wanted, _reconciled_role) for wanted in cluster_roles()]
    outcomes += [reconcile(store, CLUSTER_ROLE_BINDINGS, wanted, _reconciled_binding) for wanted in bindings]
    aggregate(store)
    log.info("default RBAC policy", **{outcome: outcomes.count(outcome) for outcome in
                                       ("created", "reconciled", "unchanged", "protected")})


def reconcile(store, resource, wanted: dict, merge) -> str:
    """What happened to one default: created, reconciled, unchanged, or protected (autoupdate: false)."""
    name = wanted["metadata"]["name"]
    existing = store.get(resource, "", name)
    if existing is None:
        obj = copy.deepcopy(wanted)
        objects.prepare_for_create(obj, resource)
        existing = create_if_missing(store, resource, obj)
        if existing is None:
            return "created"
        # Another API server, starting too, made it first: reconciled like any other.
    if (existing["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false":
        log.info("default left as it is (autoupdate: false)", obj=f"{resource.plural}/{name}")
        return "protected"
    stored = store.update(resource, "", name, lambda current: merge(current, wanted))
    changed = stored["metadata"]["resourceVersion"] != existing["metadata"]["resourceVersion"]
    if changed:
        log.info("default reconciled", obj=f"{resource.plural}/{name}")
    return "reconciled" if changed else "unchanged"
# [END reconcile]


def _remove_our_nodes_binding(store) -> None:
    """groundup:nodes gives every kubelet every Secret, which the Node authorizer
    exists to prevent: gone when it runs, unless someone made it their own."""
    found = store.get(CLUSTER_ROLE_BINDINGS, "", NODES_BINDING)
    if found is not None and (found["metadata"].get("annotations") or {}).get(AUTOUPDATE) != "false":
        try:
            store.delete(CLUSTER_ROLE_BINDINGS, "", NODES_BINDING)
        except api_errors.APIError as error:
            if error.reason != "NotFound":
                raise
            return                # another API server, starting too, removed it first
        log.info("default removed: the Node authorizer stands for it", obj=f"clusterrolebindings/{NODES_BINDING}")


def _with_metadata(current: dict, wanted: dict) -> dict:
    """Labels and annotations the default has and `current` lacks are added."""
    meta = current["metadata"]
    for field in ("labels", "annotations"):
        meta[field] = {**wanted["metadata"].get(field, {}), **(meta.get(field) or {})}
    return current


def _reconciled_role(current: dict, wanted: dict) -> dict:
    current = _with_metadata(current, wanted)
    if "aggregationRule" in wanted:
        # Aggregation fills the rules; only the selectors are the default's.
        selectors = (current.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        for selector in wanted["aggregationRule"]["clusterRoleSelectors"]:
            if selector not in selectors:
                selectors.append(selector)
        current["aggregationRule"] = {"clusterRoleSelectors": selectors}
        return current
    have = [PolicyRule.from_dict(r) for r in current.get("rules") or ()]
    missing = missing_rules(have, [PolicyRule.from_dict(r) for r in wanted["rules"]])
    current["rules"] = (current.get("rules") or []) + [r.to_dict() for r in missing]
    return current


def _reconciled_binding(current: dict, wanted: dict) -> dict:
    current = _with_metadata(current, wanted)
    subjects = current.get("subjects") or []
    current["subjects"] = subjects + [s for s in wanted["subjects"] if s not in subjects]
    return current
