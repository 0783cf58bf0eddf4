"""The REST API: every /api/... and /apis/... request that names a resource.

Every request goes through one door, `serve_resource`, which authenticates,
authorizes and hands it to the handler for its verb (a create's, in
writes.py, does the rest), so every write takes the same path:

    authenticate -> authorize -> decode -> admission -> validation -> storage

Kubernetes' handler chain is the same but for admission, which it splits
around validation: mutating admission, validation, validating admission,
storage (k8s.io/apiserver pkg/endpoints/handlers/create.go). Ours has one
admission step, before validation (admission.py).

Authentication and authorization (gauntlet.py) let everyone through on
the insecure port, as Kubernetes' insecure port did; on the secure port a
request needs a token, and the policy must allow what it asks.

This module routes and reads; writes.py holds the write path, deletion.py
deletion and finalizers, request_context.py what they all share.

Calls out of the core, to take on trust on a first read: `gauntlet`
(part 3: who is asking, may they), `subresources` (part 3: /scale,
/binding, /log), `connect` (part 7: /exec, /attach, /portforward),
`list_options` (?resourceVersionMatch and the like, as Kubernetes checks
them) and the registered `hooks.table` (a list as kubectl's Table).
"""
from __future__ import annotations

import base64
import json

from flask import Blueprint, g, request

import api_errors
import connect
import decode
import gauntlet
import list_options
import request_info
import subresources
import token_request
import watch
from deletion import delete, delete_collection
from request_context import existing, respond, selectors, server
from writes import create, finalize, patch, update

bp = Blueprint("rest", __name__)

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_JSON_ACCEPTS = ("application/json", "application/*", "*/*")   # in an Accept, before any `;`: JSON allowed


# [START request-path]
@bp.route("/api/<path:path>", methods=_METHODS)
@bp.route("/apis/<path:path>", methods=_METHODS)
@bp.route("/api/<path:path>", websocket=True)     # kubectl exec: Werkzeug routes upgrades apart
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


def accept_json_only() -> None:
    """Unless a negotiation is registered: 406 to a request for objects whose
    Accept allows no JSON, as Kubernetes answers for a format it does not serve."""
    if request_info.is_resource_path(request.path) and request.accept_mimetypes \
            and request.path.rsplit("/", 1)[-1] not in ("log", "exec", "attach", "portforward") \
            and not any(weight > 0 and value.split(";")[0].strip().lower() in _JSON_ACCEPTS
                        for value, weight in request.accept_mimetypes):
        raise api_errors.APIError(406, "NotAcceptable", "only the following media types are accepted: application/json")


# ----- reads -----

def _table():
    """kubectl asks for a Table first and JSON next: the registered printer for
    this request (hooks.table), or None for plain JSON."""
    wanted = "as=Table" in request.headers.get("Accept", "") and server().hooks.table
    return server().hooks.table() if wanted else None


def get_one(info):
    obj = existing(info)
    table = _table()
    return respond(table(info.resource, [obj], None) if table else obj)


def list_objects(info):
    labels, fields = selectors(info)
    snapshot, after = _continue_token()
    # store.list, at the version the query asks for (list_options.py: 400, 410, 422, 504)
    items, rv = list_options.read_list(server().store, info, request.args, snapshot)
    items = [o for o in items if labels.matches(o["metadata"].get("labels")) and fields.matches(o)]
    items, metadata = _paginate(items, rv, after)
    if table := _table():
        return respond(table(info.resource, items, metadata))
    return respond({"kind": info.resource.list_kind, "apiVersion": info.resource.api_version,
                    "metadata": metadata, "items": items})


def _continue_token() -> tuple[int, tuple]:
    """The resourceVersion of the first page and the last (namespace, name)
    sent, from `continue` (0 and () without one). As Kubernetes' token, it
    holds the first page's resourceVersion: a store that keeps old versions
    (etcd) serves every page from that one snapshot, and 410 once compacted."""
    token = request.args.get("continue")
    if not token:
        return 0, ()
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode()))
        rv, after = state["rv"], tuple(state["start"])
    except (ValueError, TypeError, KeyError):
        rv, after = None, ()
    if type(rv) is not int or rv < 0 or len(after) != 2 or not all(isinstance(part, str) for part in after):
        raise api_errors.bad_request("invalid continue token: pass the metadata.continue of the previous page")
    return rv, after


def _paginate(items: list[dict], rv: int, after: tuple) -> tuple[list[dict], dict]:
    """`limit` and `continue`: the page after (namespace, name) `after`."""
    metadata = {"resourceVersion": str(rv)}
    if after:
        items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after]
    limit = decode.query_int(request.args, "limit", 0)
    if limit and len(items) > limit:
        last = items[limit - 1]["metadata"]
        metadata["continue"] = base64.urlsafe_b64encode(json.dumps(
            {"rv": rv, "start": [last.get("namespace", ""), last["name"]]}).encode()).decode()
        metadata["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    return items, metadata


def watch_objects(info):
    labels, fields = selectors(info)
    return watch.stream(server(), info, labels, fields, _table())


_HANDLERS = {
    ("get", ""): get_one, ("list", ""): list_objects, ("watch", ""): watch_objects,
    ("create", ""): create, ("update", ""): update, ("patch", ""): patch,
    ("delete", ""): delete, ("deletecollection", ""): delete_collection,
    ("get", "status"): get_one, ("update", "status"): update, ("patch", "status"): patch,
    ("update", "finalize"): finalize,
    ("create", "token"): token_request.create_token,     # serviceaccounts/NAME/token
    **subresources.HANDLERS,
    **connect.HANDLERS,                                  # pods/exec, attach, portforward
}
