"""The request's context and the answers: what every handler module shares.

`server()` is the running server's parts (store, options), `respond()`
turns an object into the JSON answer, and the helpers below read what a
request asks for (the object it names, ?dryRun, the selectors). Nothing
here decides anything: rest.py routes, writes.py and deletion.py act.

Calls out of the core, to take on trust: `common.model.selectors` parses
?labelSelector, and the registered hooks ?fieldSelector. `server()`
returns app.py's `APIServer`: its `store`, its `watches` limit,
`max_watch_seconds` and `bookmark_seconds` for watch.py, and `hooks`
(hooks.py), what extensions registered.
"""
from __future__ import annotations

from flask import Response, current_app, request

import api_errors
import json_cache
from common.model.selectors import SelectorError, parse_selector


def server():
    """The running server's parts (store, options), set up by app.create_app."""
    return current_app.extensions["apiserver"]


def respond(obj, code: int = 200, warnings: list[str] = ()) -> Response:
    response = Response(json_cache.encode(obj), code, mimetype="application/json")
    for text in warnings:
        response.headers.add("Warning", warning_header(text))
    return response


def warning_header(text: str) -> str:
    """`299 - "text"` as RFC 7234 and client-go want it: quotes and
    backslashes escaped, and one line of plain ASCII (a field name may hold
    anything, and a header must never fail after the object is stored)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '299 - "' + "".join(c if " " <= c <= "~" else f"\\u{ord(c):04x}" for c in text) + '"'


def selectors(info):
    try:
        labels = parse_selector(request.args.get("labelSelector", ""))
    except SelectorError as error:
        raise api_errors.bad_request(f"invalid labelSelector: {error}") from None
    fields = server().hooks.parse_field_selector(request.args.get("fieldSelector"), info.resource)
    return labels, fields


def existing(info) -> dict:
    obj = server().store.get(info.resource, info.namespace, info.name)
    if obj is None:
        raise api_errors.not_found(info.resource, info.name)
    return obj


def dry_run() -> bool:
    values = request.args.getlist("dryRun")
    if any(v != "All" for v in values):
        raise api_errors.bad_request(f"dryRun must be All, not {values}")
    return bool(values)
