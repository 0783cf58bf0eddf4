"""A Swagger 2.0 document in the protobuf form older kubectl reads.

kubectl up to 1.28 fetches `/openapi/v2` with
`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and
decodes the reply as the `openapi.v2.Document` message of Google's gnostic
project (openapiv2/OpenAPIv2.proto): the same document as the JSON, but each
JSON object is a typed message, each map a list of (name, value) pairs and
each `x-` extension a value written out as YAML text.

The wire format is done by the `protobuf` library. What we write is the
table below: the messages and field numbers of gnostic's OpenAPIv2.proto that
a Kubernetes document uses (a subset: fields we never set are left out,
which a reader treats as absent), and the walk from JSON to those messages.
"""
from __future__ import annotations

import functools
import json

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# message -> [(field, number, type)]: a type ending in "*" is repeated.
# Numbers as in gnostic's openapiv2/OpenAPIv2.proto (package openapi.v2).
_STRING, _BOOL, _INT64, _DOUBLE = "string", "bool", "int64", "double"
_PARAMETER_FIELDS = [("required", 1, _BOOL), ("in", 2, _STRING), ("description", 3, _STRING),
                     ("name", 4, _STRING), ("type", 5, _STRING), ("format", 6, _STRING)]
MESSAGES: dict[str, list[tuple[str, int, str]]] = {
    "Document": [("swagger", 1, _STRING), ("info", 2, "Info"), ("consumes", 6, "string*"),
                 ("produces", 7, "string*"), ("paths", 8, "Paths"), ("definitions", 9, "Definitions")],
    "Info": [("title", 1, _STRING), ("version", 2, _STRING)],
    "Any": [("yaml", 2, _STRING)],                       # field 1 (a protobuf Any) is never used
    "NamedAny": [("name", 1, _STRING), ("value", 2, "Any")],
    "Paths": [("path", 2, "NamedPathItem*")],
    "NamedPathItem": [("name", 1, _STRING), ("value", 2, "PathItem")],
    "PathItem": [("get", 2, "Operation"), ("put", 3, "Operation"), ("post", 4, "Operation"),
                 ("delete", 5, "Operation"), ("patch", 8, "Operation"),
                 ("parameters", 9, "ParametersItem*")],
    "Operation": [("description", 3, _STRING), ("operation_id", 5, _STRING), ("produces", 6, "string*"),
                  ("consumes", 7, "string*"), ("parameters", 8, "ParametersItem*"),
                  ("responses", 9, "Responses"), ("vendor_extension", 13, "NamedAny*")],
    "ParametersItem": [("parameter", 1, "Parameter")],
    "Parameter": [("body_parameter", 1, "BodyParameter"), ("non_body_parameter", 2, "NonBodyParameter")],
    "BodyParameter": [("description", 1, _STRING), ("name", 2, _STRING), ("in", 3, _STRING),
                      ("required", 4, _BOOL), ("schema", 5, "Schema")],
    "NonBodyParameter": [("query_parameter_sub_schema", 3, "QueryParameterSubSchema"),
                         ("path_parameter_sub_schema", 4, "PathParameterSubSchema")],
    # A query parameter has allow_empty_value at 5, so its type and format come later.
    "QueryParameterSubSchema": _PARAMETER_FIELDS[:4] + [("type", 6, _STRING), ("format", 7, _STRING)],
    "PathParameterSubSchema": _PARAMETER_FIELDS,
    "Responses": [("response_code", 1, "NamedResponseValue*")],
    "NamedResponseValue": [("name", 1, _STRING), ("value", 2, "ResponseValue")],
    "ResponseValue": [("response", 1, "Response")],
    "Response": [("description", 1, _STRING), ("schema", 2, "SchemaItem")],
    "SchemaItem": [("schema", 1, "Schema")],
    "Definitions": [("additional_properties", 1, "NamedSchema*")],
    "Properties": [("additional_properties", 1, "NamedSchema*")],
    "NamedSchema": [("name", 1, _STRING), ("value", 2, "Schema")],
    "AdditionalPropertiesItem": [("schema", 1, "Schema"), ("boolean", 2, _BOOL)],
    "TypeItem": [("value", 1, "string*")],
    "ItemsItem": [("schema", 1, "Schema*")],
    "Schema": [("_ref", 1, _STRING), ("format", 2, _STRING), ("title", 3, _STRING),
               ("description", 4, _STRING), ("default", 5, "Any"), ("maximum", 7, _DOUBLE),
               ("minimum", 9, _DOUBLE), ("max_length", 11, _INT64), ("min_length", 12, _INT64),
               ("pattern", 13, _STRING), ("max_items", 14, _INT64), ("min_items", 15, _INT64),
               ("unique_items", 16, _BOOL), ("required", 19, "string*"), ("enum", 20, "Any*"),
               ("additional_properties", 21, "AdditionalPropertiesItem"), ("type", 22, "TypeItem"),
               ("items", 23, "ItemsItem"), ("all_of", 24, "Schema*"), ("properties", 25, "Properties"),
               ("read_only", 27, _BOOL), ("vendor_extension", 31, "NamedAny*")],
}

_SCALARS = {_STRING: descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            _BOOL: descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
            _INT64: descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
            _DOUBLE: descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE}


def message_class(name: str = "Document"):
    """The Python class of one message, built from MESSAGES (no generated code)."""
    return _message_classes()[name]


@functools.lru_cache(maxsize=1)
def _message_classes() -> dict:
    file = descriptor_pb2.FileDescriptorProto(name="groundup/openapiv2.proto", package="openapi.v2",
                                              syntax="proto3")
    for message, fields in MESSAGES.items():
        proto = file.message_type.add(name=message)
        for field, number, kind in fields:
            repeated = kind.endswith("*")
            kind = kind.rstrip("*")
            entry = proto.field.add(name=field, number=number, json_name=field, label=(
                descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL))
            if kind in _SCALARS:
                entry.type = _SCALARS[kind]
            else:
                entry.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                entry.type_name = f".openapi.v2.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"openapi.v2.{name}"))
            for name in MESSAGES}


# --- from the JSON document to gnostic's shapes ------------------------------

def _any(value) -> dict:
    # gnostic keeps every free-form value as YAML text; JSON is YAML.
    return {"yaml": json.dumps(value, separators=(",", ":"), sort_keys=True)}


def _extensions(obj: dict) -> list[dict]:
    return [{"name": key, "value": _any(value)} for key, value in obj.items() if key.startswith("x-")]


def _named(mapping: dict, convert) -> list[dict]:
    return [{"name": name, "value": convert(value)} for name, value in mapping.items()]


_SCHEMA_KEYS = {"format": "format", "title": "title", "description": "description",
                "maximum": "maximum", "minimum": "minimum", "maxLength": "max_length",
                "minLength": "min_length", "pattern": "pattern", "maxItems": "max_items",
                "minItems": "min_items", "uniqueItems": "unique_items", "required": "required",
                "readOnly": "read_only"}


def schema(s: dict) -> dict:
    out: dict = {_SCHEMA_KEYS[key]: value for key, value in s.items() if key in _SCHEMA_KEYS}
    if "$ref" in s:
        out["_ref"] = s["$ref"]
    if "type" in s:
        out["type"] = {"value": s["type"] if isinstance(s["type"], list) else [s["type"]]}
    if "default" in s:
        out["default"] = _any(s["default"])
    if "enum" in s:
        out["enum"] = [_any(v) for v in s["enum"]]
    if "properties" in s:
        out["properties"] = {"additional_properties": _named(s["properties"], schema)}
    if "items" in s:
        items = s["items"] if isinstance(s["items"], list) else [s["items"]]
        out["items"] = {"schema": [schema(i) for i in items]}
    if "allOf" in s:
        out["all_of"] = [schema(i) for i in s["allOf"]]
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out["additional_properties"] = {"schema": schema(extra)}
    elif isinstance(extra, bool):
        out["additional_properties"] = {"boolean": extra}
    if extensions := _extensions(s):
        out["vendor_extension"] = extensions
    return out


def _parameter(p: dict) -> dict:
    if p["in"] == "body":
        return {"parameter": {"body_parameter": {
            "name": p["name"], "in": "body", "required": p.get("required", False),
            "description": p.get("description", ""), "schema": schema(p.get("schema", {}))}}}
    fields = {key: p[key] for key in ("name", "in", "description", "type", "format", "required") if key in p}
    kind = {"query": "query_parameter_sub_schema", "path": "path_parameter_sub_schema"}[p["in"]]
    return {"parameter": {"non_body_parameter": {kind: fields}}}


def _operation(op: dict) -> dict:
    out = {"description": op.get("description", ""), "operation_id": op.get("operationId", ""),
           "consumes": op.get("consumes", []), "produces": op.get("produces", []),
           "parameters": [_parameter(p) for p in op.get("parameters", [])],
           "responses": {"response_code": _named(op.get("responses", {}), _response)},
           "vendor_extension": _extensions(op)}
    return out


def _response(r: dict) -> dict:
    out: dict = {"description": r.get("description", "")}
    if "schema" in r:
        out["schema"] = {"schema": schema(r["schema"])}
    return {"response": out}


def _path_item(item: dict) -> dict:
    out = {verb: _operation(item[verb]) for verb in ("get", "put", "post", "delete", "patch") if verb in item}
    out["parameters"] = [_parameter(p) for p in item.get("parameters", [])]
    return out


def encode(document: dict) -> bytes:
    """A Swagger 2.0 document (a dict) as gnostic's openapi.v2.Document bytes."""
    shaped = {"swagger": document["swagger"], "info": document["info"],
              "consumes": document.get("consumes", []), "produces": document.get("produces", []),
              "paths": {"path": _named(document["paths"], _path_item)},
              "definitions": {"additional_properties": _named(document["definitions"], schema)}}
    message = json_format.ParseDict(shaped, message_class("Document")())
    return message.SerializeToString(deterministic=True)


def decode(data: bytes) -> dict:
    """The bytes back as gnostic-shaped JSON: for tests and for curious learners."""
    message = message_class("Document")()
    message.ParseFromString(data)
    return json_format.MessageToDict(message, preserving_proto_field_name=True)
