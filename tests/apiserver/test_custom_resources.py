"""CustomResourceDefinitions: a kind defined while the server runs, served
like a built-in one, checked with the real kubectl.

Every test defines its own group (CRDs are cluster-wide and the server is
shared by the whole session), and removes its definition when done.
"""
from __future__ import annotations

import json
import threading

import pytest
import yaml

from apiserver_harness import APIServer, Client, unique
from polling import wait_for
from test_kubectl import Kubectl

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def website_crd(group: str) -> dict:
    """The chapter 04 Website kind (04-controllers/manifests/website-crd.yaml), in a group of its own."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["message"], "description": "What the site should be.",
                     "properties": {
                         "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1,
                                      "description": "How many web servers serve the message."},
                         "message": {"type": "string", "minLength": 1, "description": "The text every page answers with."},
                         "tier": {"type": "string", "enum": ["free", "paid"]},
                         "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
            "status": {"type": "object", "properties": {"availableReplicas": {"type": "integer"},
                                                        "url": {"type": "string"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"websites.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "websites", "singular": "website", "kind": "Website",
                               "shortNames": ["ws" + group.split(".")[0][-4:]]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "additionalPrinterColumns": [
                                       {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                                       {"name": "URL", "type": "string", "jsonPath": ".status.url"}],
                                   "schema": {"openAPIV3Schema": schema}}]}}


@pytest.fixture
def crd(api):
    """An established Website definition in a fresh group: (group, CRD name)."""
    group = f"{unique('g')}.groundup.dev"
    body = website_crd(group)
    reply = api.post(CRDS, body)
    assert reply.status_code == 201, reply.text
    name = body["metadata"]["name"]
    wait_for(lambda: _established(api, name), timeout=10, what=f"{name} to be Established")
    yield group, name
    api.delete(f"{CRDS}/{name}")
    # Gone before the next test: others compare the list of served groups.
    wait_for(lambda: api.get(f"{CRDS}/{name}").status_code == 404, timeout=10, what=f"{name} to go")


def _established(api, name: str) -> bool:
    conditions = api.get(f"{CRDS}/{name}").json().get("status", {}).get("conditions", [])
    return {"type": "Established", "status": "True"} in [{k: c[k] for k in ("type", "status")} for c in conditions]


def _website(name: str, **spec) -> dict:
    return {"kind": "Website", "metadata": {"name": name}, "spec": {"message": "hello", **spec}}


def test_a_definition_is_established_by_the_server(api, crd):
    group, name = crd
    stored = api.get(f"{CRDS}/{name}").json()
    types = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert types == {"NamesAccepted": "True", "Established": "True"}
    assert stored["status"]["acceptedNames"]["listKind"] == "WebsiteList"
    assert "customresourcecleanup.apiextensions.k8s.io" in stored["metadata"]["finalizers"]
    legacy = api.get(f"/apis/{group}/v1").json()
    assert [r["name"] for r in legacy["resources"]] == ["websites", "websites/status"]
    index = api.get("/openapi/v3").json()["paths"]
    assert f"apis/{group}/v1" in index


@pytest.mark.parametrize("change, field", [
    (lambda c: c["spec"]["versions"][0].update(storage=False), "spec.versions"),
    (lambda c: c["spec"]["versions"].append({**c["spec"]["versions"][0], "name": "v2"}), "spec.versions"),
    (lambda c: c["metadata"].update(name="wrong.groundup.dev"), "metadata.name"),
    (lambda c: c["spec"]["versions"][0].pop("schema"), "spec.versions[0].schema.openAPIV3Schema"),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].pop("type"),
     "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"),
    (lambda c: c["spec"]["names"].update(plural="Web_Sites"), "spec.names.plural"),
    (lambda c: c["spec"].update(scope="Galaxy"), "spec.scope"),
    (lambda c: c["spec"].update(group="apps"), "spec.group"),
])
def test_a_broken_definition_is_refused_with_the_field(api, change, field):
    body = website_crd(f"{unique('g')}.groundup.dev")
    change(body)
    if field != "metadata.name":
        body["metadata"]["name"] = f"{body['spec']['names']['plural']}.{body['spec']['group']}"
    reply = api.post(CRDS, body)
    assert reply.status_code == 422, reply.text
    assert field in [cause["field"] for cause in reply.json()["details"]["causes"]], reply.text


def test_kubectl_apply_get_explain_describe_a_custom_object(api, crd, namespace, kubectl, tmp_path):
    group, _ = crd
    k = Kubectl(kubectl, api.url, namespace, tmp_path)
    short = "ws" + group.split(".")[0][-4:]
    assert short in k("api-resources", "--api-group", group)
    manifest = {"apiVersion": f"{group}/v1", **_website("hello", replicas=2, message="Hi there")}
    assert "created" in k("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    api.patch(f"/apis/{group}/v1/namespaces/{namespace}/websites/hello/status",
              {"status": {"url": "http://hello.example", "availableReplicas": 2}})
    table = k("get", short).splitlines()
    assert table[0].split() == ["NAME", "REPLICAS", "URL"]
    assert table[1].split() == ["hello", "2", "http://hello.example"]
    explained = k("explain", f"websites.{group}.spec")
    assert "How many web servers serve the message." in explained and "-required-" in explained
    described = k("describe", short, "hello")
    assert "Hi there" in described and "http://hello.example" in described
    # kubectl apply validates with the server (fieldValidation=Strict): the typo is named.
    typo = {"apiVersion": f"{group}/v1", **_website("typo", replicaz=3)}
    refused = k.run("apply", "-f", "-", stdin=yaml.safe_dump(typo))
    assert refused.returncode != 0 and 'unknown field "spec.replicaz"' in refused.stderr
    too_many = {"apiVersion": f"{group}/v1", **_website("big", replicas=11)}
    refused = k.run("apply", "-f", "-", stdin=yaml.safe_dump(too_many))
    assert "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10" \
        in refused.stderr
    # A second apply is a merge patch (custom kinds take no strategic merge patch).
    manifest["spec"]["replicas"] = 3
    assert "configured" in k("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert k("get", short, "hello", "-o", "jsonpath={.spec.replicas}") == "3"


def test_the_schema_refuses_with_field_paths_and_prunes_unknown_fields(api, crd, namespace):
    group, _ = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    bad = api.post(path, {**_website("bad", replicas="two", tier="gold"), "spec": {"replicas": "two", "tier": "gold"}})
    assert bad.status_code == 422, bad.text
    causes = {c["field"]: c["message"] for c in bad.json()["details"]["causes"]}
    assert causes["spec.message"] == "Required value"
    assert "spec.replicas in body must be of type integer" in causes["spec.replicas"]
    assert 'supported values: "free", "paid"' in causes["spec.tier"]
    # Unknown fields: dropped with a warning, kept below preserve-unknown-fields, defaults filled in.
    made = api.post(path, {**_website("ok"), "spec": {"message": "m", "colour": "red", "extra": {"any": 1}}})
    assert made.status_code == 201, made.text
    assert made.json()["spec"] == {"message": "m", "replicas": 1, "extra": {"any": 1}}
    assert made.headers["Warning"] == r'299 - "unknown field \"spec.colour\""'
    strict = api.post(path + "?fieldValidation=Strict", {**_website("strict"), "spec": {"message": "m", "colour": 1}})
    assert strict.status_code == 400 and 'unknown field "spec.colour"' in strict.json()["message"]
    # Custom kinds take no strategic merge patch, as in Kubernetes.
    refused = api.patch(f"{path}/ok", {"spec": {"replicas": 2}}, "application/strategic-merge-patch+json")
    assert refused.status_code == 415


def test_a_custom_object_needs_a_resource_version_to_be_replaced(api, crd, namespace, kubectl, tmp_path):
    """Built-in kinds take a PUT without metadata.resourceVersion as a blind
    overwrite; a custom kind does not (its strategy's AllowUnconditionalUpdate
    is false): 422, in Kubernetes' words."""
    group, _ = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    made = api.post(path, _website("site", message="one")).json()
    blind = {"apiVersion": f"{group}/v1", **_website("site", message="two")}
    refused = api.put(f"{path}/site", blind)
    assert refused.status_code == 422, refused.text
    assert refused.json()["message"] == (f'websites.{group} "site" is invalid: metadata.resourceVersion: '
                                         "Invalid value: 0x0: must be specified for an update")
    assert refused.json()["details"] == {"name": "site", "group": group, "kind": "websites", "causes": [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 0x0: must be specified for an update",
         "field": "metadata.resourceVersion"}]}
    assert api.get(f"{path}/site").json()["spec"]["message"] == "one"
    # With the version read, the same PUT is an update. kubectl replace reads
    # it for you when the file has none (its Replace helper GETs the object first).
    blind["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
    assert api.put(f"{path}/site", blind).status_code == 200
    k = Kubectl(kubectl, api.url, namespace, tmp_path)
    del blind["metadata"]["resourceVersion"]
    blind["spec"]["message"] = "three"
    assert "replaced" in k("replace", "-f", "-", stdin=yaml.safe_dump(blind))
    assert api.get(f"{path}/site").json()["spec"]["message"] == "three"
    # A ConfigMap, like every built-in kind here, takes the blind overwrite.
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "c"}}).status_code == 201
    assert api.put(f"/api/v1/namespaces/{namespace}/configmaps/c",
                   {"metadata": {"name": "c"}, "data": {"k": "v"}}).status_code == 200


def test_the_status_subresource_splits_spec_and_status(api, crd, namespace):
    group, _ = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    made = api.post(path, _website("site")).json()
    assert made["metadata"]["generation"] == 1
    # The main resource ignores status, and a spec change bumps the generation.
    changed = api.patch(f"{path}/site", {"spec": {"replicas": 3}, "status": {"url": "ignored"}}).json()
    assert changed["metadata"]["generation"] == 2 and changed["spec"]["replicas"] == 3
    assert "url" not in (changed.get("status") or {})
    # /status ignores spec, and leaves the generation alone.
    status = api.patch(f"{path}/site/status", {"spec": {"replicas": 9}, "status": {"url": "http://site"}})
    assert status.status_code == 200, status.text
    assert status.json()["status"]["url"] == "http://site" and status.json()["spec"]["replicas"] == 3
    assert status.json()["metadata"]["generation"] == 2
    # The status is validated against the schema too.
    bad = api.patch(f"{path}/site/status", {"status": {"availableReplicas": "all"}})
    assert bad.status_code == 422 and bad.json()["details"]["causes"][0]["field"] == "status.availableReplicas"


def test_selectors_work_on_custom_objects(api, crd, namespace):
    group, _ = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    for name, tier in (("a", "free"), ("b", "paid")):
        assert api.post(path, {**_website(name), "metadata": {"name": name, "labels": {"tier": tier}}}).status_code == 201
    by_label = api.get(path, params={"labelSelector": "tier=paid"}).json()
    assert by_label["kind"] == "WebsiteList" and [o["metadata"]["name"] for o in by_label["items"]] == ["b"]
    by_name = api.get(f"/apis/{group}/v1/websites", params={"fieldSelector": "metadata.name=a"}).json()
    assert [o["metadata"]["name"] for o in by_name["items"]] == ["a"]


def test_watch_and_deleting_the_definition_deletes_its_objects(api, crd, namespace):
    group, name = crd
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites"
    rv = api.get(path).json()["metadata"]["resourceVersion"]
    events: list[dict] = []

    def follow():
        with api.get(path, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "20"},
                     stream=True) as reply:
            for line in reply.iter_lines():
                if line:
                    events.append(json.loads(line))
                    if events[-1]["type"] == "DELETED":
                        return
    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    assert api.post(path, _website("doomed")).status_code == 201
    wait_for(lambda: [e["type"] for e in events] == ["ADDED"], timeout=10, what="the ADDED event")
    assert api.delete(f"{CRDS}/{name}").status_code == 200
    wait_for(lambda: api.get(f"{CRDS}/{name}").status_code == 404, timeout=10, what="the definition to go")
    watcher.join(10)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert events[1]["object"]["metadata"]["name"] == "doomed"
    assert api.get(path).status_code == 404
    assert group not in [g["name"] for g in api.get("/apis").json()["groups"]]
    # Defined again, the kind starts empty: the old objects went with the definition.
    assert api.post(CRDS, website_crd(group)).status_code == 201
    wait_for(lambda: _established(api, name), timeout=10, what=f"{name} to be Established again")
    assert api.get(path).json()["items"] == []


def test_a_restarted_server_serves_the_stored_definitions(tmp_path):
    # The definitions are objects in the store like any other: a new process
    # reads them back and serves their kinds again, objects and all.
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        group = f"{unique('g')}.groundup.dev"
        body = website_crd(group)
        assert api.post(CRDS, body).status_code == 201
        wait_for(lambda: _established(api, body["metadata"]["name"]), timeout=10, what="Established")
        path = f"/apis/{group}/v1/namespaces/default/websites"
        assert api.post(path, _website("kept")).status_code == 201
        server.stop()
        server.start()
        wait_for(lambda: api.get(f"{path}/kept").status_code == 200, timeout=10,
                 what="the custom object served again after the restart")
        assert api.get(f"{path}/kept").json()["spec"] == {"message": "hello", "replicas": 1}
        assert "websites" in [r["name"] for r in api.get(f"/apis/{group}/v1").json()["resources"]]
    finally:
        server.stop()
