"""/openapi/v3: what kubectl reads before create, apply, edit and explain."""
from __future__ import annotations

import json

import pytest
from flask import Flask

from kubectl_compat import discovery, openapi
import registry

# metrics.k8s.io publishes no schema here (Kubernetes' comes from metrics-server): no document.
GROUP_VERSIONS = [(g, v) for g, versions in discovery.group_versions().items() for v in versions
                  if g != "metrics.k8s.io"]


@pytest.fixture(scope="module")
def client():
    app = Flask(__name__)
    app.register_blueprint(openapi.bp)
    return app.test_client()


@pytest.fixture(scope="module")
def index(client) -> dict:
    response = client.get("/openapi/v3")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()["paths"]


@pytest.fixture(scope="module")
def documents(client, index) -> dict[str, dict]:
    out = {}
    for path, entry in index.items():
        response = client.get(entry["serverRelativeURL"])
        assert response.status_code == 200, path
        out[path] = json.loads(response.data)
    return out


def walk(value, where=""):
    """Every (path, dict) in a JSON document."""
    if isinstance(value, dict):
        yield where, value
        for key, sub in value.items():
            yield from walk(sub, f"{where}/{key}")
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from walk(sub, f"{where}/{i}")


def operations(document):
    for path, item in document["paths"].items():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                yield path, method, item[method]


def test_index_lists_every_served_group_version(index):
    expected = {openapi.gv_path(g, v) for g, v in GROUP_VERSIONS}
    assert set(index) == expected
    assert "api/v1" in index and "apis/apps/v1" in index
    for path, entry in index.items():
        assert entry["serverRelativeURL"].startswith(f"/openapi/v3/{path}?hash=")


def test_hash_in_the_index_is_the_document_etag(client, index):
    for entry in index.values():
        response = client.get(entry["serverRelativeURL"])
        assert response.headers["ETag"] == '"' + entry["serverRelativeURL"].split("hash=")[1] + '"'
        assert response.headers["Cache-Control"] == "public, immutable"
        assert "Expires" in response.headers


def test_documents_are_openapi_3_with_every_ref_inside(documents):
    for path, document in documents.items():
        assert document["openapi"].startswith("3.0")
        names = document["components"]["schemas"]
        for where, node in walk(document):
            ref = node.get("$ref")
            if isinstance(ref, str):     # (a dict is a field named $ref: the CRD's JSONSchemaProps has one)
                assert ref.startswith("#/components/schemas/"), (path, where, ref)
                assert ref.split("/")[-1] in names, (path, where, ref)
            # OpenAPI 3.0 has one type per schema; null is `nullable`
            assert not isinstance(node.get("type", ""), list), (path, where)


def test_every_patch_advertises_field_validation(documents):
    # This is what makes kubectl leave validation to the server and send
    # fieldValidation=Strict instead of asking for --validate=false.
    patches = 0
    for path, method, op in (o for d in documents.values() for o in operations(d)):
        if path.endswith("/"):
            continue    # the group-version's resource list: no kind, no action
        assert "x-kubernetes-action" in op, (path, method)
        assert set(op["x-kubernetes-group-version-kind"]) == {"group", "version", "kind"}
        if method == "patch":
            patches += 1
            params = {(p["name"], p["in"]) for p in op["parameters"]}
            assert ("fieldValidation", "query") in params, path
            assert "application/strategic-merge-patch+json" in op["requestBody"]["content"]
    assert patches >= len([r for r in registry.RESOURCES if "patch" in r.verbs])


@pytest.mark.parametrize("resource", [r for r in registry.RESOURCES if "get" in r.verbs], ids=str)
def test_every_served_kind_is_explainable(documents, resource):
    """kubectl explain finds the kind through an operation on the resource's
    path, then the schema carrying the same group-version-kind."""
    document = documents[openapi.gv_path(resource.group, resource.version)]
    prefix = "/" + openapi.gv_path(resource.group, resource.version)
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    item = document["paths"][f"{prefix}{scope}/{resource.plural}/{{name}}"]
    gvk = item["get"]["x-kubernetes-group-version-kind"]
    assert gvk == {"group": resource.group, "version": resource.version, "kind": resource.kind}
    matching = [name for name, schema in document["components"]["schemas"].items()
                if gvk in schema.get("x-kubernetes-group-version-kind", [])]
    assert len(matching) == 1
    schema = document["components"]["schemas"][matching[0]]
    assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"])


def test_schemas_keep_what_kubectl_reads(documents):
    schemas = documents["api/v1"]["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    # client-side apply merges lists by these markers
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    # a $ref with a description is wrapped, as in Kubernetes' own documents
    spec = schemas["io.k8s.api.core.v1.Pod"]["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert spec["description"]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["x-kubernetes-int-or-string"] is True
    assert schemas["io.k8s.api.core.v1.Container"]["properties"]["image"]["type"] == "string"


def test_meta_definitions_are_in_every_document(documents):
    for document in documents.values():
        for name in ("Status", "DeleteOptions", "Patch", "ObjectMeta", "ListMeta"):
            assert f"io.k8s.apimachinery.pkg.apis.meta.v1.{name}" in document["components"]["schemas"]


def test_scale_subresource_speaks_autoscaling_v1(documents):
    document = documents["apis/apps/v1"]
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in document["components"]["schemas"]


def test_stale_hash_redirects_to_the_current_document(client, index):
    response = client.get("/openapi/v3/api/v1?hash=OLD")
    assert response.status_code == 301
    assert response.headers["Location"] == index["api/v1"]["serverRelativeURL"]


def test_without_hash_the_client_must_revalidate(client):
    response = client.get("/openapi/v3/apis/apps/v1")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-cache, private"
    again = client.get("/openapi/v3/apis/apps/v1", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304


def test_unknown_group_version_is_a_status(client):
    response = client.get("/openapi/v3/apis/example.com/v9")
    assert response.status_code == 404
    assert response.get_json()["kind"] == "Status"
    assert response.get_json()["reason"] == "NotFound"


def test_protobuf_only_is_not_acceptable(client):
    response = client.get("/openapi/v3/api/v1",
                          headers={"Accept": "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"})
    assert response.status_code == 406


def test_documents_are_built_once(client):
    first = openapi.document_bytes("", "v1")
    assert openapi.document_bytes("", "v1") is first
