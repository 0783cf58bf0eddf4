"""Serving StatefulSet and ControllerRevision (apps/v1): defaults and
validation as Kubernetes has them, the scale subresource, and the real
kubectl applying kubernetes.io's StatefulSet basics manifest."""
from __future__ import annotations

import copy

import pytest

from apiserver_harness import ROOT
from common.model.defaults import apply_defaults
from common.model.validate import validate_object, validate_status_update
from test_kubectl import Kubectl, k, rows  # noqa: F401 (k is a fixture)

WEB_YAML = ROOT / "04-controllers" / "manifests" / "web.yaml"

TEMPLATE = {"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "busybox:1.35",
                                     "volumeMounts": [{"name": "www", "mountPath": "/www"}]}]}}
CLAIM = {"metadata": {"name": "www"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def sts(**spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
                     "template": copy.deepcopy(TEMPLATE), "volumeClaimTemplates": [copy.deepcopy(CLAIM)], **spec}}


def sts_path(namespace: str, name: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/statefulsets" + (f"/{name}" if name else "")


def messages(obj: dict, old: dict | None = None) -> list[str]:
    defaulted = apply_defaults("apps", "StatefulSet", copy.deepcopy(obj))
    return [str(e) for e in validate_object("apps", "StatefulSet", defaulted, old)]


# ----- defaults and validation, as tables -----

def test_defaults_are_kubernetes_own():
    spec = apply_defaults("apps", "StatefulSet", sts())["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    assert spec["template"]["spec"]["restartPolicy"] == "Always"


def test_on_delete_gets_no_partition():
    spec = apply_defaults("apps", "StatefulSet", sts(updateStrategy={"type": "OnDelete"}))["spec"]
    assert spec["updateStrategy"] == {"type": "OnDelete"}


def test_a_valid_set_and_kubernetes_io_s_manifest_pass():
    assert messages(sts()) == []


@pytest.mark.parametrize("change, expected", [
    ({"podManagementPolicy": "Random"},
     "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"),
    ({"updateStrategy": {"type": "Sometimes"}},
     "spec.updateStrategy.type: Invalid value: \"Sometimes\": must be 'RollingUpdate' or 'OnDelete'"),
    ({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
     "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"),
    ({"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
     "spec.updateStrategy.rollingUpdate: Invalid value"),
    ({"replicas": -2}, "spec.replicas: Invalid value: -2: must be greater than or equal to 0"),
    ({"ordinals": {"start": -1}}, "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"),
    ({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep"}},
     'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": '
     'supported values: "Retain", "Delete"'),
    ({"selector": {"matchLabels": {"app": "other"}}},
     'spec.template.metadata.labels: Invalid value: map[string]string{"app":"nginx"}: '
     '`selector` does not match template `labels`'),
    ({"selector": {}}, "spec.selector: Invalid value"),
    ({"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}},
     'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'),
    ({"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "activeDeadlineSeconds": 5}}},
     "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"),
    ({"volumeClaimTemplates": []},     # the mount of "www" now names nothing
     'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "www"'),
    ({"volumeClaimTemplates": [{"metadata": {}, "spec": CLAIM["spec"]}]},
     "spec.volumeClaimTemplates[0].metadata.name: Required value"),
    ({"volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {}}]},
     "spec.volumeClaimTemplates[0].spec.accessModes: Required value"),
])
def test_bad_sets_are_refused_with_the_field_named(change, expected):
    found = messages(sts(**change))
    assert any(m.startswith(expected) for m in found), found


@pytest.mark.parametrize("change, allowed", [
    ({"replicas": 5}, True),
    ({"template": {**TEMPLATE, "metadata": {"labels": {"app": "nginx", "v": "2"}}}}, True),
    ({"updateStrategy": {"type": "OnDelete"}}, True),
    ({"minReadySeconds": 3}, True),
    ({"serviceName": "other"}, False),
    ({"podManagementPolicy": "Parallel"}, False),
    ({"volumeClaimTemplates": [{**CLAIM, "metadata": {"name": "data"}}]}, False),
])
def test_only_some_fields_may_change(change, allowed):
    old = apply_defaults("apps", "StatefulSet", sts())
    old["metadata"].update(uid="u1", creationTimestamp="2026-01-01T00:00:00Z")
    new = copy.deepcopy(old)
    new["spec"].update(copy.deepcopy(change))
    found = [str(e) for e in validate_object("apps", "StatefulSet", apply_defaults("apps", "StatefulSet", new), old)]
    if allowed:
        assert found == []
    else:
        assert "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', " \
               "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and " \
               "'minReadySeconds' are forbidden" in found


def test_status_counts_cannot_be_negative_or_exceed_replicas():
    obj = apply_defaults("apps", "StatefulSet", sts())
    obj["status"] = {"replicas": 2, "readyReplicas": 3, "currentReplicas": -1}
    found = [str(e) for e in validate_status_update("apps", "StatefulSet", obj, None)]
    assert "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0" in found
    assert "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas" in found


def test_a_controller_revision_needs_data_and_keeps_it():
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": "web-abc", "namespace": "default"}, "revision": 1}
    assert [str(e) for e in validate_object("apps", "ControllerRevision", revision)] == ["data: Required value"]
    revision["data"] = {"spec": {"template": {"$patch": "replace"}}}
    assert validate_object("apps", "ControllerRevision", revision) == []
    changed = {**revision, "data": {"spec": {}}, "revision": 2}
    assert [str(e) for e in validate_object("apps", "ControllerRevision", changed, revision)] == [
        'data: Invalid value: "": field is immutable']


# ----- through the API server -----

def test_the_scale_subresource_of_a_set(api, namespace):
    body = sts(replicas=2)
    del body["metadata"]["namespace"]
    created = api.post(sts_path(namespace), body)
    assert created.status_code == 201, created.text
    scale = api.get(sts_path(namespace, "web") + "/scale").json()
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["selector"]) == ("Scale", 2, "app=nginx")
    assert api.patch(sts_path(namespace, "web") + "/scale", {"spec": {"replicas": 4}}).status_code == 200
    assert api.get(sts_path(namespace, "web")).json()["spec"]["replicas"] == 4


def test_kubectl_applies_web_yaml_gets_and_scales_it(k):
    assert k("apply", "-f", str(WEB_YAML)).splitlines() == ["service/nginx created", "statefulset.apps/web created"]
    table = rows(k("get", "sts"))
    assert table == [["NAME", "READY", "AGE"], ["web", "0/2", table[1][2]]]
    assert k("get", "statefulsets.apps", "web", "-o", "jsonpath={.spec.podManagementPolicy}") == "OrderedReady"
    assert k("scale", "sts", "web", "--replicas=5").strip() == "statefulset.apps/web scaled"
    assert k("get", "sts", "web", "-o", "jsonpath={.spec.replicas}") == "5"
    assert k("apply", "-f", str(WEB_YAML)).splitlines() == ["service/nginx unchanged", "statefulset.apps/web configured"]
    assert "statefulset.apps/web" in k("get", "all")
    wide = rows(k("get", "sts", "-o", "wide"))
    assert wide[0] == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert wide[1][3:] == ["nginx", "busybox:1.35"]


def test_kubectl_refuses_a_change_to_a_fixed_field(k):
    k("apply", "-f", str(WEB_YAML))
    out = k.fails("patch", "sts", "web", "--type=merge", "-p", '{"spec":{"serviceName":"other"}}')
    assert "updates to statefulset spec for fields other than" in out


def test_kubectl_prints_controller_revisions(k, api, namespace):
    k("apply", "-f", str(WEB_YAML))
    owner = api.get(sts_path(namespace, "web")).json()
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": "web-5d4b7c", "labels": {"app": "nginx"},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                                  "uid": owner["metadata"]["uid"], "controller": True}]},
                "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 1}
    response = api.post(f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions", revision)
    assert response.status_code == 201, response.text
    table = rows(k("get", "controllerrevisions"))
    assert table[0] == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert table[1][:3] == ["web-5d4b7c", "statefulset.apps/web", "1"]
