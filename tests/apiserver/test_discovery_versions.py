"""What older and newer kubectl ask before anything else: discovery in the
form each one reads, and /openapi/v2 for those that still use it.

kubectl 1.29 asks for aggregated discovery v2beta1 and cannot read v2; 1.27
and 1.28 also need /openapi/v2, in gnostic's protobuf form, before `apply`.
The matrix with the real binaries is test_kubectl_versions.py; these are the
server's answers, checked one by one.
"""
from __future__ import annotations

import pytest

import api_errors
from kubectl_compat import gnostic
from kubectl_compat.discovery import aggregated_content_type, negotiate_discovery

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
PROTOBUF_V2 = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@pytest.mark.parametrize("accept, answer", [
    ("", None),                                                   # no Accept: legacy
    ("application/json", None),
    ("application/json, */*", None),
    ("*/*", None),
    (V2, "v2"),
    (V2BETA1, "v2beta1"),
    (f"{V2},{V2BETA1},application/json", "v2"),                   # kubectl 1.30+
    (f"{V2BETA1},application/json", "v2beta1"),                   # kubectl 1.29
    (f"{V2};q=0.5,{V2BETA1}", "v2beta1"),                         # weights beat order
    (f"{V2};q=0,application/json", None),                         # q=0: never
    (f"{PROTOBUF_V2},application/json", None),                    # no protobuf here: next choice
    ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", None),
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", None),
])
def test_negotiation_picks_what_the_client_can_read(accept, answer):
    assert negotiate_discovery(accept) == answer


@pytest.mark.parametrize("accept", [
    "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList",
    PROTOBUF_V2,
    "text/html",
])
def test_nothing_acceptable_is_406(accept):
    with pytest.raises(api_errors.APIError) as raised:
        negotiate_discovery(accept)
    assert raised.value.code == 406


@pytest.mark.parametrize("path", ["/api", "/apis"])
@pytest.mark.parametrize("accept, version", [(V2, "v2"), (f"{V2BETA1},application/json", "v2beta1")])
def test_aggregated_discovery_in_the_version_asked_for(api, path, accept, version):
    reply = api.get(path, headers={"Accept": accept})
    assert reply.status_code == 200
    assert reply.headers["Content-Type"] == aggregated_content_type(version)
    assert reply.headers["Vary"] == "Accept"
    body = reply.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    assert body["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    resources = {r["resource"] for group in body["items"] for v in group["versions"] for r in v["resources"]}
    assert ("pods" in resources) if path == "/api" else ("deployments" in resources)


@pytest.mark.parametrize("path, kind", [("/api", "APIVersions"), ("/apis", "APIGroupList")])
def test_plain_json_gets_the_legacy_document(api, path, kind):
    reply = api.get(path, headers={"Accept": "application/json, */*"})
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["Vary"] == "Accept"
    assert reply.json()["kind"] == kind


def test_an_unreadable_accept_is_a_406_status(api):
    reply = api.get("/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"})
    assert reply.status_code == 406
    assert reply.json()["kind"] == "Status" and reply.json()["reason"] == "NotAcceptable"


# --- /openapi/v2 ---------------------------------------------------------------

def test_openapi_v2_as_json_is_swagger_2_with_every_ref_defined(api):
    reply = api.get("/openapi/v2", headers={"Accept": "application/json"})
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "application/json"
    doc = reply.json()
    assert doc["swagger"] == "2.0"
    refs = set()
    _collect_refs(doc, refs)
    assert refs and all(r.startswith("#/definitions/") for r in refs)
    assert {r[len("#/definitions/"):] for r in refs} <= doc["definitions"].keys()
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    body = next(p for p in patch["parameters"] if p["in"] == "body")
    assert body["schema"] == {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}
    containers = doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"        # what client-side apply merges by
    assert doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"


def test_openapi_v2_as_protobuf_is_the_same_document(api):
    accept = {"Accept": gnostic.MEDIA_TYPE}
    reply = api.get("/openapi/v2", headers=accept)
    assert reply.status_code == 200
    # Go's media type parser refuses the name asked for, so the bytes go out plainly.
    assert reply.headers["Content-Type"] == "application/octet-stream"
    decoded = gnostic.decode(reply.content)
    doc = api.get("/openapi/v2", headers={"Accept": "application/json"}).json()
    assert [p["name"] for p in decoded["paths"]["path"]] == list(doc["paths"])
    assert [d["name"] for d in decoded["definitions"]["additional_properties"]] == list(doc["definitions"])
    pods = next(p["value"] for p in decoded["paths"]["path"]
                if p["name"] == "/api/v1/namespaces/{namespace}/pods/{name}")
    extensions = {e["name"]: e["value"]["yaml"] for e in pods["patch"]["vendor_extension"]}
    assert extensions["x-kubernetes-group-version-kind"] == '{"group":"","kind":"Pod","version":"v1"}'
    queries = [p["parameter"]["non_body_parameter"].get("query_parameter_sub_schema", {}).get("name")
               for p in pods["patch"]["parameters"] if "non_body_parameter" in p["parameter"]]
    assert "fieldValidation" in queries
    # kubectl caches by ETag: a second fetch is a 304.
    again = api.get("/openapi/v2", headers={**accept, "If-None-Match": reply.headers["ETag"]})
    assert again.status_code == 304


def test_openapi_v2_refuses_what_it_cannot_send(api):
    reply = api.get("/openapi/v2", headers={"Accept": "application/xml"})
    assert reply.status_code == 406 and reply.json()["reason"] == "NotAcceptable"


def test_no_custom_resources_is_an_empty_list_not_a_404(api):
    # kubectl asks this before validating a kind that no OpenAPI document has.
    reply = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    assert reply.status_code == 200
    assert reply.json()["kind"] == "CustomResourceDefinitionList" and reply.json()["items"] == []


def _collect_refs(value, into: set) -> None:
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            into.add(value["$ref"])
        for sub in value.values():
            _collect_refs(sub, into)
    elif isinstance(value, list):
        for sub in value:
            _collect_refs(sub, into)
