"""Turning a request body into an object, or a clear 4xx saying why not.

kubectl sends JSON; people with curl send YAML too. Either way the body must
be one object of the kind the URL names. Unknown fields are handled as the
request's `fieldValidation` asks (kubectl sends Strict):

    Strict  -> 400 `strict decoding error: unknown field "spec.containers[0].imagee"`
    Warn    -> accepted, unknown fields dropped, a `Warning` header for each
    Ignore  -> accepted, unknown fields dropped silently
"""
from __future__ import annotations

import json
import re

import api_errors
import field_validation
import protobuf
from common.manifests import ManifestError, load_manifest_text

JSON_TYPES = ("application/json", "application/yaml")
PROTOBUF = "application/vnd.kubernetes.protobuf"
_INDEX = re.compile(r"^(.*)\[(\d+)\]$")


def media_type(content_type: str | None) -> str:
    # No Content-Type at all means JSON, the first type Kubernetes serves: the
    # official Python client sends create and replace bodies without one.
    return (content_type or "").split(";")[0].strip().lower() or "application/json"


def parse_body(body: bytes, content_type: str) -> object:
    """JSON or YAML text -> Python value; 400 with the parser's words otherwise."""
    if not body.strip():
        raise api_errors.bad_request("the request body is empty: send a JSON or YAML object")
    kind = media_type(content_type)
    try:
        if kind in ("application/yaml", "application/apply-patch+yaml") and body.lstrip()[:1] not in (b"{", b"["):
            # The chapter 01 manifest loader: refuses duplicate keys, YAML
            # bombs and deep nesting, and names the line of each problem.
            manifests = load_manifest_text(body, "request body")
            if len(manifests) != 1:
                raise api_errors.bad_request(f"the request body must hold one object, not {len(manifests)}")
            return manifests[0].obj
        return json.loads(body)
    except ManifestError as error:
        raise api_errors.bad_request(str(error)) from None
    except RecursionError:
        raise api_errors.bad_request("the request body is nested too deeply") from None
    except UnicodeDecodeError as error:
        raise api_errors.bad_request(f"the request body is not UTF-8 text: {error}") from None
    except ValueError as error:   # json.JSONDecodeError
        raise api_errors.bad_request(f"the request body is not valid JSON: {error}") from None


def decode_object(body: bytes, content_type: str, resource) -> dict:
    """The body of a create or update: one object, of this URL's kind."""
    if media_type(content_type) == PROTOBUF:
        # kubectl's typed generators (create namespace, create deployment,
        # create configmap, ...) send protobuf; protobuf.py reads it into
        # the JSON object the same command would have sent as JSON.
        obj = protobuf.object_from_request(body, resource)
        check_kind(obj, resource)
        return obj
    if media_type(content_type) not in JSON_TYPES:
        raise api_errors.unsupported_media_type(content_type, ("application/json", "application/yaml"))
    obj = parse_body(body, content_type)
    check_kind(obj, resource)
    return obj


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
    """Check `obj` against the published schema; returns Warning header texts."""
    mode = mode or "Warn"                # Kubernetes' default when the client says nothing
    if mode not in ("Strict", "Warn", "Ignore"):
        raise api_errors.bad_request(f"fieldValidation must be Strict, Warn or Ignore, not {mode!r}")
    try:
        unknown = field_validation.unknown_fields(resource.group, resource.version, resource.kind, obj)
    except RecursionError:
        raise api_errors.bad_request("the request body is nested too deeply") from None
    duplicates = []
    if mode != "Ignore" and body.lstrip()[:1] == b"{":   # YAML bodies go through common.manifests, which refuses duplicates
        duplicates = field_validation.find_duplicate_fields(body)
    if mode == "Strict" and (unknown or duplicates):
        raise api_errors.bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: '
            + field_validation.strict_error_message(unknown, duplicates))
    drop_fields(obj, unknown)            # typed decoding in Kubernetes drops them too
    return field_validation.warnings(unknown, duplicates) if mode == "Warn" else []
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
    try:
        value = int(raw)
    except ValueError:
        raise api_errors.bad_request(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise api_errors.bad_request(f"{name} must be at least {minimum}, not {value}")
    return value
