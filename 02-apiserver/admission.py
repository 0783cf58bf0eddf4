"""Admission: plugins that may look around, after decoding, before validation.

Validation checks one object on its own. Admission may look at the rest of
the cluster, and may change the object: does its namespace exist, does a
LimitRange fill in its resources, may it run privileged? Kubernetes runs an
ordered chain of named plugins (`--enable-admission-plugins`); so do we:

- NamespaceLifecycle: no new objects in a namespace that does not exist or
  is being deleted; the four system namespaces cannot be deleted; deleting a
  namespace deletes what is in it (Kubernetes' namespace controller does
  that part, in the controller manager).
- LimitRanger: a LimitRange in the namespace fills in a container's missing
  requests and limits, and refuses more than its maximum.
- DenyPrivileged: no privileged containers unless --allow-privileged.

Order matters: LimitRanger must see the object NamespaceLifecycle let in,
and a plugin that changes the object (LimitRanger) runs before one that
only checks it. Defaulting (common/defaults.py) runs before the chain.

Beside the chain: graceful pod deletion. A pod on a node is only marked for
deletion, so its kubelet can stop the containers first and then delete it.
"""
from __future__ import annotations

import api_errors
import registry
from common.quantity import parse_quantity

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = registry.for_kind("", "Namespace")
NODES = registry.for_kind("", "Node")
LIMIT_RANGES = registry.for_kind("", "LimitRange")
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


PLUGINS = {
    "NamespaceLifecycle": namespace_lifecycle,
    "LimitRanger": limit_ranger,
    "DenyPrivileged": deny_privileged,
}
DEFAULT_PLUGINS = ("NamespaceLifecycle", "LimitRanger", "DenyPrivileged")


def admit_delete(server, obj: dict, resource) -> None:
    if resource is NAMESPACES and obj["metadata"]["name"] in SYSTEM_NAMESPACES:
        raise api_errors.APIError(403, "Forbidden", f'namespaces "{obj["metadata"]["name"]}" is forbidden: '
                                  "this namespace may not be deleted")


def finalizers(resource, obj: dict) -> list:
    """What must happen before the object may go (a namespace's own list is in spec)."""
    pending = list(obj["metadata"].get("finalizers") or [])
    if resource is NAMESPACES:
        pending += (obj.get("spec") or {}).get("finalizers") or []
    return pending


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


_syncing: set[str] = set()       # namespaces sync_namespace is emptying right now


def deleted(server, resource, obj: dict) -> None:
    """After an object is gone for good: a terminating namespace may now be empty."""
    if resource.namespaced and obj["metadata"].get("namespace") not in _syncing:
        namespace = server.store.get(NAMESPACES, "", obj["metadata"].get("namespace", ""))
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            _release_if_empty(server, namespace["metadata"]["name"])


# [START namespace-deletion]
def sync_namespace(server, name: str) -> None:
    """Delete everything in a terminating namespace; once it is empty, let it go."""
    from rest import delete_object   # rest imports this module

    _syncing.add(name)                # one emptiness check at the end, not one per object
    try:
        for resource in registry.RESOURCES:
            if resource.namespaced:
                for item in server.store.list(resource, name)[0]:
                    if not item["metadata"].get("deletionTimestamp"):
                        try:
                            delete_object(server, resource, name, item["metadata"]["name"], {})
                        except api_errors.APIError:
                            pass      # deleted or changed meanwhile: the next sync sees it
    finally:
        _syncing.discard(name)
    _release_if_empty(server, name)


def resume_namespace_deletions(server) -> None:
    """At start-up: finish deleting the namespaces a stopped server left half done."""
    for namespace in server.store.list(NAMESPACES)[0]:
        if namespace["metadata"].get("deletionTimestamp"):
            sync_namespace(server, namespace["metadata"]["name"])


def _release_if_empty(server, name: str) -> None:
    from rest import finish_deletion_if_done

    if any(server.store.list(r, name)[0] for r in registry.RESOURCES if r.namespaced):
        return                        # finalizers or kubelets still at work

    def release(namespace: dict) -> dict:
        spec = namespace.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers", []) if f != NAMESPACE_FINALIZER]
        namespace["metadata"].pop("resourceVersion", None)
        return namespace
    try:
        released = server.store.update(NAMESPACES, "", name, release)
    except api_errors.APIError:
        return                        # already gone
    finish_deletion_if_done(server, NAMESPACES, released)
# [END namespace-deletion]
