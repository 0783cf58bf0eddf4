"""REST as Kubernetes does it, against a real API server process over HTTP,
on each store (the JSON files, etcd)."""
from __future__ import annotations

import base64
import threading
import json
import uuid

import pytest

from apiserver_harness import Client, deployment, pod, unique


@pytest.fixture(scope="session")
def api(api_on_each_backend):
    """Every test here runs against the JSON files and against etcd."""
    return api_on_each_backend

# One valid object of every served kind: (collection path template, body).
EXAMPLES = [
    ("/api/v1/namespaces/{ns}/pods", pod("web")),
    ("/api/v1/namespaces/{ns}/services",
     {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "web"},
      "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    ("/api/v1/namespaces/{ns}/endpoints",
     {"kind": "Endpoints", "apiVersion": "v1", "metadata": {"name": "web"},
      "subsets": [{"addresses": [{"ip": "10.213.0.5"}], "ports": [{"port": 80}]}]}),
    ("/api/v1/namespaces/{ns}/configmaps",
     {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}),
    ("/api/v1/namespaces/{ns}/secrets",
     {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "token"}, "data": {"key": "c2VjcmV0"}}),
    ("/api/v1/namespaces/{ns}/events",
     {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "web.1"},
      "involvedObject": {"kind": "Pod", "name": "web", "namespace": "{ns}"},
      "reason": "Scheduled", "message": "assigned", "type": "Normal"}),
    ("/apis/apps/v1/namespaces/{ns}/deployments", deployment("web")),
    ("/apis/apps/v1/namespaces/{ns}/replicasets", {**deployment("web"), "kind": "ReplicaSet"}),
    ("/apis/apps/v1/namespaces/{ns}/daemonsets",
     {**{k: v for k, v in deployment("web").items()}, "kind": "DaemonSet",
      "spec": {k: v for k, v in deployment("web")["spec"].items() if k != "replicas"}}),
    ("/apis/batch/v1/namespaces/{ns}/jobs",
     {"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "once"},
      "spec": {"template": {"spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "app", "image": "busybox:1.35"}]}}}}),
    ("/api/v1/nodes", {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "{ns}-node"}}),
]


def _fill(value, ns):
    if isinstance(value, str):
        return value.replace("{ns}", ns)
    if isinstance(value, dict):
        return {k: _fill(v, ns) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ns) for v in value]
    return value


@pytest.mark.parametrize("collection,body", EXAMPLES, ids=[b["kind"] for _, b in EXAMPLES])
def test_crud_for_every_kind(api, namespace, collection, body):
    collection, body = _fill(collection, namespace), _fill(body, namespace)
    name = body["metadata"]["name"]
    created = api.post(collection, body)
    assert created.status_code == 201, created.text
    obj = created.json()
    meta = obj["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert obj["kind"] == body["kind"] and obj["apiVersion"] == body["apiVersion"]

    got = api.get(f"{collection}/{name}").json()
    assert got == obj
    listed = api.get(collection).json()
    assert listed["kind"] == body["kind"] + "List"
    assert name in [o["metadata"]["name"] for o in listed["items"]]

    got["metadata"].setdefault("labels", {})["changed"] = "yes"
    updated = api.put(f"{collection}/{name}", got)
    assert updated.status_code == 200, updated.text
    assert updated.json()["metadata"]["labels"]["changed"] == "yes"
    assert int(updated.json()["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    patched = api.patch(f"{collection}/{name}", {"metadata": {"annotations": {"note": "hi"}}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["annotations"] == {"note": "hi"}

    assert api.delete(f"{collection}/{name}").status_code == 200
    gone = api.get(f"{collection}/{name}")
    assert gone.status_code == 404 and gone.json()["reason"] == "NotFound"


def test_create_fills_server_fields_and_kind_from_the_url(api, namespace):
    body = {"metadata": {"generateName": "web-"},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}   # as the Python client sends it
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", body).json()
    assert created["kind"] == "Pod" and created["apiVersion"] == "v1"
    assert created["metadata"]["name"].startswith("web-") and len(created["metadata"]["name"]) == 9
    assert created["metadata"]["namespace"] == namespace
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert created["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"  # defaults


def test_create_twice_is_409_already_exists(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert api.post(path, pod("web")).status_code == 201
    again = api.post(path, pod("web"))
    assert again.status_code == 409
    assert again.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": 'pods "web" already exists', "reason": "AlreadyExists",
                            "details": {"name": "web", "kind": "pods"}, "code": 409}


def test_stale_update_is_409_conflict(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    first = api.post(path, {"metadata": {"name": "c"}, "data": {"n": "1"}}).json()
    second = dict(first, data={"n": "2"})
    assert api.put(f"{path}/c", second).status_code == 200
    stale = dict(first, data={"n": "3"})                    # still carries the first resourceVersion
    response = api.put(f"{path}/c", stale)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"
    assert response.json()["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been '
                                          'modified; please apply your changes to the latest version and try again')
    assert api.get(f"{path}/c").json()["data"] == {"n": "2"}


def test_a_stale_update_is_409_even_when_the_old_copy_would_now_be_invalid(api):
    # A controller holding a node from before the node IPAM controller gave
    # it a podCIDR: its update would "unset" podCIDR, which validation
    # forbids. Kubernetes checks the resourceVersion first: the answer is
    # 409 (re-read and retry), not 422 (your object is wrong).
    name = f"stale-{uuid.uuid4().hex[:6]}"
    before = api.post("/api/v1/nodes", {"metadata": {"name": name}}).json()
    given = dict(before, spec={"podCIDR": "10.244.9.0/24", "podCIDRs": ["10.244.9.0/24"]})
    assert api.put(f"/api/v1/nodes/{name}", given).status_code == 200
    stale = dict(before, spec={"taints": [{"key": "k", "effect": "NoSchedule"}]})
    response = api.put(f"/api/v1/nodes/{name}", stale)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict", response.text
    api.delete(f"/api/v1/nodes/{name}")


def test_invalid_pod_is_422_with_a_cause_per_field(api, namespace):
    body = pod("bad")
    body["spec"]["containers"] = [{"name": "app"}, {"name": "app", "image": "x", "ports": [{"containerPort": 70000}]}]
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", body)
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid" and status["message"].startswith('Pod "bad" is invalid: [')
    fields = {c["field"]: c["reason"] for c in status["details"]["causes"]}
    assert fields["spec.containers[0].image"] == "FieldValueRequired"
    assert fields["spec.containers[1].name"] == "FieldValueDuplicate"
    assert fields["spec.containers[1].ports[0].containerPort"] == "FieldValueInvalid"


def test_a_422_still_warns_of_the_fields_it_dropped(api, namespace):
    """A misspelt field is dropped (fieldValidation=Warn, what a client that
    says nothing gets), and what is missing then is refused: the Warning
    header is the only clue to why, so it comes with the 422 too."""
    body = pod("typo")
    body["spec"]["containerz"] = body["spec"].pop("containers")
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", body)
    assert response.status_code == 422, response.text
    assert response.json()["message"] == 'Pod "typo" is invalid: spec.containers: Required value'
    assert response.headers.get("Warning") == '299 - "unknown field \\"spec.containerz\\""'


def test_a_missing_name_is_422_as_kubectl_prints_it(api, namespace):
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {}})
    assert response.status_code == 422
    assert response.json()["details"]["causes"][0]["field"] == "metadata.name"


def test_namespace_must_exist(api):
    response = api.post("/api/v1/namespaces/no-such-ns/pods", pod("web"))
    assert response.status_code == 404 and response.json()["message"] == 'namespaces "no-such-ns" not found'


def test_label_and_field_selectors(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, pod("a", labels={"app": "web", "tier": "front"}))
    api.post(path, pod("b", labels={"app": "web", "tier": "db"}))
    api.post(path, pod("c", labels={"app": "api"}, nodeName="node1"))

    def names(query):
        response = api.get(path + query)
        assert response.status_code == 200, response.text
        return sorted(o["metadata"]["name"] for o in response.json()["items"])
    assert names("?labelSelector=app%3Dweb") == ["a", "b"]
    assert names("?labelSelector=app+in+(web,api),tier!=db") == ["a", "c"]
    assert names("?labelSelector=!tier") == ["c"]
    assert names("?fieldSelector=spec.nodeName%3Dnode1") == ["c"]
    assert names("?fieldSelector=spec.nodeName%3D") == ["a", "b"]
    assert names("?fieldSelector=metadata.name!%3Da,status.phase%3DPending") == ["b", "c"]
    bad = api.get(path + "?fieldSelector=spec.image%3Dx")
    assert bad.status_code == 400 and "field label not supported: spec.image" in bad.json()["message"]
    bad = api.get(path + "?labelSelector=app+in+web")
    assert bad.status_code == 400 and "labelSelector" in bad.json()["message"]


def test_list_across_namespaces(api, namespace):
    api.post(f"/api/v1/namespaces/{namespace}/pods", pod("everywhere"))
    items = api.get("/api/v1/pods").json()["items"]
    assert (namespace, "everywhere") in [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items]


def test_pagination_with_limit_and_continue(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(7):
        api.post(path, {"metadata": {"name": f"c{i}"}})
    seen, token = [], None
    for _ in range(10):                   # 7 items in pages of 3: three pages, never a loop
        page = api.get(path, params={"limit": 3, **({"continue": token} if token else {})}).json()
        seen += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] == 7 - len(seen)
    assert seen == [f"c{i}" for i in range(7)]
    assert api.get(path, params={"continue": "garbage"}).status_code == 400


def test_a_forged_continue_token_is_a_400_not_a_500(api, namespace):
    """A token is the client's to send back unchanged; one made up is its mistake."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "only"}})

    def token(state) -> str:
        return base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
    for forged in ({"rv": True, "start": [namespace, "a"]}, {"rv": -1, "start": [namespace, "a"]},
                   {"rv": 1, "start": [namespace]}, ["not", "an", "object"]):
        answer = api.get(path, params={"limit": 1, "continue": token(forged)})
        assert answer.status_code == 400 and "invalid continue token" in answer.json()["message"], forged
    # A revision from the future: etcd cannot serve it (400); the JSON files page what they have.
    answer = api.get(path, params={"limit": 1, "continue": token({"rv": 10 ** 9, "start": [namespace, "a"]})})
    assert answer.status_code in (200, 400), answer.text


# A list's query as Kubernetes checks it (issue 35): a value that does not
# parse is 400; options that contradict each other are 422 Invalid on the
# kind ListOptions (ValidateListOptions); what storage refuses is 400 again.
# {continue} is a real token of the list, {rv} its current version.
LIST_QUERIES = [
    # name, query, code, reason, words in the message
    ("a field value with a second ==", "fieldSelector=metadata.name%3D%3Dx%3D%3Dy", 400, "BadRequest",
     "invalid field selector: unescaped character in value"),
    ("a field value with a bad escape", "fieldSelector=metadata.name%3Dx%5Cy", 400, "BadRequest",
     "invalid escape sequence"),
    ("resourceVersionMatch of garbage", "resourceVersion={rv}&resourceVersionMatch=Sometime", 422, "Invalid",
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Sometime": '
     'supported values: "Exact", "NotOlderThan", ""'),
    ("resourceVersionMatch without a resourceVersion", "resourceVersionMatch=NotOlderThan", 422, "Invalid",
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ("Exact at resourceVersion 0", "resourceVersion=0&resourceVersionMatch=Exact", 422, "Invalid",
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ("resourceVersionMatch with continue", "continue={continue}&resourceVersion={rv}&resourceVersionMatch=Exact",
     422, "Invalid", "resourceVersionMatch is forbidden when continue is provided"),
    ("continue with a resourceVersion", "continue={continue}&resourceVersion={rv}", 400, "BadRequest",
     "specifying resource version is not allowed when using continue"),
    ("a limit of 2^63", "limit=9223372036854775808", 400, "BadRequest", "limit must be a 64-bit integer"),
    ("a limit that is not a number", "limit=ten", 400, "BadRequest", "limit must be a 64-bit integer"),
    ("a limit with spaces", "limit=%201", 400, "BadRequest", "limit must be a 64-bit integer"),
    ("a negative limit", "limit=-1", 400, "BadRequest", "limit must be at least 0"),
    ("a watch with resourceVersionMatch", "watch=true&resourceVersion={rv}&resourceVersionMatch=NotOlderThan",
     422, "Invalid", "resourceVersionMatch is forbidden for watch"),
    ("a watch timeout of 2^63", "watch=true&timeoutSeconds=9223372036854775808", 400, "BadRequest",
     "timeoutSeconds must be a 64-bit integer"),
]


@pytest.mark.parametrize("query, code, reason, words", [case[1:] for case in LIST_QUERIES],
                         ids=[case[0] for case in LIST_QUERIES])
def test_list_options_are_checked_as_kubernetes_checks_them(api, namespace, query, code, reason, words):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        api.post(path, {"metadata": {"name": name}})
    first = api.get(path, params={"limit": 1}).json()["metadata"]
    answer = api.get(f"{path}?" + query.format(**{"continue": first["continue"], "rv": first["resourceVersion"]}))
    assert (answer.status_code, answer.json()["reason"]) == (code, reason), answer.text
    assert words in answer.json()["message"]
    if code == 422:
        assert answer.json()["details"]["causes"][0]["field"] == "resourceVersionMatch"


@pytest.mark.parametrize("match", ["", "NotOlderThan", "Exact"])
def test_a_list_at_a_version_not_reached_yet_is_504_too_large(api, namespace, match):
    """Kubernetes waits a moment for the version (another API server may
    have written it), then says so; the present is not an answer to it."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    current = int(api.get(path).json()["metadata"]["resourceVersion"])
    answer = api.get(path, params={"resourceVersion": current + 1000,
                                   **({"resourceVersionMatch": match} if match else {})})
    assert answer.status_code == 504, answer.text
    status = answer.json()
    assert status["reason"] == "Timeout"
    assert status["message"].startswith(f"Timeout: Too large resource version: {current + 1000}, current: ")
    assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]


def test_an_exact_list_is_that_version_or_410(api, namespace, apiserver_on_each_backend):
    """etcd keeps old revisions: an Exact list is the objects as they were.
    The JSON files keep only the present: an older version is 410 Expired,
    never the present under an old number."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    old = api.post(path, {"metadata": {"name": "a"}}).json()["metadata"]["resourceVersion"]
    api.post(path, {"metadata": {"name": "b"}})
    now = api.get(path).json()["metadata"]["resourceVersion"]
    at_now = api.get(path, params={"resourceVersion": now, "resourceVersionMatch": "Exact"})
    assert at_now.status_code == 200 and at_now.json()["metadata"]["resourceVersion"] == now, at_now.text
    assert [o["metadata"]["name"] for o in at_now.json()["items"]] == ["a", "b"]
    at_old = api.get(path, params={"resourceVersion": old, "resourceVersionMatch": "Exact"})
    if "etcd3" in apiserver_on_each_backend.extra:
        assert at_old.status_code == 200, at_old.text
        assert at_old.json()["metadata"]["resourceVersion"] == old
        assert [o["metadata"]["name"] for o in at_old.json()["items"]] == ["a"]
    else:
        assert (at_old.status_code, at_old.json()["reason"]) == (410, "Expired"), at_old.text
        assert at_old.json()["message"] == "The resourceVersion for the provided list is too old."
    # Not older than `old`: the present is that.
    newer = api.get(path, params={"resourceVersion": old, "resourceVersionMatch": "NotOlderThan"})
    assert [o["metadata"]["name"] for o in newer.json()["items"]] == ["a", "b"]


@pytest.mark.parametrize("value, watches", [("maybe", True), ("", True), ("TRUE", True), ("1", True),
                                            ("false", False), ("0", False), ("False", False)])
def test_watch_is_read_as_go_reads_a_query_bool(api, namespace, value, watches):
    """Kubernetes: only absent, "false" and "0" are false; anything else,
    "maybe" too, asks for a watch (runtime.Convert_Slice_string_To_bool)."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "a"}})
    with api.get(path, params={"watch": value, "timeoutSeconds": 1}, stream=True) as answer:
        first = json.loads(next(answer.iter_lines()))
    assert ("type" in first) == watches and (first.get("kind") == "ConfigMapList") == (not watches), first


def test_finalizers_keep_an_object_until_cleared(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}})
    marked = api.delete(f"{path}/held")
    assert marked.status_code == 200
    assert marked.json()["metadata"]["deletionTimestamp"]
    assert api.get(f"{path}/held").status_code == 200                 # still there
    cleared = api.patch(f"{path}/held", {"metadata": {"finalizers": None}})
    assert cleared.status_code == 200
    assert api.get(f"{path}/held").status_code == 404                 # gone once cleared


def test_status_subresource_and_main_resource_do_not_overwrite_each_other(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, pod("web"))
    status = api.patch(f"{path}/web/status", {"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}})
    assert status.status_code == 200, status.text
    assert status.json()["status"]["phase"] == "Running" and "nodeName" not in status.json()["spec"]
    main = api.patch(f"{path}/web", {"status": {"phase": "Failed"}, "metadata": {"labels": {"a": "b"}}})
    assert main.json()["status"]["phase"] == "Running" and main.json()["metadata"]["labels"] == {"a": "b"}


def test_generation_counts_spec_changes_only(api, namespace):
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    api.post(path, deployment("web"))
    assert api.patch(f"{path}/web", {"metadata": {"labels": {"x": "y"}}}).json()["metadata"]["generation"] == 1
    assert api.patch(f"{path}/web", {"spec": {"replicas": 5}}).json()["metadata"]["generation"] == 2


def test_scale_subresource(api, namespace):
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    api.post(path, deployment("web", replicas=2))
    scale = api.get(f"{path}/web/scale").json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"]["selector"] == "app=web"
    patched = api.patch(f"{path}/web/scale", {"spec": {"replicas": 4}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["replicas"] == 4
    assert api.get(f"{path}/web").json()["spec"]["replicas"] == 4
    negative = api.patch(f"{path}/web/scale", {"spec": {"replicas": -1}})
    assert negative.status_code == 422


def test_binding_assigns_a_node_once(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, pod("web"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node1"}}
    assert api.post(f"{path}/web/binding", binding).status_code == 201
    bound = api.get(f"{path}/web").json()
    assert bound["spec"]["nodeName"] == "node1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    again = api.post(f"{path}/web/binding", dict(binding, target={"kind": "Node", "name": "node2"}))
    assert again.status_code == 409 and 'already assigned to node "node1"' in again.json()["message"]


def test_delete_collection_by_label(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        api.post(path, {"metadata": {"name": name, "labels": {"tier": tier}}})
    response = api.delete(path + "?labelSelector=tier%3Dx")
    assert response.status_code == 200
    assert sorted(o["metadata"]["name"] for o in response.json()["items"]) == ["a", "b"]
    assert [o["metadata"]["name"] for o in api.get(path).json()["items"]] == ["c"]


def test_deleting_a_namespace_deletes_its_contents(api):
    name = unique("gone")
    api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    api.post(f"/api/v1/namespaces/{name}/configmaps", {"metadata": {"name": "c"}})
    assert api.delete(f"/api/v1/namespaces/{name}").status_code == 200
    assert api.get(f"/api/v1/namespaces/{name}/configmaps/c").status_code == 404
    assert api.get(f"/api/v1/namespaces/{name}").status_code == 404
    assert api.delete("/api/v1/namespaces/default").status_code == 403


def test_dry_run_stores_nothing(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(path + "?dryRun=All", {"metadata": {"name": "maybe"}}).status_code == 201
    assert api.get(f"{path}/maybe").status_code == 404


def test_discovery_and_version(api):
    version = api.get("/version").json()
    assert (version["major"], version["minor"]) == ("1", "32")
    assert api.get("/api").json()["versions"] == ["v1"]
    groups = {g["name"] for g in api.get("/apis").json()["groups"]}
    assert groups == {"apps", "batch", "coordination.k8s.io", "discovery.k8s.io", "authorization.k8s.io",
                      "authentication.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io",
                      "metrics.k8s.io", "networking.k8s.io", "storage.k8s.io"}
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert resources["pods"]["shortNames"] == ["po"] and resources["pods"]["namespaced"] is True
    assert "pods/status" in resources and "pods/log" in resources
    assert api.get("/apis/apps/v1").json()["groupVersion"] == "apps/v1"
    aggregated = api.get("/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert aggregated.headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert {g["metadata"]["name"] for g in aggregated.json()["items"]} == groups
    for health in ("/healthz", "/readyz", "/livez"):
        assert api.get(health).text == "ok"


def test_table_for_kubectl_get(api, namespace):
    api.post(f"/api/v1/namespaces/{namespace}/pods", pod("web"))
    table = api.get(f"/api/v1/namespaces/{namespace}/pods",
                    headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert table["rows"][0]["cells"][:4] == ["web", "0/1", "Pending", "0"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_a_body_without_content_type_is_json(api, namespace):
    """The official Python client sends create and replace bodies with no
    Content-Type; Kubernetes reads those as JSON, its first media type."""
    path = f"{api.url}/api/v1/namespaces/{namespace}/configmaps"
    created = api.session.post(path, data=b'{"metadata": {"name": "plain"}, "data": {"a": "b"}}', timeout=30)
    assert "Content-Type" not in created.request.headers
    assert created.status_code == 201, created.text
    # A patch still has to say which of the four kinds of patch it is.
    patched = api.session.patch(f"{path}/plain", data=b'{"data": {"a": "c"}}', timeout=30)
    assert patched.status_code == 415 and "merge-patch" in patched.json()["message"]


@pytest.mark.parametrize("path", ["/version/", "/api/", "/api/v1/", "/apis/", "/apis/apps/", "/apis/apps/v1/"])
def test_discovery_with_a_trailing_slash(api, path):
    """The official Python client asks for /api/v1/ and /apis/: Kubernetes
    serves discovery with or without the slash."""
    response = api.get(path)
    assert response.status_code == 200, response.text
    assert response.json() == api.get(path.rstrip("/")).json()


def test_delete_answers_as_kubernetes_does(api, namespace):
    """A pod or service that is gone comes back as the object; other kinds
    answer a Status naming what went (the Python client types them so);
    something only marked for deletion comes back as the object."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    api.post(pods, pod("web"))
    assert api.delete(f"{pods}/web").json()["kind"] == "Pod"
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    uid = api.post(deployments, deployment("web")).json()["metadata"]["uid"]
    status = api.delete(f"{deployments}/web").json()
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"] == {"name": "web", "group": "apps", "kind": "deployments", "uid": uid}
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(configmaps, {"metadata": {"name": "held", "finalizers": ["example.com/keep"]}})
    assert api.delete(f"{configmaps}/held").json()["metadata"]["deletionTimestamp"]


def test_putting_the_same_manifest_again_changes_nothing(api, namespace):
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    first = api.post(path, deployment("same")).json()
    body = dict(deployment("same"))          # as sent the first time: no defaults, no resourceVersion
    again = api.put(f"{path}/same", body).json()
    assert again["metadata"]["generation"] == 1
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_a_delete_decides_again_when_the_object_changes_under_it(api, namespace):
    """A DELETE reads the object, decides (delete now, or mark), then writes.
    If a controller writes the object in between, Kubernetes' DELETE decides
    again on the latest version (its GuaranteedUpdate retries); the client
    sees a 409 only for a precondition of its own. Here a writer relabels
    the objects as fast as it can while each is deleted: no DELETE may fail."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    names = [f"busy-{n}" for n in range(40)]
    setup = Client(api.url)
    for name in names:
        assert setup.post(path, {"metadata": {"name": name, "finalizers": ["example.com/keep"]}}).status_code == 201
    stop = threading.Event()

    def relabel():
        writer, n = Client(api.url), 0
        while not stop.is_set():
            n += 1
            writer.patch(f"{path}/{names[n % len(names)]}", {"metadata": {"labels": {"n": str(n)}}})

    writers = [threading.Thread(target=relabel) for _ in range(3)]
    for writer in writers:
        writer.start()
    try:
        replies = [setup.delete(f"{path}/{name}") for name in names]
        answers = [reply.status_code for reply in replies]
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert answers == [200] * len(names), [reply.text for reply in replies if reply.status_code != 200]
    # The precondition is still the client's: a stale resourceVersion is refused.
    stale = setup.get(f"{path}/{names[0]}").json()["metadata"]["resourceVersion"]
    setup.patch(f"{path}/{names[0]}", {"metadata": {"labels": {"moved": "on"}}})
    refused = setup.delete(f"{path}/{names[0]}", {"preconditions": {"resourceVersion": stale}})
    assert refused.status_code == 409 and "Precondition failed" in refused.json()["message"]
