"""Protobuf bodies (02-apiserver/kubectl_compat/protobuf.py): kubectl 1.32 and 1.33 send
their create generators' objects as protobuf.

Three layers: the decoder against hand-built messages (each Go shape and
each way a body can be wrong), the generated table against the registry,
and the real kubectl, whose protobuf-created objects must be stored exactly
as the same command's JSON would have been.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kubectl_compat import protobuf
import registry
from apiserver_harness import unique
from test_kubectl import Kubectl

PROTOBUF = "application/vnd.kubernetes.protobuf"
ABSENT = object()


# ----- a tiny encoder, to write the bodies the tests send -----

def varint(number: int) -> bytes:
    number &= (1 << 64) - 1                 # negatives as Go sends them: 64-bit two's complement
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def field(number: int, value) -> bytes:
    """An int is a varint field; text or bytes (a message too) is length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def msg(*fields: bytes) -> bytes:
    return b"".join(fields)


def entry(key: str, value) -> bytes:
    """One map entry, as a message {1: key, 2: value}."""
    return msg(field(1, key), field(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *extra: bytes) -> bytes:
    return b"k8s\x00" + msg(field(1, msg(field(1, api_version), field(2, kind))), field(2, raw), *extra)


def at(obj, path: str):
    """obj["spec"]["ports"][0]... for "spec.ports.0"; ABSENT when a key is missing."""
    for part in path.split("."):
        if isinstance(obj, list):
            obj = obj[int(part)]
        elif part not in obj:
            return ABSENT
        else:
            obj = obj[part]
    return obj


NAME = field(1, "a")                                          # ObjectMeta.name
DEPLOYMENT_SPEC = 2                                           # Deployment.spec


# ----- the decoder: one Go shape per row -----

SHAPES = [
    ("a plain zero is left out, as Go's omitempty does (generation 0)",
     "v1", "Namespace", field(1, msg(NAME, field(7, 0))), "metadata.generation", ABSENT),
    ("the zero Time is null, as in kubectl's own JSON",
     "v1", "Namespace", field(1, msg(NAME, field(8, b""))), "metadata.creationTimestamp", None),
    ("a Time is RFC 3339 in UTC, to the second",
     "v1", "Namespace", field(1, msg(NAME, field(8, msg(field(1, 1700000000), field(2, 5))))),
     "metadata.creationTimestamp", "2023-11-14T22:13:20Z"),
    ("an empty struct is still written ({}), as Go writes structs",
     "v1", "Namespace", field(1, NAME), "spec", {}),
    ("a pointer set to zero is kept: replicas 0 asks for no pods",
     "apps/v1", "Deployment", field(DEPLOYMENT_SPEC, field(1, 0)), "spec.replicas", 0),
    ("a pointer not sent is left out (the server defaults it)",
     "apps/v1", "Deployment", field(DEPLOYMENT_SPEC, b""), "spec.replicas", ABSENT),
    ("a pointer JSON never omits is null when not sent",
     "apps/v1", "Deployment", field(DEPLOYMENT_SPEC, b""), "spec.selector", None),
    ("a negative int32 comes as a 64-bit two's complement",
     "v1", "Pod", field(2, field(25, -1)), "spec.priority", -1),
    ("a field without omitempty keeps its zero (port 0)",
     "v1", "Service", field(2, field(1, field(1, "http"))), "spec.ports.0", {"name": "http", "port": 0, "targetPort": 0}),
    ("an IntOrString holding a number",
     "v1", "Service", field(2, field(1, msg(field(3, 80), field(4, msg(field(1, 0), field(2, 8080)))))),
     "spec.ports.0.targetPort", 8080),
    ("an IntOrString holding a port name",
     "v1", "Service", field(2, field(1, msg(field(3, 80), field(4, msg(field(1, 1), field(3, "http")))))),
     "spec.ports.0.targetPort", "http"),
    ("a map of strings",
     "v1", "ConfigMap", field(2, entry("mode", "fast")) + field(2, entry("size", "big")), "data",
     {"mode": "fast", "size": "big"}),
    ("bytes in a map are base64, as in JSON",
     "v1", "Secret", field(2, entry("key", b"\x00\xff")), "data", {"key": "AP8="}),
    ("a Quantity is its text",
     "v1", "Pod", field(2, field(2, field(8, field(1, entry("cpu", field(1, "500m")))))),
     "spec.containers.0.resources", {"limits": {"cpu": "500m"}}),
    ("an inline struct's fields join its parent's (Volume's VolumeSource)",
     "v1", "Pod", field(2, field(1, msg(field(1, "scratch"), field(2, field(2, b""))))),
     "spec.volumes.0", {"name": "scratch", "emptyDir": {}}),
    ("repeated numbers one per field",
     "v1", "Pod", field(2, field(14, field(4, 1) + field(4, 2))), "spec.securityContext.supplementalGroups", [1, 2]),
    ("repeated numbers packed into one run",
     "v1", "Pod", field(2, field(14, field(4, varint(1) + varint(2)))), "spec.securityContext.supplementalGroups", [1, 2]),
    ("a MicroTime keeps microseconds",
     "coordination.k8s.io/v1", "Lease", field(2, field(4, msg(field(1, 1700000000), field(2, 123456789)))),
     "spec.renewTime", "2023-11-14T22:13:20.123456Z"),
    ("a field sent twice keeps its last value, as in Go",
     "v1", "Namespace", field(1, msg(NAME, field(1, "b"))), "metadata.name", "b"),
    ("an unknown field sent empty is ignored (a newer kubectl's unset field)",
     "v1", "Namespace", field(1, msg(NAME, field(99, ""))), "metadata", {"name": "a", "creationTimestamp": None}),
    ("an unknown struct of zeros is ignored too",
     "v1", "Namespace", field(1, msg(NAME, field(99, msg(field(1, 0), field(2, ""))))), "metadata.name", "a"),
]


@pytest.mark.parametrize("what, api_version, kind, raw, path, expected", SHAPES, ids=[s[0] for s in SHAPES])
def test_go_shapes_decode_as_go_writes_json(what, api_version, kind, raw, path, expected):
    obj = protobuf.decode(envelope(api_version, kind, raw))
    assert (obj["apiVersion"], obj["kind"]) == (api_version, kind)
    assert at(obj, path) == expected


def test_a_named_slice_is_a_plain_list():
    """authentication/v1 UserInfo.extra is map[string]ExtraValue, and
    ExtraValue ([]string) travels in a message of its own."""
    if "authentication.k8s.io/v1/SelfSubjectReview" not in protobuf.table().kinds:
        pytest.skip("this server serves no SelfSubjectReview")
    raw = field(2, field(1, field(4, entry("scopes", field(1, "a") + field(1, "b")))))
    obj = protobuf.decode(envelope("authentication.k8s.io/v1", "SelfSubjectReview", raw))
    assert obj["status"]["userInfo"]["extra"] == {"scopes": ["a", "b"]}


BROKEN = [
    ("not protobuf at all", b'{"kind": "ConfigMap"}', "magic bytes"),
    ("a length past the end", envelope("v1", "ConfigMap", varint(1 << 3 | 2) + varint(5) + b"ab"),
     "core/v1.ConfigMap: field 1 says 5 bytes, the message has 2"),
    ("text sent as a number", envelope("v1", "ConfigMap", field(1, field(1, 7))), "metadata.name: expected text"),
    ("a number sent as text", envelope("apps/v1", "Deployment", field(DEPLOYMENT_SPEC, field(1, "two"))),
     "spec.replicas: expected a number"),
    ("a field this server does not know, with a value",
     envelope("v1", "ConfigMap", field(1, msg(NAME, field(99, "x")))),
     "metadata: field 99 of meta/v1.ObjectMeta is not in this server's table"),
    ("a field this server does not know, a struct with a value in it",
     envelope("v1", "ConfigMap", field(1, msg(NAME, field(99, msg(field(1, 0), field(2, 7)))))),
     "metadata: field 99 of meta/v1.ObjectMeta is not in this server's table"),
    ("a wire type Kubernetes never sends", envelope("v1", "ConfigMap", varint(1 << 3 | 3)), "wire type 3"),
    ("a compressed object", envelope("v1", "ConfigMap", b"", field(3, "gzip")), "contentEncoding is 'gzip'"),
]


@pytest.mark.parametrize("what, body, message", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_body_says_what_and_where(what, body, message):
    with pytest.raises(protobuf.ProtobufError) as error:
        protobuf.decode(body)
    assert message in str(error.value)


def test_mangled_bodies_are_only_ever_a_protobuf_error():
    """Every byte of a real-shaped Deployment flipped in turn, and every cut:
    the answer is a decoded object or a ProtobufError, never a crash (a 500)."""
    container = msg(field(1, "web"), field(2, "busybox:1.35"), field(6, msg(field(1, "http"), field(3, 80))))
    spec = msg(field(1, 2), field(2, field(1, entry("app", "web"))),
               field(3, msg(field(1, field(11, entry("app", "web"))), field(2, field(2, container)))))
    body = envelope("apps/v1", "Deployment", msg(field(1, NAME), field(2, spec)))
    mangled = [body[:cut] for cut in range(len(body))]
    mangled += [body[:i] + bytes([body[i] ^ flip]) + body[i + 1:] for i in range(len(body)) for flip in (0x01, 0x02, 0x80, 0xFF)]
    for sample in mangled:
        try:
            protobuf.decode(sample)
        except protobuf.ProtobufError:
            pass


def test_a_kind_without_a_table_is_its_own_error():
    with pytest.raises(protobuf.UnknownKind, match="no protobuf table for the kind 'Widget' of 'v1'"):
        protobuf.decode(envelope("v1", "Widget", b""))


# ----- the generated table -----

def test_every_served_kind_has_a_table():
    """A kind added to registry.py needs `protobuf_gen.py` run again."""
    kinds = protobuf.table().kinds
    # CustomResourceDefinitions excepted: their Go types live in k8s.io/apiextensions-apiserver,
    # which protobuf_gen.py does not read, and kubectl sends them as JSON.
    missing = [f"{r.api_version}/{r.kind}" for r in registry.RESOURCES
               if f"{r.api_version}/{r.kind}" not in kinds and r.group != "apiextensions.k8s.io"]
    assert not missing, f"no protobuf table for {missing}: run 02-apiserver/kubectl_compat/protobuf_gen.py (see its docstring)"


def test_every_type_in_the_table_is_known_and_numbers_are_unique():
    table = protobuf.table()
    known = set(table.messages) | set(protobuf.SCALAR_ZEROS) | set(protobuf.SPECIAL_TYPES) | {"bytes"}
    problems = [f"{kind}: no message {name}" for kind, name in table.kinds.items() if name not in table.messages]
    for name, fields in table.messages.items():
        numbers = [f.number for f in fields]
        json_names = [f.json_name for f in fields if not f.inline]
        if len(set(numbers)) != len(numbers) or len(set(json_names)) != len(json_names):
            problems.append(f"{name}: a field number or JSON name twice")
        for f in fields:
            element = f.type.removeprefix("*").removeprefix("[]").removeprefix("map[string]")
            if element not in known:
                problems.append(f"{name}.{f.json_name}: unknown type {f.type}")
            if f.inline and element not in table.messages:
                problems.append(f"{name}: inline field of non-message type {f.type}")
    assert not problems
    assert table.source["k8s.io/api"].startswith("v0.")     # where the numbers come from


def test_the_table_holds_numbers_kubernetes_publishes():
    """A few numbers checked against k8s.io/api's generated.proto by hand
    (v0.33.0), so a generator bug that shifts numbers cannot pass unseen."""
    table = protobuf.table()
    expected = {("meta/v1.ObjectMeta", "labels"): 11, ("meta/v1.ObjectMeta", "creationTimestamp"): 8,
                ("apps/v1.DeploymentSpec", "replicas"): 1, ("apps/v1.DeploymentSpec", "progressDeadlineSeconds"): 9,
                ("core/v1.PodSpec", "containers"): 2, ("core/v1.PodSpec", "priority"): 25,
                ("core/v1.Container", "resources"): 8, ("core/v1.ServicePort", "targetPort"): 4,
                ("batch/v1.JobSpec", "backoffLimit"): 7, ("core/v1.Secret", "stringData"): 4}
    found = {(name, f.json_name): f.number for name, fields in table.messages.items() for f in fields}
    assert {key: found.get(key) for key in expected} == expected


# ----- through the server -----

def test_a_broken_body_is_a_400_naming_the_kind(api, namespace):
    response = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", b"k8s\x00\x12\x09oops",
                           content_type=PROTOBUF)
    status = response.json()
    assert response.status_code == 400 and status["reason"] == "BadRequest"
    assert status["message"].startswith("cannot read this ConfigMap sent as protobuf: ")


def test_an_unknown_kind_is_a_415_saying_what_to_do(api, namespace):
    response = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                           envelope("v1", "Widget", b""), content_type=PROTOBUF)
    assert response.status_code == 415 and response.json()["reason"] == "UnsupportedMediaType"
    assert "--dry-run=client -o yaml | kubectl apply -f -" in response.json()["message"]


def test_a_body_of_another_kind_is_refused(api, namespace):
    response = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                           envelope("v1", "Secret", field(1, NAME)), content_type=PROTOBUF)
    assert response.status_code == 400 and "does not match" in response.json()["message"]


# ----- the real kubectl -----

def kubectl_binaries() -> list:
    """kubectl on PATH (1.32 here) and, where this machine has it, 1.33 beside it:
    the two that send protobuf (1.27 to 1.31 send these as JSON)."""
    versions = [pytest.param(None, id="kubectl-on-PATH")]
    on_path = shutil.which("kubectl")
    beside = Path(os.path.realpath(on_path)).parent / "kubectl.1.33" if on_path else None
    versions.append(pytest.param(str(beside) if beside and beside.is_file() else "", id="kubectl-1.33"))
    return versions


@pytest.fixture(params=kubectl_binaries())
def binary(request, kubectl) -> str:
    if request.param == "":
        pytest.skip("no kubectl.1.33 beside the kubectl on PATH")
    return request.param or kubectl


GENERATORS = [
    ("deployments", "apps/v1", ["create", "deployment", "web", "--image=busybox:1.35", "--replicas=2", "--port=80"]),
    ("configmaps", "v1", ["create", "configmap", "settings", "--from-literal=mode=fast",
                          "--from-file=blob=BINARY"]),
    ("secrets", "v1", ["create", "secret", "generic", "login", "--from-literal=password=s3cret"]),
    ("secrets", "v1", ["create", "secret", "docker-registry", "pull", "--docker-server=registry.example",
                       "--docker-username=me", "--docker-password=pw"]),
    ("services", "v1", ["create", "service", "clusterip", "web", "--tcp=80:8080"]),
    ("services", "v1", ["create", "service", "externalname", "search", "--external-name=example.com"]),
    ("jobs", "batch/v1", ["create", "job", "once", "--image=busybox:1.35", "--", "echo", "hi"]),
]
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "namespace", "managedFields")


def stored(api, api_version: str, namespace: str, plural: str, name: str) -> dict:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    response = api.get(f"{prefix}/namespaces/{namespace}/{plural}/{name}")
    assert response.status_code == 200, response.text
    obj = response.json()
    for key in SERVER_SET:
        obj["metadata"].pop(key, None)
    obj.get("spec", {}).pop("clusterIP", None)            # allocated: differs between the two
    obj.get("spec", {}).pop("clusterIPs", None)
    return obj


@pytest.mark.parametrize("plural, api_version, args", GENERATORS, ids=[" ".join(g[2][1:3]) for g in GENERATORS])
def test_create_generators_store_what_json_would(binary, api, apiserver, tmp_path, plural, api_version, args):
    """The same command twice: as kubectl sends it (protobuf), and as JSON
    through `--dry-run=client -o json | kubectl create -f -`. The server
    must store the same object both ways."""
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\xfe\xff")   # not UTF-8: goes to binaryData
    args = [a.replace("BINARY", str(tmp_path / "blob.bin")) for a in args]
    sent_as_protobuf, sent_as_json = unique("pb"), unique("json")
    for name in (sent_as_protobuf, sent_as_json):
        assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    k = Kubectl(binary, apiserver.url, sent_as_protobuf, tmp_path)
    name = args[3] if args[1] in ("secret", "service") else args[2]
    assert k(*args).strip().endswith(" created"), "the generator itself"
    as_json = k("--dry-run=client", "-o", "json", *args)
    created = k("create", "-f", "-", "-n", sent_as_json, stdin=as_json)
    assert created.strip().endswith(" created")
    assert stored(api, api_version, sent_as_protobuf, plural, name) == \
        stored(api, api_version, sent_as_json, plural, name)


def test_create_namespace(binary, api, apiserver, tmp_path):
    """kubernetes.io's tasks begin with it."""
    name = unique("ns")
    k = Kubectl(binary, apiserver.url, "default", tmp_path)
    assert k("create", "namespace", name).strip() == f"namespace/{name} created"
    obj = api.get(f"/api/v1/namespaces/{name}").json()
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
    assert obj["status"] == {"phase": "Active"}


def test_replicas_zero_survives_protobuf(binary, api, apiserver, namespace, tmp_path):
    """The pointer case end to end: a plain zero would have become the default 1."""
    k = Kubectl(binary, apiserver.url, namespace, tmp_path)
    k("create", "deployment", "idle", "--image=busybox:1.35", "--replicas=0")
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/idle").json()["spec"]["replicas"] == 0


def test_a_deeply_nested_unknown_field_is_a_400_not_a_gigabyte(api):
    # An unknown field holding a message holding a message ... 900 deep: it
    # was parsed level after level (about 1 GB for a 3 MB body) and ended in
    # a RecursionError, a 500.
    def message(field: int, payload: bytes) -> bytes:
        return bytes([(field << 3) | 2]) + _varint(len(payload)) + payload
    nested = b"\x08\x01"
    for _ in range(900):
        nested = message(999 % 15 + 1, nested)
    raw = message(1, b"\x0a\x01x") + message(15, nested)          # metadata.name "x", then the bomb
    unknown = message(1, b"\x0a\x02v1\x12\x09Namespace") + message(2, raw)
    reply = api.post("/api/v1/namespaces", b"k8s\x00" + unknown, content_type="application/vnd.kubernetes.protobuf")
    assert reply.status_code == 400, reply.text


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out
