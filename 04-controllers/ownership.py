"""Owner references: how a controller knows which objects are its own.

Every pod a ReplicaSet creates carries, in metadata.ownerReferences, the
ReplicaSet's kind, name and uid, with `controller: true`. At most one owner
of an object is its controller. Labels say which pods a ReplicaSet *wants*
(its selector); the owner reference says which it *has*, so two ReplicaSets
with overlapping selectors never fight over a pod, and the garbage
collector knows what to delete with its owner.

Claiming (client-go's ControllerRefManager) keeps the two in step:
- a pod that matches the selector and has no controller is *adopted*;
- a pod we control whose labels stopped matching is *released* (orphaned),
  so an operator can take a pod out of service for debugging by relabelling it.
"""
from __future__ import annotations

from common.client.client import APIClient
from common.model.selectors import SelectorError, selector_from_label_selector


def owner_reference(owner: dict, block_owner_deletion: bool = True) -> dict:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": block_owner_deletion}


def controller_of(obj: dict) -> dict | None:
    """The owner reference marked controller: true, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: dict, owner: dict) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"]["uid"]


def selects(label_selector: dict | None, labels: dict | None) -> bool:
    """Does a workload's selector pick these labels? An empty or broken
    selector picks nothing: a controller must never adopt everything."""
    if not label_selector:
        return False
    try:
        return selector_from_label_selector(label_selector).matches(labels)
    except SelectorError:
        return False


def adopt(client: APIClient, group_version: str, plural: str, obj: dict, owner: dict) -> dict:
    """Add owner as obj's controller. The resourceVersion makes it a
    compare-and-swap: if obj changed since we read it, Conflict, and the
    next reconcile decides again on fresh data."""
    meta = obj["metadata"]
    refs = list(meta.get("ownerReferences") or []) + [owner_reference(owner)]
    return client.patch(group_version, plural, meta["namespace"], meta["name"],
                        {"metadata": {"ownerReferences": refs, "resourceVersion": meta["resourceVersion"]}})


def release(client: APIClient, group_version: str, plural: str, obj: dict, owner: dict) -> dict:
    """Remove owner from obj's owner references (obj becomes an orphan)."""
    meta = obj["metadata"]
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner["metadata"]["uid"]]
    return client.patch(group_version, plural, meta["namespace"], meta["name"],
                        {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta["resourceVersion"]}})
