"""Admission: rules that look at other objects, run after decoding, before validation.

Validation checks one object on its own. Admission may look around: does the
namespace exist, is it being deleted, is the pod's node real? Kubernetes runs
a chain of such plugins; the next chapter's gauntlet adds more (it is the
place for quotas and policy). Here:

- NamespaceLifecycle: no new objects in a namespace that does not exist or is
  being deleted; the four system namespaces cannot be deleted; deleting a
  namespace deletes what is in it (Kubernetes' namespace controller does
  that part, in the controller manager).
- Graceful pod deletion: a pod on a node is only marked for deletion, so its
  kubelet can stop the containers first and then delete it for good.
"""
from __future__ import annotations

import api_errors
import registry

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = registry.for_kind("", "Namespace")
NODES = registry.for_kind("", "Node")
NAMESPACE_FINALIZER = "kubernetes"


def admit(server, obj: dict, old: dict | None, info, operation: str) -> None:
    if operation == "CREATE" and info.resource.namespaced:
        namespace = server.store.get(NAMESPACES, "", info.namespace)
        if namespace is None:
            raise api_errors.not_found(NAMESPACES, info.namespace)
        if namespace["metadata"].get("deletionTimestamp"):
            raise api_errors.APIError(
                403, "Forbidden", f'{info.resource} "{obj["metadata"].get("name", "")}" is forbidden: unable '
                f'to create new content in namespace {info.namespace} because it is being terminated')
    if operation == "CREATE" and info.resource is NAMESPACES:
        if not isinstance(obj.get("spec"), dict):
            obj["spec"] = {}          # a non-object spec carries nothing a Namespace could use
        obj["spec"]["finalizers"] = [NAMESPACE_FINALIZER]


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


def deleted(server, resource, obj: dict) -> None:
    """After an object is gone for good: a terminating namespace may now be empty."""
    if resource.namespaced:
        namespace = server.store.get(NAMESPACES, "", obj["metadata"].get("namespace", ""))
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            _release_if_empty(server, namespace["metadata"]["name"])


# [START namespace-deletion]
def sync_namespace(server, name: str) -> None:
    """Delete everything in a terminating namespace; once it is empty, let it go."""
    from rest import delete_object   # rest imports this module

    for resource in registry.RESOURCES:
        if resource.namespaced:
            for item in server.store.list(resource, name)[0]:
                if not item["metadata"].get("deletionTimestamp"):
                    try:
                        delete_object(server, resource, name, item["metadata"]["name"], {})
                    except api_errors.APIError:
                        pass          # deleted meanwhile
    _release_if_empty(server, name)


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
