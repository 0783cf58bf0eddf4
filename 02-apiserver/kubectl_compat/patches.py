"""PATCH: four ways to say "change these fields", chosen by Content-Type.

kubectl picks the patch type by command (see shared/kubectl-compat.md):

    application/json-patch+json            a list of RFC 6902 operations
                                           (`kubectl patch --type=json`, rollout undo)
    application/merge-patch+json           RFC 7386: maps merge, null deletes,
                                           lists replace (label, annotate, scale)
    application/strategic-merge-patch+json Kubernetes' own, lists merge by key
                                           (client-side apply, edit, rollout restart)
    application/apply-patch+yaml           server-side apply: the whole intent of
                                           one field manager, YAML or JSON

apply_patch() parses the body, refuses anything that is not the right shape
with a message saying what was wrong, and returns the patched object. It
never changes `live` and knows nothing about HTTP: the REST layer validates
and stores the result like any other update.
"""
from __future__ import annotations

import json
import re

import jsonpatch
import json_merge_patch
import yaml

import api_errors
import body_limits
import decode
import json_cache
from common.model.manifests import GuardedLoader, Refused
from . import schemas
from . import server_side_apply
from . import strategic_merge
from . import type_check
from common.model.field_errors import invalid

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

# Real objects nest about 15 levels deep. A limit far above that
# (common/model/nesting.py, the same for every body) keeps a hostile body, or a
# patch that deepens an object step by step, from exhausting the recursion
# of the merge functions and of everything that later reads the object.

# [START apply-patch]
def apply_patch(content_type: str, live: dict | None, body: bytes, group: str, version: str,
                kind: str, field_manager: str = "", force: bool = False) -> dict:
    """The object `live` becomes after the patch `body` of type `content_type`.

    `force` is server-side apply's `?force=true` (kubectl --force-conflicts)."""
    media_type = content_type.split(";")[0].strip().lower()
    if media_type not in PATCH_TYPES:
        raise api_errors.unsupported_media_type(content_type, PATCH_TYPES)
    if media_type == APPLY_PATCH:
        applied = _parse(body, "apply configuration", yaml_allowed=True)
        _expect_object(applied, "an apply configuration must be a whole manifest, "
                                "a YAML or JSON object")
        if not field_manager:
            raise api_errors.bad_request("fieldManager is required for apply requests "
                                         "(kubectl sends --field-manager, default \"kubectl\")")
        _check_apply_types(applied, group, version, kind)
        result = server_side_apply.apply(live or None, applied, field_manager, group, version, kind, force)
        return body_limits.check_depth(result, "the applied object (with its managedFields)")
    live = live or {}
    patch = _parse(body, "patch")
    if media_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise api_errors.bad_request("json patch must be an array of operations, such as "
                                         '[{"op": "replace", "path": "/spec/replicas", "value": 3}]')
        result = _json_patch(live, patch)
    elif media_type == MERGE_PATCH:
        _expect_object(patch, "merge patch must be a JSON object")
        result = json_merge_patch.merge(json_cache.private_copy(live), patch)  # it merges in place
    else:
        _expect_object(patch, "strategic merge patch must be a JSON object")
        result = strategic_merge.strategic_merge(live, patch,
                                                 schemas.schema_for(group, version, kind))
    _expect_object(result, "the patched object is no longer a JSON object")
    body_limits.check_depth(result, "the patched object")    # first: the type check walks it too
    _check_patched_types(result, group, version, kind)
    return result
# [END apply-patch]


def _check_patched_types(result: dict, group: str, version: str, kind: str) -> None:
    """A patch may leave a field wrongly typed (a list where an object
    belongs). Kubernetes finds out when it decodes the patched object into
    its Go struct, and answers 422 Invalid on a field it calls "patch",
    with the whole patched object (or the whole patch) as the bad value
    and no kind or name: up to 3 MiB echoed back to say one field is wrong.
    We answer the same 422 as validation words one, naming the object, the
    field and the value found there, with the Go decoder's text as the reason:

        Pod "web" is invalid: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution:
        Invalid value: [{"nodeSelectorTerms":[...]}]: json: cannot unmarshal array into Go struct field ..."""
    mismatch = type_check.first_mismatch(group, version, kind, result)
    if mismatch is None:
        return
    meta = result.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else ""
    error = api_errors.invalid("", kind, name, [invalid(mismatch.path, mismatch.value, mismatch.decoder_message())])
    if group:
        error.details["group"] = group
    raise error


def _check_apply_types(applied: dict, group: str, version: str, kind: str) -> None:
    """Server-side apply types the applied configuration before merging it.

    Kubernetes' text names the object and the field in its apply-path form
    (.spec.containers[name="web"].image). It answers with 500 and no reason,
    because that error is not turned into an API status; the mistake is the
    client's, so we answer 400 BadRequest. Go prints the value Go-style
    (&{[map[...]]}); we print it as JSON."""
    mismatch = type_check.first_mismatch(group, version, kind, applied)
    if mismatch is None:
        return
    meta = applied.get("metadata") if isinstance(applied.get("metadata"), dict) else {}
    where = f'{meta.get("namespace", "")}/{meta.get("name", "")}; {group}/{version}, Kind={kind}'
    value = json.dumps(mismatch.value, separators=(",", ":"))
    raise api_errors.bad_request(f"failed to create typed patch object ({where}): {mismatch.apply_path()}: "
                                 f"expected {mismatch.expected_word()}, got {value}")


def _json_patch(live: dict, operations: list) -> dict:
    """RFC 6902, one operation at a time so an error can name the one that failed."""
    document = json_cache.private_copy(live)  # one copy; the operations then change it in place
    for index, op in enumerate(operations):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or "path" not in op:
            raise api_errors.bad_request(
                f"json patch operation {index} must be an object with \"op\" and \"path\" "
                f"(got {json.dumps(op)[:80]})")
        where = f"json patch operation {index} ({op['op']} {op['path']})"
        for pointer in (op["path"], op.get("from", "")):
            if not isinstance(pointer, str) or pointer[:1] not in ("", "/"):
                raise api_errors.bad_request(
                    f"{where} is not valid: a path is a JSON pointer such as /spec/replicas")
        try:
            document = jsonpatch.JsonPatch([op]).apply(document, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            # Not the library's message: it quotes the whole value found there.
            expected = json.dumps(op.get("value"))
            raise api_errors.APIError(422, "Invalid", f"{where} failed: the value there is not "
                                      f"{expected if len(expected) <= 80 else expected[:77] + '...'}")
        except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPointerException) as error:
            # A path that does not exist in the object: the request is well
            # formed but cannot apply, as Kubernetes says with a 422.
            raise api_errors.APIError(422, "Invalid", f"{where} cannot apply: {_short(error)}")
        except (jsonpatch.InvalidJsonPatch, TypeError, ValueError) as error:
            raise api_errors.bad_request(f"{where} is not valid: {error}")
    return document


def _short(error: Exception) -> str:
    # jsonpointer quotes the whole document it searched ("... not found in
    # {...}"); the user has the document already.
    return re.split(r" in [{\[]", str(error), maxsplit=1)[0]


def _parse(body: bytes, what: str, yaml_allowed: bool = False):
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise api_errors.bad_request(f"the {what} is not UTF-8 text")
    try:
        try:
            value = decode.loads_json(text)
        except ValueError as error:
            if not yaml_allowed:
                raise api_errors.bad_request(f"the {what} is not valid JSON: {error}")
            value = _load_yaml(text, what)
    except RecursionError:
        raise body_limits.too_deep_text(text) from None
    return body_limits.check_depth(value, f"the {what}")


class _ManifestLoader(GuardedLoader):
    """YAML as Kubernetes reads it: no aliases, no dates; and as chapter 01's
    loader reads it: libyaml's speed, a depth limit and a budget of values.

    Aliases let a few lines expand into millions of nodes (the "billion
    laughs"), and manifests never need them. Unquoted dates stay strings,
    because a label value `2024-01-01` is a string to Kubernetes."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise api_errors.bad_request("YAML aliases (*name) are not allowed in a manifest")
        return super().compose_node(parent, index)


_ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _load_yaml(text: str, what: str):
    try:
        return _json_values(_json_keys(yaml.load(text, Loader=_ManifestLoader)), what)
    except yaml.YAMLError as error:
        raise api_errors.bad_request(f"the {what} is neither valid JSON nor valid YAML: {error}")
    except Refused as error:              # too deep, or too many values
        raise api_errors.bad_request(f"the {what} is refused, line {error.line}: {error.message}")


def _json_keys(value):
    """YAML keys may be numbers or booleans (`80: x`, `yes: y`); JSON's are strings."""
    if isinstance(value, dict):
        return {(json.dumps(k) if isinstance(k, bool) else str(k)) if not isinstance(k, str)
                else k: _json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def _json_values(value, what: str):
    """Refuse what JSON cannot hold (`!!binary`, `!!set`, `!!timestamp`):
    Kubernetes turns YAML into JSON first, and these have no JSON form."""
    if isinstance(value, dict):
        for item in value.values():
            _json_values(item, what)
    elif isinstance(value, list):
        for item in value:
            _json_values(item, what)
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise api_errors.bad_request(f"the {what} holds a YAML value JSON cannot hold "
                                     f"({type(value).__name__}); use plain strings, numbers, lists and maps")
    return value


def _expect_object(value, message: str) -> None:
    if not isinstance(value, dict):
        raise api_errors.bad_request(f"{message} (got {_json_type(value)})")


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "an array"}.get(type(value), type(value).__name__)
