"""Wrongly typed fields are refused on every write path, as Kubernetes'
decoder refuses them, so that nothing stored can break a typed client later.

The story behind these tests: a pod whose
nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution was a list (as an
older kubernetes.io example has it) was stored, and then `kubectl describe
pods` and the Python client's list_namespaced_pod failed for the whole
namespace. Also here: the other request checks of issue 14 (a list's
resourceVersion, a patched uid, a long fieldManager, the hostNetwork field
selector).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kubernetes import client

from apiserver_harness import deployment, pod

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "02-apiserver"))
from kubectl_compat import type_check  # noqa: E402

# The shape the old example had: a list where Kubernetes has an object.
LIST_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}]}}
AFFINITY_ERROR = ("json: cannot unmarshal array into Go struct field NodeAffinity.spec.affinity.nodeAffinity."
                  "requiredDuringSchedulingIgnoredDuringExecution of type v1.NodeSelector")
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


# ----- the check itself, table-driven -----

def container(**fields) -> dict:
    return {"spec": {"containers": [{"name": "app", "image": "nginx", **fields}]}}


@pytest.mark.parametrize("kind, obj, path, message", [
    ("Pod", {"spec": {"affinity": LIST_AFFINITY}},
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", AFFINITY_ERROR),
    ("Pod", {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "ssd"}}}},
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     "json: cannot unmarshal string into Go struct field NodeAffinity.spec.affinity.nodeAffinity."
     "requiredDuringSchedulingIgnoredDuringExecution of type v1.NodeSelector"),
    # Label and annotation values are strings: YAML's `true` and `1` are not.
    ("Pod", {"metadata": {"labels": {"ssd": True}}}, "metadata.labels.ssd",
     "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"),
    ("ConfigMap", {"metadata": {"annotations": {"n": 1}}}, "metadata.annotations.n",
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string"),
    ("ConfigMap", {"data": {"port": 8080}}, "data.port",
     "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
    # Go's path names struct fields only; ours has the indices.
    ("Pod", container(ports=[{"containerPort": "80"}]), "spec.containers[0].ports[0].containerPort",
     "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
     "of type int32"),
    ("Pod", container(ports=[{"containerPort": 80.5}]), "spec.containers[0].ports[0].containerPort",
     "json: cannot unmarshal number 80.5 into Go struct field ContainerPort.spec.containers.ports.containerPort "
     "of type int32"),
    ("Pod", container(ports=[{"containerPort": 2**31}]), "spec.containers[0].ports[0].containerPort",
     "json: cannot unmarshal number 2147483648 into Go struct field ContainerPort.spec.containers.ports."
     "containerPort of type int32"),
    ("Pod", {"spec": {"activeDeadlineSeconds": 2**63}}, "spec.activeDeadlineSeconds",
     "json: cannot unmarshal number 9223372036854775808 into Go struct field PodSpec.spec.activeDeadlineSeconds "
     "of type int64"),
    ("Pod", {"spec": {"hostNetwork": "true"}}, "spec.hostNetwork",
     "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"),
    ("Pod", {"spec": {"containers": ["nginx"]}}, "spec.containers[0]",
     "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type v1.Container"),
    ("Pod", {"spec": {"containers": {"name": "app"}}}, "spec.containers",
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
    # Types with their own Go decoder say it their own way.
    ("Pod", container(resources={"limits": {"cpu": True}}), "spec.containers[0].resources.limits.cpu",
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("Pod", container(livenessProbe={"tcpSocket": {"port": 1.5}}), "spec.containers[0].livenessProbe.tcpSocket.port",
     "json: cannot unmarshal number 1.5 into Go value of type int32"),
    ("Pod", {"status": {"startTime": 1700000000}}, "status.startTime",
     "json: cannot unmarshal number into Go value of type string"),
    ("Pod", {"status": {"startTime": "yesterday"}}, "status.startTime",
     'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 time such as 2006-01-02T15:04:05Z'),
    ("Deployment", {"spec": {"replicas": "3"}}, "spec.replicas",
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("Secret", {"data": {"password": 1234}}, "data.password",
     "json: cannot unmarshal number into Go struct field Secret.data of type []uint8"),
    ("Node", {"spec": {"unschedulable": "yes"}}, "spec.unschedulable",
     "json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool"),
], ids=lambda value: None)
def test_a_wrong_type_is_found_with_kubernetes_text(kind, obj, path, message):
    group, version = ("apps", "v1") if kind == "Deployment" else ("", "v1")
    found = type_check.first_mismatch(group, version, kind, obj)
    assert found is not None
    assert (found.path, found.decoder_message()) == (path, message)


@pytest.mark.parametrize("kind, obj", [
    ("Pod", container(resources={"limits": {"cpu": 1, "memory": "128Mi"}, "requests": {"cpu": 0.5}})),
    ("Pod", container(livenessProbe={"httpGet": {"port": "http"}}, readinessProbe={"tcpSocket": {"port": 80}})),
    ("Pod", {"spec": {"affinity": None, "nodeSelector": None}, "metadata": {"labels": {"a": None}}}),  # null is Go's zero
    ("Pod", {"status": {"startTime": "2026-11-22T08:36:33Z"}, "metadata": {"creationTimestamp": None}}),
    ("Pod", {"metadata": {"managedFields": [{"fieldsV1": {"f:spec": {}}, "manager": "x"}]}}),   # opaque
    ("Pod", {"spec": {"activeDeadlineSeconds": 2**63 - 1, "hostNetwork": False}}),
    ("Pod", {"spec": {"imagee": [1, 2, 3]}}),                        # unknown: field validation's business
    ("Lease", {"spec": {"renewTime": "2026-11-22T08:36:33.123456Z"}}),
    ("Event", {"eventTime": "2026-11-22T08:36:33.123456Z", "count": 2}),
    ("Secret", {"data": {"password": "cGFzcw=="}, "stringData": {"user": "me"}}),
], ids=lambda value: None)
def test_what_go_accepts_we_accept(kind, obj):
    group = "coordination.k8s.io" if kind == "Lease" else ""
    assert type_check.first_mismatch(group, "v1", kind, obj) is None


def test_apply_paths_name_list_items_by_key():
    found = type_check.first_mismatch("", "v1", "Pod", container(ports=[{"containerPort": "80", "protocol": "TCP"}]))
    assert found.apply_path() == '.spec.containers[name="app"].ports[containerPort="80",protocol="TCP"].containerPort'
    assert found.expected_word() == "int32"


# ----- against a real server: every write path -----

def pods(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


@pytest.fixture
def core(apiserver):
    config = client.Configuration()
    config.host = apiserver.url
    with client.ApiClient(config) as api_client:
        yield client.CoreV1Api(api_client)


def test_a_create_with_a_list_affinity_is_400_and_reads_stay_clean(api, namespace, core):
    api.post(pods(namespace), pod("good"))
    response = api.post(pods(namespace), pod("bad", affinity=LIST_AFFINITY))
    assert response.status_code == 400, response.text
    status = response.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == f'Pod in version "v1" cannot be handled as a Pod: {AFFINITY_ERROR}'
    assert status["details"]["causes"][0]["field"] == \
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    # The official client decodes every pod in the list into typed models.
    assert [p.metadata.name for p in core.list_namespaced_pod(namespace).items] == ["good"]


@pytest.mark.parametrize("field_validation", ["Strict", "Warn", "Ignore"])
def test_field_validation_does_not_let_a_wrong_type_through(api, namespace, field_validation):
    response = api.post(pods(namespace) + f"?fieldValidation={field_validation}",
                        pod("bad", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}))
    assert response.status_code == 400, response.text


def test_every_served_kind_is_checked(api, namespace):
    bad = deployment("web")
    bad["spec"]["replicas"] = "3"
    response = api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", bad)
    assert response.status_code == 400, response.text
    assert "Go struct field DeploymentSpec.spec.replicas of type int32" in response.json()["message"]
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "c"}, "data": {"n": 1}})
    assert response.status_code == 400, response.text
    response = api.post("/api/v1/nodes", {"metadata": {"name": "n-types", "labels": {"ssd": True}}})
    assert response.status_code == 400, response.text


def test_a_put_with_a_wrong_type_is_400(api, namespace):
    created = api.post(pods(namespace), pod("web")).json()
    created["spec"]["affinity"] = LIST_AFFINITY
    response = api.put(pods(namespace) + "/web", created)
    assert response.status_code == 400, response.text
    assert AFFINITY_ERROR in response.json()["message"]


@pytest.mark.parametrize("content_type, body", [
    (JSON_PATCH, [{"op": "add", "path": "/spec/affinity", "value": LIST_AFFINITY}]),
    (MERGE_PATCH, {"spec": {"affinity": LIST_AFFINITY}}),
    (STRATEGIC, {"spec": {"affinity": LIST_AFFINITY}}),
], ids=["json", "merge", "strategic"])
def test_a_patch_that_leaves_a_wrong_type_is_422_naming_the_object_and_field(api, namespace, core, content_type, body):
    """Kubernetes says `"" is invalid: patch: Invalid value: "{...the whole
    patched object...}"`; we name the kind, the object and the field, and
    show only the value found there (issue 35)."""
    big = pod("web")
    big["metadata"]["annotations"] = {"big": "x" * 100_000}
    api.post(pods(namespace), big)
    response = api.patch(pods(namespace) + "/web", body, content_type=content_type)
    assert response.status_code == 422, response.text
    status = response.json()
    field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    assert status["message"].startswith(f'Pod "web" is invalid: {field}: Invalid value: [{{"nodeSelectorTerms"')
    assert status["message"].endswith(AFFINITY_ERROR)
    assert len(status["message"]) < 600, "the object is echoed back"
    assert status["details"]["causes"][0]["field"] == field
    assert (status["details"]["kind"], status["details"]["name"]) == ("Pod", "web")
    assert core.read_namespaced_pod("web", namespace).spec.affinity is None


def test_a_patch_moving_a_number_into_annotations_is_refused(api, namespace):
    api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web"))
    response = api.patch(f"/apis/apps/v1/namespaces/{namespace}/deployments/web",
                         [{"op": "copy", "from": "/spec/replicas", "path": "/metadata/annotations"}],
                         content_type=JSON_PATCH)
    assert response.status_code == 422, response.text
    assert "Go struct field ObjectMeta.metadata.annotations of type map[string]string" in response.json()["message"]


@pytest.mark.parametrize("exists", [False, True], ids=["create", "update"])
def test_server_side_apply_with_a_wrong_type_is_400(api, namespace, core, exists):
    if exists:
        api.post(pods(namespace), pod("web"))
    manifest = {**pod("web", affinity=LIST_AFFINITY)}
    manifest["metadata"]["namespace"] = namespace
    response = api.patch(pods(namespace) + "/web?fieldManager=test", json.dumps(manifest), content_type=APPLY)
    assert response.status_code == 400, response.text
    assert response.json()["message"] == (
        f"failed to create typed patch object ({namespace}/web; /v1, Kind=Pod): "
        ".spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected map, got "
        + json.dumps(LIST_AFFINITY["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
                     separators=(",", ":")))
    assert [p.metadata.name for p in core.list_namespaced_pod(namespace).items] == (["web"] if exists else [])


@pytest.mark.parametrize("body", [b'{"metadata": {"name": "x"}, "spec": {"activeDeadlineSeconds": NaN}}',
                                  b'{"metadata": {"name": "x"}, "spec": {"x": 1e999}}'], ids=["nan", "infinity"])
def test_numbers_json_cannot_hold_are_refused(api, namespace, body):
    response = api.post(pods(namespace), body)
    assert response.status_code == 400, response.text
    assert "not valid JSON" in response.json()["message"]


# ----- the other request checks of issue 14 -----

@pytest.mark.parametrize("query", ["resourceVersion=abc", "resourceVersion=-1", "resourceVersion=1.5"])
def test_a_list_refuses_a_resource_version_that_is_not_one(api, namespace, query):
    response = api.get(pods(namespace) + "?" + query)
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("resourceVersion must be a positive number")


def test_a_list_takes_zero_and_a_real_resource_version(api, namespace):
    rv = api.get(pods(namespace)).json()["metadata"]["resourceVersion"]
    for value in ("0", rv):
        assert api.get(pods(namespace) + f"?resourceVersion={value}").status_code == 200


def test_a_patch_that_changes_the_uid_is_422_immutable(api, namespace):
    uid = api.post(pods(namespace), pod("web")).json()["metadata"]["uid"]
    response = api.patch(pods(namespace) + "/web", [{"op": "replace", "path": "/metadata/uid", "value": "other"}],
                         content_type=JSON_PATCH)
    assert response.status_code == 422, response.text
    assert response.json()["message"] == 'Pod "web" is invalid: metadata.uid: Invalid value: "other": field is immutable'
    assert api.get(pods(namespace) + "/web").json()["metadata"]["uid"] == uid
    # Leaving the uid out keeps the stored one, as in Kubernetes.
    response = api.patch(pods(namespace) + "/web", [{"op": "remove", "path": "/metadata/uid"}], content_type=JSON_PATCH)
    assert response.status_code == 200 and response.json()["metadata"]["uid"] == uid


@pytest.mark.parametrize("method, options", [("post", "CreateOptions"), ("put", "UpdateOptions"),
                                             ("patch", "PatchOptions")])
def test_a_field_manager_over_128_bytes_is_refused(api, namespace, method, options):
    api.post(pods(namespace), pod("web"))
    path = pods(namespace) + ("" if method == "post" else "/web")
    body = pod("web") if method != "patch" else {"metadata": {"labels": {"a": "b"}}}
    response = getattr(api, method)(path + "?fieldManager=" + "m" * 129, body)
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["message"] == (f'{options}.meta.k8s.io "" is invalid: '
                                 "fieldManager: Too long: may not be more than 128 bytes")
    assert (status["details"]["group"], status["details"]["kind"]) == ("meta.k8s.io", options)
    response = api.patch(pods(namespace) + "/web?fieldManager=" + "m" * 128, {"metadata": {"labels": {"a": "b"}}})
    assert response.status_code == 200, response.text


def test_a_field_manager_with_a_control_character_is_refused(api, namespace):
    response = api.post(pods(namespace) + "?fieldManager=me%07", pod("web"))
    assert response.status_code == 422, response.text
    assert response.json()["message"].endswith(
        'fieldManager: Invalid value: "me\\a": invalid character U+0007 (at position 2)')


def test_pods_select_on_host_network(api, namespace):
    api.post(pods(namespace), pod("host", hostNetwork=True))
    api.post(pods(namespace), pod("plain"))

    def names(selector: str) -> list[str]:
        response = api.get(pods(namespace) + "?fieldSelector=" + selector)
        assert response.status_code == 200, response.text
        return [p["metadata"]["name"] for p in response.json()["items"]]
    assert names("spec.hostNetwork=true") == ["host"]
    assert names("spec.hostNetwork=false") == ["plain"]      # absent means false, as Kubernetes' Go bool
    assert names("spec.hostNetwork!=true") == ["plain"]


# ----- the real kubectl -----

def test_kubectl_apply_of_a_list_affinity_says_what_is_wrong(kubectl, apiserver, api, namespace, tmp_path):
    from test_kubectl import Kubectl
    k = Kubectl(kubectl, apiserver.url, namespace, tmp_path)
    k("apply", "-f", k.manifest(pod("good"), "good.yaml"))
    stderr = k.fails("apply", "-f", k.manifest(pod("bad", affinity=LIST_AFFINITY), "bad.yaml"))
    assert f'Error from server (BadRequest): error when creating "{tmp_path / "bad.yaml"}": ' \
           f'Pod in version "v1" cannot be handled as a Pod: {AFFINITY_ERROR}' in stderr
    stderr = k.fails("apply", "--server-side", "-f", str(tmp_path / "bad.yaml"))
    assert "failed to create typed patch object" in stderr and "expected map, got" in stderr
    # Nothing bad was stored, so describe still reads the whole namespace.
    assert k("describe", "pods").startswith("Name:             good\n")   # aligned with "Service Account:"
