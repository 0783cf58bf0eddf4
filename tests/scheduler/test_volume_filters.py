"""The volume filters, VolumeBinding and VolumeRestrictions: table-driven with
Kubernetes' reason strings, then end to end with a real scheduler and
controller manager (a claim of the default class follows its pod's node)."""
from __future__ import annotations

import sys

import pytest

from framework import Framework
from scheduler_harness import ROOT, make_pod, node_info, wait_for
from volume_filters import (BIND_CONFLICT, NODE_CONFLICT, PV_NOT_EXIST, RWOP_CONFLICT, UNBOUND_IMMEDIATE,
                            VolumeBinding, VolumeRestrictions)

sys.path.insert(0, str(ROOT / "tests" / "controllers"))
from controllers_harness import ControllerManager  # noqa: E402


def claim(name, *, volume="", storage_class="local", modes=("ReadWriteOnce",), size="1Gi", selected=None,
          deleting=False):
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": {}}
    if selected:
        meta["annotations"]["volume.kubernetes.io/selected-node"] = selected
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"accessModes": list(modes), "storageClassName": storage_class,
                                       "resources": {"requests": {"storage": size}},
                                       **({"volumeName": volume} if volume else {})}}


def volume(name, node=None, size="1Gi", storage_class="local", claim_ref=None):
    body = {"metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": storage_class, "hostPath": {"path": f"/tmp/{name}"}},
            "status": {"phase": "Bound" if claim_ref else "Available"}}
    if claim_ref:
        body["spec"]["claimRef"] = {"namespace": "default", "name": claim_ref, "uid": f"uid-{claim_ref}"}
    if node:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return body


CLASSES = {
    "local": {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
              "volumeBindingMode": "WaitForFirstConsumer"},
    "local-path": {"metadata": {"name": "local-path"}, "provisioner": "groundup.local/local-path",
                   "volumeBindingMode": "WaitForFirstConsumer"},
    "immediate": {"metadata": {"name": "immediate"}, "provisioner": "example.com/disks",
                  "volumeBindingMode": "Immediate"},
}


def pod_using(*claims, name="web"):
    return make_pod(name, volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                   for i, c in enumerate(claims)])


def schedule(plugin, pod, nodes):
    return Framework([plugin], []).schedule(pod, nodes)


def binding(claims, volumes):
    by_name = {c["metadata"]["name"]: c for c in claims}
    return VolumeBinding(lambda ns, name: by_name.get(name), lambda: volumes, lambda ns, name: CLASSES.get(name))


NODES = ("node1", "node2")


@pytest.mark.parametrize("claims, volumes, expected", [
    # Bound to a volume on node2: only node2.
    ([claim("data", volume="pv2")], [volume("pv2", "node2", claim_ref="data")],
     {"node1": (NODE_CONFLICT,), "node2": ()}),
    # Bound to a volume reachable from anywhere.
    ([claim("data", volume="nfs")], [volume("nfs", claim_ref="data")], {"node1": (), "node2": ()}),
    # Bound to a volume that is gone.
    ([claim("data", volume="gone")], [], {"node1": (PV_NOT_EXIST,), "node2": (PV_NOT_EXIST,)}),
    # Waiting for a node, with static local volumes on node1 only.
    ([claim("data")], [volume("pv1", "node1")], {"node1": (), "node2": (BIND_CONFLICT,)}),
    # Waiting, and the volume on node1 is too small.
    ([claim("data", size="5Gi")], [volume("pv1", "node1")], {"node1": (BIND_CONFLICT,), "node2": (BIND_CONFLICT,)}),
    # Two claims need two volumes: node1 has one, node2 has two.
    ([claim("a"), claim("b")], [volume("pv1", "node1"), volume("pv2a", "node2"), volume("pv2b", "node2")],
     {"node1": (BIND_CONFLICT,), "node2": ()}),
    # Waiting, and a provisioner can make a volume anywhere.
    ([claim("data", storage_class="local-path")], [], {"node1": (), "node2": ()}),
    # Its volume is being made on node2 already.
    ([claim("data", storage_class="local-path", selected="node2")], [], {"node1": (NODE_CONFLICT,), "node2": ()}),
])
def test_volume_binding_filter(claims, volumes, expected):
    pod = pod_using(*[c["metadata"]["name"] for c in claims])
    decision = schedule(binding(claims, volumes), pod, [node_info(n) for n in NODES])
    assert {n: decision.failures.get(n, (None, ()))[1] for n in NODES} == expected


@pytest.mark.parametrize("claims, message", [
    ([claim("data", storage_class="immediate")], f"0/2 nodes are available: {UNBOUND_IMMEDIATE}."),
    ([], '0/2 nodes are available: persistentvolumeclaim "data" not found.'),
    ([claim("data", deleting=True)], '0/2 nodes are available: persistentvolumeclaim "data" is being deleted.'),
])
def test_a_claim_no_node_can_help_rejects_the_pod_before_any_filter(claims, message):
    decision = schedule(binding(claims, []), pod_using("data"), [node_info(n) for n in NODES])
    assert (decision.node, decision.message, decision.failures) == (None, message, {})


def test_the_chosen_node_is_written_on_waiting_claims_only():
    written = []
    claims = {"wait": claim("wait", storage_class="local-path"), "bound": claim("bound", volume="pv")}
    plugin = VolumeBinding(lambda ns, name: claims.get(name), lambda: [], lambda ns, name: CLASSES.get(name),
                           lambda c, node: written.append((c["metadata"]["name"], node)))
    plugin.pre_bind(pod_using("wait", "bound"), "node2")
    assert written == [("wait", "node2")]


def test_a_pod_without_claims_is_none_of_volume_bindings_business():
    decision = schedule(binding([], []), make_pod("plain"), [node_info(n) for n in NODES])
    assert "VolumeBinding" in decision.skipped and decision.node


def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_off_every_node():
    one = claim("solo", modes=("ReadWriteOncePod",))
    restrictions = VolumeRestrictions(lambda ns, name: one if name == "solo" else claim(name))
    first = pod_using("solo", name="first")
    nodes = [node_info("node1", running=[first]), node_info("node2")]
    decision = schedule(restrictions, pod_using("solo", name="second"), nodes)
    assert decision.message == f"0/2 nodes are available: 2 {RWOP_CONFLICT}."
    # A ReadWriteOnce claim may be shared by pods on one node: no restriction.
    decision = schedule(restrictions, pod_using("shared", name="second"), nodes)
    assert "VolumeRestrictions" in decision.skipped
    # Once the first pod is gone, the claim is free.
    assert schedule(restrictions, pod_using("solo", name="second"), [node_info("node1"), node_info("node2")]).node


# ----- end to end -----

def claim_body(name, storage_class=None, **spec):
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}
    if storage_class is not None:
        body["spec"]["storageClassName"] = storage_class
    return body


def test_a_pod_and_its_claim_of_the_default_class_land_on_one_node(cluster):
    manager = ControllerManager(cluster.server.url, cluster.tmp, "--local-path-root", str(cluster.tmp / "vol")).start()
    try:
        for name in ("node1", "node2", "node3"):
            cluster.add_node(name)
        assert cluster.api.post("/api/v1/namespaces/default/persistentvolumeclaims",
                                claim_body("data")).status_code == 201
        cluster.scheduler()
        cluster.create_pod("db", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
        node = wait_for(lambda: cluster.pod("db")["spec"].get("nodeName"), what="db to be bound")
        claimed = wait_for(lambda: (c := cluster.api.get("/api/v1/namespaces/default/persistentvolumeclaims/data")
                                    .json())["status"]["phase"] == "Bound" and c, what="the claim to be Bound")
        assert claimed["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        pv = cluster.api.get(f"/api/v1/persistentvolumes/{claimed['spec']['volumeName']}").json()
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [node]

        # The pod goes; a new one with the same claim can only go where its data is.
        assert cluster.api.delete("/api/v1/namespaces/default/pods/db?gracePeriodSeconds=0").status_code == 200
        wait_for(lambda: cluster.api.get("/api/v1/namespaces/default/pods/db").status_code == 404, what="db gone")
        for again in ("db-2", "db-3"):
            cluster.create_pod(again, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
            assert wait_for(lambda: cluster.pod(again)["spec"].get("nodeName"), what=f"{again} bound") == node
    finally:
        manager.stop()


def test_unsatisfiable_claims_keep_their_pods_pending_with_kubernetes_reasons(cluster):
    cluster.add_node("node1")
    cluster.add_node("node2")
    api = cluster.api
    assert api.post("/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "manual"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}).status_code == 201
    # A local volume on a node that does not exist, and one too small on node1.
    for name, node, size in (("elsewhere", "node9", "10Gi"), ("tiny", "node1", "1Mi")):
        assert api.post("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                     "local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                         {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                "values": [node]}]}]}}}}).status_code == 201
    assert api.post("/api/v1/namespaces/default/persistentvolumeclaims",
                    claim_body("big", "manual")).status_code == 201
    assert api.post("/api/v1/namespaces/default/persistentvolumeclaims",
                    claim_body("now", "")).status_code == 201
    # Bound by hand to the volume on node9: its pod can go nowhere.
    assert api.post("/api/v1/namespaces/default/persistentvolumeclaims",
                    claim_body("pinned", "manual", volumeName="elsewhere")).status_code == 201
    cluster.scheduler()
    cluster.create_pod("wants-big", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "big"}}])
    cluster.create_pod("wants-now", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "now"}}])
    cluster.create_pod("wants-pinned", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "pinned"}}])
    cluster.create_pod("wants-nothing", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "nothing"}}])
    expected = {
        "wants-big": f"0/2 nodes are available: 2 {BIND_CONFLICT}.",
        "wants-now": f"0/2 nodes are available: {UNBOUND_IMMEDIATE}.",
        "wants-pinned": f"0/2 nodes are available: 2 {NODE_CONFLICT}.",
        "wants-nothing": '0/2 nodes are available: persistentvolumeclaim "nothing" not found.',
    }
    for pod, message in expected.items():
        wait_for(lambda: any(e["message"] == message for e in cluster.events(pod, "FailedScheduling")),
                 what=f"{pod}: {message}")
        assert cluster.pod(pod)["spec"].get("nodeName") is None


def test_two_pods_racing_for_one_read_write_once_pod_claim(cluster):
    cluster.add_node("node1")
    cluster.add_node("node2")
    api = cluster.api
    assert api.post("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "solo"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"], "storageClassName": "",
                 "hostPath": {"path": "/tmp/solo"}, "claimRef": {"namespace": "default", "name": "solo"}}}
                    ).status_code == 201
    # Bound by hand, as the binder would: the race is the scheduler's.
    assert api.post("/api/v1/namespaces/default/persistentvolumeclaims",
                    claim_body("solo", "", accessModes=["ReadWriteOncePod"], volumeName="solo")).status_code == 201
    cluster.scheduler()
    for name in ("racer-a", "racer-b"):
        cluster.create_pod(name, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "solo"}}])
    def one_bound_one_refused():
        placement = cluster.placement()
        settled = all(node or cluster.events(name, "FailedScheduling") for name, node in placement.items())
        return placement if settled and sum(1 for node in placement.values() if node) == 1 else None
    placement = wait_for(one_bound_one_refused, what="one racer bound and the other refused")
    loser = next(name for name, node in placement.items() if not node)
    assert [e["message"] for e in cluster.events(loser, "FailedScheduling")] == [
        f"0/2 nodes are available: 2 {RWOP_CONFLICT}."]
