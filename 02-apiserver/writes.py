"""The write path: create, update, patch (and the namespace's /finalize).

Every write goes decode -> admission -> validation -> storage, as the
chapter's README draws it (Kubernetes runs validation between mutating and
validating admission; ours has one admission step, before it); update and
patch go through `update_object`, which the subresources (/status, /scale, /binding) use too.

Calls out of the core, to take on trust on a first read: `admission`
(part 3: plugins that may change or refuse the object), and what is
registered in `server().hooks` (hooks.py): the PATCH formats beyond a JSON
merge patch, a custom kind's validation and defaults (chapter 04), a
Service's cluster IP and node ports (chapter 05).
"""
from __future__ import annotations

import contextlib

import json_merge_patch
from flask import g, request

import admission
import api_errors
import body_limits
import decode
import json_cache
import objects
import rbac_escalation
import service_accounts
from authentication import INSECURE_USER
from deletion import finish_deletion_if_done
from privileged import privileged_errors
from request_context import dry_run, respond, server
from common.model.defaults import apply_defaults
from common.model.validate import validate_object, validate_status_update
from common.model.field_errors import invalid


def _admit_validate(obj: dict, old: dict | None, info, operation: str, subresource: str = "") -> None:
    """Admission plugins, then the kind's validation: 422 with every field error."""
    admission.admit(server(), obj, old, info, operation)
    errors = server().hooks.validate(info.resource, obj, old, subresource)   # None: a built-in kind
    if errors is None:
        validate = validate_status_update if subresource == "status" else validate_object
        errors = validate(info.resource.group, info.resource.kind, obj, old, namespaced=info.resource.namespaced)
        if subresource != "status" and not server().allow_privileged:     # kube-apiserver --allow-privileged
            errors = list(errors or []) + privileged_errors(info.resource.kind, obj)
    if errors:
        raise api_errors.invalid(info.resource, info.resource.kind, obj["metadata"].get("name", ""), errors)
    # A Role or binding may not grant more than its writer holds (403).
    rbac_escalation.check(server(), g.get("user") or INSECURE_USER, obj, old, info)


def _field_validation(obj: dict, body: bytes, resource) -> list[str]:
    """Unknown and duplicate fields per ?fieldValidation=, as the registered schemas know them."""
    warnings = decode.apply_field_validation(obj, body, resource, request.args.get("fieldValidation"))
    g.field_warnings = warnings     # sent with a refusal too (app.py): a dropped field may be its cause
    return warnings


def _set_namespace(obj: dict, info) -> None:
    meta = obj["metadata"]
    if not info.resource.namespaced:
        meta.pop("namespace", None)
        return
    if meta.get("namespace") and meta["namespace"] != info.namespace:
        raise api_errors.bad_request(
            f"the namespace of the provided object ({meta['namespace']}) does not match "
            f"the namespace sent on the request ({info.namespace})")
    meta["namespace"] = info.namespace


def create(info):
    if info.resource.namespaced and not info.namespace:
        raise api_errors.method_not_allowed(f"create {info.resource} in a namespace: .../namespaces/NAMESPACE/{info.resource.plural}")
    server().hooks.check_options("CreateOptions")
    body = request.get_data()
    return _store_create(info, decode.decode_object(body, request.content_type, info.resource), body)


def _store_create(info, obj: dict, body: bytes):
    """Every create, from a POST or a first server-side apply, ends here."""
    warnings = _field_validation(obj, body, info.resource)
    _set_namespace(obj, info)
    objects.prepare_for_create(obj, info.resource)
    obj = server().hooks.apply_defaults(info.resource, apply_defaults(info.resource.group, info.resource.kind, obj))
    with _allocating(info, obj):                      # a Service's cluster IP, held until stored
        _admit_validate(obj, None, info, "CREATE")
        objects.finish_create(obj, info.resource)
        g.created = obj["metadata"].get("name")       # the audit line names what was made
        if dry_run():
            return respond(obj, 201, warnings)
        created = server().store.create(info.resource, obj)
        if info.resource.kind == "Namespace" and not info.resource.group:
            # With NoControllerManager: its `default` ServiceAccount and kube-root-ca.crt.
            service_accounts.ensure_namespace_defaults(server(), created["metadata"]["name"])
        return respond(created, 201, warnings)


def _allocating(info, obj: dict, old: dict | None = None):
    """What the API server hands out with an object, held until it is stored:
    a Service's cluster IP and node ports (registered: extensions/service_ips.py)."""
    return server().hooks.allocating(info.resource, info.subresource, obj, old, dry_run())


def update(info):
    server().hooks.check_options("UpdateOptions")
    body = request.get_data()
    sent = decode.decode_object(body, request.content_type, info.resource)
    warnings = _field_validation(sent, body, info.resource)
    if sent["metadata"].get("name", info.name) != info.name:
        raise api_errors.bad_request(f"the name of the object ({sent['metadata']['name']}) does not match "
                                     f"the name on the URL ({info.name})")
    sent["metadata"]["name"] = info.name
    _set_namespace(sent, info)

    def replace(current: dict) -> dict:
        uid = sent["metadata"].get("uid")
        if uid and uid != current["metadata"]["uid"]:        # a different object of the same name
            raise api_errors.conflict(info.resource, info.name, f"Precondition failed: UID in precondition: "
                                      f"{uid}, UID in object meta: {current['metadata']['uid']}")
        return sent
    return _store_update(info, replace, warnings)


def patch(info):
    server().hooks.check_options("PatchOptions")
    body = request.get_data()
    content_type = decode.media_type(request.content_type)
    for check in server().hooks.patch_checks:   # kinds and subresources that take fewer types (custom kinds)
        check(info.resource, info.subresource, content_type)
    manager = request.args.get("fieldManager", "")
    force = request.args.get("force") in ("true", "1")
    current = server().store.get(info.resource, info.namespace, info.name)
    if current is None and content_type in server().hooks.creating_patches:
        return _patch_create(info, content_type, body, manager, force)    # server-side apply of a new object
    if current is None:
        raise api_errors.not_found(info.resource, info.name)
    warnings: list[str] = []

    def patched(current: dict) -> dict:
        new = server().hooks.patch(content_type, current, body, info.resource.group,
                                   info.resource.version, info.resource.kind, manager, force)
        decode.check_kind(new, info.resource)
        if new["metadata"].get("name") != info.name:
            raise api_errors.bad_request("a patch may not change metadata.name")
        _check_uid_unchanged(new, current, info)
        warnings[:] = _field_validation(new, body, info.resource)    # once, if the store runs this again
        return new
    return _store_update(info, patched, warnings)


def _check_uid_unchanged(new: dict, current: dict, info) -> None:
    """A patch that changes metadata.uid is refused, not quietly undone.

    A PUT's uid is a precondition (a different uid means another object of that name: 409).
    A patch has no precondition, so Kubernetes catches the change where it validates the
    update: 422, uid is immutable. Leaving the uid out is fine: the stored one is kept."""
    uid = new["metadata"].get("uid")
    if uid and uid != current["metadata"].get("uid"):
        raise api_errors.invalid(info.resource, info.resource.kind, info.name,
                                 [invalid("metadata.uid", uid, "field is immutable")])


def _patch_create(info, content_type: str, body: bytes, manager: str, force: bool):
    """A patch type that creates what is missing (server-side apply): a create."""
    obj = server().hooks.patch(content_type, None, body, info.resource.group,
                               info.resource.version, info.resource.kind, manager, force)
    decode.check_kind(obj, info.resource)
    obj["metadata"]["name"] = info.name
    return _store_create(info, obj, body)


def _store_update(info, change, warnings: list[str]):
    """The read-modify-write every PUT and PATCH ends in; `change` makes the new object."""
    return respond(update_object(info, change), 200, warnings)


def update_object(info, change, subresource: str = "") -> dict:
    """The stored object after `change` (with dryRun: what would be stored)."""
    only_try = dry_run()
    subresource = subresource or info.subresource

    reservations = contextlib.ExitStack()     # a Service's new node ports, held until stored

    def update_fn(current: dict) -> dict:
        old = json_cache.private_copy(current)
        changed = change(current)
        # A stale resourceVersion is a 409 before anything else (as in
        # Kubernetes' store): validating the client's old copy against the new
        # object would blame the client for someone else's change (a 422
        # "podCIDR may not change" to a controller whose node got its range meanwhile).
        sent = (changed.get("metadata") or {}).get("resourceVersion")
        if sent and sent != old["metadata"]["resourceVersion"]:
            raise api_errors.conflict(info.resource, info.name)
        for check in server().hooks.update_checks:   # a custom kind's update must name a version
            check(info.resource, info.name, sent)
        # Defaults first, as Kubernetes applies them when it decodes: a PUT
        # that leaves out a defaulted field has not changed the spec.
        new = server().hooks.apply_defaults(
            info.resource, apply_defaults(info.resource.group, info.resource.kind, changed))
        new = objects.prepare_for_update(new, old, info.resource, subresource)
        reservations.close()                  # a retry lets go of what the last try reserved
        reservations.enter_context(_allocating(info, new, old))
        _admit_validate(new, old, info, "UPDATE", subresource)
        if only_try:
            raise _DryRunResult(new)
        return new

    try:
        with reservations:
            stored = server().store.update(info.resource, info.namespace, info.name, update_fn)
    except _DryRunResult as result:
        return result.obj
    return finish_deletion_if_done(server(), info.resource, stored)[0]


def merge_patch(media_type: str, live: dict | None, body: bytes, *_schema_and_manager) -> dict:
    """The core's one PATCH format, a JSON merge patch (RFC 7386): it needs no
    schema, so a plain client can patch any kind. kubectl_compat adds three."""
    patch = decode.parse_body(body, "application/json")
    if not isinstance(patch, dict):
        raise api_errors.bad_request("merge patch must be a JSON object")
    return body_limits.check_depth(json_merge_patch.merge(json_cache.private_copy(live or {}), patch), "the patched object")


class _DryRunResult(Exception):
    def __init__(self, obj):
        self.obj = obj


def finalize(info):
    """PUT namespaces/NAME/finalize: change spec.finalizers, nothing else.

    A namespace's own finalizers say who must act before it goes; the
    namespace controller removes "kubernetes" here once the namespace is
    empty. When none is left, a terminating namespace goes."""
    server().hooks.check_options("UpdateOptions")
    sent = decode.decode_object(request.get_data(), request.content_type, info.resource)
    if sent["metadata"].get("name", info.name) != info.name:
        raise api_errors.bad_request(f"the name of the object ({sent['metadata']['name']}) does not match "
                                     f"the name on the URL ({info.name})")
    return _store_update(info, lambda current: sent, [])
