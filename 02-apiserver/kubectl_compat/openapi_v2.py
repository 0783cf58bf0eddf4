"""/openapi/v2: the one Swagger 2.0 document that older kubectl reads.

kubectl 1.27 and 1.28 fetch `/openapi/v2` before `apply`, `create -f` and
`edit`: client-side apply finds each kind's patch strategy there, and
validation (fieldValidation on the PATCH operations, or the schemas) too.
Without it they stop with `the server could not find the requested
resource`. Newer kubectl reads the per-group-version /openapi/v3 documents
(openapi.py) and asks for v2 only as a fallback.

We derive this document from the v3 ones, so the two can never disagree:
the same paths and schemas, in Swagger 2.0's spelling (`#/definitions/`,
body parameters, `produces`/`consumes`). kubectl asks for protobuf
(gnostic.py encodes it); curl and the Python client get JSON.
"""
from __future__ import annotations

import functools
import hashlib
import json

from flask import Blueprint, Response, request

import api_errors
from . import gnostic
from . import openapi
import registry
from .discovery import group_versions
from . import schemas

bp = Blueprint("openapi_v2", __name__)

_V3_REF, _V2_REF = "#/components/schemas/", "#/definitions/"


def _schema(s):
    """An OpenAPI 3.0 schema in Swagger 2.0's form."""
    if isinstance(s, list):
        return [_schema(item) for item in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for key, value in s.items():
        if key == "$ref":
            out[key] = _V2_REF + value[len(_V3_REF):]
        elif key == "nullable":
            continue                             # not in 2.0: absent means "may be null" there
        elif key in ("properties",):
            out[key] = {name: _schema(sub) for name, sub in value.items()}
        elif key in ("oneOf", "anyOf"):
            continue                             # 2.0 has neither; see below
        else:
            out[key] = _schema(value)
    if len(out.get("allOf", ())) == 1 and "$ref" in out["allOf"][0]:
        # 3.0 needs allOf to put a description beside a $ref; 2.0 readers
        # (and Kubernetes' own v2 document) take them side by side.
        out["$ref"] = out.pop("allOf")[0]["$ref"]
    if ("oneOf" in s or "anyOf" in s) and "type" not in out:
        # int-or-string and Quantity: Kubernetes' v2 document calls them a
        # string with a format, as kubectl expects.
        out["type"] = "string"
    return out


def _parameters(params: list[dict]) -> list[dict]:
    out = []
    for p in params:
        q = {key: value for key, value in p.items() if key != "schema"}
        q.update({key: p["schema"][key] for key in ("type", "format") if key in p.get("schema", {})})
        out.append(q)
    return out


def _operation(op: dict) -> dict:
    out = {key: value for key, value in op.items() if key not in ("requestBody", "responses", "parameters")}
    params = _parameters(op.get("parameters", []))
    if "requestBody" in op:
        content = op["requestBody"]["content"]
        out["consumes"] = list(content)
        first = next(iter(content.values()))
        params.append({"name": "body", "in": "body", "required": True, "schema": _schema(first["schema"])})
    if params:
        out["parameters"] = params
    responses, produces = {}, []
    for code, reply in op["responses"].items():
        responses[code] = {"description": reply["description"]}
        for media_type, body in reply.get("content", {}).items():
            if media_type not in produces:
                produces.append(media_type)
            responses[code].setdefault("schema", _schema(body["schema"]))
    out["responses"] = responses
    if produces:
        out["produces"] = produces
    return out


def _path_item(item: dict) -> dict:
    out = {verb: _operation(op) for verb, op in item.items() if verb != "parameters"}
    if "parameters" in item:
        out["parameters"] = _parameters(item["parameters"])
    return out


def document() -> dict:
    """Every served group-version's paths and definitions in one document."""
    return _document(registry.custom_generation())


@functools.lru_cache(maxsize=2)
def _document(custom_generation: int) -> dict:   # rebuilt when the custom resources change
    paths, definitions = {}, {}
    for group, versions in group_versions().items():
        for version in versions:
            v3 = openapi.build_document(group, version)
            if v3 is None:
                continue                   # no schema published (metrics.k8s.io)
            paths.update({path: _path_item(item) for path, item in v3["paths"].items()})
            definitions.update({name: _schema(s) for name, s in v3["components"]["schemas"].items()})
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": f"v{schemas.KUBERNETES_VERSION}"},
            "paths": dict(sorted(paths.items())), "definitions": dict(sorted(definitions.items()))}


def encoded(media_type: str) -> tuple[bytes, str]:
    """(the document's bytes in this media type, their ETag)."""
    return _encoded(media_type, registry.custom_generation())


@functools.lru_cache(maxsize=4)
def _encoded(media_type: str, custom_generation: int) -> tuple[bytes, str]:
    data = (gnostic.encode(document()) if media_type == gnostic.MEDIA_TYPE
            else json.dumps(document(), separators=(",", ":")).encode())
    return data, hashlib.sha512(data).hexdigest().upper()


@bp.get("/openapi/v2")
def openapi_v2():
    accept = request.accept_mimetypes
    media_type = accept.best_match(["application/json", gnostic.MEDIA_TYPE]) if accept else "application/json"
    if media_type is None:
        error = api_errors.APIError(406, "NotAcceptable", "/openapi/v2 is served as application/json "
                                    f"or {gnostic.MEDIA_TYPE}")
        return error.status(), 406
    data, etag = encoded(media_type)
    # The protobuf form goes out as plain bytes: Go's media type parser
    # (which kubectl runs on every reply) refuses the `@` in the name asked for.
    response = Response(data, content_type="application/octet-stream"
                        if media_type == gnostic.MEDIA_TYPE else media_type)
    response.set_etag(etag)
    response.headers["Cache-Control"] = "no-cache, private"
    response.vary.add("Accept")
    return response.make_conditional(request)
