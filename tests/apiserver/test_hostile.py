"""Hostile input: every bad request gets the right Status, and the server stays up."""
from __future__ import annotations

import pytest

from apiserver_harness import pod

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
