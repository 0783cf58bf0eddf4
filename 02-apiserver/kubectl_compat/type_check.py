"""Wrongly typed fields: the check Kubernetes gets for free from Go.

Kubernetes decodes every body into Go structs. A list where the schema has
an object, a string where it has a number, `true` as a label value: Go's
JSON decoder cannot fill the struct, and the request fails before
admission or validation see it:

    Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array
    into Go struct field NodeAffinity.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
    of type v1.NodeSelector

We keep objects as plain JSON, so nothing refuses such a field by itself;
stored, it breaks every typed client that reads it later (`kubectl
describe pods` fails for the whole namespace, the Python client's list
raises). This module is the missing decoder check: the published schema
(schemas.py) compiled once per kind into small nodes, and a walk that stops
at the first mismatch, as Go's decoder reports the first.

What Go accepts, we accept: `null` anywhere (it leaves the zero value),
any content where the schema is opaque (RawExtension, FieldsV1,
x-kubernetes-preserve-unknown-fields), a string or a number for a quantity,
a string or an int32 for an int-or-string. Fields the schema does not know
are field_validation.py's business, not ours.
"""
from __future__ import annotations

import threading

import json
import math
import re
from datetime import datetime

import api_errors
from . import schemas
from common.model.quantity import SYNTAX as QUANTITY_SYNTAX

# What a schema node expects. Each needs its own test of the JSON value.
STRUCT, MAP, LIST, STRING, INTEGER, NUMBER, BOOLEAN = "struct", "map", "list", "string", "integer", "number", "boolean"
INT_OR_STRING, QUANTITY, TIME, BYTES, ANY = "int-or-string", "quantity", "time", "bytes", "any"

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_INT_BOUNDS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
# RFC 3339, as Go's time.Parse(time.RFC3339, ...) reads it.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")


class _Type:
    """What one point of an object must hold: its kind, its Go type name
    (for the error text), and what lies below it."""
    __slots__ = ("kind", "go_type", "struct", "fields", "items", "values", "low", "high",
                 "list_keys", "is_set")

    def __init__(self) -> None:
        self.kind = ANY
        self.go_type = "interface {}"
        self.struct = ""                              # Go struct name, for STRUCT
        self.fields: dict[str, _Type] = {}            # STRUCT: field name -> type
        self.items: _Type | None = None               # LIST: every item
        self.values: _Type | None = None              # MAP: every value
        self.low = self.high = 0                      # INTEGER: the Go int's bounds
        self.list_keys: tuple[str, ...] = ()          # LIST: x-kubernetes-list-map-keys
        self.is_set = False                           # LIST: x-kubernetes-list-type: set


_by_definition: dict[str, _Type] = {}
_roots: dict[tuple[str, str, str], _Type | None] = {}


def _compile(schema: dict) -> _Type:
    name = schemas.ref_name(schema)
    if name is None:
        node = _Type()
        _fill(node, schema, "")
        return node
    return _compile_definition(name)


def _compile_definition(name: str) -> _Type:
    node = _by_definition.get(name)
    if node is None:
        # Register before filling: a definition may refer to itself.
        node = _by_definition[name] = _Type()
        _fill(node, schemas.definitions()[name], name)
    return node


def _go_name(definition: str) -> str:
    """"io.k8s.api.core.v1.NodeSelector" -> "v1.NodeSelector", as Go prints a type."""
    package, _, name = definition.rpartition(".")
    return package.rpartition(".")[2] + "." + name


def _fill(node: _Type, schema: dict, definition: str) -> None:
    kind = schema.get("type")
    if isinstance(kind, list):                         # ["string", "null"]: null is always fine
        kind = next((k for k in kind if k != "null"), None)
    if definition == _QUANTITY:
        node.kind, node.go_type = QUANTITY, "resource.Quantity"
    elif definition == _INT_OR_STRING or schema.get("x-kubernetes-int-or-string"):
        node.kind, node.go_type = INT_OR_STRING, "intstr.IntOrString"
    elif schema.get("x-kubernetes-preserve-unknown-fields"):
        pass                                           # anything goes
    elif "properties" in schema:
        node.kind, node.go_type = STRUCT, _go_name(definition) if definition else "struct"
        node.struct = node.go_type.rpartition(".")[2]
        node.fields = {field: _compile(sub) for field, sub in schema["properties"].items()}
    elif isinstance(schema.get("additionalProperties"), dict):
        node.kind, node.values = MAP, _compile(schema["additionalProperties"])
        node.go_type = "map[string]" + node.values.go_type
    elif "items" in schema:
        node.kind, node.items = LIST, _compile(schema["items"])
        node.go_type = "[]" + node.items.go_type
        node.list_keys = tuple(schema.get("x-kubernetes-list-map-keys", ()))
        node.is_set = schema.get("x-kubernetes-list-type") == "set"
    elif kind == "string":
        node.kind, node.go_type = {"date-time": (TIME, "v1.Time"), "byte": (BYTES, "[]uint8")}.get(
            schema.get("format"), (STRING, "string"))
    elif kind == "integer":
        bits = schema.get("format") if schema.get("format") in _INT_BOUNDS else "int64"
        node.kind, node.go_type = INTEGER, bits
        node.low, node.high = _INT_BOUNDS[bits]
    elif kind == "number":
        node.kind, node.go_type = NUMBER, "float64"
    elif kind == "boolean":
        node.kind, node.go_type = BOOLEAN, "bool"
    # Anything else (RawExtension, FieldsV1: "object" with no properties) is opaque.


_compiling = threading.Lock()


def _root(group: str, version: str, kind: str) -> _Type | None:
    key = (group, version, kind)
    node = _roots.get(key)
    if node is None and key not in _roots:
        # One compile at a time: a node is published before it is filled (a
        # definition may refer to itself), and a second request thread that
        # saw it half-filled would accept anything.
        with _compiling:
            if key not in _roots:
                name = schemas.definition_name(group, version, kind)
                _roots[key] = _compile_definition(name) if name else None
        node = _roots[key]
    return node


class Mismatch:
    """The first field whose JSON value the Go type cannot hold."""

    def __init__(self, value, expected: _Type, go_error: str = ""):
        self.value = value
        self.expected = expected
        self.go_error = go_error   # a custom Go decoder's own text (Quantity, Time, IntOrString)
        self.struct = ""           # the Go struct that holds the innermost field on the way
        # From the top down once complete: ("field", name) | ("index", i, item, list type) | ("key", k)
        self.steps: list[tuple] = []

    @property
    def path(self) -> str:
        """Our field path, with indices: "spec.containers[0].ports[0].containerPort"."""
        out = ""
        for step in self.steps:
            out += f"[{step[1]}]" if step[0] == "index" else (f".{step[1]}" if out else step[1])
        return out

    def decoder_message(self) -> str:
        """Go's text: the path names struct fields only, no indices or map keys."""
        if self.go_error:
            return self.go_error
        go_path = ".".join(step[1] for step in self.steps if step[0] == "field")
        if not go_path:
            return f"json: cannot unmarshal {self.json_kind()} into Go value of type {self.expected.go_type}"
        return (f"json: cannot unmarshal {self.json_kind()} into Go struct field "
                f"{self.struct}.{go_path} of type {self.expected.go_type}")

    def json_kind(self) -> str:
        """How Go names the JSON value it found: "array", "string", "number 1.5"."""
        return _json_kind(self.value, self.expected.kind in (INTEGER, NUMBER))

    def apply_path(self) -> str:
        """Server-side apply's path: ".spec.containers[name="web"].image"."""
        out = ""
        for step in self.steps:
            if step[0] != "index":
                out += "." + str(step[1])
                continue
            _, index, item, list_type = step
            if list_type.list_keys and isinstance(item, dict):
                out += "[" + ",".join(f"{k}={_compact(item[k])}" for k in list_type.list_keys if k in item) + "]"
            elif list_type.is_set and not isinstance(item, (dict, list)):
                out += f"[={_compact(item)}]"
            else:
                out += f"[{index}]"
        return out

    def expected_word(self) -> str:
        return {STRUCT: "map", MAP: "map", LIST: "list", STRING: "string", TIME: "string",
                BYTES: "string", BOOLEAN: "boolean", NUMBER: "numeric (int or float)",
                QUANTITY: "string or number", INT_OR_STRING: "string or int32"}.get(
            self.expected.kind, self.expected.go_type)


def _json_kind(value, numeric: bool) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        # Go quotes the number only when it was after a number and could
        # not hold this one (a fraction, or out of range).
        return f"number {_compact(value)}" if numeric else "number"
    return {dict: "object", list: "array", str: "string"}.get(type(value), type(value).__name__)


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


# [START type-check]
def first_mismatch(group: str, version: str, kind: str, obj) -> Mismatch | None:
    """The first field of `obj` whose JSON type its schema refuses, or None.
    A kind Kubernetes publishes no schema for is never refused."""
    root = _root(group, version, kind)
    return None if root is None else _check(root, obj)


def _check(node: _Type, value) -> Mismatch | None:
    """None if `value` fits; else the mismatch, its path filled in on the
    way back up (a walk that finds nothing builds no paths at all)."""
    kind = node.kind
    if value is None or kind is ANY:
        return None                          # Go's decoder leaves the zero value
    if kind is STRUCT:
        if type(value) is not dict:
            return Mismatch(value, node)
        fields = node.fields
        for key, sub in value.items():
            field = fields.get(key)
            if field is not None:            # unknown fields: field_validation's business
                found = _check(field, sub)
                if found is not None:
                    found.steps.insert(0, ("field", key))
                    found.struct = found.struct or node.struct
                    return found
        return None
    if kind is LIST:
        if type(value) is not list:
            return Mismatch(value, node)
        for index, item in enumerate(value):
            found = _check(node.items, item)
            if found is not None:
                found.steps.insert(0, ("index", index, item, node))
                return found
        return None
    if kind is MAP:
        if type(value) is not dict:
            return Mismatch(value, node)
        for key, sub in value.items():
            found = _check(node.values, sub)
            if found is not None:
                found.steps.insert(0, ("key", key))
                return found
        return None
    return _check_scalar(node, value)
# [END type-check]


def _check_scalar(node: _Type, value) -> Mismatch | None:
    kind, python_type = node.kind, type(value)
    if kind is STRING or kind is BYTES:      # base64 content: validation's business
        return None if python_type is str else Mismatch(value, node)
    if kind is INTEGER:
        # bool is an int to Python, never to JSON; a fraction or an int
        # beyond the Go type's bounds does not fit either.
        fits = python_type is int and node.low <= value <= node.high
        return None if fits else Mismatch(value, node)
    if kind is BOOLEAN:
        return None if python_type is bool else Mismatch(value, node)
    if kind is NUMBER:
        fits = python_type is int or python_type is float and math.isfinite(value)
        return None if fits else Mismatch(value, node)
    if kind is QUANTITY:
        # resource.Quantity reads a string or a number; its own error text.
        if python_type is str or python_type is int or python_type is float and math.isfinite(value):
            return None
        return Mismatch(value, node, f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    if kind is INT_OR_STRING:
        # intstr.IntOrString: a quoted value is the string, anything else must be an int32.
        if python_type is str or python_type is int and -2**31 <= value < 2**31:
            return None
        return Mismatch(value, node, f"json: cannot unmarshal {_json_kind(value, True)} "
                                     "into Go value of type int32")
    if kind is TIME:
        return _check_time(node, value)
    return None


def _check_time(node: _Type, value) -> Mismatch | None:
    """metav1.Time and MicroTime: an RFC 3339 string, or Go cannot read it back."""
    if type(value) is not str:
        return Mismatch(value, node, f"json: cannot unmarshal {_json_kind(value, False)} "
                                     "into Go value of type string")
    if _RFC3339.fullmatch(value):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))  # a 31st of February?
            return None
        except ValueError:
            pass
    # Go also names the part that failed ('cannot parse "x" as "2006"'); we do not.
    return Mismatch(value, node, f'parsing time {_compact(value)} as "2006-01-02T15:04:05Z07:00": '
                                 "not an RFC 3339 time such as 2006-01-02T15:04:05Z")


def check_types(obj: dict, resource) -> None:
    """Refuse a body's field whose JSON type the published schema does not
    allow (registered in the core's hooks: every create and update body).

    Kubernetes finds these while decoding into its Go structs, before
    admission and validation, and answers 400 BadRequest (not validation's
    422) with the Go decoder's text, as above. Go's path has no indices;
    `details.causes` (which Kubernetes leaves out here) carries ours,
    spec.containers[0].ports[0].containerPort."""
    mismatch = first_mismatch(resource.group, resource.version, resource.kind, obj)
    if mismatch is not None:
        raise api_errors.APIError(
            400, "BadRequest", f'{resource.kind} in version "{resource.version}" cannot be handled as a '
            f"{resource.kind}: {mismatch.decoder_message()}",
            {"causes": [{"reason": "FieldValueInvalid", "message": mismatch.decoder_message(), "field": mismatch.path}]})
