"""Hostile input: every bad request gets the right Status, and the server stays up."""
from __future__ import annotations

import codecs
import json

import pytest

from apiserver_harness import APIServer, Client, pod, unique
from polling import wait_for
from test_custom_resources import crd  # noqa: F401 (a fixture: an established Website definition)

POD = pod("web")


@pytest.mark.parametrize("body,content_type,code,words", [
    (b"{not json", "application/json", 400, "not valid JSON"),
    (b"", "application/json", 400, "empty"),
    (b"[1, 2]", "application/json", 400, "must be a JSON object"),
    (b"kind: Pod\nmetadata: {name: a\n", "application/yaml", 400, "request body"),
    (b"a: &a [*a, *a]\n", "application/yaml", 400, "request body"),
    (b"metadata: {name: a}\nmetadata: {name: b}\n", "application/yaml", 400, "duplicate"),
    (b'{"kind": "Service", "metadata": {"name": "a"}}', "application/json", 400, "does not match"),
    (b'{"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "a"}}', "application/json", 400, "apiVersion"),
    (b"\xff\xfe", "application/json", 400, "JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", 400, ""),
    (b'{"metadata": {"name": "a"}}', "text/plain", 415, "application/json"),
    (b'{"metadata": {"name": "a"}}', "application/x-www-form-urlencoded", 415, "application/json"),
    (b'{"metadata": "a"}', "application/json", 400, "metadata"),
])
def test_malformed_bodies(api, namespace, body, content_type, code, words):
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", body, content_type=content_type)
    assert response.status_code == code, response.text
    status = response.json()
    assert status["kind"] == "Status" and status["code"] == code
    assert words in status["message"]
    assert api.get("/healthz").status_code == 200


@pytest.mark.parametrize("name", ["a/b", "..", "%2e%2e", "a%00b", "x" * 300, "UPPER", "-dash", "a b"])
def test_bad_names_never_touch_a_path(api, namespace, apiserver, name):
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": name}})
    assert response.status_code in (400, 422), response.text
    assert response.json()["kind"] == "Status"
    assert not any(".." in str(p.relative_to(apiserver.data_dir)) for p in apiserver.data_dir.rglob("*"))


@pytest.mark.parametrize("path,method,code", [
    ("/api/v1/namespaces/../../etc/pods", "GET", 404),
    ("/api/v1/widgets", "GET", 404),
    ("/apis/apps/v2/deployments", "GET", 404),
    ("/api/v1/namespaces/default/pods/web/exec", "GET", 404),
    ("/api/v1/nodes/n1/status/extra", "GET", 404),
    ("/api/v1/namespaces/default/pods", "PUT", 405),
    ("/api/v1/namespaces/default/pods/web", "POST", 405),
    ("/nowhere", "GET", 404),
])
def test_bad_urls_and_methods(api, path, method, code):
    response = api.request(method, path, b"{}" if method in ("PUT", "POST") else None)
    assert response.status_code == code, response.text
    assert response.json()["kind"] == "Status"


def test_huge_body_is_413(api, namespace):
    body = b'{"metadata": {"name": "big"}, "data": {"x": "' + b"a" * (4 * 1024 * 1024) + b'"}}'
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert response.status_code == 413 and response.json()["reason"] == "RequestEntityTooLarge"


def test_unknown_query_parameters_are_ignored_bad_values_are_not(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert api.get(path + "?frobnicate=yes").status_code == 200
    assert api.get(path + "?limit=ten").status_code == 400
    assert api.get(path + "?limit=-1").status_code == 400
    assert api.get(path + "?watch=true&timeoutSeconds=x").status_code == 400
    assert api.post(path + "?fieldValidation=Sloppy", POD).status_code == 400
    assert api.post(path + "?dryRun=Some", POD).status_code == 400


def test_name_on_the_url_must_match_the_body(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "a"}})
    response = api.put(f"{path}/a", {"metadata": {"name": "b"}})
    assert response.status_code == 400 and "does not match the name on the URL" in response.json()["message"]
    other = api.post(path, {"metadata": {"name": "c", "namespace": "kube-system"}})
    assert other.status_code == 400 and "namespace" in other.json()["message"]


@pytest.mark.parametrize("mode,code", [("Strict", 400), ("Warn", 201), ("Ignore", 201)])
def test_field_validation_modes(api, namespace, mode, code):
    body = pod(f"typo-{mode.lower()}")
    body["spec"]["containers"][0]["imagee"] = "oops"
    response = api.post(f"/api/v1/namespaces/{namespace}/pods?fieldValidation={mode}", body)
    assert response.status_code == code, response.text
    if mode == "Strict":
        assert response.json()["message"] == ('Pod in version "v1" cannot be handled as a Pod: '
                                              'strict decoding error: unknown field "spec.containers[0].imagee"')
    else:
        assert "imagee" not in response.json()["spec"]["containers"][0]
        assert ("imagee" in response.headers.get("Warning", "")) == (mode == "Warn")


def test_duplicate_json_fields_are_strict_errors(api, namespace):
    body = b'{"metadata": {"name": "dup", "name": "dup2"}, "data": {}}'
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps?fieldValidation=Strict", body)
    assert response.status_code == 400 and 'duplicate field "metadata.name"' in response.json()["message"]


@pytest.mark.parametrize("content_type,body,code", [
    ("application/json-patch+json", b'{"op": "add"}', 400),
    ("application/json-patch+json", b'[{"op": "replace", "path": "/nope/deeper", "value": 1}]', 422),
    ("application/merge-patch+json", b"[1]", 400),
    ("application/strategic-merge-patch+json", b"{bad", 400),
    ("text/plain", b"{}", 415),
])
def test_bad_patches(api, namespace, content_type, body, code):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "p"}})
    response = api.patch(f"{path}/p", body, content_type=content_type)
    assert response.status_code == code, response.text
    assert response.json()["kind"] == "Status"


@pytest.mark.parametrize("spec", [
    {"containers": {"name": "c", "image": "x"}},
    {"containers": [{"name": "c", "image": "x", "resources": "lots"}]},
    {"containers": [{"name": "c", "image": "x", "resources": {"limits": [1]}}]},
    "not-a-spec",
])
def test_wrong_types_are_the_decoders_400_not_500(api, namespace, spec):
    # Kubernetes refuses these while decoding into its Go types (test_types.py).
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", {"metadata": {"name": "wrong"}, "spec": spec})
    assert response.status_code == 400, response.text
    assert "cannot be handled as a Pod" in response.json()["message"]


def test_a_namespace_with_a_non_object_spec_is_not_a_500(api):
    response = api.post("/api/v1/namespaces", {"metadata": {"name": "odd-spec"}, "spec": []})
    assert response.status_code == 400, response.text


def test_a_namespace_keeps_its_finalizers_against_updates(api):
    api.post("/api/v1/namespaces", {"metadata": {"name": "keep-fin"}})
    patched = api.patch("/api/v1/namespaces/keep-fin", {"spec": {"finalizers": []}})
    assert patched.status_code == 200 and patched.json()["spec"]["finalizers"] == ["kubernetes"]


def test_a_node_keeps_the_status_it_registers_with(api):
    node = {"metadata": {"name": "status-node"},
            "status": {"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                       "addresses": [{"type": "InternalIP", "address": "10.213.0.9"}]}}
    created = api.post("/api/v1/nodes", node).json()
    assert created["status"]["capacity"] == {"cpu": "2", "memory": "4Gi", "pods": "110"}
    assert created["status"]["allocatable"] == created["status"]["capacity"]   # defaulted


def test_put_scale_takes_a_scale_object(api, namespace):
    from apiserver_harness import deployment
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    api.post(path, deployment("sc"))
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "sc"}, "spec": {"replicas": 3}}
    response = api.put(f"{path}/sc/scale", scale)
    assert response.status_code == 200, response.text
    assert response.json()["spec"]["replicas"] == 3
    wrong = api.put(f"{path}/sc/scale", dict(scale, spec={"replicas": "3"}))
    assert wrong.status_code == 422 and "must be an integer" in wrong.json()["message"]
    other = api.put(f"{path}/sc/scale", dict(scale, metadata={"name": "other"}))
    assert other.status_code == 400


def test_binding_checks_its_request(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, pod("b"))
    dry = api.post(f"{path}/b/binding?dryRun=All", {"target": {"kind": "Node", "name": "n1"}})
    assert dry.status_code == 201 and "nodeName" not in api.get(f"{path}/b").json()["spec"]
    assert api.post(f"{path}/b/binding", {"metadata": {"name": "x"}, "target": {"name": "n1"}}).status_code == 400
    assert api.post(f"{path}/b/binding", {"metadata": {"uid": "nope"}, "target": {"name": "n1"}}).status_code == 409
    assert api.post(f"{path}/b/binding", {"target": {"kind": "Pod", "name": "n1"}}).status_code == 422


def test_warning_headers_survive_any_field_name(api, namespace):
    body = pod("warned")
    body["spec"]["☃"] = 1
    body["spec"]['quo"te'] = 2
    response = api.post(f"/api/v1/namespaces/{namespace}/pods?fieldValidation=Warn", body, timeout=10)
    assert response.status_code == 201, response.text
    warnings = response.headers["Warning"]
    assert '299 - "unknown field \\"spec.\\u2603\\""' in warnings
    assert '299 - "unknown field \\"spec.quo\\"te\\""' in warnings


def test_delete_collection_honours_dry_run(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "stay"}})
    response = api.delete(path + "?dryRun=All")
    assert response.status_code == 200 and [o["metadata"]["name"] for o in response.json()["items"]] == ["stay"]
    assert api.get(f"{path}/stay").status_code == 200


@pytest.mark.parametrize("options", [
    {"preconditions": "x"}, {"preconditions": [1]}, {"gracePeriodSeconds": "x"},
    {"gracePeriodSeconds": -1}, {"gracePeriodSeconds": 2**70}, {"propagationPolicy": "Garbage"},
])
def test_bad_delete_options_are_400(api, namespace, options):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "opt"}})
    response = api.delete(f"{path}/opt", options)
    assert response.status_code == 400, response.text
    assert api.get(f"{path}/opt").status_code == 200


def test_put_with_another_objects_uid_is_a_conflict(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    current = api.post(path, {"metadata": {"name": "u"}}).json()
    current["metadata"]["uid"] = "someone-elses"
    response = api.put(f"{path}/u", current)
    assert response.status_code == 409 and "Precondition failed: UID" in response.json()["message"]


def test_strict_patches_refuse_duplicate_fields(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "d"}})
    response = api.patch(f"{path}/d?fieldValidation=Strict", b'{"data": {"a": "1", "a": "2"}}')
    assert response.status_code == 400 and 'duplicate field "data.a"' in response.json()["message"]


def test_server_side_apply_to_status_says_it_is_not_supported(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, pod("st"))
    response = api.patch(f"{path}/st/status?fieldManager=me", b'{"apiVersion": "v1", "kind": "Pod", "status": {}}',
                         content_type="application/apply-patch+yaml")
    assert response.status_code == 400 and "not supported" in response.json()["message"]


@pytest.mark.parametrize("version,code", [("-5", 400), ("999999999", 504)])
def test_watch_versions_that_cannot_be_served(api, version, code):
    response = api.get(f"/api/v1/pods?watch=true&resourceVersion={version}")
    assert response.status_code == code, response.text


# ----- issue 35: nothing a client sends can break the server -----

def nested(depth: int, leaf="x"):
    """{"a": {"a": ... leaf}}, `depth` levels."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_configmap(name: str, depth: int) -> bytes:
    """The first of issue 35's three requests: managedFields nested `depth`
    levels deep (written as text: json.dumps would run out of stack here)."""
    entry = {"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": 0}
    body = json.dumps({"metadata": {"name": name, "managedFields": [entry]}, "data": {}})
    return body.replace('"fieldsV1": 0', '"fieldsV1": ' + '{"a": ' * depth + '"x"' + "}" * depth).encode()


def assert_too_deep(response, where: str) -> None:
    assert response.status_code == 400, response.text
    status = response.json()
    assert status["reason"] == "BadRequest"
    assert "nested more than 100 levels deep, at " + where in status["message"], status["message"]


@pytest.mark.parametrize("depth", [101, 600, 970])
def test_a_deep_object_is_refused_and_its_namespace_still_goes(api, depth):
    """Issue 35: a 600-deep managedFields was stored; then its namespace could
    not be deleted, nor the object changed, and the next start died."""
    namespace = unique("deep")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": namespace}}).status_code == 201
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", deep_configmap("deep", depth))
    assert_too_deep(response, "metadata.managedFields[0].fieldsV1.a.a... (101 levels)")
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", deep_configmap("fine", 90)).status_code == 201
    assert api.delete(f"/api/v1/namespaces/{namespace}").status_code == 200
    wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=10,
             what=f"namespace {namespace} to go")


def test_a_start_sets_aside_a_deep_object_an_older_version_stored(tmp_path):
    """Issue 35: a 600-deep ConfigMap in a terminating namespace made every
    later start die (resume_namespace_deletions could not copy it). Here
    it is written as an older version wrote it: its file and its event."""
    data = tmp_path / "data"
    server = APIServer(data).start()
    api = Client(server.url)
    api.post("/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    api.post("/api/v1/namespaces/doomed/configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    api.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "keep"}})
    assert api.delete("/api/v1/namespaces/doomed").status_code == 200      # Terminating: "held" holds it
    server.stop()
    rv = int((data / "resource-version").read_text()) + 1                  # after every version handed out
    deep = deep_configmap("deep", 600).decode().replace(
        '"name": "deep"', f'"name": "deep", "namespace": "doomed", "uid": "u1", "resourceVersion": "{rv}"')
    (data / "registry" / "core" / "configmaps" / "doomed" / "deep.json").write_text(deep)
    newest_segment = max((data / "events").glob("*.log"))
    with open(newest_segment, "a") as log:
        log.write(f'{{"rv":{rv},"type":"ADDED","group":"","version":"v1","plural":"configmaps",'
                  f'"namespace":"doomed","object":{deep}}}\n')

    again = APIServer(data).start()                                        # before issue 35: exit 1
    try:
        api = Client(again.url)
        assert api.get("/api/v1/namespaces/default/configmaps/keep").status_code == 200
        assert api.get("/api/v1/namespaces/doomed/configmaps/deep").status_code == 404
        assert api.get("/api/v1/namespaces/doomed").json()["status"]["phase"] == "Terminating"
    finally:
        again.stop()
    aside = data / "registry" / "core" / "configmaps" / "doomed" / "deep.json.corrupt"
    assert aside.exists()
    lines = again.log().splitlines()
    assert sum("unreadable object set aside" in line and str(aside) in line for line in lines) == 1
    assert sum("event nested too deeply left out" in line and f"rv={rv}" in line for line in lines) == 1


@pytest.mark.parametrize("depth", [101, 973, 989, 5000])
def test_json_nested_past_the_limit_is_a_400_saying_where(api, namespace, depth):
    start = b'{"metadata": {"name": "deep"}, "data": '
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", start + b"[" * depth + b"]" * depth + b"}")
    assert_too_deep(response, "")
    # Python's parser reads about 990 levels: then the field path; past that,
    # the byte where the limit was passed.
    message = response.json()["message"]
    assert "at data[0][0][0][0][0]... (101 levels)" in message or f"at byte {len(start) + 99}:" in message


def test_yaml_nested_past_the_limit_is_a_400_naming_the_line(api, namespace):
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n" + b"".join(
        b" " * (i + 1) + b"a:\n" for i in range(150))
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", body, content_type="application/yaml")
    assert response.status_code == 400 and "request body:104: nested more than 100 levels deep" in response.text


@pytest.mark.parametrize("content_type", ["application/merge-patch+json", "application/strategic-merge-patch+json",
                                          "application/apply-patch+yaml"])
def test_patches_nested_past_the_limit_are_400(api, namespace, content_type):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "p"}})
    patch = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "annotations": nested(150)}}
    response = api.patch(f"{path}/p?fieldManager=me", patch, content_type=content_type)
    assert_too_deep(response, "metadata.annotations.a.a.a.a... (101 levels)")


def test_json_patches_cannot_deepen_an_object_step_by_step(api, namespace):
    """Each patch within the limit, each adding 90 levels under the last:
    before issue 35 the sixth made an object no one could copy any more."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(path, deep_configmap("grow", 1)).status_code == 201
    pointer = "/metadata/managedFields/0/fieldsV1/a"          # FieldsV1 holds any JSON
    first = [{"op": "replace", "path": pointer, "value": nested(90)}]
    assert api.patch(f"{path}/grow", first, content_type="application/json-patch+json").status_code == 200
    second = [{"op": "replace", "path": pointer + "/a" * 90, "value": nested(90)}]
    response = api.patch(f"{path}/grow", second, content_type="application/json-patch+json")
    assert_too_deep(response, "metadata.managedFields[0].fieldsV1.a.a... (101 levels)")
    assert response.json()["message"].startswith("the patched object is nested")


def test_a_custom_object_nested_past_the_limit_is_refused_as_it_comes_and_as_it_grows(api, crd, namespace):
    """Issue 35: a custom resource's free-form field took a 600-deep spec as well."""
    group, _ = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    body = '{"kind": "Website", "metadata": {"name": "deep"}, "spec": {"message": "hi", "extra": %s}}'
    response = api.post(path, body % ('{"a": ' * 600 + "1" + "}" * 600))
    assert_too_deep(response, "spec.extra.a.a.a.a... (101 levels)")
    assert api.post(path, body % json.dumps(nested(90))).status_code == 201
    grow = [{"op": "replace", "path": "/spec/extra" + "/a" * 90, "value": nested(90)}]   # the "x" 92 deep
    assert_too_deep(api.patch(f"{path}/deep", grow, content_type="application/json-patch+json"),
                    "spec.extra.a.a.a.a... (101 levels)")
    assert api.delete(f"{path}/deep").status_code == 200


def test_protobuf_nested_past_the_limit_is_a_400(api, namespace):
    from test_protobuf import envelope, field, msg
    fields_v1 = field(7, msg(field(1, json.dumps(nested(600)))))          # ManagedFieldsEntry.fieldsV1
    body = envelope("v1", "ConfigMap", field(1, msg(field(1, "deep"), field(17, fields_v1))))
    response = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                           content_type="application/vnd.kubernetes.protobuf")
    assert_too_deep(response, "metadata.managedFields[0].fieldsV1.a.a... (101 levels)")


@pytest.mark.parametrize("seconds", [10**12, -10**12, 2**63 - 1])
def test_protobuf_times_out_of_range_are_400(api, namespace, seconds):
    from test_protobuf import envelope, field, msg
    created = field(8, msg(field(1, seconds)))                             # ObjectMeta.creationTimestamp
    body = envelope("v1", "ConfigMap", field(1, msg(field(1, "when"), created)))
    response = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                           content_type="application/vnd.kubernetes.protobuf")
    assert response.status_code == 400, response.text
    assert "metadata.creationTimestamp" in response.json()["message"]
    assert "not a time between the years 1 and 9999" in response.json()["message"]


@pytest.mark.parametrize("body,words", [
    (codecs.BOM_UTF8 + json.dumps({"metadata": {"name": "bom"}}).encode(), "byte-order mark"),
    (json.dumps({"metadata": {"name": "utf16"}}).encode("utf-16"), "UTF-16"),
    (json.dumps({"metadata": {"name": "utf16be"}}).encode("utf-16-be"), "UTF-16"),
    (json.dumps({"metadata": {"name": "utf32"}}).encode("utf-32"), "UTF-32"),
], ids=["utf-8-bom", "utf-16", "utf-16-be-no-bom", "utf-32"])
def test_json_is_utf8_without_a_byte_order_mark(api, namespace, body, words):
    """Go's decoder, and so Kubernetes, refuses these; Python's json.loads would guess."""
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert response.status_code == 400, response.text
    assert words in response.json()["message"]


def test_yaml_aliases_cannot_expand_a_body_past_the_request_limit(api, namespace):
    """Issue 35: one 1 MB string used 50 times was stored as a 51 MB pod."""
    big = "x" * 100_000
    body = ("apiVersion: v1\nkind: Pod\nmetadata: {name: laughs}\nspec:\n  containers:\n  - name: a\n"
            f"    image: busybox\n    args:\n    - &big {big}\n" + "    - *big\n" * 40).encode()
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", body, content_type="application/yaml")
    assert response.status_code == 400, response.text[:300]
    assert "aliases expand this document to more than 3145728 bytes" in response.json()["message"]
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/laughs").status_code == 404


def test_a_yaml_body_has_a_budget_of_values(api, namespace):
    """Issue 35: 2.5 MB of `[1,1,1,...]` took 91 s of CPU to read (BENCHMARKS.md)."""
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many\ndata:\n  a: [" + b"1," * 250_000 + b"1]\n")
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", body, content_type="application/yaml",
                        timeout=120)
    assert response.status_code == 400, response.text[:300]
    assert "request body:6: more than 200000 values in one document" in response.json()["message"]
