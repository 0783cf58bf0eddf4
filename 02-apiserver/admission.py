"""Admission: plugins that may look around, after decoding, before validation.

Validation checks one object on its own. Admission may look at the rest of
the cluster, and may change the object: does its namespace exist, does a
LimitRange fill in its resources, may it run privileged? Kubernetes runs
named plugins, enabled with `--enable-admission-plugins`; so do we. Two
simplifications: ours run in the order that flag gives (kube-apiserver
ignores the flag's order and runs the enabled plugins in an order of its
own, AllOrderedPlugins in pkg/kubeapiserver/options/plugins.go), and all of
them run before validation (Kubernetes runs its mutating plugins, then
validation, then its validating plugins; see the chapter's part 3).

- NamespaceLifecycle: no new objects in a namespace that does not exist or
  is being deleted; the four system namespaces cannot be deleted. Deleting a
  namespace only marks it Terminating: emptying it is the namespace
  controller's job (chapter 04), which then removes the `kubernetes`
  finalizer through namespaces/NAME/finalize, and the namespace goes.
- LimitRanger: a LimitRange in the namespace fills in a container's missing
  requests and limits, and refuses more than its maximum.
- DenyPrivileged: ours, not a Kubernetes plugin. No privileged containers
  unless --allow-privileged. Kubernetes checks that flag in pod validation
  (a 422, "disallowed by cluster policy"), as our validation does too
  (privileged.py), and keeps privileged pods out of a namespace with Pod
  Security Admission (its baseline level).
- DefaultStorageClass: a PersistentVolumeClaim that names no class gets
  the cluster's default StorageClass (chapter 04's controller manager
  makes one, `local-path`, and gives the default to claims made before).
- NoControllerManager: not a Kubernetes plugin. Chapter 02 runs an API
  server alone, so the server does the deletion work Kubernetes leaves to
  the controller manager: it empties a deleted namespace itself, and adds
  no garbage collector's finalizer (orphan, foregroundDeletion) that no one
  would remove, as Kubernetes' --enable-garbage-collector=false. On by
  default; leave it out of --enable-admission-plugins once chapter 04's
  controller manager runs. (Left on beside it, nothing breaks: the
  namespace controller finds namespaces already empty, and Orphan and
  Foreground deletes act as Background.)

- ServiceAccount: a pod runs as a ServiceAccount (`default` unless it
  names one that exists) and, when this server signs tokens, gets its
  token, the CA and its namespace as a volume (service_accounts.py).
  With NoControllerManager the server also gives every namespace its
  `default` ServiceAccount and kube-root-ca.crt ConfigMap.

- NodeRestriction: a kubelet (system:node:NAME) may change only its own
  Node and Lease, the status of pods bound to it, and create only mirror
  pods (node_restriction.py; with --authorization-mode Node).

Order matters in our chain: LimitRanger must see the object
NamespaceLifecycle let in, and a plugin that changes the object
(LimitRanger) runs before one that only checks it. The default order keeps
to that, as Kubernetes' fixed order does. Defaulting (common/model/defaults.py)
runs before the chain.

Beside the chain, what a DELETE decides (Kubernetes' deletion strategy):
graceful pod deletion (a pod on a node is only marked for deletion, so its
kubelet can stop the containers first and then delete it), and the garbage
collector's finalizer that a propagationPolicy asks for.
"""
from __future__ import annotations

import api_errors
import node_restriction
import registry
import service_accounts
from common.model.quantity import parse_quantity

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = registry.for_kind("", "Namespace")
NODES = registry.for_kind("", "Node")
LIMIT_RANGES = registry.for_kind("", "LimitRange")
STORAGE_CLASSES = registry.for_kind("storage.k8s.io", "StorageClass")
NAMESPACE_FINALIZER = "kubernetes"


# [START admission-chain]
def admit(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """Run the enabled plugins in order; the first that refuses stops the request."""
    for name in server.admission_plugins:
        PLUGINS[name](server, obj, old, info, operation)


def refuse(info, obj: dict, plugin: str, reason: str) -> api_errors.APIError:
    """403 Forbidden naming the plugin, as `pods "web" is forbidden: [Plugin] reason`."""
    name = obj["metadata"].get("name", "")
    return api_errors.APIError(403, "Forbidden", f'{info.resource} "{name}" is forbidden: [{plugin}] {reason}',
                               {"name": name, "kind": info.resource.plural})
# [END admission-chain]


def namespace_lifecycle(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """No new objects in a namespace that does not exist, or is being deleted."""
    if operation == "CREATE" and info.resource.namespaced:
        namespace = server.store.get(NAMESPACES, "", info.namespace)
        if namespace is None:
            raise api_errors.not_found(NAMESPACES, info.namespace)
        if namespace["metadata"].get("deletionTimestamp"):
            raise refuse(info, obj, "NamespaceLifecycle", f"unable to create new content in namespace "
                         f"{info.namespace} because it is being terminated")
    if operation == "CREATE" and info.resource is NAMESPACES:
        if not isinstance(obj.get("spec"), dict):
            obj["spec"] = {}          # a non-object spec carries nothing a Namespace could use
        obj["spec"]["finalizers"] = [NAMESPACE_FINALIZER]


def _containers(obj: dict) -> list[tuple[str, dict]]:
    """(field path, container) of a pod's containers; empty for anything else."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if not isinstance(spec.get("containers", []), list):
        return []                     # validation reports it
    return [(f"spec.{field}[{i}]", container) for field in ("initContainers", "containers")
            for i, container in enumerate(spec.get(field) or []) if isinstance(container, dict)]


def limit_ranger(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """A LimitRange in the namespace fills in a container's missing requests
    and limits (its default, defaultRequest), and refuses more than its max."""
    if info.resource.kind != "Pod" or operation != "CREATE":
        return
    ranges, _ = server.store.list(LIMIT_RANGES, info.namespace)
    for limit_range in ranges:
        for limit in (limit_range.get("spec") or {}).get("limits") or []:
            if not isinstance(limit, dict) or limit.get("type") != "Container":
                continue
            for path, container in _containers(obj):
                resources = container.setdefault("resources", {})
                if not isinstance(resources, dict):
                    continue
                # A request defaults to defaultRequest, else to the default
                # limit (as Kubernetes defaults a LimitRange's defaultRequest).
                defaults = {"limits": dict(limit.get("default") or {}),
                            "requests": {**(limit.get("default") or {}), **(limit.get("defaultRequest") or {})}}
                for target, values in defaults.items():
                    for resource, value in values.items():
                        resources.setdefault(target, {}).setdefault(resource, value)
                for resource, maximum in (limit.get("max") or {}).items():
                    asked = (resources.get("limits") or {}).get(resource)
                    if asked is not None and _quantity(asked) > _quantity(maximum):
                        raise refuse(info, obj, "LimitRanger", f"maximum {resource} usage per Container is "
                                     f"{maximum}, but limit is {asked} ({path}.resources.limits.{resource}; "
                                     f"LimitRange {limit_range['metadata']['name']})")


def _quantity(value):
    try:
        return parse_quantity(str(value))
    except ValueError:
        return 0                      # validation reports a bad quantity


def deny_privileged(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """Refuse privileged containers: they can do anything root on the node can."""
    if info.resource.kind != "Pod" or server.allow_privileged:
        return
    for path, container in _containers(obj):
        context = container.get("securityContext")
        if isinstance(context, dict) and context.get("privileged") is True:
            raise refuse(info, obj, "DenyPrivileged", f"{path}.securityContext.privileged: privileged "
                         "containers are not allowed on this cluster (start the API server with "
                         "--allow-privileged to allow them)")


def default_storage_class(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """A new claim that names no class gets the default one: the StorageClass
    annotated storageclass.kubernetes.io/is-default-class: "true" (the newest,
    if several are). An explicit "" means "no class" and stays."""
    if (info.resource.group, info.resource.kind, operation) != ("", "PersistentVolumeClaim", "CREATE"):
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    classes, _ = server.store.list(STORAGE_CLASSES, "")
    defaults = [c for c in classes if (c["metadata"].get("annotations") or {}).get(
        "storageclass.kubernetes.io/is-default-class") == "true"]
    if defaults:
        # Kubernetes' GetDefaultClass: the newest; of equally new ones (the
        # stamp has whole seconds), the first by name.
        by_name = sorted(defaults, key=lambda c: c["metadata"]["name"])
        newest = max(by_name, key=lambda c: c["metadata"].get("creationTimestamp", ""))
        spec["storageClassName"] = newest["metadata"]["name"]


def no_controller_manager(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """Nothing to check on create or update: this plugin changes what a
    DELETE does (finalizers_for_delete and sync_namespace, below)."""


def without_controller_manager(server) -> bool:
    return "NoControllerManager" in server.admission_plugins


PLUGINS = {
    "NamespaceLifecycle": namespace_lifecycle,
    "LimitRanger": limit_ranger,
    "DenyPrivileged": deny_privileged,
    "NoControllerManager": no_controller_manager,
    "ServiceAccount": service_accounts.admit,       # service_accounts.py
    "NodeRestriction": node_restriction.admit,      # node_restriction.py; off unless enabled
    "DefaultStorageClass": default_storage_class,
}
DEFAULT_PLUGINS = ("NamespaceLifecycle", "LimitRanger", "ServiceAccount", "DefaultStorageClass", "DenyPrivileged",
                   "NoControllerManager")


def admit_delete(server, obj: dict, resource) -> None:
    if "NodeRestriction" in server.admission_plugins:
        node_restriction.admit_delete(server, obj, resource)
    if resource is NAMESPACES and obj["metadata"]["name"] in SYSTEM_NAMESPACES:
        raise api_errors.APIError(403, "Forbidden", f'namespaces "{obj["metadata"]["name"]}" is forbidden: '
                                  "this namespace may not be deleted")


def finalizers(resource, obj: dict) -> list:
    """What must happen before the object may go (a namespace's own list is in spec)."""
    pending = list(obj["metadata"].get("finalizers") or [])
    if resource is NAMESPACES:
        pending += (obj.get("spec") or {}).get("finalizers") or []
    return pending


# The garbage collector's finalizers (chapter 04): "orphan" asks it to remove
# the owner from its dependents' ownerReferences, "foregroundDeletion" to
# delete the dependents that block the owner first. Either way it removes the
# finalizer when done, and the owner goes.
ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
_FINALIZER_FOR_POLICY = {"Orphan": ORPHAN, "Foreground": FOREGROUND, "Background": None}
# What a DELETE that names no policy does to a kind's dependents, as
# Kubernetes' strategies say: batch/v1 Jobs keep their pods (the first Job
# API did, and clients rely on it); every other kind deletes them, in the
# background, after the owner has gone.
# Kubernetes keeps the old default for these two (its strategies say "for
# back compatibility"): deleting one with no policy leaves its pods.
DEFAULT_PROPAGATION = {("batch", "Job"): "Orphan", ("", "ReplicationController"): "Orphan"}


def propagation_policy(resource, obj: dict, options: dict) -> str:
    """Orphan, Foreground or Background for this DELETE: what the client
    asked, else what an earlier DELETE asked (its finalizer), else the kind's default."""
    if options.get("orphanDependents") is not None:         # the deprecated spelling
        return "Orphan" if options["orphanDependents"] else "Background"
    if options.get("propagationPolicy"):
        return options["propagationPolicy"]
    pending = obj["metadata"].get("finalizers") or []
    if ORPHAN in pending:
        return "Orphan"
    if FOREGROUND in pending:
        return "Foreground"
    return DEFAULT_PROPAGATION.get((resource.group, resource.kind), "Background")


def finalizers_for_delete(resource, obj: dict, options: dict, garbage_collector: bool = True) -> list[str]:
    """obj's metadata.finalizers after this DELETE: the garbage collector's
    finalizer for the policy in place of either one it had, the others kept.
    With no garbage collector running, none: no one would ever remove it."""
    current = list(obj["metadata"].get("finalizers") or [])
    if not garbage_collector:
        return current
    wanted = [f for f in current if f not in (ORPHAN, FOREGROUND)]
    policy_finalizer = _FINALIZER_FOR_POLICY[propagation_policy(resource, obj, options)]
    if policy_finalizer:
        wanted.append(policy_finalizer)
    return current if set(wanted) == set(current) else wanted


def grace_period(server, resource, obj: dict, options: dict) -> int:
    """Seconds a kubelet gets to stop the pod; 0 means delete at once."""
    if resource.kind != "Pod":
        return 0
    node = (obj.get("spec") or {}).get("nodeName")
    if not node or server.store.get(NODES, "", node) is None:
        return 0                      # no kubelet will ever act on it
    if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0                      # nothing left to stop
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    return max(0, int(grace)) if isinstance(grace, int) else 30


# ----- NoControllerManager: the server empties deleted namespaces itself -----
#
# In Kubernetes the API server only marks a deleted namespace Terminating;
# the namespace controller (04-controllers/namespace.py) deletes what is in
# it and then removes the "kubernetes" finalizer. Chapter 02 has no
# controller manager yet, so with NoControllerManager enabled (the default)
# the server does that work itself, right when the namespace is deleted and
# again whenever an object in it goes for good.
