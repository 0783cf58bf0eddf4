"""The local-path provisioner: a new volume for every claim of the default class.

Without it, a claim waits for an administrator to make a PersistentVolume
by hand. With it, every cluster has storage out of the box, as kind and k3s
do with Rancher's local-path-provisioner, whose behaviour this follows:

- At start, the controller manager makes sure a StorageClass `local-path`
  exists (marked as the default, unless another class already is), with
  `volumeBindingMode: WaitForFirstConsumer`: a directory lives on one node,
  so the volume must be made where the claim's first pod is scheduled.
- When the binder has found no existing volume for a claim of that class and
  the scheduler has chosen a node (`volume.kubernetes.io/selected-node`), it
  makes a PersistentVolume `pvc-<claim uid>`: a hostPath directory
  ROOT/pvc-<claim uid> on that node, pinned there by nodeAffinity, already
  reserved for the claim (claimRef). The binder then binds the two.
- When a Delete volume of ours is Released (its claim is gone), it deletes
  the PersistentVolume object.

The directory itself is the node's business: this controller runs on the
control plane and cannot reach a node's disk. The kubelet creates it on
first mount (hostPath type DirectoryOrCreate) and removes it once its
PersistentVolume no longer exists (01-kubelet/api_volumes/persistent.py).
"""
from __future__ import annotations

from common.client.client import AlreadyExists, NotFound
from common.model.lenient import as_dict, as_list, as_str, dig
from common.model.persistent_volumes import (DEFAULT_CLASS, HOSTNAME_LABEL, LOCAL_PATH_ROOT, PROVISIONED_BY,
                                             SELECTED_NODE, STORAGE_PROVISIONER, class_of, default_class)
from controller import Controller, split_key

PROVISIONER = "groundup.local/local-path"
DEFAULT_CLASS_NAME = "local-path"
DEFAULT_ROOT = LOCAL_PATH_ROOT
# A directory on one node can be written from that node only.
SUPPORTED_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


def default_storage_class(is_default: bool) -> dict:
    annotations = {DEFAULT_CLASS: "true"} if is_default else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS_NAME, "annotations": annotations},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"}


# [START local-path-volume]
def volume_for(claim: dict, storage_class: dict, node: str, root: str) -> dict:
    """The PersistentVolume for one claim: a directory on `node`, for this claim only."""
    meta = claim["metadata"]
    name = f"pvc-{meta['uid']}"
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
            "spec": {
                "capacity": {"storage": as_str(dig(claim, "spec", "resources", "requests", "storage"))},
                "accessModes": as_list(dig(claim, "spec", "accessModes")),
                "persistentVolumeReclaimPolicy": as_str(storage_class.get("reclaimPolicy")) or "Delete",
                "storageClassName": storage_class["metadata"]["name"],
                "volumeMode": "Filesystem",
                "hostPath": {"path": f"{root.rstrip('/')}/{name}", "type": "DirectoryOrCreate"},
                # Only that node has the directory: pods using it must run there.
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}},
                # Made for this claim: the binder gives it to no other.
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
                             "name": meta["name"], "uid": meta["uid"]},
            }}
# [END local-path-volume]


class LocalPathProvisioner(Controller):
    name = "local-path-provisioner"

    def __init__(self, *args, root: str = DEFAULT_ROOT, **kwargs):
        super().__init__(*args, **kwargs)
        self.root = root
        self.claims = self.informers.get("v1", "persistentvolumeclaims")
        self.volumes = self.informers.get("v1", "persistentvolumes")
        self.classes = self.informers.get("storage.k8s.io/v1", "storageclasses")
        self.claims.add_handler(on_add=self.claim_changed, on_update=lambda old, new: self.claim_changed(new))
        self.volumes.add_handler(on_add=self.volume_changed, on_update=lambda old, new: self.volume_changed(new))

    def claim_changed(self, claim: dict) -> None:
        self.queue.add(f"claim:{claim['metadata']['namespace']}/{claim['metadata']['name']}")

    def volume_changed(self, volume: dict) -> None:
        self.queue.add("volume:" + volume["metadata"]["name"])

    def start(self) -> None:
        super().start()
        self.queue.add("default-class:")   # through the queue, so a refused write is retried

    def ensure_default_class(self) -> None:
        """Idempotent: a class named local-path is left as it is, whoever made it."""
        if self.classes.get(None, DEFAULT_CLASS_NAME) is not None:
            return
        is_default = default_class(self.classes.list()) is None
        try:
            self.client.create("storage.k8s.io/v1", "storageclasses", default_storage_class(is_default))
            self.log.info("created the default storage class", name=DEFAULT_CLASS_NAME, default=is_default)
        except AlreadyExists:
            pass                     # another controller manager (or a restart) made it first

    def reconcile(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "default-class":
            self.ensure_default_class()
        elif kind == "claim":
            namespace, name = split_key(rest)
            claim = self.claims.get(namespace, name)
            if claim is not None:
                self.provision(claim)
        else:
            volume = self.volumes.get(None, rest)
            if volume is not None:
                self.delete_if_released(volume)

    # [START provision]
    def provision(self, claim: dict) -> None:
        """A volume for a claim the binder handed to us, on the scheduler's node."""
        annotations = as_dict(claim["metadata"].get("annotations"))
        if claim["metadata"].get("deletionTimestamp") or dig(claim, "spec", "volumeName") \
                or annotations.get(STORAGE_PROVISIONER) != PROVISIONER:
            return                      # bound, going, or not (yet) ours to make
        storage_class = self.classes.get(None, class_of(claim))
        if storage_class is None or storage_class.get("provisioner") != PROVISIONER:
            return
        if self.volumes.get(None, f"pvc-{claim['metadata']['uid']}") is not None:
            return                      # made already; the binder finishes
        node = annotations.get(SELECTED_NODE)
        if not node:
            self.events.event(claim, "Warning", "ProvisioningFailed", "configuration error, no node was specified "
                              "(a local-path class needs volumeBindingMode: WaitForFirstConsumer)")
            return
        unsupported = [m for m in as_list(dig(claim, "spec", "accessModes")) if m not in SUPPORTED_MODES]
        if unsupported:
            self.events.event(claim, "Warning", "ProvisioningFailed",
                              f"local-path volumes support only {' and '.join(SUPPORTED_MODES)}, "
                              f"not {', '.join(map(str, unsupported))}: a directory is on one node")
            return
        self.events.event(claim, "Normal", "Provisioning",
                          f'External provisioner is provisioning volume for claim "{claim["metadata"]["namespace"]}/'
                          f'{claim["metadata"]["name"]}"')
        volume = volume_for(claim, storage_class, node, self.root)
        try:
            self.client.create("v1", "persistentvolumes", volume)
        except AlreadyExists:
            return
        self.log.info("provisioned", claim=f"{claim['metadata']['namespace']}/{claim['metadata']['name']}",
                      volume=volume["metadata"]["name"], node=node, path=volume["spec"]["hostPath"]["path"])
        self.events.event(claim, "Normal", "ProvisioningSucceeded",
                          f"Successfully provisioned volume {volume['metadata']['name']}")
    # [END provision]

    def delete_if_released(self, volume: dict) -> None:
        """Ours, Released, Delete: the object goes (the node then removes the directory)."""
        if as_dict(volume["metadata"].get("annotations")).get(PROVISIONED_BY) != PROVISIONER \
                or volume["metadata"].get("deletionTimestamp"):
            return
        if dig(volume, "status", "phase") == "Released" and \
                dig(volume, "spec", "persistentVolumeReclaimPolicy") == "Delete":
            try:
                self.client.delete("v1", "persistentvolumes", None, volume["metadata"]["name"])
            except NotFound:
                return
            self.log.info("deleted", volume=volume["metadata"]["name"])
