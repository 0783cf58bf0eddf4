"""persistentVolumeClaim volumes (01-kubelet/api_volumes/persistent.py): a real
kubelet, API server and controller manager (the binder and the local-path
provisioner), and Docker. No scheduler: pods name their node, and where the
scheduler would write its choice on a claim, the test writes it."""
from __future__ import annotations

import shutil
import sys

import pytest

from apiserver_harness import ROOT, APIServer, Client
from harness import Kubelet
from polling import wait_for
from test_api_volumes import Cluster, sleeper

sys.path.insert(0, str(ROOT / "tests" / "controllers"))
from controllers_harness import ControllerManager  # noqa: E402

NS = "/api/v1/namespaces/default"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client):
    tmp = tmp_path_factory.mktemp("claim-volumes")
    volumes = tmp / "local-path"
    server = APIServer(tmp / "data").start()
    manager = ControllerManager(server.url, tmp, "--local-path-root", str(volumes)).start()
    kubelet = Kubelet(tmp, docker_client, None, "--apiserver", server.url, "--root-dir", str(tmp / "root"),
                      "--local-path-root", str(volumes), "--node-status-update-frequency", "1")
    try:
        kubelet.start()
        api = Client(server.url)
        wait_for(lambda: api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, timeout=30,
                 what="the node to register")
        found = Cluster(api, kubelet, server, tmp / "root")
        found.volumes = volumes
        yield found
    finally:
        try:
            kubelet.cleanup()
        finally:
            manager.stop()
            server.stop()
            shutil.rmtree(f"/dev/shm/groundup-kubelet/{kubelet.node_name}", ignore_errors=True)


def claim(cluster, name: str, storage_class: str | None = None, node: str | None = None, **spec) -> dict:
    body = {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}
    if storage_class is not None:
        body["spec"]["storageClassName"] = storage_class
    if node:
        body["metadata"]["annotations"] = {SELECTED_NODE: node}     # as the scheduler writes it
    return cluster.create("persistentvolumeclaims", body)


def bound(cluster, name: str) -> dict:
    def check():
        found = cluster.api.get(f"{NS}/persistentvolumeclaims/{name}").json()
        return found if found.get("status", {}).get("phase") == "Bound" else None
    return wait_for(check, 30, what=f"claim {name} to be Bound")


def using(claim_name: str, read_only: bool = False) -> dict:
    return {"name": "data", "persistentVolumeClaim": {"claimName": claim_name, "readOnly": read_only}}


def writer(command: str) -> dict:
    return sleeper(command=["sh", "-c", f"{command} && trap 'exit 0' TERM; sleep 3600 & wait"],
                   volumeMounts=[{"name": "data", "mountPath": "/data"}])


def test_data_written_in_a_pod_is_there_for_the_next_pod_on_the_node(cluster):
    made = claim(cluster, "notes", node=cluster.kubelet.node_name)
    volume = bound(cluster, "notes")["spec"]["volumeName"]
    assert volume == f"pvc-{made['metadata']['uid']}"
    cluster.run("first", [writer("echo written by first > /data/greeting")], [using("notes")])
    cluster.wait_running("first")
    directory = cluster.volumes / volume
    assert (directory / "greeting").read_text() == "written by first\n"

    cluster.delete_pod("first")
    assert (directory / "greeting").read_text() == "written by first\n"      # the pod went, the data stayed
    cluster.run("second", [sleeper(volumeMounts=[{"name": "data", "mountPath": "/data"}])], [using("notes")])
    cluster.wait_running("second")
    assert cluster.sh("second", "cat /data/greeting") == "written by first\n"
    cluster.delete_pod("second")

    # The claim goes: its Delete volume goes, and then the node removes the directory.
    cluster.delete("persistentvolumeclaims", "notes")
    wait_for(lambda: cluster.api.get(f"/api/v1/persistentvolumes/{volume}").status_code == 404, 30,
             what="the provisioned volume to be deleted")
    wait_for(lambda: not directory.exists(), 30, what="the kubelet to remove the volume's directory")


def test_a_pod_waits_with_an_event_while_its_claim_is_not_bound(cluster):
    claim(cluster, "later", storage_class="")
    cluster.run("patient", [writer("touch /data/ok")], [using("later")])
    event = cluster.event("patient", "FailedMount")
    assert event["message"] == "error processing PVC default/later: PVC is not bound"
    assert cluster.pod("patient")["status"]["phase"] == "Pending"
    # A volume that fits appears; the binder binds it, and the pod starts.
    directory = cluster.volumes.parent / "static-later"
    directory.mkdir()
    assert cluster.api.post("/api/v1/persistentvolumes", {
        "metadata": {"name": "static-later"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "local": {"path": str(directory)}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                     {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                            "values": [cluster.kubelet.node_name]}]}]}}}}).status_code == 201
    cluster.wait_running("patient")
    assert (directory / "ok").exists()
    cluster.delete_pod("patient")


def test_a_volume_pinned_to_another_node_is_never_mounted_here(cluster):
    directory = cluster.volumes.parent / "elsewhere"
    assert cluster.api.post("/api/v1/persistentvolumes", {
        "metadata": {"name": "on-other-node"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                 "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": ["other-node"]}]}]}}}}).status_code == 201
    claim(cluster, "theirs", storage_class="manual", volumeName="on-other-node")
    bound(cluster, "theirs")
    cluster.run("misplaced", [writer("touch /data/x")], [using("theirs")])
    event = cluster.event("misplaced", "FailedMount")
    assert event["message"].startswith('MountVolume.NodeAffinity check failed for volume "on-other-node"')
    assert not directory.exists()                     # no empty stand-in was made on this node
    cluster.delete_pod("misplaced")


def test_a_read_only_claim_volume_cannot_be_written(cluster):
    claim(cluster, "frozen", node=cluster.kubelet.node_name)
    bound(cluster, "frozen")
    cluster.run("reader", [sleeper(volumeMounts=[{"name": "data", "mountPath": "/data"}])],
                [using("frozen", read_only=True)])
    cluster.wait_running("reader")
    assert "Read-only file system" in cluster.sh("reader", "touch /data/x 2>&1")
    cluster.delete_pod("reader")
