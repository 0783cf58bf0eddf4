"""/openapi/v3: the documents kubectl reads before it writes.

kubectl downloads these before `create -f`, `apply -f`, `edit` and
`replace`, for three reasons:

1. Field validation. If the PATCH operations of a kind advertise the
   `fieldValidation` query parameter, kubectl trusts the server to validate
   and sends `?fieldValidation=Strict`; without any OpenAPI it refuses to
   run unless the learner adds `--validate=false`.
2. Client-side apply computes its strategic merge patch from the
   `x-kubernetes-patch-strategy` / `-merge-key` markers in the schemas.
3. `kubectl explain pod.spec.containers` prints the schemas' descriptions.

So we serve one OpenAPI 3.0 document per group-version (`api/v1`,
`apis/apps/v1`, ...), built from the published schemas in schemas.py, plus
a small index of them at /openapi/v3. As in Kubernetes, the index links
each document with `?hash=<sha512 of the document>`: a URL that can never
change its content, which kubectl may cache for good.
"""
from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from flask import Blueprint, Response, current_app, has_app_context, request

import api_errors
import hooks
import registry
from .discovery import group_versions, in_group_version
from . import schemas

bp = Blueprint("openapi", __name__)


def _hooks() -> hooks.Hooks:
    """What plugged in (custom kinds' schemas, which patches a kind takes);
    nothing outside a server, as when a test serves this blueprint alone."""
    state = current_app.extensions.get("apiserver") if has_app_context() else None
    return state.hooks if state is not None else hooks.Hooks()

_REF = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# Served beside every group-version's kinds: what the operations take and
# return besides the kinds themselves.
_META_DEFINITIONS = tuple(_META + name for name in (
    "Status", "DeleteOptions", "Patch", "WatchEvent", "APIResourceList"))
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                "application/merge-patch+json", "application/strategic-merge-patch+json")


# --- JSON schema ($defs) to OpenAPI 3.0 (components/schemas) ----------------

def _convert(schema: dict, refs: set[str]) -> dict:
    """One published schema in OpenAPI 3.0 form; adds the definitions it
    refers to to `refs`.

    Two differences matter to kubectl: a `type` must be one string
    (kubernetes-validate writes ["string", "null"]; 3.0 says `nullable`),
    and a `$ref` with a description beside it is wrapped in a one-item
    `allOf`, since 3.0 ignores the siblings of a `$ref`. Kubernetes' own
    documents use the same wrapping, and kubectl explain follows it."""
    out: dict = {}
    for key, value in schema.items():
        if key == "$ref":
            continue
        if key == "type":
            types = value if isinstance(value, list) else [value]
            concrete = [t for t in types if t != "null"]
            if len(concrete) == 1:
                out["type"] = concrete[0]
            if "null" in types:
                out["nullable"] = True
        elif key == "properties":
            out[key] = {name: _convert(sub, refs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _convert(value, refs)
        elif key in ("oneOf", "anyOf", "allOf"):
            out[key] = [_convert(sub, refs) for sub in value]
        else:
            out[key] = value
    if _is_int_or_string(out):
        out["format"] = "int-or-string"
        out["x-kubernetes-int-or-string"] = True
    name = schemas.ref_name(schema)
    if name is None:
        return out
    refs.add(name)
    ref = {"$ref": _REF + name}
    if not out:
        return ref
    out["allOf"] = [ref]
    return out


def _is_int_or_string(schema: dict) -> bool:
    alternatives = {sub.get("type") for sub in schema.get("oneOf", ())}
    return alternatives == {"integer", "string"}


def _component(name: str, refs: set[str], custom: dict[str, dict]) -> dict:
    converted = _convert(custom.get(name) or schemas.definitions()[name], refs)
    if "x-kubernetes-group-version-kind" in converted:
        # kubernetes-validate pins apiVersion and kind with a one-value
        # enum; Kubernetes does not publish those, and explain would print them.
        for field in ("apiVersion", "kind"):
            converted.get("properties", {}).get(field, {}).pop("enum", None)
    return converted


def _components(roots: set[str]) -> dict[str, dict]:
    """The named definitions and every definition they reach."""
    out: dict[str, dict] = {}
    custom = {name: schema for source in _hooks().schema_sources for name, schema in source().items()}
    pending = set(roots)
    while pending:
        name = pending.pop()
        if name in out:
            continue
        refs: set[str] = set()
        out[name] = _component(name, refs, custom)
        pending |= refs - out.keys()
    return dict(sorted(out.items()))


# --- paths: the operations of each served resource --------------------------

def _param(name: str, where: str, kind: str, description: str, required: bool = False) -> dict:
    param = {"name": name, "in": where, "description": description, "schema": {"type": kind}}
    if required:
        param["required"] = True
    return param


_NAMESPACE = _param("namespace", "path", "string", "the namespace of the object", True)
_PRETTY = _param("pretty", "query", "string", "'true' indents the JSON reply")
_DRY_RUN = _param("dryRun", "query", "string", "'All' runs every stage but does not store the result")
_WRITE_PARAMS = [
    _DRY_RUN,
    _param("fieldManager", "query", "string", "the name of the actor making this change"),
    # [START field-validation-param]
    # kubectl looks for exactly this parameter on the PATCH operations of a
    # kind: if it is there, kubectl leaves validation to us.
    _param("fieldValidation", "query", "string",
           "what to do with unknown or duplicate fields in the body: 'Ignore' "
           "drops them, 'Warn' drops them with a Warning header each, 'Strict' "
           "rejects the request with 400 BadRequest"),
    # [END field-validation-param]
]
_PATCH_PARAMS = _WRITE_PARAMS + [
    _param("force", "query", "boolean", "server-side apply: take over fields other managers own"),
]
_LIST_PARAMS = [
    _param("labelSelector", "query", "string", "only objects whose labels match, e.g. app=web,tier!=db"),
    _param("fieldSelector", "query", "string", "only objects whose fields match, e.g. spec.nodeName=n1"),
    _param("limit", "query", "integer", "at most this many items; 'continue' fetches the rest"),
    _param("continue", "query", "string", "the token a limited list returned"),
    _param("resourceVersion", "query", "string", "list as of, or watch from, this version"),
    _param("timeoutSeconds", "query", "integer", "close a watch after this many seconds"),
    _param("watch", "query", "boolean", "stream changes as watch events instead of listing"),
    _param("allowWatchBookmarks", "query", "boolean", "send BOOKMARK events during a watch"),
]
_DELETE_PARAMS = [
    _DRY_RUN,
    _param("gracePeriodSeconds", "query", "integer", "seconds to let the object shut down"),
    _param("propagationPolicy", "query", "string", "Orphan, Background or Foreground: what happens to dependents"),
]
_LOG_PARAMS = [
    _param("container", "query", "string", "the container whose log to read"),
    _param("follow", "query", "boolean", "keep the stream open and send new lines"),
    _param("previous", "query", "boolean", "the log of the previous, terminated container"),
    _param("sinceSeconds", "query", "integer", "only lines from the last this many seconds"),
    _param("tailLines", "query", "integer", "only the last this many lines"),
    _param("timestamps", "query", "boolean", "prefix each line with its time"),
]


def _content(schema: dict, types=("application/json",)) -> dict:
    return {"content": {t: {"schema": schema} for t in types}}


def _ref_to(name: str) -> dict:
    return {"$ref": _REF + name}


def _operation(action: str, operation_id: str, description: str, gvk: dict,
               reply: dict, body: dict | None = None, params=(), codes=("200",)) -> dict:
    op: dict = {
        "description": description,
        "operationId": operation_id,
        "parameters": list(params),
        "responses": {code: {"description": {"200": "OK", "201": "Created",
                                             "202": "Accepted"}[code], **reply}
                      for code in codes},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if body is not None:
        op["requestBody"] = body
    if not op["parameters"]:
        del op["parameters"]
    return op


def _group_token(group: str, version: str) -> str:
    """"CoreV1", "AppsV1", "BatchV1": the part of an operation id that names
    the group-version, as in Kubernetes' listCoreV1NamespacedPod."""
    words = (group or "core").replace("-", ".").split(".")
    return "".join(word.capitalize() for word in words) + version.capitalize()


def _resource_paths(r: registry.Resource) -> dict[str, dict]:
    gv = _group_token(r.group, r.version)
    scope = "Namespaced" if r.namespaced else ""
    gvk = {"group": r.group, "kind": r.kind, "version": r.version}
    kind_def, list_def = _definition_name(r, r.kind), _definition_name(r, r.list_kind)
    one = _content(_ref_to(kind_def))
    status = _content(_ref_to(_META + "Status"))
    verbs = set(r.verbs)
    prefix = "/" + gv_path(r.group, r.version)
    collection_path = (f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced
                       else f"{prefix}/{r.plural}")
    scope_params = [_NAMESPACE] if r.namespaced else []
    name_param = _param("name", "path", "string", f"the name of the {r.kind}", True)

    collection: dict = {"parameters": scope_params + [_PRETTY]}
    if "list" in verbs:
        collection["get"] = _operation(
            "list", f"list{gv}{scope}{r.kind}", f"list or watch objects of kind {r.kind}", gvk,
            _content(_ref_to(list_def), ("application/json", "application/json;stream=watch")),
            params=_LIST_PARAMS)
    if "create" in verbs:
        collection["post"] = _operation(
            "post", f"create{gv}{scope}{r.kind}", f"create a {r.kind}", gvk, one,
            body=_content(_ref_to(kind_def)), params=_WRITE_PARAMS, codes=("200", "201", "202"))
    if "deletecollection" in verbs:
        collection["delete"] = _operation(
            "deletecollection", f"delete{gv}Collection{scope}{r.kind}",
            f"delete a collection of {r.kind}", gvk, status,
            body=_content(_ref_to(_META + "DeleteOptions")), params=_LIST_PARAMS + _DELETE_PARAMS)

    item: dict = {"parameters": [name_param] + scope_params + [_PRETTY]}
    if "get" in verbs:
        item["get"] = _operation("get", f"read{gv}{scope}{r.kind}",
                                 f"read the specified {r.kind}", gvk, one)
    if "update" in verbs:
        item["put"] = _operation("put", f"replace{gv}{scope}{r.kind}",
                                 f"replace the specified {r.kind}", gvk, one,
                                 body=_content(_ref_to(kind_def)), params=_WRITE_PARAMS,
                                 codes=("200", "201"))
    if "patch" in verbs:
        item["patch"] = _patch_operation(f"patch{gv}{scope}{r.kind}",
                                         f"partially update the specified {r.kind}", gvk, one, _patch_types(r))
    if "delete" in verbs:
        item["delete"] = _operation("delete", f"delete{gv}{scope}{r.kind}",
                                    f"delete a {r.kind}", gvk, one,
                                    body=_content(_ref_to(_META + "DeleteOptions")),
                                    params=_DELETE_PARAMS, codes=("200", "202"))

    paths = {collection_path: collection, f"{collection_path}/{{name}}": item}
    if r.namespaced and "list" in verbs:
        paths[f"{prefix}/{r.plural}"] = {
            "parameters": [_PRETTY],
            "get": _operation("list", f"list{gv}{r.kind}ForAllNamespaces",
                              f"list or watch objects of kind {r.kind} in every namespace", gvk,
                              _content(_ref_to(list_def)), params=_LIST_PARAMS)}
    for sub in r.subresources:
        op_name = f"{gv}{scope}{r.kind}{sub.capitalize()}"
        path = f"{collection_path}/{{name}}/{sub}"
        params = [name_param] + scope_params + [_PRETTY]
        paths[path] = {"parameters": params, **_subresource_operations(sub, op_name, r, gvk, one)}
    return paths


def _definition_name(r: registry.Resource, kind: str) -> str | None:
    for name_of in _hooks().definition_names:       # a custom kind's (extensions/custom_resources.py)
        name = name_of(r, kind)
        if name is not None:
            return name
    return schemas.definition_name(r.group, r.version, kind)


def _patch_types(r: registry.Resource) -> tuple[str, ...]:
    """kubectl apply sends a strategic merge patch only where the PATCH
    operation lists it, so a custom kind (which takes none) must not."""
    return tuple(t for t in _PATCH_TYPES if _takes(r, t))


def _takes(r: registry.Resource, media_type: str) -> bool:
    """What the patch checks (hooks.patch_checks) let through for the kind."""
    try:
        for check in _hooks().patch_checks:
            check(r, "", media_type)
    except api_errors.APIError:
        return False
    return True


def _patch_operation(operation_id: str, description: str, gvk: dict, reply: dict,
                     types: tuple[str, ...] = _PATCH_TYPES) -> dict:
    return _operation("patch", operation_id, description, gvk, reply,
                      body=_content(_ref_to(_META + "Patch"), types),
                      params=_PATCH_PARAMS, codes=("200", "201"))


def _subresource_operations(sub: str, op_name: str, r: registry.Resource,
                            gvk: dict, one: dict) -> dict:
    if sub == "status":   # the parent's kind, as in Kubernetes
        return {
            "get": _operation("get", f"read{op_name}", f"read status of the specified {r.kind}", gvk, one),
            "put": _operation("put", f"replace{op_name}", f"replace status of the specified {r.kind}",
                              gvk, one, body=_content(one["content"]["application/json"]["schema"]),
                              params=_WRITE_PARAMS, codes=("200", "201")),
            "patch": _patch_operation(f"patch{op_name}",
                                      f"partially update status of the specified {r.kind}", gvk, one,
                                      _patch_types(r)),
        }
    if sub == "scale":
        scale_gvk = {"group": "autoscaling", "kind": "Scale", "version": "v1"}
        scale = _content(_ref_to("io.k8s.api.autoscaling.v1.Scale"))
        return {
            "get": _operation("get", f"read{op_name}", f"read scale of the specified {r.kind}",
                              scale_gvk, scale),
            "put": _operation("put", f"replace{op_name}", f"replace scale of the specified {r.kind}",
                              scale_gvk, scale, body=scale, params=_WRITE_PARAMS, codes=("200", "201")),
            "patch": _patch_operation(f"patch{op_name}",
                                      f"partially update scale of the specified {r.kind}", scale_gvk, scale),
        }
    if sub == "binding":
        binding_gvk = {"group": "", "kind": "Binding", "version": "v1"}
        binding = _content(_ref_to("io.k8s.api.core.v1.Binding"))
        return {"post": _operation("post", f"create{op_name}", f"create binding of a {r.kind}",
                                   binding_gvk, binding, body=binding, params=_WRITE_PARAMS,
                                   codes=("200", "201", "202"))}
    if sub == "token":      # serviceaccounts/NAME/token: `kubectl create token`
        token_gvk = {"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}
        token = _content(_ref_to("io.k8s.api.authentication.v1.TokenRequest"))
        return {"post": _operation("post", f"create{op_name}", f"create token of a {r.kind}",
                                   token_gvk, token, body=token, params=_WRITE_PARAMS,
                                   codes=("200", "201", "202"))}
    if sub == "finalize":   # namespaces/NAME/finalize: PUT a Namespace, only spec.finalizers is read
        return {"put": _operation("put", f"replace{op_name}", f"replace finalize of the specified {r.kind}",
                                  gvk, one, body=_content(one["content"]["application/json"]["schema"]),
                                  params=_WRITE_PARAMS, codes=("200", "201"))}
    if sub == "log":
        text = _content({"type": "string"}, ("text/plain", "application/json"))
        return {"get": _operation("get", f"read{op_name}", f"read log of the specified {r.kind}",
                                  gvk, text, params=_LOG_PARAMS)}
    if sub in ("exec", "attach", "portforward"):     # a connection kubectl upgrades, no object
        options = {"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}
        options_gvk = {"group": "", "kind": options[sub], "version": "v1"}
        text = _content({"type": "string"}, ("*/*",))
        # Kubernetes' ids: connectCoreV1GetNamespacedPodExec, connectCoreV1PostNamespacedPodExec.
        ids = {method: "connect" + op_name.replace("Namespaced", method.capitalize() + "Namespaced")
               for method in ("get", "post")}
        return {method: _operation("connect", ids[method], f"connect {method.upper()} requests to {sub} of {r.kind}",
                                   options_gvk, text) for method in ids}
    raise ValueError(f"no OpenAPI operations for subresource {sub!r}")


# --- the documents -----------------------------------------------------------

def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the index: "api/v1", "apis/apps/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def build_document(group: str, version: str) -> dict | None:
    """The OpenAPI 3.0 document of one served group-version, None if we
    serve no such group-version."""
    # A kind without a published schema has no document: metrics.k8s.io's
    # comes, in Kubernetes, from metrics-server, which we do not run.
    resources = [r for r in in_group_version(group, version) if _definition_name(r, r.kind)]
    if not resources:
        return None
    token = _group_token(group, version)
    root = "/" + gv_path(group, version) + "/"
    paths: dict[str, dict] = {root: {"get": {
        "description": "get available resources", "operationId": f"get{token}APIResources",
        "responses": {"200": {"description": "OK",
                              **_content(_ref_to(_META + "APIResourceList"))}}}}}
    for r in resources:
        paths.update(_resource_paths(r))
    roots = set(_META_DEFINITIONS)
    _collect_refs(paths, roots)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{schemas.KUBERNETES_VERSION}"},
        "paths": paths,
        "components": {"schemas": _components(roots)},
    }


def _collect_refs(value, into: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            into.add(ref[len(_REF):])
        for sub in value.values():
            _collect_refs(sub, into)
    elif isinstance(value, list):
        for sub in value:
            _collect_refs(sub, into)


def document_bytes(group: str, version: str) -> tuple[bytes, str] | None:
    """(serialized document, its hash), built on first use and kept: the
    documents change only when the code does, or the custom resources
    served (registry.custom_generation). The hash is Kubernetes' ETag:
    SHA-512 of the bytes, in upper-case hex."""
    return _document_bytes(group, version, registry.custom_generation())


@functools.lru_cache(maxsize=128)
def _document_bytes(group: str, version: str, custom_generation: int) -> tuple[bytes, str] | None:
    doc = build_document(group, version)
    if doc is None:
        return None
    data = json.dumps(doc, separators=(",", ":")).encode()
    return data, hashlib.sha512(data).hexdigest().upper()


def index_bytes() -> bytes:
    return _index_bytes(registry.custom_generation())


@functools.lru_cache(maxsize=2)
def _index_bytes(custom_generation: int) -> bytes:
    paths = {}
    for group, versions in group_versions().items():
        for version in versions:
            built = document_bytes(group, version)
            if built is None:
                continue                   # nothing it serves has a schema (metrics.k8s.io)
            _, digest = built
            path = gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return json.dumps({"paths": paths}, separators=(",", ":")).encode()


# --- the routes --------------------------------------------------------------

def _json(data: bytes, etag: str) -> Response:
    response = Response(data, mimetype="application/json")
    response.set_etag(etag)
    # Kubernetes' default for every reply: a client must ask again.
    response.headers["Cache-Control"] = "no-cache, private"
    return response


@bp.get("/openapi/v3")
def openapi_index():
    data = index_bytes()
    return _json(data, hashlib.sha512(data).hexdigest().upper()).make_conditional(request)


@bp.get("/openapi/v3/api/<version>")
def openapi_core(version: str):
    return _serve_group_version("", version)


@bp.get("/openapi/v3/apis/<group>/<version>")
def openapi_group(group: str, version: str):
    return _serve_group_version(group, version)


def _serve_group_version(group: str, version: str):
    built = document_bytes(group, version)
    path = gv_path(group, version)
    if built is None:
        error = api_errors.APIError(404, "NotFound", f"no OpenAPI document for {path}")
        return error.status(), 404
    if request.accept_mimetypes and not request.accept_mimetypes.best_match(["application/json"]):
        # We have JSON only (Kubernetes also has protobuf); kubectl asks for JSON.
        error = api_errors.APIError(406, "NotAcceptable",
                                    "only application/json is served for OpenAPI documents")
        return error.status(), 406
    data, digest = built
    asked = request.args.get("hash")
    if asked and asked != digest:
        # An old link: send the client to the current document, as Kubernetes does.
        moved = Response(status=301)
        moved.headers["Location"] = f"/openapi/v3/{path}?hash={digest}"
        return moved
    response = _json(data, digest)
    response.vary.add("Accept")
    if asked:
        # The URL names this exact content, so it may be cached for good.
        response.headers["Cache-Control"] = "public, immutable"
        response.headers["Expires"] = format_datetime(
            datetime.now(timezone.utc) + timedelta(days=365), usegmt=True)
    return response.make_conditional(request)
