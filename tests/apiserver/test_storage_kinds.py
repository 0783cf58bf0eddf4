"""Serving storage: v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1
StorageClass. Defaults, validation with Kubernetes' messages, what may change
on update, the real kubectl's tables, and the default roles that let the
scheduler, the kubelets and the users at them."""
from __future__ import annotations

import re
import time

import pytest

from apiserver_harness import APIServer, Client, unique
from test_kubectl import Kubectl, k  # noqa: F401 (k is a fixture)
from test_rbac import certs, server  # noqa: F401 (fixtures: a server with RBAC)
from test_gauntlet import as_user
from polling import wait_for

PVS = "/api/v1/persistentvolumes"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


def claims(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims" + (f"/{name}" if name else "")


def volume(name: str, size: str = "1Gi", **spec) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/tmp/{name}"}, **spec}}


def claim(name: str, size: str = "1Gi", **spec) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def storage_class(name: str, **fields) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "example.com/disks", **fields}


ON_NODE1 = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node1"]}]}]}}


# ----- defaults -----

def test_kubernetes_defaults_fill_in_volumes_claims_and_classes(api, namespace):
    pv = api.post(PVS, volume(unique("pv")))
    assert pv.status_code == 201, pv.text
    spec, status = pv.json()["spec"], pv.json()["status"]
    assert (spec["persistentVolumeReclaimPolicy"], spec["volumeMode"], status["phase"]) == (
        "Retain", "Filesystem", "Pending")
    assert "namespace" not in pv.json()["metadata"]           # a volume belongs to the cluster

    pvc = api.post(claims(namespace), claim("data"))
    assert pvc.status_code == 201, pvc.text
    assert (pvc.json()["spec"]["volumeMode"], pvc.json()["status"]["phase"]) == ("Filesystem", "Pending")

    sc = api.post(CLASSES, storage_class(unique("sc")))
    assert sc.status_code == 201, sc.text
    assert (sc.json()["reclaimPolicy"], sc.json()["volumeBindingMode"]) == ("Delete", "Immediate")


def test_status_sent_with_a_new_volume_is_the_servers_to_set(api):
    body = {**volume(unique("pv")), "status": {"phase": "Bound"}}
    assert api.post(PVS, body).json()["status"]["phase"] == "Pending"


# ----- validation -----

@pytest.mark.parametrize("change, message", [
    ({"accessModes": []}, "spec.accessModes: Required value"),
    ({"accessModes": ["ReadWriteSometimes"]}, 'spec.accessModes: Unsupported value: "ReadWriteSometimes": '
     'supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'),
    ({"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]},
     "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
    ({"capacity": {"storage": "0"}}, 'spec.capacity[storage]: Invalid value: "0": must be greater than zero'),
    ({"capacity": {"storage": "1Gi", "cpu": "1"}}, "spec.capacity: Unsupported value"),
    ({"capacity": {"storage": "lots"}}, "spec.capacity[storage]: Invalid value"),
    ({"persistentVolumeReclaimPolicy": "Shred"}, 'spec.persistentVolumeReclaimPolicy: Unsupported value: "Shred"'),
    ({"volumeMode": "Tape"}, 'spec.volumeMode: Unsupported value: "Tape": supported values: "Block", "Filesystem"'),
    ({"storageClassName": "Fast_Disks"}, 'spec.storageClassName: Invalid value: "Fast_Disks"'),
    ({"hostPath": None}, "spec: Required value: must specify a volume type"),
    ({"nfs": {"server": "n", "path": "/x"}}, "spec.nfs: Forbidden: may not specify more than 1 volume type"),
    ({"hostPath": {"path": "/data/../etc"}}, "spec.hostPath.path: Invalid value: \"/data/../etc\": must not contain '..'"),
    ({"hostPath": None, "local": {"path": "/mnt/disk"}},
     "spec.nodeAffinity: Required value: Local volume requires node affinity"),
    ({"hostPath": None, "local": {"path": "mnt/disk"}, "nodeAffinity": ON_NODE1},
     'spec.local.path: Invalid value: "mnt/disk": must be an absolute path'),
    # A node affinity that names no node at all.
    ({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": []}]}]}}},
     "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: "
     "must be specified when `operator` is 'In' or 'NotIn'"),
    ({"nodeAffinity": {"required": {"nodeSelectorTerms": []}}},
     "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"),
    ({"nodeAffinity": {}}, "spec.nodeAffinity.required: Required value: must specify required node constraints"),
    ({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "Near", "values": ["a"]}]}]}}},
     'spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": '
     "not a valid selector operator"),
])
def test_invalid_volumes_are_refused_naming_the_field(api, change, message):
    body = volume(unique("pv"))
    body["spec"] = {k: v for k, v in {**body["spec"], **change}.items() if v is not None}
    response = api.post(PVS, body)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


@pytest.mark.parametrize("change, message", [
    ({"accessModes": []}, "spec.accessModes: Required value: at least 1 access mode is required"),
    ({"resources": {}}, "spec.resources[storage]: Required value"),
    ({"resources": {"requests": {"storage": "-1Gi"}}}, "spec.resources[storage]: Invalid value"),
    ({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]},
     "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
    ({"selector": {"matchLabels": {"tier": "not ok!"}}}, "spec.selector.matchLabels: Invalid value"),
    ({"storageClassName": "UPPER"}, 'spec.storageClassName: Invalid value: "UPPER"'),
])
def test_invalid_claims_are_refused_naming_the_field(api, namespace, change, message):
    body = claim("bad")
    body["spec"].update(change)
    response = api.post(claims(namespace), body)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


@pytest.mark.parametrize("fields, message", [
    ({"provisioner": ""}, "provisioner: Required value"),
    ({"provisioner": "not a name"}, 'provisioner: Invalid value: "not a name"'),
    ({"reclaimPolicy": "Recycle"}, 'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'),
    ({"volumeBindingMode": "Later"}, 'volumeBindingMode: Unsupported value: "Later": '
     'supported values: "Immediate", "WaitForFirstConsumer"'),
])
def test_invalid_classes_are_refused_naming_the_field(api, fields, message):
    response = api.post(CLASSES, storage_class(unique("sc"), **fields))
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


def test_a_parameter_that_is_not_a_string_is_a_decode_error(api):
    """As for Kubernetes, which cannot read 5 into a map of strings (400, not 422)."""
    response = api.post(CLASSES, storage_class(unique("sc"), parameters={"size": 5}))
    assert response.status_code == 400, response.text
    assert "cannot unmarshal number into Go struct field StorageClass.parameters of type string" \
        in response.json()["message"]


# ----- updates -----

def test_a_claim_is_fixed_once_made_but_the_binder_may_name_its_volume_once(api, namespace):
    assert api.post(claims(namespace), claim("fixed")).status_code == 201
    bigger = api.patch(claims(namespace, "fixed"), {"spec": {"accessModes": ["ReadWriteMany"]}})
    assert bigger.status_code == 422
    assert "spec: Forbidden: spec is immutable after creation" in bigger.json()["message"]
    named = api.patch(claims(namespace, "fixed"), {"spec": {"volumeName": "pv-a"}})
    assert named.status_code == 200, named.text
    renamed = api.patch(claims(namespace, "fixed"), {"spec": {"volumeName": "pv-b"}})
    assert renamed.status_code == 422


def test_a_claim_without_a_class_may_be_given_one_later(api, namespace):
    """What DefaultStorageClass does for claims made before a default existed."""
    assert api.post(claims(namespace), claim("classless")).status_code == 201
    given = api.patch(claims(namespace, "classless"), {"spec": {"storageClassName": "standard"}})
    assert given.status_code == 200, given.text
    changed = api.patch(claims(namespace, "classless"), {"spec": {"storageClassName": "other"}})
    assert changed.status_code == 422


def test_where_a_volumes_data_is_never_changes(api):
    name = unique("pv")
    assert api.post(PVS, volume(name)).status_code == 201
    moved = api.patch(f"{PVS}/{name}", {"spec": {"hostPath": {"path": "/elsewhere"}}})
    assert moved.status_code == 422
    assert "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation" \
        in moved.json()["message"]
    # Labels, the claimRef and the reclaim policy may change (the binder and users do).
    relabelled = api.patch(f"{PVS}/{name}", {"metadata": {"labels": {"tier": "fast"}},
                                             "spec": {"persistentVolumeReclaimPolicy": "Delete"}})
    assert relabelled.status_code == 200, relabelled.text


def test_the_status_subresource_moves_only_the_phase(api, namespace):
    name = unique("pv")
    assert api.post(PVS, volume(name)).status_code == 201
    current = api.get(f"{PVS}/{name}").json()
    current["status"] = {"phase": "Available"}
    current["spec"]["capacity"] = {"storage": "100Gi"}       # ignored: /status writes status only
    response = api.put(f"{PVS}/{name}/status", current)
    assert response.status_code == 200, response.text
    assert (response.json()["status"]["phase"], response.json()["spec"]["capacity"]) == (
        "Available", {"storage": "1Gi"})
    current = response.json()
    current["status"] = {"phase": "Lost"}                     # a claim's phase, not a volume's
    refused = api.put(f"{PVS}/{name}/status", current)
    assert refused.status_code == 422
    assert 'status.phase: Unsupported value: "Lost"' in refused.json()["message"]


def test_a_classs_rules_stay_as_its_volumes_were_made(api):
    name = unique("sc")
    assert api.post(CLASSES, storage_class(name)).status_code == 201
    for change, message in (({"provisioner": "other.io/x"}, "provisioner: Forbidden: updates to provisioner are forbidden."),
                            ({"reclaimPolicy": "Retain"}, "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden."),
                            ({"parameters": {"a": "b"}}, "parameters: Forbidden: updates to parameters are forbidden."),
                            ({"volumeBindingMode": "WaitForFirstConsumer"}, "volumeBindingMode: Invalid value")):
        response = api.patch(f"{CLASSES}/{name}", change)
        assert response.status_code == 422, change
        assert message in response.json()["message"]
    assert api.patch(f"{CLASSES}/{name}", {"allowVolumeExpansion": True}).status_code == 200


# ----- the real kubectl -----

def header(table: str) -> list[str]:
    """The column names of kubectl's table (some hold a space: ACCESS MODES)."""
    return re.split(r"\s{2,}", table.splitlines()[0].strip())


def test_kubectl_knows_the_short_names(k):
    resources = k("api-resources", "--no-headers")
    lines = {line.split()[0]: line.split() for line in resources.splitlines()}
    assert lines["persistentvolumes"][1:3] == ["pv", "v1"]
    assert lines["persistentvolumeclaims"][1:3] == ["pvc", "v1"]
    assert lines["storageclasses"][1:3] == ["sc", "storage.k8s.io/v1"]


def test_kubectl_get_pv_pvc_and_sc_print_kubernetes_columns(k, api, namespace):
    pv_name, sc_name, plain_sc = unique("pv"), unique("local"), unique("plain")
    assert api.post(CLASSES, storage_class(sc_name, volumeBindingMode="WaitForFirstConsumer", metadata={
        "name": sc_name, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}})).status_code == 201
    assert api.post(CLASSES, storage_class(plain_sc, reclaimPolicy="Retain", allowVolumeExpansion=True)).status_code == 201
    assert api.post(PVS, volume(pv_name, "5Gi", storageClassName=sc_name,
                                accessModes=["ReadWriteOnce", "ReadOnlyMany"])).status_code == 201
    assert api.post(claims(namespace), claim("data", "2Gi", storageClassName=sc_name)).status_code == 201

    classes = k("get", "sc")
    assert header(classes) == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                               "ALLOWVOLUMEEXPANSION", "AGE"]
    by_name = {line.split()[0]: line.split() for line in classes.splitlines()[1:]}
    assert by_name[sc_name][1:6] == ["(default)", "example.com/disks", "Delete", "WaitForFirstConsumer", "false"]
    assert by_name[plain_sc][1:5] == ["example.com/disks", "Retain", "Immediate", "true"]

    volumes = k("get", "pv", pv_name)
    assert header(volumes) == ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM",
                               "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"]
    assert volumes.splitlines()[1].split()[:7] == [pv_name, "5Gi", "RWO,ROX", "Retain", "Pending", sc_name, "<unset>"]

    # The default mark would give every later claim on this shared server its class.
    assert api.delete(f"{CLASSES}/{sc_name}").status_code == 200
    pending = k("get", "pvc", "data")
    assert header(pending) == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
                               "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert pending.splitlines()[1].split()[:4] == ["data", "Pending", sc_name, "<unset>"]

    # Bound by hand, as the binder will do it: the claim then shows its volume's size and modes.
    assert api.patch(claims(namespace, "data"), {"spec": {"volumeName": pv_name}}).status_code == 200
    bound = api.get(claims(namespace, "data")).json()
    bound["status"] = {"phase": "Bound", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}
    assert api.put(claims(namespace, "data") + "/status", bound).status_code == 200
    wide = k("get", "pvc", "data", "-o", "wide")
    assert header(wide)[-1] == "VOLUMEMODE"
    cells = wide.splitlines()[1].split()
    assert cells[:7] == ["data", "Bound", pv_name, "5Gi", "RWO,ROX", sc_name, "<unset>"]
    assert cells[-1] == "Filesystem"


def test_kubectl_apply_and_describe_a_claim(k, namespace):
    path = k.manifest(claim("from-file", "3Gi"))
    assert "persistentvolumeclaim/from-file created" in k("apply", "-f", path)
    described = k("describe", "pvc", "from-file")
    assert "Status:" in described and "Pending" in described


# ----- DefaultStorageClass admission -----

def test_a_claim_without_a_class_gets_the_default_one(tmp_path):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        assert api.post(claims("default"), claim("before")).json()["spec"].get("storageClassName") is None
        assert api.post(CLASSES, storage_class("plain")).status_code == 201
        for name in ("old-default", "new-default"):
            marked = storage_class(name)
            marked["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
            assert api.post(CLASSES, marked).status_code == 201
            wait_for_a_new_second()
        got = api.post(claims("default"), claim("after")).json()["spec"]["storageClassName"]
        listed = [(c["metadata"]["name"], c["metadata"]["creationTimestamp"], c["metadata"].get("annotations")) for c in api.get(CLASSES).json()["items"]]
        assert got == "new-default", listed
        # "" says "no class" on purpose; a class named is kept.
        assert api.post(claims("default"), claim("none", storageClassName="")).json()["spec"]["storageClassName"] == ""
        assert api.post(claims("default"), claim("named", storageClassName="plain")).json()["spec"][
            "storageClassName"] == "plain"
    finally:
        server.stop()


def wait_for_a_new_second() -> None:
    """creationTimestamp has whole seconds: two classes made within one are equally new."""
    start = int(time.time())
    wait_for(lambda: int(time.time()) > start, timeout=3, interval=0.05, what="the next second")


# ----- who may -----

def test_the_default_roles_let_each_component_and_user_at_storage(server, certs):  # noqa: F811
    admin = as_user(server, certs, "admin")
    ns = unique("storage")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": ns}}).status_code == 201
    assert admin.post(claims(ns), claim("data")).status_code == 201
    scheduler = as_user(server, certs, "scheduler")
    assert scheduler.get(PVS).status_code == 200
    assert scheduler.get(CLASSES).status_code == 200
    # Its choice of node for a WaitForFirstConsumer claim is written on the claim.
    chosen = scheduler.patch(claims(ns, "data"), {"metadata": {"annotations": {
        "volume.kubernetes.io/selected-node": "node1"}}})
    assert chosen.status_code == 200, chosen.text
    assert scheduler.delete(claims(ns, "data")).status_code == 403
    manager = as_user(server, certs, "controller-manager")
    assert manager.post(PVS, volume(unique("pv"))).status_code == 201
    assert manager.post(CLASSES, storage_class(unique("sc"))).status_code == 201
    alice = as_user(server, certs, "alice")        # no role at all
    assert alice.get(claims(ns)).status_code == 403
