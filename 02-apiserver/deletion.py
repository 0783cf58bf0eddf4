"""Deletion: now, or marked while finalizers and grace periods run out.

DELETE and DELETE on a collection, the DeleteOptions they carry, the
finalizers that hold an object back, and, when no controller manager runs
(the NoControllerManager admission plugin), the emptying of a terminating
namespace that Kubernetes' namespace controller would do.

Calls out of the core, to take on trust on a first read: `admission` (part
3) answers the policy questions: may this be deleted, with what grace
period, which finalizers the request adds (orphan, foreground) and which
ones hold the object back.
"""
from __future__ import annotations

from flask import request

import admission
import api_errors
import decode
import objects
import registry
import service_accounts
from request_context import dry_run, existing, respond, selectors, server


def _delete_options() -> dict:
    body = request.get_data()
    if not body.strip():
        return _checked_delete_options({})
    options = decode.parse_body(body, request.content_type or "application/json")
    if not isinstance(options, dict):
        raise api_errors.bad_request("the DELETE body must be a DeleteOptions object")
    return _checked_delete_options(options)


def _checked_delete_options(options: dict) -> dict:
    """DeleteOptions from the body, and gracePeriodSeconds also from the query."""
    if "gracePeriodSeconds" in request.args:
        options["gracePeriodSeconds"] = decode.query_int(request.args, "gracePeriodSeconds")
    if "propagationPolicy" in request.args:
        options["propagationPolicy"] = request.args["propagationPolicy"]
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool) or not 0 <= grace < 2**31):
        raise api_errors.bad_request(f"gracePeriodSeconds must be a whole number of seconds, not {grace!r}")
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
        raise api_errors.bad_request(f'propagationPolicy: Unsupported value: {policy!r}: supported values: '
                                     '"Foreground", "Background", "Orphan"')
    orphan = options.get("orphanDependents")      # the deprecated spelling of propagationPolicy
    if orphan is not None and not isinstance(orphan, bool):
        raise api_errors.bad_request(f"orphanDependents must be true or false, not {orphan!r}")
    if orphan is not None and policy is not None:
        raise api_errors.bad_request("propagationPolicy: Invalid value: orphanDependents and "
                                     "deletionPropagation cannot be both set")
    preconditions = options.get("preconditions")
    if preconditions is not None and (not isinstance(preconditions, dict) or not all(
            isinstance(preconditions.get(k, ""), str) for k in ("uid", "resourceVersion"))):
        raise api_errors.bad_request('preconditions must be an object like {"uid": "...", "resourceVersion": "..."}')
    return options


# [START finalizers]
def delete_object(server_state, resource, namespace: str, name: str, options: dict, latest=None) -> tuple[dict, bool]:
    """Delete now, or mark for deletion while something still has to happen.

    Returns (object, gone). An object with finalizers is only marked with a
    deletionTimestamp, and stays until the controllers that own the
    finalizers clear them. propagationPolicy Orphan or Foreground adds the
    garbage collector's finalizer (orphan, foregroundDeletion). A pod running
    on a node is marked too: its kubelet stops the containers, then deletes
    it for good (grace period 0). `latest`: a racing write an earlier try met."""
    store = server_state.store
    current = latest or store.get(resource, namespace, name)
    if current is None:
        raise api_errors.not_found(resource, name)
    admission.admit_delete(server_state, current, resource)
    if decided := _marking(server_state, resource, current, options):
        def mark(obj: dict) -> dict:
            # Decided again if a write raced ours (a kubelet's, a controller's), as Kubernetes does.
            same = obj["metadata"].get("resourceVersion") == current["metadata"].get("resourceVersion")
            plan = decided if same else _marking(server_state, resource, obj, options)
            if plan is None:                          # its finalizers went meanwhile
                raise _ChangedMeanwhile(resource, obj)
            grace, finalizers = plan
            meta = obj["metadata"]
            meta.setdefault("deletionTimestamp", objects.now())
            meta["deletionGracePeriodSeconds"] = min(grace, meta.get("deletionGracePeriodSeconds", grace))
            meta.pop("finalizers", None)
            if finalizers:
                meta["finalizers"] = finalizers
            meta.pop("resourceVersion", None)
            if resource.kind == "Namespace":
                obj.setdefault("status", {})["phase"] = "Terminating"
            return obj
        marked = store.update(resource, namespace, name, mark)
        if resource.kind == "Namespace":
            sync_namespace(server_state, name)
            marked = store.get(resource, namespace, name) or marked
        return finish_deletion_if_done(server_state, resource, marked)
    gone = store.delete(resource, namespace, name, _still_goes_now(server_state, resource, options))
    deleted(server_state, resource, gone)
    return gone, True
# [END finalizers]


def _marking(server_state, resource, obj: dict, options: dict) -> tuple[int, list] | None:
    """(grace period, finalizers) if this DELETE only marks obj; None if it goes now."""
    _check_preconditions(obj, options, resource)
    grace = admission.grace_period(server_state, resource, obj, options)
    collector = not admission.without_controller_manager(server_state)
    finalizers = admission.finalizers_for_delete(resource, obj, options, garbage_collector=collector)
    planned = {**obj, "metadata": {**obj["metadata"], "finalizers": finalizers}}
    return (grace, finalizers) if admission.finalizers(resource, planned) or grace > 0 else None


class _ChangedMeanwhile(api_errors.APIError):
    """The object changed between the decision and the write, and the
    decision with it: decide again on `latest` (a 409 if it never holds still)."""
    def __init__(self, resource, latest: dict):
        super().__init__(**vars(api_errors.conflict(resource, latest["metadata"]["name"])))
        self.latest = latest


def _still_goes_now(server_state, resource, options: dict):
    """The decision to delete now, made again on the version the store
    deletes (its latest, perhaps a write not yet on disk): a status or a
    label written meanwhile changes nothing; a finalizer added does."""
    def check(latest: dict) -> None:
        if _marking(server_state, resource, latest, options):
            raise _ChangedMeanwhile(resource, latest)
    return check


def delete_deciding_on_the_latest(server_state, resource, namespace: str, name: str, options: dict,
                                  attempts: int = 10) -> tuple[dict, bool]:
    """delete_object, decided again when the object changed under a decision
    to delete it now, as Kubernetes' DELETE retries: the client sees 409 only
    for its own precondition, or for an object that never holds still."""
    latest = None
    for _ in range(attempts - 1):
        try:
            return delete_object(server_state, resource, namespace, name, options, latest)
        except _ChangedMeanwhile as changed:
            latest = changed.latest       # not a fresh read: it may not show a write still being saved
    return delete_object(server_state, resource, namespace, name, options, latest)


# [START finish-deletion]
def finish_deletion_if_done(server_state, resource, obj: dict) -> tuple[dict, bool]:
    """A marked object whose finalizers are cleared and grace period is over goes."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp") and not admission.finalizers(resource, obj) \
            and not meta.get("deletionGracePeriodSeconds"):
        try:
            gone = server_state.store.delete(resource, meta.get("namespace", ""), meta["name"])
        except api_errors.APIError:
            return obj, True             # someone else removed it first
        deleted(server_state, resource, gone)
        return gone, True
    return obj, False
# [END finish-deletion]


def _check_preconditions(current: dict, options: dict, resource) -> None:
    pre = options.get("preconditions") or {}
    meta = current["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise api_errors.conflict(resource, meta["name"], f"Precondition failed: UID in precondition: "
                                  f"{pre['uid']}, UID in object meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise api_errors.conflict(resource, meta["name"], "Precondition failed: ResourceVersion in "
                                  f"precondition: {pre['resourceVersion']}, ResourceVersion in object "
                                  f"meta: {meta.get('resourceVersion')}")


# Kinds whose DELETE answers with the object itself once it is gone, as in
# Kubernetes (its ReturnDeletedObject). The others answer a Status naming
# what went; an object that is only marked for deletion is sent back as is.
_RETURNS_DELETED_OBJECT = ("Pod", "Service")


def delete(info):
    options = _delete_options()
    if dry_run():
        return respond(existing(info))
    obj, gone = delete_deciding_on_the_latest(server(), info.resource, info.namespace, info.name, options)
    if gone and info.resource.kind not in _RETURNS_DELETED_OBJECT:
        details = {"name": info.name, "kind": info.resource.plural, "uid": obj["metadata"].get("uid", "")}
        if info.resource.group:
            details["group"] = info.resource.group
        return respond({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": details}, 200)
    return respond(obj, 200)


def delete_collection(info):
    options = _delete_options()
    labels, fields = selectors(info)
    items, rv = server().store.list(info.resource, info.namespace or None)
    removed = []
    only_try = dry_run()
    for obj in items:
        if labels.matches(obj["metadata"].get("labels")) and fields.matches(obj):
            if only_try:
                removed.append(obj)       # what would go; nothing does
                continue
            try:
                removed.append(delete_deciding_on_the_latest(server(), info.resource, obj["metadata"].get(
                    "namespace", ""), obj["metadata"]["name"], options)[0])
            except api_errors.APIError as error:
                if error.code != 404:     # deleted meanwhile: fine
                    raise
    return respond({"kind": info.resource.list_kind, "apiVersion": info.resource.api_version,
                    "metadata": {"resourceVersion": str(server().store.resource_version)}, "items": removed})



_syncing: set[str] = set()       # namespaces sync_namespace is emptying right now


def deleted(server_state, resource, obj: dict) -> None:
    """After an object is gone for good: a terminating namespace may now be empty."""
    if not admission.without_controller_manager(server_state):
        return
    service_accounts.after_delete(server_state, resource, obj)   # `default` and the CA come back
    if resource.namespaced and obj["metadata"].get("namespace") not in _syncing:
        namespace = server_state.store.get(admission.NAMESPACES, "", obj["metadata"].get("namespace", ""))
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            _release_if_empty(server_state, namespace["metadata"]["name"])


def sync_namespace(server_state, name: str) -> None:
    """Delete everything in a terminating namespace; once it is empty, let it go."""
    if not admission.without_controller_manager(server_state):
        return                        # the namespace controller's job
    _syncing.add(name)                # one emptiness check at the end, not one per object
    try:
        for resource in registry.RESOURCES:
            if resource.namespaced:
                for item in server_state.store.list(resource, name)[0]:
                    if not item["metadata"].get("deletionTimestamp"):
                        try:
                            delete_deciding_on_the_latest(server_state, resource, name, item["metadata"]["name"], {})
                        except api_errors.APIError:
                            pass      # deleted or changed meanwhile: the next sync sees it
    finally:
        _syncing.discard(name)
    _release_if_empty(server_state, name)


def resume_namespace_deletions(server_state) -> None:
    """At start-up: finish deleting the namespaces a stopped server left half done."""
    for namespace in server_state.store.list(admission.NAMESPACES)[0]:
        if namespace["metadata"].get("deletionTimestamp"):
            sync_namespace(server_state, namespace["metadata"]["name"])


def _release_if_empty(server_state, name: str) -> None:
    if any(server_state.store.list(r, name)[0] for r in registry.RESOURCES if r.namespaced):
        return                        # finalizers or kubelets still at work

    def release(namespace: dict) -> dict:
        spec = namespace.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers", []) if f != admission.NAMESPACE_FINALIZER]
        namespace["metadata"].pop("resourceVersion", None)
        return namespace
    try:
        released = server_state.store.update(admission.NAMESPACES, "", name, release)
    except api_errors.APIError:
        return                        # already gone
    finish_deletion_if_done(server_state, admission.NAMESPACES, released)
