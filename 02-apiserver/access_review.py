"""`kubectl auth can-i`: a SelfSubjectAccessReview asks the authorizer a question.

    POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
    {"spec": {"resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}}}
    -> 201 {..., "status": {"allowed": false, "reason": "No policy matched."}}

Nothing is stored: the answer is computed for the user who asks, by the same
authorizer that guards every request on this port.
"""
from __future__ import annotations

from flask import Blueprint, request

import abac
import api_errors
import decode
import gauntlet
from rest import respond, server

bp = Blueprint("access_review", __name__)
GROUP_VERSION = "authorization.k8s.io/v1"


@bp.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
def self_subject_access_review():
    user = gauntlet.authenticate(request)
    if decode.media_type(request.content_type) == decode.PROTOBUF:
        review = {"spec": _spec_from_protobuf(request.get_data())}
    else:
        review = decode.parse_body(request.get_data(), request.content_type or "application/json")
    spec = review.get("spec") if isinstance(review, dict) else None
    if not isinstance(spec, dict):
        raise api_errors.bad_request("a SelfSubjectAccessReview needs a spec with resourceAttributes "
                                     "or nonResourceAttributes")
    attributes = _attributes(spec)
    allowed, reason = True, ""
    if gauntlet.on_secure_port():
        try:
            server().authorizer(user, attributes)
        except api_errors.APIError as refusal:
            allowed, reason = False, refusal.message.rpartition(": ")[2]
    status = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return respond({"kind": "SelfSubjectAccessReview", "apiVersion": GROUP_VERSION,
                    "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}, 201)


def _attributes(spec: dict) -> abac.Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return abac.Attributes(str(resource.get("verb", "")), str(resource.get("resource", "")),
                               str(resource.get("subresource", "")), str(resource.get("group", "")),
                               str(resource.get("namespace", "")), str(resource.get("name", "")))
    path = spec.get("nonResourceAttributes")
    if isinstance(path, dict):
        return abac.Attributes(str(path.get("verb", "")), path=str(path.get("path", "")))
    raise api_errors.bad_request("spec needs resourceAttributes or nonResourceAttributes")


# kubectl sends this one as protobuf, and the question is small enough to
# read by hand: Kubernetes' envelope ("k8s\0", then a runtime.Unknown whose
# field 2 holds the object), and in it the numbered fields of
# authorization/v1's generated.proto.
_RESOURCE_FIELDS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
_PATH_FIELDS = {1: "path", 2: "verb"}


def _spec_from_protobuf(body: bytes) -> dict:
    try:
        if not body.startswith(b"k8s\x00"):
            raise ValueError("no k8s protobuf envelope")
        review = _fields(_fields(body[4:]).get(2, b""))          # runtime.Unknown.raw
        spec = _fields(review.get(2, b""))                         # SelfSubjectAccessReview.spec
        if 1 in spec:
            return {"resourceAttributes": _strings(spec[1], _RESOURCE_FIELDS)}
        if 2 in spec:
            return {"nonResourceAttributes": _strings(spec[2], _PATH_FIELDS)}
        return {}
    except (ValueError, IndexError, UnicodeDecodeError) as error:
        raise api_errors.bad_request(f"cannot read this SelfSubjectAccessReview: {error}") from None


def _fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one protobuf message (the last of each number wins)."""
    fields, i = {}, 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, i = _varint(data, i)
        elif wire_type == 2:
            length, i = _varint(data, i)
            fields[number], i = data[i:i + length], i + length
        else:
            raise ValueError(f"unexpected protobuf wire type {wire_type}")
    return fields


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def _strings(message: bytes, names: dict[int, str]) -> dict:
    return {names[n]: v.decode() for n, v in _fields(message).items() if n in names and v}
