"""A custom resource's schema: the openAPIV3Schema its definition carries.

A CustomResourceDefinition describes its objects with an OpenAPI v3 schema,
and the server holds every object to it, as it holds a Pod to the Pod type.
Kubernetes insists the schema be *structural*: every field says its type, so
the server knows, without guessing, what a field is and which fields are not
in the schema at all. That is what makes three things possible here:

- validation: types, required, enum, minimum/maximum, lengths, pattern,
  each error with the field's path, as Kubernetes prints them;
- pruning: fields the schema does not name are dropped (or, with
  fieldValidation=Strict, refused), except below
  `x-kubernetes-preserve-unknown-fields: true`;
- the OpenAPI documents kubectl reads for `explain` and `apply`.

We walk the schema ourselves rather than hand it to jsonschema: the walk is
short, and Kubernetes' messages ("spec.replicas in body must be of type
integer") and its x-kubernetes-* extensions are ours to reproduce either way.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from common.model.field_errors import FieldError, child, forbidden, index, invalid, not_supported, required

TYPES = ("object", "array", "string", "integer", "number", "boolean")
# The root fields every object has; the schema may not redefine them.
TYPE_META = ("apiVersion", "kind", "metadata")


# --- is the schema structural? ----------------------------------------------

def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """Why `schema` is not a structural schema; [] if it is."""
    if not isinstance(schema, dict):
        return [invalid(path, schema, "must be a JSON schema object")]
    errors: list[FieldError] = []
    kind = schema.get("type")
    untyped_ok = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if kind is None and not untyped_ok:
        errors.append(required(child(path, "type"), "must not be empty for specified fields"))
    elif kind is not None and kind not in TYPES:
        errors.append(not_supported(child(path, "type"), kind, TYPES))
    if "$ref" in schema:
        errors.append(invalid(child(path, "$ref"), schema["$ref"], "$ref is not allowed in a structural schema"))
    for name, sub in (schema.get("properties") or {}).items():
        errors += structural_errors(sub, f"{path}.properties[{name}]")
    if kind == "array" and not isinstance(schema.get("items"), dict):
        errors.append(required(child(path, "items"), "must be specified for arrays"))
    if isinstance(schema.get("items"), dict):
        errors += structural_errors(schema["items"], child(path, "items"))
    if isinstance(schema.get("additionalProperties"), dict):
        if schema.get("properties"):
            errors.append(forbidden(child(path, "additionalProperties"),
                                    "properties and additionalProperties are mutually exclusive"))
        errors += structural_errors(schema["additionalProperties"], child(path, "additionalProperties"))
    return errors


# --- validation --------------------------------------------------------------

def validate(schema: dict, value: Any, path: str = "") -> list[FieldError]:
    """Every way `value` breaks `schema`. The root's apiVersion, kind and
    metadata are the server's to check (common.model.validate), not the schema's."""
    errors: list[FieldError] = []
    _validate(schema, value, path, errors)
    return errors


def _validate(schema: dict, value: Any, path: str, errors: list[FieldError]) -> None:
    if value is None and schema.get("nullable"):
        return
    if not _type_ok(schema, value):
        errors.append(invalid(path, value, f"{path or 'body'} in body must be of type {schema['type']}: "
                                           f'"{_json_type(value)}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(not_supported(path, value, schema["enum"]))
    _check_bounds(schema, value, path, errors)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(required(child(path, name)))
        for name, sub in value.items():
            if not path and name in TYPE_META:
                continue
            if name in properties:
                _validate(properties[name], sub, child(path, name), errors)
            elif isinstance(schema.get("additionalProperties"), dict):
                _validate(schema["additionalProperties"], sub, child(path, name), errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _validate(schema["items"], item, index(path, i), errors)


def _type_ok(schema: dict, value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    kind = schema.get("type")
    if kind is None:
        return True
    return _json_type(value) == kind or (kind == "number" and _json_type(value) == "integer")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or isinstance(value, float) and value.is_integer():
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(type(value), "null")


def _check_bounds(schema: dict, value: Any, path: str, errors: list[FieldError]) -> None:
    where = f"{path} in body"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and (value < schema["minimum"] or value == schema["minimum"]
                                    and schema.get("exclusiveMinimum")):
            word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            errors.append(invalid(path, value, f"{where} should be {word} {schema['minimum']}"))
        if "maximum" in schema and (value > schema["maximum"] or value == schema["maximum"]
                                    and schema.get("exclusiveMaximum")):
            word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            errors.append(invalid(path, value, f"{where} should be {word} {schema['maximum']}"))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(invalid(path, value, f"{where} should be at least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(invalid(path, value, f"{where} should be at most {schema['maxLength']} chars long"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(invalid(path, value, f"{where} should match '{schema['pattern']}'"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(invalid(path, len(value), f"{where} should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(FieldError(path, "Too many", len(value), f"must have at most {schema['maxItems']} items"))


# --- defaulting --------------------------------------------------------------

def apply_defaults(schema: dict, value: Any) -> None:
    """Fill in each absent field whose schema has a `default`, in place, at
    every depth the object reaches (Kubernetes defaults on every write)."""
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


# --- pruning -----------------------------------------------------------------

def unknown_fields(schema: dict, value: Any, path: str = "") -> list[str]:
    """The paths of fields the schema does not name, e.g. ["spec.replicaz"]:
    what Kubernetes prunes. Nothing below x-kubernetes-preserve-unknown-fields."""
    found: list[str] = []
    _unknown(schema, value, path, found)
    return found


def _unknown(schema: dict, value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, sub in value.items():
            if not path and name in TYPE_META:
                continue
            if name in properties:
                _unknown(properties[name], sub, child(path, name), found)
            elif isinstance(extra, dict):
                _unknown(extra, sub, child(path, name), found)
            elif not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
                found.append(child(path, name))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _unknown(schema["items"], item, index(path, i), found)
