"""What every API server writes as it starts, when several start at once.

kube-apiserver runs post-start hooks that write the cluster's defaults:
the system namespaces (here), the `kubernetes` Service and its Endpoints
(extensions/kubernetes_service.py), RBAC's default roles and bindings
(rbac_bootstrap.py). Each server writes them, since any may be the first.

API servers that share one etcd (part 8) and start together race to write
each default. etcd lets exactly one create succeed; the others get
409 AlreadyExists. A server that took that as an error would exit at
start-up. Kubernetes' hooks treat it as done, and so does
`create_if_missing`: the object is there, whoever made it.
"""
from __future__ import annotations

import admission
import api_errors
import objects
from common.model.defaults import apply_defaults


def create_if_missing(store, resource, obj: dict) -> dict | None:
    """Create `obj`; if one of its name is there already, leave that one
    and return it (None: this call made it)."""
    try:
        store.create(resource, obj)
        return None
    except api_errors.APIError as error:
        if error.reason != "AlreadyExists":
            raise
    meta = obj["metadata"]
    return store.get(resource, meta.get("namespace", ""), meta["name"])


def create_default(store, resource, obj: dict) -> dict | None:
    """A default object, made as a client's create would make it (uid,
    creation time, defaults such as a Namespace's metadata.name label),
    unless one of its name is there: then that one (create_if_missing)."""
    objects.prepare_for_create(obj, resource)
    obj = apply_defaults(resource.group, resource.kind, obj)
    objects.finish_create(obj, resource)
    return create_if_missing(store, resource, obj)


def ensure_system_namespaces(store) -> None:
    """default, kube-system, kube-public, kube-node-lease exist from the start."""
    namespaces = admission.NAMESPACES
    for name in admission.SYSTEM_NAMESPACES:
        if store.get(namespaces, "", name) is None:
            create_default(store, namespaces, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                                               "spec": {"finalizers": [admission.NAMESPACE_FINALIZER]}})
