"""What the server, not the client, decides about an object.

On create the server names it (generateName), gives it a uid, a creation
time and generation 1; on update it keeps those, counts a new generation when
the spec changes, and keeps the parts a request is not allowed to change: the
main resource may not write status, and /status may write nothing else.
Kubernetes keeps these rules in a per-kind "strategy" (an object of rules
for creating, updating and validating that kind); here they are one
small module, since our kinds differ only in whether they have a status.

One call out of the core, to take on trust: `common.model.qos` works out a
pod's QoS class from its resources, as the kubelet does.
"""
from __future__ import annotations

import random
import uuid

import json_cache
from common.model.qos import qos_class
from common.times import rfc3339 as now  # noqa: F401 (objects.now(): what the server stamps)

# Kubernetes' generateName alphabet: no vowels (no accidental words), no
# digits or letters that look alike.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SERVER_OWNED = ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                "deletionGracePeriodSeconds")


def prepare_for_create(obj: dict, resource) -> None:
    meta = obj["metadata"]
    if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
        meta["name"] = meta["generateName"] + "".join(random.choices(_SUFFIX_ALPHABET, k=5))
    for key in SERVER_OWNED + ("resourceVersion", "selfLink"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now()
    meta["generation"] = 1
    if "status" in resource.subresources:
        obj["status"] = initial_status(resource, obj)


def finish_create(obj: dict, resource) -> None:
    """After admission, which may have changed the spec: what follows from it.
    (A pod's QoS class depends on the resources LimitRanger may fill in.)"""
    if resource.kind == "Pod" and isinstance(obj.get("status"), dict):
        spec = obj.get("spec")
        obj["status"]["qosClass"] = qos_class(spec if isinstance(spec, dict) else {})


def initial_status(resource, obj: dict) -> dict:
    """A new object's status is the server's to set, whatever the client sent,
    except a Node's: a kubelet registers its node with capacity and addresses."""
    if resource.kind == "Node":
        return obj.get("status") if isinstance(obj.get("status"), dict) else {}
    if resource.kind == "Pod":
        return {"phase": "Pending"}       # and its qosClass once admission is done (finish_create)
    if resource.kind == "Namespace":
        return {"phase": "Active"}
    return {}


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def prepare_for_update(new: dict, old: dict, resource, subresource: str = "") -> dict:
    """Merge a client's full object (PUT, or the result of a PATCH) with the stored one."""
    meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
    for key in SERVER_OWNED:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if subresource == "status":
        # Only the status moves; spec and metadata stay as stored.
        updated = json_cache.private_copy(old)
        updated["status"] = new.get("status", {})
        if meta.get("resourceVersion"):
            updated["metadata"]["resourceVersion"] = meta["resourceVersion"]
        return updated
    if subresource == "finalize":
        # Only spec.finalizers moves: the namespace controller's way to say "emptied".
        updated = json_cache.private_copy(old)
        spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
        updated.setdefault("spec", {})["finalizers"] = spec.get("finalizers") or []
        if meta.get("resourceVersion"):
            updated["metadata"]["resourceVersion"] = meta["resourceVersion"]
        return updated
    if resource.kind == "Namespace":
        # What must happen before a namespace goes is the server's business
        # (Kubernetes changes it only through /finalize).
        spec = new["spec"] if isinstance(new.get("spec"), dict) else {}
        spec["finalizers"] = (old.get("spec") or {}).get("finalizers", [])
        new["spec"] = spec
    if "status" in resource.subresources:
        if "status" in old:
            new["status"] = old["status"]     # status is written through /status only
        else:
            new.pop("status", None)
    if _spec_part(new) != _spec_part(old):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    return new
