"""PATCH bodies of all four types, as kubectl sends them, and hostile ones."""
from __future__ import annotations

import copy
import json

import pytest

import api_errors
from kubectl_compat import patches
from kubectl_compat import schemas
from kubectl_compat import server_side_apply
from kubectl_compat import strategic_merge

JSON = "application/json-patch+json"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def pod():
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default",
                     "labels": {"app": "web", "tier": "front"}, "finalizers": ["a.io/x"]},
        "spec": {
            "containers": [
                {"name": "web", "image": "nginx:1.25",
                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "log", "image": "busybox:1.35", "args": ["tail", "-f"]},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def deployment(replicas=2, image="nginx:1.25"):
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": image,
                                         "ports": [{"containerPort": 80}]}]},
            },
        },
    }


KINDS = {"Pod": ("", "v1", pod), "Deployment": ("apps", "v1", deployment),
         "Service": ("", "v1", lambda: {
             "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
             "spec": {"selector": {"app": "web"},
                      "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
         "Widget": ("example.com", "v1", lambda: {
             "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
             "spec": {"items": [{"name": "a"}, {"name": "b"}], "size": {"w": 1, "h": 2}}})}


def patch(content_type, kind, body, **kw):
    group, version, make = KINDS[kind]
    live = make()
    before = copy.deepcopy(live)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    result = patches.apply_patch(content_type, live, raw, group, version, kind, **kw)
    assert live == before, "the live object must not change"
    return result


def get(obj, dotted):
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


# --- strategic merge patch -------------------------------------------------

LAST_APPLIED = json.dumps(deployment(image="nginx:1.27"))

SMP_CASES = [
    # (id, kind, patch, dotted path, expected value there)
    ("maps merge", "Pod", {"metadata": {"labels": {"new": "x"}}},
     "metadata.labels", {"app": "web", "tier": "front", "new": "x"}),
    ("null deletes a key", "Pod", {"metadata": {"labels": {"tier": None}}},
     "metadata.labels", {"app": "web"}),
    ("containers merge by name", "Pod",
     {"spec": {"containers": [{"name": "log", "image": "busybox:1.36"}]}},
     "spec.containers", [pod()["spec"]["containers"][0],
                         {"name": "log", "image": "busybox:1.36", "args": ["tail", "-f"]}]),
    ("a new container is appended", "Pod",
     {"spec": {"containers": [{"name": "side", "image": "envoy"}]}},
     "spec.containers.2", {"name": "side", "image": "envoy"}),
    ("ports merge by containerPort", "Pod",
     {"spec": {"containers": [{"name": "web", "ports": [{"containerPort": 443}]}]}},
     "spec.containers.0.ports", [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]),
    ("env merges by name", "Pod",
     {"spec": {"containers": [{"name": "web", "env": [{"name": "B", "value": "two"},
                                                       {"name": "C", "value": "3"}]}]}},
     "spec.containers.0.env", [{"name": "A", "value": "1"}, {"name": "B", "value": "two"},
                               {"name": "C", "value": "3"}]),
    ("null inside a merged item", "Pod",
     {"spec": {"containers": [{"name": "web", "env": [{"name": "A", "value": None}]}]}},
     "spec.containers.0.env.0", {"name": "A"}),
    ("volumeMounts merge by mountPath", "Pod",
     {"spec": {"containers": [{"name": "web", "volumeMounts": [
         {"mountPath": "/data", "readOnly": True}, {"name": "cache", "mountPath": "/cache"}]}]}},
     "spec.containers.0.volumeMounts", [{"name": "data", "mountPath": "/data", "readOnly": True},
                                        {"name": "cache", "mountPath": "/cache"}]),
    ("service ports merge by port", "Service",
     {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"name": "https", "port": 443}]}},
     "spec.ports", [{"name": "http", "port": 80, "targetPort": 9090}, {"name": "https", "port": 443}]),
    ("a list without a strategy is replaced", "Pod",
     {"spec": {"containers": [{"name": "log", "args": ["sleep", "1"]}]}},
     "spec.containers.1.args", ["sleep", "1"]),
    ("finalizers are a union", "Pod", {"metadata": {"finalizers": ["b.io/y", "a.io/x"]}},
     "metadata.finalizers", ["a.io/x", "b.io/y"]),
    ("$patch: delete on a list item", "Pod",
     {"spec": {"containers": [{"name": "log", "$patch": "delete"}]}},
     "spec.containers", [pod()["spec"]["containers"][0]]),
    ("$patch: delete of a missing item is fine", "Pod",
     {"spec": {"containers": [{"name": "nope", "$patch": "delete"}]}},
     "spec.containers", pod()["spec"]["containers"]),
    ("$patch: replace on a map", "Pod", {"metadata": {"labels": {"$patch": "replace", "only": "me"}}},
     "metadata.labels", {"only": "me"}),
    ("$patch: delete on a map", "Pod", {"spec": {"volumes": None},
                                        "metadata": {"labels": {"$patch": "delete"}}},
     "metadata", {"name": "web", "namespace": "default", "finalizers": ["a.io/x"]}),
    ("$patch: replace as a list item", "Pod",
     {"spec": {"containers": [{"$patch": "replace"}, {"name": "new", "image": "x"}]}},
     "spec.containers", [{"name": "new", "image": "x"}]),
    ("$setElementOrder reorders", "Pod",
     {"spec": {"$setElementOrder/containers": [{"name": "log"}, {"name": "web"}]}},
     "spec.containers", [pod()["spec"]["containers"][1], pod()["spec"]["containers"][0]]),
    ("$setElementOrder keeps server-only items in place", "Pod",
     {"spec": {"$setElementOrder/containers": [{"name": "web"}, {"name": "side"}],
               "containers": [{"name": "side", "image": "envoy"}]}},
     "spec.containers", pod()["spec"]["containers"] + [{"name": "side", "image": "envoy"}]),
    ("$setElementOrder on a primitive list", "Pod",
     {"metadata": {"$setElementOrder/finalizers": ["b.io/y", "a.io/x"], "finalizers": ["b.io/y"]}},
     "metadata.finalizers", ["b.io/y", "a.io/x"]),
    ("$retainKeys drops the old one-of field", "Deployment",
     {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
     "spec.strategy", {"type": "Recreate"}),
    ("$retainKeys on a merged volume", "Pod",
     {"spec": {"volumes": [{"$retainKeys": ["hostPath", "name"], "name": "data",
                            "hostPath": {"path": "/srv"}}]}},
     "spec.volumes", [{"name": "data", "hostPath": {"path": "/srv"}}]),
    ("$deleteFromPrimitiveList", "Pod",
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"], "finalizers": ["c.io/z"]}},
     "metadata.finalizers", ["c.io/z"]),
    ("unknown kind: lists replace (JSON merge)", "Widget",
     {"spec": {"items": [{"name": "c"}], "size": {"h": None, "d": 3}}},
     "spec", {"items": [{"name": "c"}], "size": {"w": 1, "d": 3}}),
    ("a new map has its nulls dropped", "Pod",
     {"spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": None}}},
     "spec.securityContext", {"runAsUser": 1000}),
    # What kubectl really sends:
    ("kubectl rollout restart", "Deployment",
     {"spec": {"template": {"metadata": {"annotations": {
         "kubectl.kubernetes.io/restartedAt": "2025-01-01T12:00:00Z"}}}}},
     "spec.template.metadata", {"labels": {"app": "web"}, "annotations": {
         "kubectl.kubernetes.io/restartedAt": "2025-01-01T12:00:00Z"}}),
    ("kubectl apply (client side): new image", "Deployment",
     {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED}},
      "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "web"}],
                                     "containers": [{"image": "nginx:1.27", "name": "web"}]}}}},
     "spec.template.spec.containers", [{"name": "web", "image": "nginx:1.27",
                                        "ports": [{"containerPort": 80}]}]),
    ("kubectl apply (client side): a port removed", "Deployment",
     {"spec": {"template": {"spec": {
         "$setElementOrder/containers": [{"name": "web"}],
         "containers": [{"$setElementOrder/ports": [], "name": "web",
                         "ports": [{"$patch": "delete", "containerPort": 80}]}]}}}},
     "spec.template.spec.containers.0", {"name": "web", "image": "nginx:1.25", "ports": []}),
    ("kubectl apply (client side): strategy to Recreate", "Deployment",
     {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}},
     "spec.strategy", {"type": "Recreate"}),
]


@pytest.mark.parametrize("kind,body,dotted,expected",
                         [case[1:] for case in SMP_CASES], ids=[case[0] for case in SMP_CASES])
def test_strategic_merge(kind, body, dotted, expected):
    assert get(patch(SMP, kind, body), dotted) == expected


def test_strategic_merge_keeps_what_the_patch_does_not_name():
    result = patch(SMP, "Pod", {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}})
    expected = pod()
    expected["spec"]["containers"][0]["image"] = "nginx:1.27"
    assert result == expected


def test_last_applied_annotation_is_stored():
    result = patch(SMP, "Deployment", SMP_CASES[25][2])
    assert json.loads(result["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"]) == deployment(image="nginx:1.27")


def test_strategic_merge_result_shares_nothing_with_the_patch():
    body = {"spec": {"containers": [{"name": "log", "args": ["a"]}]}}
    group, version, make = KINDS["Pod"]
    result = patches.apply_patch(SMP, make(), json.dumps(body).encode(), group, version, "Pod")
    result["spec"]["containers"][1]["args"].append("b")
    again = patches.apply_patch(SMP, make(), json.dumps(body).encode(), group, version, "Pod")
    assert again["spec"]["containers"][1]["args"] == ["a"]


class CountedName(str):
    """A merge key value that counts how often it is compared."""
    comparisons = 0

    def __eq__(self, other):
        CountedName.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _names(n, prefix="c"):
    return [CountedName(f"{prefix}{i}") for i in range(n)]


# Each case: the live pod's spec, and the patch's spec, for N items.
LINEAR_CASES = [
    ("containers by name", lambda n: {"containers": [{"name": c, "image": "a"} for c in _names(n)]},
     lambda n: {"containers": [{"name": c, "image": "b"} for c in _names(n)]}),
    ("containers reordered by $setElementOrder", lambda n: {"containers": [{"name": c} for c in _names(n)]},
     lambda n: {"$setElementOrder/containers": [{"name": c} for c in reversed(_names(n))]}),
    ("half the containers deleted", lambda n: {"containers": [{"name": c} for c in _names(n)]},
     lambda n: {"containers": [{"name": c, "$patch": "delete"} for c in _names(n)[::2]]}),
]


@pytest.mark.parametrize("live_spec, patch_spec", [case[1:] for case in LINEAR_CASES],
                         ids=[case[0] for case in LINEAR_CASES])
def test_strategic_merge_finds_list_items_by_key_not_by_scanning(live_spec, patch_spec):
    """Finding each patch item's match by scanning the list made a patch of
    N containers cost N x N comparisons (12,000 containers: 7 s of CPU, for a
    0.7 MB body). Counted, not timed: a few comparisons per item at most."""
    n = 2000
    live = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": live_spec(n)}
    body = {"spec": patch_spec(n)}
    CountedName.comparisons = 0
    result = strategic_merge.strategic_merge(live, body, schemas.schema_for("", "v1", "Pod"))
    assert CountedName.comparisons < 10 * n, f"{CountedName.comparisons} comparisons for {n} items"
    names = [c["name"] for c in result["spec"]["containers"]]
    assert len(names) in (n, n // 2) and len(set(names)) == len(names)


def test_strategic_merge_by_key_keeps_kubernetes_rules_for_repeated_keys():
    """The first item with a key is the one merged or deleted; a second one
    with the same key then becomes the first."""
    live = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}, {"name": "a", "image": "2"}]}}
    body = {"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "a", "tty": True},
                                    {"name": {"odd": "key"}}]}}
    result = strategic_merge.strategic_merge(live, body, schemas.schema_for("", "v1", "Pod"))
    assert result["spec"]["containers"] == [{"name": "b"}, {"name": "a", "image": "2", "tty": True},
                                            {"name": {"odd": "key"}}]


# --- JSON merge patch and JSON patch ---------------------------------------

MERGE_CASES = [
    ("kubectl scale", "Deployment", {"spec": {"replicas": 3}}, "spec.replicas", 3),
    ("kubectl label, one added one removed", "Deployment",
     {"metadata": {"labels": {"tier": "front", "app": None}}}, "metadata.labels", {"tier": "front"}),
    ("kubectl annotate", "Pod", {"metadata": {"annotations": {"note": "hi"}}},
     "metadata.annotations", {"note": "hi"}),
    ("lists are replaced whole", "Pod", {"spec": {"containers": [{"name": "only"}]}},
     "spec.containers", [{"name": "only"}]),
    ("null deletes a whole field", "Pod", {"spec": {"volumes": None}}, "spec",
     {"containers": pod()["spec"]["containers"]}),
]


@pytest.mark.parametrize("kind,body,dotted,expected",
                         [case[1:] for case in MERGE_CASES], ids=[case[0] for case in MERGE_CASES])
def test_merge_patch(kind, body, dotted, expected):
    assert get(patch(MERGE, kind, body), dotted) == expected


JSON_CASES = [
    ("replace", [{"op": "replace", "path": "/spec/replicas", "value": 5}], "spec.replicas", 5),
    ("add with an escaped slash", [{"op": "add", "path": "/metadata/labels/app.io~1tier",
                                    "value": "db"}],
     "metadata.labels", {"app": "web", "app.io/tier": "db"}),
    ("remove", [{"op": "remove", "path": "/spec/strategy/rollingUpdate"}],
     "spec.strategy", {"type": "RollingUpdate"}),
    ("test then replace", [{"op": "test", "path": "/spec/replicas", "value": 2},
                           {"op": "replace", "path": "/spec/replicas", "value": 4}],
     "spec.replicas", 4),
    ("append to a list", [{"op": "add", "path": "/spec/template/spec/containers/-",
                           "value": {"name": "side", "image": "envoy"}}],
     "spec.template.spec.containers.1.name", "side"),
    ("copy and move", [{"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
                       {"op": "move", "from": "/spec/strategy/type", "path": "/metadata/annotations/n"}],
     "metadata.annotations", {"app": "web", "n": "RollingUpdate"}),
    ("kubectl rollout undo replaces the template",
     [{"op": "replace", "path": "/spec/template",
       "value": {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "web", "image": "nginx:1.24",
                                          "resources": {}}]}}}],
     "spec.template.spec.containers.0.image", "nginx:1.24"),
]


@pytest.mark.parametrize("body,dotted,expected",
                         [case[1:] for case in JSON_CASES], ids=[case[0] for case in JSON_CASES])
def test_json_patch(body, dotted, expected):
    assert get(patch(JSON, "Deployment", body), dotted) == expected


@pytest.mark.parametrize("content_type", [SMP, MERGE, f"{SMP}; charset=utf-8",
                                          "Application/Merge-Patch+JSON"])
def test_content_type_parameters_and_case_are_ignored(content_type):
    assert patch(content_type, "Deployment", {"spec": {"replicas": 7}})["spec"]["replicas"] == 7


def test_patch_types_are_the_four_kubectl_sends():
    assert set(patches.PATCH_TYPES) == {JSON, MERGE, SMP, APPLY}


# --- hostile and mistaken bodies ---------------------------------------------

ERROR_CASES = [
    # (id, content type, raw body, status code, words the message must contain)
    ("json patch that is an object", JSON, b'{"op": "add"}', 400, "must be an array of operations"),
    ("merge patch that is an array", MERGE, b"[]", 400, "must be a JSON object (got an array)"),
    ("strategic patch that is a string", SMP, b'"spec"', 400, "(got a string)"),
    ("strategic patch that is null", SMP, b"null", 400, "(got null)"),
    ("malformed JSON", SMP, b'{"spec": ', 400, "not valid JSON"),
    ("not UTF-8", MERGE, b"\xff\xfe{}", 400, "not UTF-8"),
    ("empty body", MERGE, b"", 400, "not valid JSON"),
    ("nested past Python's recursion", SMP, b"[" * 100_000 + b"]" * 100_000, 400, "nested"),
    ("nested past our limit", MERGE, b'{"a":' * 150 + b"1" + b"}" * 150, 400,
     "more than 100 levels"),
    ("json patch: unknown op", JSON, b'[{"op": "frobnicate", "path": "/spec"}]', 400,
     "operation 0 (frobnicate /spec) is not valid"),
    ("json patch: op without a path", JSON, b'[{"op": "add", "value": 1}]', 400,
     'operation 0 must be an object with "op" and "path"'),
    ("json patch: op that is not an object", JSON, b'[{"op": "test", "path": "/spec/replicas", "value": 2}, 3]',
     400, "operation 1 must be an object"),
    ("json patch: path not a pointer", JSON, b'[{"op": "add", "path": "spec", "value": 1}]',
     400, "JSON pointer"),
    ("json patch: add without value", JSON, b'[{"op": "add", "path": "/x"}]', 400, "value"),
    ("json patch: failing test", JSON,
     b'[{"op": "test", "path": "/spec/replicas", "value": 9}]', 422,
     "operation 0 (test /spec/replicas) failed: the value there is not 9"),
    ("json patch: failing test of a big value", JSON, b'[{"op": "test", "path": "", "value": {}}]',
     422, "operation 0 (test ) failed: the value there is not {}"),
    ("json patch: remove what is not there", JSON,
     b'[{"op": "replace", "path": "/spec/replicas", "value": 1},'
     b' {"op": "remove", "path": "/spec/nope"}]', 422, "operation 1 (remove /spec/nope) cannot apply"),
    ("json patch: path through a missing map", JSON,
     b'[{"op": "add", "path": "/status/x/y", "value": 1}]', 422, "cannot apply"),
    ("json patch: result is not an object", JSON, b'[{"op": "replace", "path": "", "value": 3}]',
     400, "no longer a JSON object"),
    ("strategic: unknown directive", SMP, b'{"spec": {"$frobnicate": 1}}', 400,
     "unknown strategic merge patch directive '$frobnicate'"),
    ("strategic: unknown $patch value", SMP, b'{"spec": {"$patch": "explode"}}', 400,
     "spec: unknown $patch directive 'explode'"),
    ("strategic: container without a name", SMP,
     b'{"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}', 400,
     "spec.template.spec.containers[0]: every item of spec.template.spec.containers must be "
     "an object with the merge key 'name'"),
    ("strategic: delete the whole object", SMP, b'{"$patch": "delete"}', 400,
     "cannot delete the whole object"),
    ("strategic: bad $retainKeys", SMP, b'{"spec": {"strategy": {"$retainKeys": "type"}}}', 400,
     "$retainKeys must be a list"),
    ("unknown content type", "application/xml", b"<x/>", 415, "unknown format"),
    ("apply without a field manager", APPLY, b"kind: Deployment", 400, "fieldManager is required"),
]


@pytest.mark.parametrize("content_type,body,code,words",
                         [case[1:] for case in ERROR_CASES], ids=[case[0] for case in ERROR_CASES])
def test_bad_patches_are_refused_with_a_clear_message(content_type, body, code, words):
    with pytest.raises(api_errors.APIError) as caught:
        patch(content_type, "Deployment", body)
    assert caught.value.code == code
    assert words in caught.value.message
    assert "{'apiVersion'" not in caught.value.message  # never echo the whole object back


APPLY_ERROR_CASES = [
    ("a YAML list", b"- a\n- b\n", "must be a whole manifest, a YAML or JSON object (got an array)"),
    ("invalid YAML", b"spec: [\n", "neither valid JSON nor valid YAML"),
    ("a YAML alias bomb", b"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", "aliases"),
    ("another kind", b"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n",
     "the manifest is a v1 Pod, but it was sent to the apps/v1 Deployment endpoint"),
    ("metadata that is not a map", b"metadata: web\n", '.metadata: expected map, got "web"'),
    ("a keyed item without its key", b"spec: {template: {spec: {containers: [{image: x}]}}}\n",
     "every item needs its key field 'name'"),
]


@pytest.mark.parametrize("body,words", [case[1:] for case in APPLY_ERROR_CASES],
                         ids=[case[0] for case in APPLY_ERROR_CASES])
def test_bad_apply_configurations(body, words):
    with pytest.raises(api_errors.APIError) as caught:
        patch(APPLY, "Deployment", body, field_manager="kubectl")
    assert caught.value.code == 400
    assert words in caught.value.message


# --- server-side apply -------------------------------------------------------

def ssa(live, manifest, manager="kubectl", force=False):
    before = copy.deepcopy(live)
    body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    result = patches.apply_patch(APPLY, live, body, "apps", "v1", "Deployment",
                                 field_manager=manager, force=force)
    assert live == before, "the live object must not change"
    return result


def entry(obj, manager, operation="Apply"):
    found = [e for e in obj["metadata"]["managedFields"]
             if e["manager"] == manager and e["operation"] == operation]
    assert len(found) == 1, obj["metadata"]["managedFields"]
    return found[0]


def owned(obj, manager):
    return {server_side_apply.describe(p)
            for p in server_side_apply.decode(entry(obj, manager)["fieldsV1"])}


def test_apply_creates_and_records_the_fields():
    created = ssa(None, deployment())
    mine = entry(created, "kubectl")
    assert mine["apiVersion"] == "apps/v1" and mine["fieldsType"] == "FieldsV1"
    assert mine["time"].endswith("Z")
    containers = mine["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"web"}': {
        ".": {}, "f:image": {}, "f:name": {},
        "f:ports": {'k:{"containerPort":80}': {".": {}, "f:containerPort": {}}}}}
    assert "f:name" not in mine["fieldsV1"]["f:metadata"]  # identity is nobody's field
    assert "f:kind" not in mine["fieldsV1"]
    assert {k: v for k, v in created.items() if k != "metadata"} == {
        k: v for k, v in deployment().items() if k != "metadata"}


def test_apply_accepts_yaml_as_kubectl_may_send_it():
    manifest = b"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, released: 2024-01-01}
spec:
  replicas: 1
"""
    created = ssa(None, manifest)
    assert created["metadata"]["labels"]["released"] == "2024-01-01"  # a string, not a date
    assert owned(created, "kubectl") == {".metadata.labels.app", ".metadata.labels.released",
                                         ".spec.replicas"}


def test_reapplying_the_same_manifest_changes_nothing():
    created = ssa(None, deployment())
    assert ssa(created, deployment()) == created


def test_apply_updates_a_value():
    created = ssa(None, deployment())
    updated = ssa(created, deployment(image="nginx:1.27"))
    assert updated["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert owned(updated, "kubectl") == owned(created, "kubectl")


def test_fields_no_longer_applied_are_removed():
    manifest = deployment()
    manifest["metadata"]["labels"]["tier"] = "front"
    manifest["metadata"]["finalizers"] = ["a.io/x", "b.io/y"]
    manifest["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    manifest["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "envoy"})
    created = ssa(None, manifest)
    assert 'metadata.finalizers[="b.io/y"]' in " ".join(owned(created, "kubectl"))

    trimmed = deployment()  # no tier label, no finalizers, no side container, no strategy
    del trimmed["spec"]["strategy"]
    updated = ssa(created, trimmed)
    assert updated["metadata"]["labels"] == {"app": "web"}
    assert "finalizers" not in updated["metadata"]
    assert updated["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]
    assert "strategy" not in updated["spec"]


def test_a_removed_field_another_manager_also_owns_stays():
    created = ssa(None, deployment())
    shared = ssa(created, {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web"}, "spec": {"replicas": 2}}, manager="hpa")
    trimmed = deployment()
    del trimmed["spec"]["replicas"]
    updated = ssa(shared, trimmed)
    assert updated["spec"]["replicas"] == 2
    assert ".spec.replicas" not in owned(updated, "kubectl")
    assert owned(updated, "hpa") == {".spec.replicas"}


def test_fields_set_by_other_means_are_left_alone():
    live = ssa(None, deployment())
    live["metadata"]["annotations"] = {"set-by": "kubectl annotate"}  # not an apply
    updated = ssa(live, deployment(image="nginx:1.27"))
    assert updated["metadata"]["annotations"] == {"set-by": "kubectl annotate"}


def test_a_different_value_under_another_manager_is_a_conflict():
    created = ssa(None, deployment())
    with pytest.raises(api_errors.APIError) as caught:
        ssa(created, deployment(replicas=5), manager="ops")
    error = caught.value
    assert (error.code, error.reason) == (409, "Conflict")
    assert error.message.startswith(
        'Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas')
    assert "--force-conflicts" in error.message
    assert error.details["causes"] == [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                        "message": 'conflict with "kubectl" using apps/v1'}]


def test_several_conflicts_are_listed():
    created = ssa(None, deployment())
    with pytest.raises(api_errors.APIError) as caught:
        ssa(created, deployment(replicas=5, image="nginx:1.27"), manager="ops")
    assert caught.value.message.startswith(
        'Apply failed with 2 conflicts: conflicts with "kubectl" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="web"].image')


def test_the_same_value_is_shared_not_a_conflict():
    created = ssa(None, deployment())
    shared = ssa(created, deployment(), manager="ops")
    assert ".spec.replicas" in owned(shared, "kubectl") & owned(shared, "ops")


def test_force_takes_the_field_over():
    created = ssa(None, deployment())
    forced = ssa(created, {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web"}, "spec": {"replicas": 5}},
                 manager="ops", force=True)
    assert forced["spec"]["replicas"] == 5
    assert owned(forced, "ops") == {".spec.replicas"}
    assert ".spec.replicas" not in owned(forced, "kubectl")
    # Now kubectl is the one in conflict, with ops.
    with pytest.raises(api_errors.APIError) as caught:
        ssa(forced, deployment())
    assert 'conflict with "ops" using apps/v1: .spec.replicas' in caught.value.message


def test_a_manager_left_with_nothing_is_dropped():
    small = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 1}}
    created = ssa(None, small, manager="first")
    forced = ssa(created, {**small, "spec": {"replicas": 3}}, manager="second", force=True)
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["second"]


def test_update_entries_are_kept_and_do_not_conflict():
    live = deployment()
    update = {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
              "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
              "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    live["metadata"]["managedFields"] = [update]
    applied = ssa(live, deployment(replicas=4))
    assert applied["spec"]["replicas"] == 4
    assert applied["metadata"]["managedFields"][0] == update
    assert entry(applied, "kubectl")["operation"] == "Apply"


def test_status_and_server_metadata_in_the_manifest_are_ignored():
    manifest = deployment()
    manifest["status"] = {"replicas": 99}
    manifest["metadata"].update(uid="u-1", resourceVersion="7", managedFields=[{"manager": "x"}])
    created = ssa(None, manifest)
    assert "status" not in created and "uid" not in created["metadata"]
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == ["kubectl"]


@pytest.mark.parametrize("path,printed", [
    (("f:spec", "f:replicas"), ".spec.replicas"),
    (("f:spec", "f:containers", 'k:{"name":"web"}', "f:image"), '.spec.containers[name="web"].image'),
    (("f:spec", "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}', "."),
     '.spec.ports[containerPort=80,protocol="TCP"]'),
    (("f:metadata", "f:finalizers", 'v:"a.io/x"'), '.metadata.finalizers[="a.io/x"]'),
])
def test_field_paths_print_like_kubernetes(path, printed):
    assert server_side_apply.describe(path) == printed


def test_fields_v1_round_trips():
    paths = {("f:spec", "f:replicas"), ("f:spec", "f:containers", 'k:{"name":"web"}', "."),
             ("f:spec", "f:containers", 'k:{"name":"web"}', "f:image")}
    assert server_side_apply.decode(server_side_apply.encode(paths)) == paths
    # Keys written with spaces (by hand, or another encoder) read the same.
    assert server_side_apply.decode({"f:a": {'k:{"name": "web"}': {".": {}}}}) == {
        ("f:a", 'k:{"name":"web"}', ".")}
    assert server_side_apply.decode("garbage") == set()


@pytest.mark.parametrize("managed_fields", [
    "nonsense", ["nonsense"], [{"manager": "x", "operation": "Apply", "fieldsV1": "nonsense"}],
    [{"manager": "x", "operation": "Apply", "fieldsV1": {"f:spec": {"k:{oops": {}}}}],
])
def test_unreadable_managed_fields_do_not_crash_an_apply(managed_fields):
    live = deployment()
    live["metadata"]["managedFields"] = managed_fields
    assert ssa(live, deployment(replicas=3))["spec"]["replicas"] == 3
