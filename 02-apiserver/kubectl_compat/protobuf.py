"""Reading the protobuf bodies kubectl's create generators send.

`kubectl create namespace`, `create deployment`, `create configmap` and the
other typed generators POST their object as `application/vnd.kubernetes.protobuf`,
not JSON. The body is Kubernetes' envelope around Go's generated message:

    "k8s\\x00"  then a runtime.Unknown message:
        1: typeMeta {1: apiVersion, 2: kind}
        2: raw      the object, e.g. an apps/v1 Deployment message
        3: contentEncoding, 4: contentType   (empty)

This module turns that into the JSON object the same client would have sent
as JSON, so the rest of the server sees no difference. The wire format is
small (below); what a field *means* comes from protobuf_types.json, which
protobuf_gen.py derives from the Go types: each field's number, JSON name,
Go shape (`*int32`, `[]core/v1.Container`, `map[string]string`) and whether
JSON omits it when empty. The shape matters because Go's encoder sends every
plain field, zero or not, while a pointer is sent only when set: `generation:
0` is noise that JSON leaves out, `replicas: 0` is a request for no pods.
"""
from __future__ import annotations

import base64
import datetime
import functools
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import api_errors
import body_limits

MAGIC = b"k8s\x00"
TABLE = Path(__file__).with_name("protobuf_types.json")
VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
SCALAR_ZEROS = {"string": "", "bool": False, "int32": 0, "int64": 0, "float64": 0.0}


class ProtobufError(ValueError):
    """A body that is not a well-formed Kubernetes protobuf object; says where."""


class UnknownKind(ProtobufError):
    """A well-formed envelope around a kind this server has no table for."""


@dataclass(frozen=True)
class Field:
    number: int
    json_name: str
    type: str            # "string", "*int32", "[]core/v1.Container", "map[string]bytes", ...
    omitempty: bool      # Go's `json:",omitempty"`
    inline: bool         # Go's `json:",inline"`: the message's fields join its parent's
    wrapper: bool        # a named Go slice: its message holds the list in field 1


@dataclass(frozen=True)
class Table:
    kinds: dict[str, str]                        # "apps/v1/Deployment" -> "apps/v1.Deployment"
    messages: dict[str, tuple[Field, ...]]       # in Go declaration order, as JSON writes them
    source: dict[str, str]


@functools.cache
def table() -> Table:
    document = json.loads(TABLE.read_text())
    messages = {name: tuple(Field(number, json_name, type_, "omitempty" in options.split(","),
                                  options == "inline", options == "wrapper")
                            for number, json_name, type_, options in fields)
                for name, fields in document["messages"].items()}
    return Table(document["kinds"], messages, document["source"])


def decode(body: bytes) -> dict:
    """A Kubernetes protobuf body -> the object as a JSON dict, apiVersion and kind first."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with Kubernetes' protobuf magic bytes \"k8s\\x00\"")
    envelope = _fields(body[len(MAGIC):], "the runtime.Unknown envelope")
    type_meta = _fields(_bytes(_last(envelope.get(1)) or b"", "typeMeta"), "typeMeta")
    api_version, kind = _text(_last(type_meta.get(1)), "apiVersion"), _text(_last(type_meta.get(2)), "kind")
    encoding = _text(_last(envelope.get(3)), "contentEncoding")
    if encoding:
        raise ProtobufError(f"the envelope's contentEncoding is {encoding!r}; only plain objects are read")
    message = table().kinds.get(f"{api_version}/{kind}")
    if message is None:
        raise UnknownKind(f"it has no protobuf table for the kind {kind!r} of {api_version!r}")
    obj = {"kind": kind, "apiVersion": api_version}
    obj.update(_message(_bytes(_last(envelope.get(2)) or b"", "raw"), message, ""))
    return obj


# -- The wire format: a message is a run of (field number, wire type, value). --

def _varint(data: bytes, i: int, where: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ProtobufError(f"{where}: a number runs past the end of the message")
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def _fields(data: bytes, where: str) -> dict[int, list[tuple[int, int | bytes]]]:
    """Field number -> every (wire type, value) sent for it, in order."""
    fields: dict[int, list] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i, where)
        number, wire_type = key >> 3, key & 7
        if wire_type == VARINT:
            value, i = _varint(data, i, where)
        elif wire_type in (LENGTH_DELIMITED, FIXED64, FIXED32):
            length = {FIXED64: 8, FIXED32: 4}.get(wire_type)
            if length is None:
                length, i = _varint(data, i, where)
            if i + length > len(data):
                raise ProtobufError(f"{where}: field {number} says {length} bytes, the message has {len(data) - i}")
            value, i = data[i:i + length], i + length
        else:
            raise ProtobufError(f"{where}: field {number} has wire type {wire_type}, which Kubernetes never sends")
        fields.setdefault(number, []).append((wire_type, value))
    return fields


def _last(sent: list | None):
    """A singular field sent more than once keeps its last value, as in Go."""
    return sent[-1][1] if sent else None


def _text(value, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, bytes):
        raise ProtobufError(f"{where}: expected text, got the number {value}")
    try:
        return value.decode()
    except UnicodeDecodeError as error:
        raise ProtobufError(f"{where}: not UTF-8 text ({error})") from None


# -- From wire values to Go's JSON, one Go shape at a time. --

def _message(data: bytes, name: str, path: str):
    fields = table().messages[name]
    sent = _fields(data, path or name)
    known = {field.number for field in fields}
    for number, values in sent.items():
        if number not in known and any(_is_set(value) for _, value in values):
            raise ProtobufError(f"{path or name}: field {number} of {name} is not in this server's table "
                                f"(protobuf_types.json, from k8s.io/api {table().source['k8s.io/api'].split()[0]})")
    if fields and fields[0].wrapper:
        return _value(fields[0].type, sent.get(1), path)
    out = {}
    for field in fields:
        where = f"{path}.{field.json_name}" if path and field.json_name else path or field.json_name
        value = _value(field.type, sent.get(field.number), where)
        if field.inline:
            out.update(value)
        elif not (field.omitempty and _is_empty(field.type, value)):
            out[field.json_name] = value
    return out


MAX_UNKNOWN_DEPTH = 32      # an unknown field nested deeper is refused, not parsed on and on


def _is_set(value, depth: int = 0) -> bool:
    """False for what a newer kubectl sends for a field it left unset: Go sends
    every plain field, so a zero, an empty text or a struct of zeros."""
    if value in (0, b"", b"\x00" * 4, b"\x00" * 8):
        return False
    if isinstance(value, int):
        return True
    if depth > MAX_UNKNOWN_DEPTH:
        raise ProtobufError(f"an unknown field is nested more than {MAX_UNKNOWN_DEPTH} messages deep")
    try:
        inner = _fields(value, "")
    except ProtobufError:
        return True                  # not a message: text or bytes, and not empty
    return any(_is_set(v, depth + 1) for values in inner.values() for _, v in values)


def _is_empty(type_: str, value) -> bool:
    """Go's omitempty: false, 0, "", nil and empty lists and maps; never a struct,
    and never a pointer that was set, even to 0 (`replicas: 0` means no pods)."""
    if type_.startswith("*"):
        return value is None
    if type_ in SCALAR_ZEROS or type_.startswith(("[]", "map[")) or type_ == "bytes":
        return value in (None, "", 0, False, [], {})
    return False


def _value(type_: str, sent: list | None, where: str):
    """The JSON of one field of this table type, from what was sent for it (None: nothing)."""
    if type_.startswith("*"):                       # a pointer: null unless sent
        return None if sent is None else _value(type_[1:], sent, where)
    if type_.startswith("[]"):                      # a slice: null unless sent
        element = type_[2:]
        if sent is None:
            return None
        return [_single(element, value, f"{where}[{i}]")
                for i, value in enumerate(_unpacked(element, sent, where))]
    if type_.startswith("map[string]"):             # entries {1: key, 2: value}
        if sent is None:
            return None
        out = {}
        for _, entry in sent:
            pair = _fields(_bytes(entry, where), where)
            key = _text(_last(pair.get(1)), where)
            out[key] = _value(type_.removeprefix("map[string]"), pair.get(2), f"{where}[{key}]")
        return out
    if type_ == "bytes":
        return None if sent is None else base64.b64encode(_bytes(_last(sent), where)).decode()
    return _single(type_, _last(sent), where)


def _unpacked(element: str, sent: list, where: str) -> list:
    """Repeated numbers may come one per field or packed into one length-delimited run."""
    if element not in ("int32", "int64", "bool"):
        return [value for _, value in sent]
    values = []
    for wire_type, value in sent:
        if wire_type == LENGTH_DELIMITED:
            i = 0
            while i < len(value):
                number, i = _varint(value, i, where)
                values.append(number)
        else:
            values.append(value)
    return values


def _single(type_: str, value, where: str):
    """One value: a scalar, one of the special types, or a message. None means not sent."""
    if type_ == "string":
        return _text(value, where)
    if type_ in ("int32", "int64"):
        return _signed(_number(value, where))
    if type_ == "bool":
        return bool(_number(value, where))
    if type_ == "float64":
        return 0.0 if value is None else struct.unpack("<d", _bytes(value, where))[0]
    if type_ == "bytes":
        return base64.b64encode(_bytes(value, where)).decode()
    special = SPECIAL_TYPES.get(type_)
    data = b"" if value is None else _bytes(value, where)
    if special:
        return special(_fields(data, where), where)
    return _message(data, type_, where)


def _number(value, where: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, int):
        raise ProtobufError(f"{where}: expected a number, got {len(value)} bytes")
    return value


def _signed(value: int) -> int:
    """Go sends a negative int32 or int64 as its 64-bit two's complement."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _bytes(value, where: str) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError(f"{where}: expected a length-delimited value, got the number {value}")
    return value


# -- Types whose JSON is not their message's (Go gives them MarshalJSON). --

def _time(fields: dict, where: str):
    """metav1.Time: {1: seconds, 2: nanos}; JSON keeps seconds only, and null for the zero time."""
    if not fields:
        return None
    seconds = _signed(_number(_last(fields.get(1)), where))
    return _rfc3339(_utc(seconds, where)) + "Z"


def _micro_time(fields: dict, where: str):
    """metav1.MicroTime: as Time, with microseconds (Events and Leases use it)."""
    if not fields:
        return None
    seconds = _signed(_number(_last(fields.get(1)), where))
    micros = _number(_last(fields.get(2)), where) // 1000
    if micros > 999_999:
        raise ProtobufError(f"{where}: {micros * 1000} nanoseconds is more than a second")
    return _rfc3339(_utc(seconds, where)) + f".{micros:06d}Z"


def _utc(seconds: int, where: str) -> datetime.datetime:
    """A time RFC 3339 can write: years 1 to 9999 (Go's JSON refuses the
    rest too). Out of range is the client's mistake, a 400, not a 500."""
    try:
        return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        raise ProtobufError(f"{where}: {seconds} seconds since 1970 is not a time "
                            "between the years 1 and 9999") from None


def _rfc3339(moment: datetime.datetime) -> str:
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S")   # %Y would write year 5 as "5"


def _quantity(fields: dict, where: str) -> str:
    """resource.Quantity: {1: its canonical text}; the zero Quantity is "0"."""
    return _text(_last(fields.get(1)), where) or "0"


def _int_or_string(fields: dict, where: str):
    """intstr.IntOrString: {1: type (0 int, 1 string), 2: intVal, 3: strVal}."""
    if _number(_last(fields.get(1)), where) == 1:
        return _text(_last(fields.get(3)), where)
    return _signed(_number(_last(fields.get(2)), where))


def _raw_json(fields: dict, where: str):
    """metav1.FieldsV1 (managedFields) and runtime.RawExtension (a
    ControllerRevision's data): {1: raw JSON}."""
    raw = _last(fields.get(1))
    try:
        return None if raw is None else json.loads(_bytes(raw, where))
    except ValueError as error:
        raise ProtobufError(f"{where}: not JSON ({error})") from None


SPECIAL_TYPES = {"meta/v1.Time": _time, "meta/v1.MicroTime": _micro_time, "resource.Quantity": _quantity,
                 "intstr.IntOrString": _int_or_string, "meta/v1.FieldsV1": _raw_json,
                 "runtime.RawExtension": _raw_json}


def object_from_request(body: bytes, resource) -> dict:
    """decode(), with what goes wrong told as the API's Status errors, and
    within the nesting limit every body keeps (body_limits.py)."""
    try:
        return body_limits.check_depth(decode(body))
    except UnknownKind as error:
        raise api_errors.APIError(415, "UnsupportedMediaType", (
            f"this API server cannot read this body sent as protobuf to the {resource.plural} URL: {error} "
            f"(02-apiserver/kubectl_compat/protobuf_gen.py writes the tables). Send it as JSON or YAML instead, "
            f"e.g. kubectl create ... --dry-run=client -o yaml | kubectl apply -f -")) from None
    except ProtobufError as error:
        raise api_errors.bad_request(f"cannot read this {resource.kind} sent as protobuf: {error}") from None
    except RecursionError:
        raise api_errors.bad_request(f"cannot read this {resource.kind} sent as protobuf: "
                                     "its messages are nested too deeply") from None
