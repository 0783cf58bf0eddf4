"""The REST API: every /api/... and /apis/... request that names a resource.

One function, `serve_resource`, is the path every request takes, in the
order Kubernetes' own handler chain uses:

    authenticate -> authorize -> decode -> admission -> validation -> storage

Authentication and authorization (gauntlet.py) let everyone through on
the insecure port, as Kubernetes' insecure port did; on the secure port a
request needs a token, and the policy must allow what it asks.
"""
from __future__ import annotations

import base64
import copy
import json

from flask import Blueprint, Response, current_app, g, request

import admission
import api_errors
import custom_resources
import decode
import gauntlet
import objects
from kubectl_compat import patches
from kubectl_compat import printers
import request_info
import subresources
import watch
from common.selectors import SelectorError, parse_selector
from common.validate import validate_object, validate_status_update
from common.defaults import apply_defaults
from common.field_errors import invalid, too_long
from kubectl_compat.field_selectors import parse_field_selector

bp = Blueprint("rest", __name__)

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def server():
    """The running server's parts (store, options), set up by app.create_app."""
    return current_app.extensions["apiserver"]


def respond(obj, code: int = 200, warnings: list[str] = ()) -> Response:
    response = Response(json.dumps(obj, separators=(",", ":")), code, mimetype="application/json")
    for text in warnings:
        response.headers.add("Warning", warning_header(text))
    return response


def warning_header(text: str) -> str:
    """`299 - "text"` as RFC 7234 and client-go want it: quotes and
    backslashes escaped, and one line of plain ASCII (a field name may hold
    anything, and a header must never fail after the object is stored)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '299 - "' + "".join(c if " " <= c <= "~" else f"\\u{ord(c):04x}" for c in text) + '"'


# [START request-path]
@bp.route("/api/<path:path>", methods=_METHODS)
@bp.route("/apis/<path:path>", methods=_METHODS)
def serve_resource(path: str):
    info = request_info.parse(request.method, request.path, request.args)
    g.info = info                                    # for the audit line
    user = gauntlet.authenticate(request)            # who is asking? (401 Unauthorized)
    gauntlet.authorize(user, info)                   # may they do this? (403 Forbidden)
    handler = _HANDLERS.get((info.verb, info.subresource))
    if handler is None or info.verb not in info.resource.verbs and not info.subresource:
        raise api_errors.method_not_allowed(
            f"{info.verb} is not supported on {info.resource}{'/' + info.subresource if info.subresource else ''}")
    return handler(info)
# [END request-path]


# ----- reads -----

def _selectors(info):
    try:
        labels = parse_selector(request.args.get("labelSelector", ""))
    except SelectorError as error:
        raise api_errors.bad_request(f"invalid labelSelector: {error}") from None
    fields = parse_field_selector(request.args.get("fieldSelector"), info.resource)
    return labels, fields


def _wants_table() -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _include_object() -> str:
    value = request.args.get("includeObject", "Metadata")
    if value not in ("None", "Metadata", "Object"):
        raise api_errors.bad_request(f"includeObject must be None, Metadata or Object, not {value!r}")
    return value


def get_one(info):
    obj = _existing(info)
    if _wants_table():
        return respond(printers.to_table(info.resource, [obj], None, _include_object()))
    return respond(obj)


def _existing(info) -> dict:
    obj = server().store.get(info.resource, info.namespace, info.name)
    if obj is None:
        raise api_errors.not_found(info.resource, info.name)
    return obj


def list_objects(info):
    labels, fields = _selectors(info)
    decode.query_resource_version(request.args)      # a list has no use for it yet, but refuses nonsense
    items, rv = server().store.list(info.resource, info.namespace or None)
    items = [o for o in items if labels.matches(o["metadata"].get("labels")) and fields.matches(o)]
    items, metadata = _paginate(items, rv)
    if _wants_table():
        return respond(printers.to_table(info.resource, items, metadata, _include_object()))
    return respond({"kind": info.resource.list_kind, "apiVersion": info.resource.api_version,
                    "metadata": metadata, "items": items})


def _paginate(items: list[dict], rv: int) -> tuple[list[dict], dict]:
    """`limit` and `continue`: the token remembers the last (namespace, name) sent.

    Kubernetes serves every page from the same snapshot (the token holds the
    resourceVersion of the first page); ours continues from the live state,
    which is simpler and, for objects that do not change meanwhile, the same."""
    metadata = {"resourceVersion": str(rv)}
    token = request.args.get("continue")
    if token:
        try:
            after = tuple(json.loads(base64.urlsafe_b64decode(token.encode())))
        except (ValueError, TypeError):
            after = ()
        if len(after) != 2 or not all(isinstance(part, str) for part in after):
            raise api_errors.bad_request("invalid continue token: pass the metadata.continue of the previous page")
        items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after]
    limit = decode.query_int(request.args, "limit", 0)
    if limit and len(items) > limit:
        last = items[limit - 1]["metadata"]
        metadata["continue"] = base64.urlsafe_b64encode(
            json.dumps([last.get("namespace", ""), last["name"]]).encode()).decode()
        metadata["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    return items, metadata


def watch_objects(info):
    labels, fields = _selectors(info)
    return watch.stream(server(), info, labels, fields, _wants_table(), _include_object())


# ----- writes -----

def _admit_validate(obj: dict, old: dict | None, info, operation: str, subresource: str = "") -> None:
    """Admission plugins, then the kind's validation: 422 with every field error."""
    admission.admit(server(), obj, old, info, operation)
    errors = custom_resources.validate(info.resource, obj, old, subresource)   # None: a built-in kind
    if errors is None:
        validate = validate_status_update if subresource == "status" else validate_object
        errors = validate(info.resource.group, info.resource.kind, obj, old, namespaced=info.resource.namespaced)
    if errors:
        raise api_errors.invalid(info.resource, info.resource.kind, obj["metadata"].get("name", ""), errors)


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
    return decode.apply_field_validation(obj, body, resource, mode) + custom_resources.prune(obj, resource, mode)


def _dry_run() -> bool:
    values = request.args.getlist("dryRun")
    if any(v != "All" for v in values):
        raise api_errors.bad_request(f"dryRun must be All, not {values}")
    return bool(values)


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
    _admit_validate(obj, None, info, "CREATE")
    objects.finish_create(obj, info.resource)
    g.created = obj["metadata"].get("name")           # the audit line names what was made
    if _dry_run():
        return respond(obj, 201, warnings)
    return respond(server().store.create(info.resource, obj), 201, warnings)


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
        warnings.extend(_field_validation(new, body, info.resource))
        return new
    return _store_update(info, patched, warnings)


def _check_uid_unchanged(new: dict, current: dict, info) -> None:
    """A patch that changes metadata.uid is refused, not quietly undone.

    A PUT's uid is a precondition (a different uid means another object of
    that name: 409). A patch has no precondition, so Kubernetes catches the
    change where it validates the update: 422, uid is immutable. Leaving the
    uid out is fine: the stored one is kept."""
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


def _store_update(info, change, warnings: list[str], subresource: str = ""):
    """The read-modify-write every PUT and PATCH ends in; `change` makes the new object."""
    return respond(update_object(info, change, subresource), 200, warnings)


def update_object(info, change, subresource: str = "") -> dict:
    """The stored object after `change` (with dryRun: what would be stored)."""
    dry_run = _dry_run()
    subresource = subresource or info.subresource

    def update_fn(current: dict) -> dict:
        old = copy.deepcopy(current)
        # Defaults first, as Kubernetes applies them when it decodes: a PUT
        # that leaves out a defaulted field has not changed the spec.
        new = custom_resources.apply_defaults(
            info.resource, apply_defaults(info.resource.group, info.resource.kind, change(current)))
        new = objects.prepare_for_update(new, old, info.resource, subresource)
        _admit_validate(new, old, info, "UPDATE", subresource)
        if dry_run:
            raise _DryRunResult(new)
        return new

    try:
        stored = server().store.update(info.resource, info.namespace, info.name, update_fn)
    except _DryRunResult as result:
        return result.obj
    return finish_deletion_if_done(server(), info.resource, stored)[0]


class _DryRunResult(Exception):
    def __init__(self, obj):
        self.obj = obj


# ----- deletes -----

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
def delete_object(server_state, resource, namespace: str, name: str, options: dict) -> tuple[dict, bool]:
    """Delete now, or mark for deletion while something still has to happen.

    Returns (object, gone). An object with finalizers is only marked with a
    deletionTimestamp, and stays until the controllers that own the
    finalizers clear them. propagationPolicy Orphan or Foreground adds the
    garbage collector's finalizer (orphan, foregroundDeletion). A pod running
    on a node is marked too: its kubelet stops the containers, then deletes
    it for good (grace period 0)."""
    store = server_state.store
    current = store.get(resource, namespace, name)
    if current is None:
        raise api_errors.not_found(resource, name)
    _check_preconditions(current, options, resource)
    admission.admit_delete(server_state, current, resource)
    grace = admission.grace_period(server_state, resource, current, options)
    collector = not admission.without_controller_manager(server_state)
    finalizers = admission.finalizers_for_delete(resource, current, options, garbage_collector=collector)
    planned = {**current, "metadata": {**current["metadata"], "finalizers": finalizers}}
    if admission.finalizers(resource, planned) or grace > 0:
        def mark(obj: dict) -> dict:
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
        marked = store.update(resource, namespace, name, _unchanged_since(current, resource, mark))
        if resource.kind == "Namespace":
            admission.sync_namespace(server_state, name)
            marked = store.get(resource, namespace, name) or marked
        return finish_deletion_if_done(server_state, resource, marked)
    gone = store.delete(resource, namespace, name, _unchanged_since(current, resource))
    admission.deleted(server_state, resource, gone)
    return gone, True
# [END finalizers]


def _unchanged_since(decided_on: dict, resource, then=lambda obj: obj):
    """The decision to delete (now, or only mark) was made on `decided_on`;
    if the object changed since (a finalizer added?), refuse with 409 and
    let the client ask again, rather than act on a stale read."""
    def check(latest: dict) -> dict:
        if latest["metadata"].get("resourceVersion") != decided_on["metadata"].get("resourceVersion"):
            raise api_errors.conflict(resource, decided_on["metadata"]["name"])
        return then(latest)
    return check


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
        admission.deleted(server_state, resource, gone)
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
    if _dry_run():
        return respond(_existing(info))
    obj, gone = delete_object(server(), info.resource, info.namespace, info.name, options)
    if gone and info.resource.kind not in _RETURNS_DELETED_OBJECT:
        details = {"name": info.name, "kind": info.resource.plural, "uid": obj["metadata"].get("uid", "")}
        if info.resource.group:
            details["group"] = info.resource.group
        return respond({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": details}, 200)
    return respond(obj, 200)


def delete_collection(info):
    options = _delete_options()
    labels, fields = _selectors(info)
    items, rv = server().store.list(info.resource, info.namespace or None)
    deleted = []
    dry_run = _dry_run()
    for obj in items:
        if labels.matches(obj["metadata"].get("labels")) and fields.matches(obj):
            if dry_run:
                deleted.append(obj)       # what would go; nothing does
                continue
            try:
                deleted.append(delete_object(server(), info.resource, obj["metadata"].get("namespace", ""),
                                             obj["metadata"]["name"], options)[0])
            except api_errors.APIError as error:
                if error.code != 404:     # deleted meanwhile: fine
                    raise
    return respond({"kind": info.resource.list_kind, "apiVersion": info.resource.api_version,
                    "metadata": {"resourceVersion": str(server().store.resource_version)}, "items": deleted})


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


_HANDLERS = {
    ("get", ""): get_one, ("list", ""): list_objects, ("watch", ""): watch_objects,
    ("create", ""): create, ("update", ""): update, ("patch", ""): patch,
    ("delete", ""): delete, ("deletecollection", ""): delete_collection,
    ("get", "status"): get_one, ("update", "status"): update, ("patch", "status"): patch,
    ("update", "finalize"): finalize,
    **subresources.HANDLERS,
}
