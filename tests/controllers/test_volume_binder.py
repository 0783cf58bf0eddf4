"""The PersistentVolume binder and the local-path provisioner, against a real
API server and controller_manager.py. No scheduler and no kubelet: where the
scheduler would write its choice of node on a claim, the test writes it."""
from __future__ import annotations

import pytest

from controllers_harness import ControllerManager, make_namespace, unique, wait_for
from local_path import PROVISIONER

PVS = "/api/v1/persistentvolumes"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def claims(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims" + (f"/{name}" if name else "")


def volume(name: str, size: str, storage_class: str = "manual", node: str | None = None, **spec) -> dict:
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": storage_class, "hostPath": {"path": f"/tmp/{name}"}, **spec}}
    if node:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return body


def claim(name: str, size: str, storage_class: str | None = "manual", **spec) -> dict:
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}
    if storage_class is not None:
        body["spec"]["storageClassName"] = storage_class
    return body


def create(api, path: str, body: dict) -> dict:
    response = api.post(path, body)
    assert response.status_code == 201, response.text
    return response.json()


def bound_claim(api, namespace: str, name: str) -> dict:
    def check():
        found = api.get(claims(namespace, name)).json()
        return found if found.get("status", {}).get("phase") == "Bound" else None
    return wait_for(check, timeout=30, what=f"claim {namespace}/{name} to be Bound")


def volume_phase(api, name: str) -> str | None:
    response = api.get(f"{PVS}/{name}")
    return response.json()["status"].get("phase") if response.status_code == 200 else None


def events_about(api, namespace: str, name: str) -> list[str]:
    items = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    return [f"{e['reason']}: {e['message']}" for e in items if e["involvedObject"]["name"] == name]


# ----- binding -----

def test_a_claim_binds_the_smallest_volume_that_fits_and_both_sides_say_so(api, manager):
    ns, prefix = make_namespace(api), unique("pv")
    for suffix, size in (("small", "1Gi"), ("medium", "2Gi"), ("big", "5Gi")):
        create(api, PVS, volume(f"{prefix}-{suffix}", size))
    created = create(api, claims(ns), claim("data", "1500Mi"))

    bound = bound_claim(api, ns, "data")
    assert bound["spec"]["volumeName"] == f"{prefix}-medium"
    annotations = bound["metadata"]["annotations"]
    assert (annotations[BIND_COMPLETED], annotations[BOUND_BY_CONTROLLER]) == ("yes", "yes")
    assert bound["status"]["capacity"] == {"storage": "2Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce"]
    pv = wait_for(lambda: (v := api.get(f"{PVS}/{prefix}-medium").json())["status"]["phase"] == "Bound" and v,
                  what="the volume to be Bound")
    assert pv["spec"]["claimRef"]["uid"] == created["metadata"]["uid"]
    assert (pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"]) == (ns, "data")
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    # The others are free for the next claims.
    wait_for(lambda: volume_phase(api, f"{prefix}-small") == "Available" == volume_phase(api, f"{prefix}-big"),
             what="the other volumes to be Available")


def test_a_claim_no_volume_can_serve_waits_and_says_why(api, manager):
    ns = make_namespace(api)
    create(api, PVS, volume(unique("pv"), "1Gi", storage_class=""))
    create(api, claims(ns), claim("huge", "100Gi", storage_class=""))
    wait_for(lambda: "FailedBinding: no persistent volumes available for this claim and no storage class is set"
             in events_about(api, ns, "huge"), what="the FailedBinding event")
    assert api.get(claims(ns, "huge")).json()["status"]["phase"] == "Pending"

    create(api, claims(ns), claim("lost", "1Gi", storage_class="nonesuch"))
    wait_for(lambda: 'ProvisioningFailed: storageclass.storage.k8s.io "nonesuch" not found'
             in events_about(api, ns, "lost"), what="the ProvisioningFailed event")


def test_a_claim_that_names_its_volume_gets_that_one(api, manager):
    ns, name = make_namespace(api), unique("pv")
    create(api, PVS, volume(name, "10Gi"))
    create(api, PVS, volume(unique("pv"), "1Gi"))              # smaller, but not the one asked for
    create(api, claims(ns), claim("mine", "1Gi", volumeName=name))
    bound = bound_claim(api, ns, "mine")
    assert bound["spec"]["volumeName"] == name
    assert BOUND_BY_CONTROLLER not in bound["metadata"]["annotations"]     # the user chose


def test_a_retained_volume_keeps_its_claim_ref_and_waits_for_an_administrator(api, manager):
    ns, name = make_namespace(api), unique("pv")
    create(api, PVS, volume(name, "1Gi", persistentVolumeReclaimPolicy="Retain"))
    create(api, claims(ns), claim("data", "1Gi"))
    bound_claim(api, ns, "data")
    assert api.delete(claims(ns, "data")).status_code == 200
    wait_for(lambda: volume_phase(api, name) == "Released", what="the volume to be Released")
    # A new claim does not get it: its data belongs to the old one.
    create(api, claims(ns), claim("next", "1Gi"))
    wait_for(lambda: any("ProvisioningFailed" in e for e in events_about(api, ns, "next")), what="next to fail")
    assert api.get(claims(ns, "next")).json()["status"]["phase"] == "Pending"


def test_a_delete_volume_no_provisioner_made_fails_with_the_reason(api, manager):
    ns, name = make_namespace(api), unique("pv")
    create(api, PVS, volume(name, "1Gi", persistentVolumeReclaimPolicy="Delete"))
    create(api, claims(ns), claim("data", "1Gi"))
    bound_claim(api, ns, "data")
    assert api.delete(claims(ns, "data")).status_code == 200
    failed = wait_for(lambda: (v := api.get(f"{PVS}/{name}").json())["status"].get("phase") == "Failed" and v,
                      what="the volume to be Failed")
    assert "no deletable volume plugin matched" in failed["status"]["message"]


# ----- WaitForFirstConsumer and the local-path provisioner -----

def test_a_new_cluster_has_a_default_local_path_class(api, manager, apiserver, tmp_path):
    local = wait_for(lambda: (r := api.get(f"{CLASSES}/local-path")).status_code == 200 and r.json(),
                     what="the local-path class")
    assert (local["provisioner"], local["volumeBindingMode"], local["reclaimPolicy"]) == (
        PROVISIONER, "WaitForFirstConsumer", "Delete")
    assert local["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    # A second controller manager (or a restart) leaves it as it is.
    second = ControllerManager(apiserver.url, tmp_path).start()
    try:
        wait_for(lambda: "local-path-provisioner" in second.log(), what="the second manager to start")
        assert api.get(f"{CLASSES}/local-path").json()["metadata"]["resourceVersion"] == \
            local["metadata"]["resourceVersion"]
    finally:
        second.stop()


def test_a_claim_of_the_default_class_waits_for_a_node_then_gets_a_directory_there(api, apiserver, tmp_path):
    root = str(tmp_path / "volumes")
    manager = ControllerManager(apiserver.url, tmp_path, "--local-path-root", root).start()
    try:
        ns = make_namespace(api)
        made = create(api, claims(ns), claim("data", "2Gi", storage_class=None))
        wait_for(lambda: api.get(claims(ns, "data")).json()["spec"].get("storageClassName") == "local-path",
                 what="the default class to be given to the claim")
        wait_for(lambda: "WaitForFirstConsumer: waiting for first consumer to be created before binding"
                 in events_about(api, ns, "data"), what="the WaitForFirstConsumer event")
        assert api.get(PVS).json()["items"] == []

        # What the scheduler does once a pod using the claim has a node.
        assert api.patch(claims(ns, "data"), {"metadata": {"annotations": {SELECTED_NODE: "node2"}}}).status_code == 200
        bound = bound_claim(api, ns, "data")
        name = f"pvc-{made['metadata']['uid']}"
        assert bound["spec"]["volumeName"] == name
        pv = api.get(f"{PVS}/{name}").json()
        assert pv["spec"]["hostPath"] == {"path": f"{root}/{name}", "type": "DirectoryOrCreate"}
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] == [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node2"]}]
        assert (pv["spec"]["capacity"], pv["spec"]["persistentVolumeReclaimPolicy"]) == ({"storage": "2Gi"}, "Delete")
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == PROVISIONER
        reasons = [e.split(":")[0] for e in events_about(api, ns, "data")]
        assert {"ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"} <= set(reasons)

        # Delete: the claim goes, then its volume.
        assert api.delete(claims(ns, "data")).status_code == 200
        wait_for(lambda: api.get(f"{PVS}/{name}").status_code == 404, what="the provisioned volume to be deleted")
    finally:
        manager.stop()


def test_waiting_claims_bind_a_static_local_volume_on_the_chosen_node(api, manager):
    ns, prefix = make_namespace(api), unique("disk")
    create(api, CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": prefix}, "provisioner": "kubernetes.io/no-provisioner",
                          "volumeBindingMode": "WaitForFirstConsumer"})
    create(api, PVS, volume(f"{prefix}-on-node1", "1Gi", prefix, node="node1"))
    create(api, PVS, volume(f"{prefix}-on-node2", "1Gi", prefix, node="node2"))
    create(api, claims(ns), claim("data", "1Gi", prefix))
    wait_for(lambda: any(e.startswith("WaitForFirstConsumer") for e in events_about(api, ns, "data")),
             what="the claim to wait")
    assert api.patch(claims(ns, "data"), {"metadata": {"annotations": {SELECTED_NODE: "node2"}}}).status_code == 200
    assert bound_claim(api, ns, "data")["spec"]["volumeName"] == f"{prefix}-on-node2"


@pytest.mark.parametrize("modes", [["ReadWriteMany"], ["ReadOnlyMany"]])
def test_local_path_refuses_access_from_many_nodes(api, manager, modes):
    ns = make_namespace(api)
    shared = claim("shared", "1Gi", storage_class="local-path", accessModes=modes)
    shared["metadata"]["annotations"] = {SELECTED_NODE: "node1"}     # as if a pod were scheduled there
    create(api, claims(ns), shared)
    wait_for(lambda: any("ProvisioningFailed: local-path volumes support only ReadWriteOnce and ReadWriteOncePod"
                         in e for e in events_about(api, ns, "shared")), what="the ProvisioningFailed event")
    assert api.get(PVS).json()["items"] == []


def test_binding_survives_a_controller_manager_killed_and_restarted(api, apiserver, tmp_path):
    manager = ControllerManager(apiserver.url, tmp_path).start()
    ns, name = make_namespace(api), unique("pv")
    manager.kill()
    create(api, PVS, volume(name, "1Gi"))
    create(api, claims(ns), claim("data", "1Gi"))
    restarted = ControllerManager(apiserver.url, tmp_path).start()
    try:
        assert bound_claim(api, ns, "data")["spec"]["volumeName"] == name
    finally:
        restarted.stop()


# ----- pvc-protection -----

def test_a_claim_in_use_is_not_deleted_under_its_pod(api, manager):
    ns, name = make_namespace(api), unique("pv")
    create(api, PVS, volume(name, "1Gi", persistentVolumeReclaimPolicy="Delete"))
    create(api, claims(ns), claim("data", "1Gi"))
    bound_claim(api, ns, "data")
    wait_for(lambda: "kubernetes.io/pvc-protection" in (api.get(claims(ns, "data")).json()["metadata"]
                                                      .get("finalizers") or []), what="the protection finalizer")
    create(api, f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db"},
        "spec": {"nodeName": "node1", "containers": [{"name": "db", "image": "busybox:1.35"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}})
    assert api.delete(claims(ns, "data")).status_code == 200
    marked = api.get(claims(ns, "data")).json()
    assert marked["metadata"]["deletionTimestamp"]                # Terminating, not gone
    assert volume_phase(api, name) == "Bound"
    # The pod goes (as its kubelet would finish it): the claim may go, and its volume is released.
    assert api.delete(f"/api/v1/namespaces/{ns}/pods/db?gracePeriodSeconds=0").status_code == 200
    wait_for(lambda: api.get(claims(ns, "data")).status_code == 404, what="the claim to go")
    wait_for(lambda: volume_phase(api, name) == "Failed", what="the volume to be released (Failed: no deleter)")
