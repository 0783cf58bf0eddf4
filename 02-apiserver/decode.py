"""Turning a request body into an object, or a clear 4xx saying why not.

kubectl sends JSON; people with curl send YAML too. Either way the body must
be one object of the kind the URL names. Unknown fields are handled as the
request's `fieldValidation` asks (kubectl sends Strict):

    Strict  -> 400 `strict decoding error: unknown field "spec.containers[0].imagee"`
    Warn    -> accepted, unknown fields dropped, a `Warning` header for each
    Ignore  -> accepted, unknown fields dropped silently

Calls out of the core, to take on trust on a first read: `body_limits`
(what no body may be: too deep, not UTF-8, a YAML bomb), and what is
registered in `server().hooks` (hooks.py): other body formats (kubectl 1.32
and 1.33 send some as protobuf), type checks (a string where a number
belongs is a 400 with Go's text) and which fields a kind has.
"""
from __future__ import annotations

import json
import math
import re

import api_errors
import body_limits
from request_context import server

JSON_TYPES = ("application/json", "application/yaml")
_INDEX = re.compile(r"^(.*)\[(\d+)\]$")
_INT64 = re.compile(r"[+-]?[0-9]{1,19}")


def media_type(content_type: str | None) -> str:
    # No Content-Type at all means JSON, the first type Kubernetes serves: the
    # official Python client sends create and replace bodies without one.
    return (content_type or "").split(";")[0].strip().lower() or "application/json"


def parse_body(body: bytes, content_type: str) -> object:
    """JSON or YAML text -> Python value; 400 with the parser's words otherwise."""
    if not body.strip():
        raise api_errors.bad_request("the request body is empty: send a JSON or YAML object")
    if media_type(content_type) in ("application/yaml", "application/apply-patch+yaml") \
            and body.lstrip()[:1] not in (b"{", b"["):
        return body_limits.yaml_object(body)      # chapter 01's manifest loader, with the server's limits
    try:
        return loads_json(body)
    except RecursionError:
        raise body_limits.too_deep_text(body) from None
    except ValueError as error:   # json.JSONDecodeError
        raise api_errors.bad_request(f"the request body is not valid JSON: {error}") from None


def decode_object(body: bytes, content_type: str, resource) -> dict:
    """The body of a create or update: one object, of this URL's kind."""
    registered = media_type(content_type) in server().hooks.decoders     # protobuf, from kubectl
    if not registered and media_type(content_type) not in JSON_TYPES:
        raise api_errors.unsupported_media_type(content_type, JSON_TYPES)
    obj = decode_any(body, content_type, resource)
    check_kind(obj, resource)
    if not registered:     # a registered decoder (protobuf) checks the types it reads itself
        for check in server().hooks.object_checks:  # a field of the wrong type: 400
            check(obj, resource)
    return obj


def decode_any(body: bytes, content_type: str | None, resource):
    """A body in a registered format (read into the JSON object the same
    command would have sent as JSON), else JSON or YAML text."""
    decoder = server().hooks.decoders.get(media_type(content_type))
    if decoder is not None:
        return decoder(body, resource)
    return parse_body(body, content_type or "application/json")


def loads_json(text: bytes | str):
    """json.loads as Go reads JSON: UTF-8 only, NaN and Infinity are not
    JSON, and a number too big for a float64 (1e999) is an error, not
    infinity. Python accepts all three, and would then store `Infinity`,
    which no client can read. Nor may it nest past body_limits' limit."""
    value = json.loads(body_limits.utf8_text(text), parse_constant=_not_json, parse_float=_finite_float)
    return body_limits.check_depth(value)


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def check_kind(obj, resource, kind: str | None = None, api_version: str | None = None) -> None:
    """Fill apiVersion/kind when absent (the Python client omits them); refuse a mismatch."""
    kind = kind or resource.kind
    api_version = api_version or resource.api_version
    if not isinstance(obj, dict):
        raise api_errors.bad_request(f"the request body must be a JSON object (a {kind}), not {type(obj).__name__}")
    if obj.setdefault("kind", kind) != kind:
        raise api_errors.bad_request(f"the kind in the body ({obj['kind']!r}) does not match "
                                     f"the kind this URL serves ({kind!r})")
    if obj.setdefault("apiVersion", api_version) != api_version:
        raise api_errors.bad_request(f"the apiVersion in the body ({obj['apiVersion']!r}) does not match "
                                     f"this URL's ({api_version!r})")
    if not isinstance(obj.setdefault("metadata", {}), dict):
        raise api_errors.bad_request("metadata must be an object")


# [START field-validation]
def apply_field_validation(obj: dict, body: bytes, resource, mode: str) -> list[str]:
    """Unknown and duplicate fields, as ?fieldValidation= asks; returns Warning
    header texts. Which fields a kind has, the registered schemas say."""
    mode = mode or "Warn"                # Kubernetes' default when the client says nothing
    if mode not in ("Strict", "Warn", "Ignore"):
        raise api_errors.bad_request(f"fieldValidation must be Strict, Warn or Ignore, not {mode!r}")
    hooks = server().hooks
    try:
        unknown = [path for find in hooks.unknown_fields for path in find(resource, obj)]
    except RecursionError:
        raise api_errors.bad_request("the request body is nested too deeply") from None
    duplicates = []
    if mode != "Ignore" and hooks.duplicate_fields and body.lstrip()[:1] == b"{":   # YAML: refused by common.model.manifests
        duplicates = hooks.duplicate_fields(body)
    problems = [f'unknown field "{p}"' for p in unknown] + [f'duplicate field "{p}"' for p in duplicates]
    if mode == "Strict" and problems:
        raise api_errors.bad_request(f'{resource.kind} in version "{resource.version}" cannot be handled '
                                     f'as a {resource.kind}: strict decoding error: ' + ", ".join(problems))
    drop_fields(obj, unknown)            # typed decoding in Kubernetes drops them too
    return problems if mode == "Warn" else []
# [END field-validation]


def drop_fields(obj: dict, paths: list[str]) -> None:
    """Remove fields named like `spec.containers[0].imagee` from `obj`."""
    for path in paths:
        *parents, name = path.split(".")
        parent = _walk(obj, parents)
        if isinstance(parent, dict):
            parent.pop(name, None)


def _walk(value, parts: list[str]):
    for part in parts:
        match = _INDEX.match(part)
        key, index = (match.group(1), int(match.group(2))) if match else (part, None)
        value = value.get(key) if isinstance(value, dict) else None
        if index is not None:
            value = value[index] if isinstance(value, list) and index < len(value) else None
    return value


def query_int(args, name: str, default: int | None = None, minimum: int = 0) -> int | None:
    raw = args.get(name)
    if raw in (None, ""):
        return default
    if not _INT64.fullmatch(raw) or not -2**63 <= int(raw) < 2**63:    # as Go's strconv.ParseInt(raw, 10, 64)
        raise api_errors.bad_request(f"{name} must be a 64-bit integer, not {raw!r}")
    value = int(raw)
    if value < minimum:
        raise api_errors.bad_request(f"{name} must be at least {minimum}, not {value}")
    return value
