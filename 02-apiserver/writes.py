"""The write path: create, update, patch (and the namespace's /finalize).

Every write goes decode -> admission -> validation -> storage, as the
chapter's README draws it (Kubernetes runs validation between mutating and
validating admission; ours has one admission step, before it); update and
patch go through `update_object`, which the subresources (/status, /scale, /binding) use too.

Calls out of the core, to take on trust on a first read: `admission`
(part 3: plugins that may change or refuse the object), `custom_resources`
(chapter 04's own kinds: None/no-ops for a built-in kind) and
`kubectl_compat.patches` (the four PATCH formats, each giving a new object);
a Service's cluster IP and node ports come from `server().services`
(service_ips.py, chapter 05).
"""
from __future__ import annotations

import contextlib
import copy

from flask import g, request

import admission
import api_errors
import custom_resources
import decode
import objects
import rbac_escalation
import service_accounts
from authentication import INSECURE_USER
from deletion import finish_deletion_if_done
from kubectl_compat import patches
from privileged import privileged_errors
from request_context import dry_run, respond, server
from common.defaults import apply_defaults
from common.validate import validate_object, validate_status_update
from common.field_errors import invalid, too_long


def _admit_validate(obj: dict, old: dict | None, info, operation: str, subresource: str = "") -> None:
    """Admission plugins, then the kind's validation: 422 with every field error."""
    admission.admit(server(), obj, old, info, operation)
    errors = custom_resources.validate(info.resource, obj, old, subresource)   # None: a built-in kind
    if errors is None:
        validate = validate_status_update if subresource == "status" else validate_object
        errors = validate(info.resource.group, info.resource.kind, obj, old, namespaced=info.resource.namespaced)
        if subresource != "status" and not server().allow_privileged:     # kube-apiserver --allow-privileged
            errors = list(errors or []) + privileged_errors(info.resource.kind, obj)
    if errors:
        raise api_errors.invalid(info.resource, info.resource.kind, obj["metadata"].get("name", ""), errors)
    # A Role or binding may not grant more than its writer holds (403).
    rbac_escalation.check(server(), g.get("user") or INSECURE_USER, obj, old, info)


# Kubernetes' limit (FieldManagerMaxLength): a manager's name is stored in
# every managedFields entry it owns.
FIELD_MANAGER_MAX_BYTES = 128


def _check_write_options(options_kind: str) -> None:
    """The query of a write is a CreateOptions, UpdateOptions or PatchOptions
    object to Kubernetes, validated before the body is read: 422 with
    `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: ...`."""
    manager = request.args.get("fieldManager", "")
    errors = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_BYTES:
        errors.append(too_long("fieldManager", manager, FIELD_MANAGER_MAX_BYTES))
    for index, char in enumerate(manager):
        if not char.isprintable():    # Go counts the position in bytes, as we do
            position = len(manager[:index].encode())
            errors.append(invalid("fieldManager", manager,
                                  f"invalid character U+{ord(char):04X} (at position {position})"))
    if errors:
        error = api_errors.invalid("", f"{options_kind}.meta.k8s.io", "", errors)
        error.details.update(group="meta.k8s.io", kind=options_kind)
        raise error


def _field_validation(obj: dict, body: bytes, resource) -> list[str]:
    """Unknown and duplicate fields per ?fieldValidation=: the published
    schema of a built-in kind, the openAPIV3Schema of a custom one."""
    mode = request.args.get("fieldValidation")
    warnings = decode.apply_field_validation(obj, body, resource, mode) + custom_resources.prune(obj, resource, mode)
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
    _check_write_options("CreateOptions")
    body = request.get_data()
    return _store_create(info, decode.decode_object(body, request.content_type, info.resource), body)


def _store_create(info, obj: dict, body: bytes):
    """Every create, from a POST or a first server-side apply, ends here."""
    warnings = _field_validation(obj, body, info.resource)
    _set_namespace(obj, info)
    objects.prepare_for_create(obj, info.resource)
    obj = custom_resources.apply_defaults(info.resource, apply_defaults(info.resource.group, info.resource.kind, obj))
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
    """What the API server hands out with an object: a Service's cluster IP
    and node ports (service_ips.py). Nothing for other kinds."""
    if (info.resource.group, info.resource.kind) == ("", "Service") and info.subresource != "status":
        return server().services.allocating(obj, old, dry_run=dry_run())
    return contextlib.nullcontext(obj)


def update(info):
    _check_write_options("UpdateOptions")
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
    _check_write_options("PatchOptions")
    body = request.get_data()
    content_type = decode.media_type(request.content_type)
    custom_resources.check_patch_type(info.resource, content_type)
    manager = request.args.get("fieldManager", "")
    force = request.args.get("force") in ("true", "1")
    if content_type == "application/apply-patch+yaml" and info.subresource:
        # Our apply tracks spec and metadata only; say so rather than do nothing.
        raise api_errors.bad_request(f"server-side apply to {info.resource}/{info.subresource} is not supported "
                                     "by this server: send a merge or strategic merge patch instead")
    current = server().store.get(info.resource, info.namespace, info.name)
    if current is None and content_type == "application/apply-patch+yaml" and not info.subresource:
        return _apply_create(info, body, manager, force)
    if current is None:
        raise api_errors.not_found(info.resource, info.name)
    warnings: list[str] = []

    def patched(current: dict) -> dict:
        new = patches.apply_patch(content_type, current, body, info.resource.group,
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


def _apply_create(info, body: bytes, manager: str, force: bool):
    """Server-side apply of an object that does not exist yet is a create."""
    if not manager:
        raise api_errors.bad_request("PATCH with application/apply-patch+yaml requires the fieldManager query parameter")
    obj = patches.apply_patch("application/apply-patch+yaml", None, body, info.resource.group,
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
        old = copy.deepcopy(current)
        changed = change(current)
        # A stale resourceVersion is a 409 before anything else (as in
        # Kubernetes' store): validating the client's old copy against the new
        # object would blame the client for someone else's change (a 422
        # "podCIDR may not change" to a controller whose node got its range meanwhile).
        sent = (changed.get("metadata") or {}).get("resourceVersion")
        if sent and sent != old["metadata"]["resourceVersion"]:
            raise api_errors.conflict(info.resource, info.name)
        custom_resources.check_unconditional_update(info.resource, info.name, sent)
        # Defaults first, as Kubernetes applies them when it decodes: a PUT
        # that leaves out a defaulted field has not changed the spec.
        new = custom_resources.apply_defaults(
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


class _DryRunResult(Exception):
    def __init__(self, obj):
        self.obj = obj


def finalize(info):
    """PUT namespaces/NAME/finalize: change spec.finalizers, nothing else.

    A namespace's own finalizers say who must act before it goes; the
    namespace controller removes "kubernetes" here once the namespace is
    empty. When none is left, a terminating namespace goes."""
    _check_write_options("UpdateOptions")
    sent = decode.decode_object(request.get_data(), request.content_type, info.resource)
    if sent["metadata"].get("name", info.name) != info.name:
        raise api_errors.bad_request(f"the name of the object ({sent['metadata']['name']}) does not match "
                                     f"the name on the URL ({info.name})")
    return _store_update(info, lambda current: sent, [])
