"""What no request body may be, in any format: decode.py's limits.

A client must not be able to send what the server cannot afford to read,
store or send back. Each refusal is a 400 saying what is wrong and where:

    a JSON body in UTF-16, or after a byte-order mark   Kubernetes' decoder refuses
                                                          both: JSON is UTF-8 text
    nesting deeper than 100 levels, in any format       the field path, or the byte
                                                          (common/model/nesting.py: why 100)
    YAML whose aliases expand past --max-request-bytes  the line of the alias
    YAML with more values than a parse may cost         the line (common/model/manifests.py)

The nesting check runs on every body decode.py reads (JSON, YAML and
protobuf), on every patch and on every patch's result (kubectl_compat/
patches.py), so nothing the store keeps can be too deep to copy or encode;
the store sets aside at start-up what an older version let through.
"""
from __future__ import annotations

import re

from flask import current_app

import api_errors
from common.model.manifests import MAX_BYTES, ManifestError, load_manifest_text
from common.model.nesting import MAX_DEPTH, depth_message, too_deep_at

_UTF8_BOM = b"\xef\xbb\xbf"
_JSON_TOKEN = re.compile(rb'[\[\]{}]|"(?:[^"\\]|\\.)*"')   # brackets, and strings to skip over


def utf8_text(body: bytes | str) -> str:
    """A JSON body as text. Python's json.loads would guess UTF-16 and UTF-32
    and skip a byte-order mark; Go's decoder, and so Kubernetes, refuses them."""
    if isinstance(body, str):
        return body
    if body.startswith(_UTF8_BOM):
        raise api_errors.bad_request("the request body starts with a byte-order mark (EF BB BF): "
                                     "a JSON body must be UTF-8 text without one")
    if body[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in body[:4]:
        raise api_errors.bad_request("the request body is UTF-16 or UTF-32 text: a JSON body must be UTF-8")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise api_errors.bad_request(f"the request body is not UTF-8 text, as JSON must be: byte "
                                     f"0x{body[error.start]:02x} at offset {error.start}") from None


def check_depth(value, what: str = "the request body"):
    """`value`, or 400 naming where it nests past the one limit."""
    where = too_deep_at(value)
    if where is not None:
        raise api_errors.bad_request(depth_message(what, where))
    return value


def too_deep_text(body: bytes | str) -> api_errors.APIError:
    """The 400 for JSON so deep that Python's parser ran out of stack (about
    1,000 levels) before there was an object to find the path in: the byte
    where it passes the limit instead."""
    depth, offset = 0, 0
    for token in _JSON_TOKEN.finditer(body.encode() if isinstance(body, str) else body):
        depth += {b"[": 1, b"{": 1, b"]": -1, b"}": -1}.get(token[0], 0)
        if depth > MAX_DEPTH:
            offset = token.start()
            break
    return api_errors.bad_request(depth_message("the request body", f"byte {offset}"))


def yaml_object(body: bytes) -> dict:
    """One object from a YAML body, by chapter 01's manifest loader: it refuses
    duplicate keys, deep nesting, alias bombs and too many values while it
    reads, and names the line of each problem. Aliases may not expand the
    body past what --max-request-bytes lets a client send."""
    limit = current_app.config.get("MAX_BODY_BYTES", MAX_BYTES)
    try:
        manifests = load_manifest_text(body, "request body", max_bytes=limit)
    except ManifestError as error:
        raise api_errors.bad_request(str(error)) from None
    if len(manifests) != 1:
        raise api_errors.bad_request(f"the request body must hold one object, not {len(manifests)}")
    return manifests[0].obj
