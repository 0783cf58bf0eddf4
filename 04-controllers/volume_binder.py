"""The PersistentVolume binder: every claim gets a volume, every volume one claim.

A PersistentVolumeClaim says "I need 5Gi I can write to"; a PersistentVolume
says "here are 10Gi on node2". The binder pairs them, as Kubernetes'
persistentvolume-binder controller does, and marks both sides so that
anyone (and a restarted binder) can tell the pair apart from a half-made one:

    claim  spec.volumeName: pv-7        volume  spec.claimRef: default/data (uid)
           pv.kubernetes.io/bind-completed: "yes"
           pv.kubernetes.io/bound-by-controller: "yes" (on either side: we chose, not a user)
           status.phase: Bound                   status.phase: Bound

The volume side is written first: a volume whose claimRef names a claim
serves no other, so two binders (or two claims in one pass) can never both
take it. Only then does the claim say Bound.

A claim whose class binds `WaitForFirstConsumer` is left alone until the
scheduler has picked a node for a pod that uses it and written that node
on the claim (`volume.kubernetes.io/selected-node`): a volume on node1 is
no use to a pod that can only run on node2. A claim no existing volume can
serve is annotated for its class's provisioner
(`volume.kubernetes.io/storage-provisioner`), which makes one.

When a claim goes, its volume is Released and its reclaim policy decides:
Retain keeps it (and its data) until an administrator deletes it; Delete
is its provisioner's job (local_path.py for ours); a Delete volume no
provisioner made cannot be deleted by anyone here, and says so (Failed).
"""
from __future__ import annotations

from common.client.client import NotFound
from common.model.lenient import as_dict, as_str, dig
from common.model.persistent_volumes import (BETA_STORAGE_PROVISIONER, BIND_COMPLETED, BOUND_BY_CONTROLLER,
                                             PROVISIONED_BY, SELECTED_NODE, STORAGE_PROVISIONER,
                                             WAIT_FOR_FIRST_CONSUMER, NodeView, best_volume, binding_mode,
                                             class_of, default_class, matches, reserved_for)
from controller import Controller, split_key

NO_PROVISIONER = "kubernetes.io/no-provisioner"    # a class for volumes an administrator makes by hand


class VolumeBinderController(Controller):
    name = "persistentvolume-binder"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.claims = self.informers.get("v1", "persistentvolumeclaims")
        self.volumes = self.informers.get("v1", "persistentvolumes")
        self.classes = self.informers.get("storage.k8s.io/v1", "storageclasses")
        self.nodes = self.informers.get("v1", "nodes")
        self.claims.add_handler(on_add=self.claim_changed, on_update=lambda old, new: self.claim_changed(new),
                                on_delete=self.claim_deleted)
        self.volumes.add_handler(on_add=lambda volume: self.volume_changed(volume, None),
                                 on_update=lambda old, new: self.volume_changed(new, old),
                                 on_delete=lambda volume: None)
        # A new default class, or a class that appears late: claims waiting for one look again.
        self.classes.add_handler(on_add=lambda c: self.every_unbound_claim(),
                                 on_update=lambda old, new: self.every_unbound_claim())

    # ------------------------------------------------------------ keys
    # Claims and volumes share one queue; the key says which it is.

    def claim_changed(self, claim: dict) -> None:
        self.queue.add("claim:" + key_of(claim))

    def volume_changed(self, volume: dict, old: dict | None) -> None:
        self.queue.add("volume:" + volume["metadata"]["name"])
        ref = as_dict(dig(volume, "spec", "claimRef"))
        if ref.get("name"):
            self.queue.add(f"claim:{ref.get('namespace')}/{ref['name']}")
        elif old is None or dig(old, "spec", "claimRef"):
            self.every_unbound_claim()             # newly free: a waiting claim may fit it now

    def claim_deleted(self, claim: dict) -> None:
        """Its volume is Released now: look at every volume that names it."""
        for volume in self.volumes.list():
            if reserved_for(volume, claim) or volume["metadata"]["name"] == dig(claim, "spec", "volumeName"):
                self.queue.add("volume:" + volume["metadata"]["name"])

    def every_unbound_claim(self) -> None:
        for claim in self.claims.list():
            if not as_dict(claim["metadata"].get("annotations")).get(BIND_COMPLETED):
                self.claim_changed(claim)

    def reconcile(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "claim":
            namespace, name = split_key(rest)
            claim = self.claims.get(namespace, name)
            if claim is not None and not claim["metadata"].get("deletionTimestamp"):
                self.sync_claim(claim)
        else:
            volume = self.volumes.get(None, rest)
            if volume is not None and not volume["metadata"].get("deletionTimestamp"):
                self.sync_volume(volume)

    # ------------------------------------------------------------ claims

    def sync_claim(self, claim: dict) -> None:
        if "storageClassName" not in (claim.get("spec") or {}):
            # Made before a default class existed (or past the admission
            # plugin): it gets today's default, as in Kubernetes since 1.28.
            default = default_class(self.classes.list())
            if default is not None:
                self.client.patch("v1", "persistentvolumeclaims", claim["metadata"]["namespace"],
                                  claim["metadata"]["name"], {"spec": {"storageClassName": default["metadata"]["name"]}})
                return
        if as_dict(claim["metadata"].get("annotations")).get(BIND_COMPLETED):
            self.sync_bound_claim(claim)
        elif dig(claim, "spec", "volumeName"):
            self.sync_claim_asking_for_a_volume(claim)
        else:
            self.find_a_volume(claim)

    # [START find-a-volume]
    def find_a_volume(self, claim: dict) -> None:
        """An unbound claim: bind it to the best volume, wait, or ask for one."""
        storage_class = self.classes.get(None, class_of(claim)) if class_of(claim) else None
        node = None
        if binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER:
            chosen = as_dict(claim["metadata"].get("annotations")).get(SELECTED_NODE)
            if not chosen:
                self.events.event(claim, "Normal", "WaitForFirstConsumer",
                                  "waiting for first consumer to be created before binding")
                return
            known = self.nodes.get(None, chosen)
            node = NodeView.of(known) if known else NodeView(chosen, {"kubernetes.io/hostname": chosen})
        volume = best_volume(claim, self.volumes.list(), node)
        if volume is not None:
            self.bind(volume, claim)
            return
        provisioner = as_str((storage_class or {}).get("provisioner"))
        if provisioner and provisioner != NO_PROVISIONER:
            self.ask_provisioner(claim, provisioner)
        elif not class_of(claim):
            self.events.event(claim, "Normal", "FailedBinding",
                              "no persistent volumes available for this claim and no storage class is set")
        elif storage_class is None:
            self.events.event(claim, "Warning", "ProvisioningFailed",
                              f'storageclass.storage.k8s.io "{class_of(claim)}" not found')
        else:
            self.events.event(claim, "Normal", "FailedBinding", "no persistent volumes available for this claim")
    # [END find-a-volume]

    def ask_provisioner(self, claim: dict, provisioner: str) -> None:
        annotations = as_dict(claim["metadata"].get("annotations"))
        if annotations.get(STORAGE_PROVISIONER) != provisioner:
            self.client.patch("v1", "persistentvolumeclaims", claim["metadata"]["namespace"],
                              claim["metadata"]["name"], {"metadata": {"annotations": {
                                  STORAGE_PROVISIONER: provisioner, BETA_STORAGE_PROVISIONER: provisioner}}})
        self.events.event(claim, "Normal", "ExternalProvisioning",
                          f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                          "or manually by the system administrator. If volume creation is delayed, please verify "
                          "that the provisioner is running and correctly registered.")

    def sync_claim_asking_for_a_volume(self, claim: dict) -> None:
        """The claim names its volume (a user pre-bound it, or we are half-way)."""
        wanted = dig(claim, "spec", "volumeName")
        volume = self.volumes.get(None, wanted)
        if volume is None:
            self.events.event(claim, "Warning", "FailedBinding", f'volume "{wanted}" not found')
        elif reserved_for(volume, claim):
            self.bind(volume, claim)
        elif dig(volume, "spec", "claimRef"):
            self.events.event(claim, "Warning", "FailedBinding", f'volume "{wanted}" already bound to a different claim.')
        elif not matches(volume, claim):
            self.events.event(claim, "Warning", "VolumeMismatch",
                              f'Cannot bind to requested volume "{wanted}": it does not satisfy the claim '
                              "(class, size, access modes, volume mode or selector)")
        else:
            self.bind(volume, claim)

    def sync_bound_claim(self, claim: dict) -> None:
        name = dig(claim, "spec", "volumeName")
        volume = self.volumes.get(None, name) if name else None
        if volume is None:
            self.set_claim_phase(claim, "Lost")
            self.events.event(claim, "Warning", "ClaimLost",
                              "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
        elif reserved_for(volume, claim) or not dig(volume, "spec", "claimRef"):
            self.bind(volume, claim)              # both sides as they should be (no write if they are)
        else:
            self.set_claim_phase(claim, "Lost")
            self.events.event(claim, "Warning", "ClaimMisbound",
                              "Two claims are bound to the same volume, this one is bound incorrectly")

    # [START bind]
    def bind(self, volume: dict, claim: dict) -> None:
        """Volume side first (its claimRef reserves it), then the claim side.
        Each write is skipped when already done, so a retry finishes the job."""
        meta = claim["metadata"]
        ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
               "name": meta["name"], "uid": meta["uid"]}
        current = as_dict(dig(volume, "spec", "claimRef"))
        if {k: current.get(k) for k in ref} != ref:
            chosen_by_us = not current                 # a user's or a provisioner's claimRef is theirs
            volume = {**volume, "spec": {**volume["spec"], "claimRef": {**current, **ref}}}
            if chosen_by_us:
                volume["metadata"] = _annotated(volume["metadata"], {BOUND_BY_CONTROLLER: "yes"})
            volume = self.client.update("v1", "persistentvolumes", volume)
        self.set_volume_phase(volume, "Bound")
        annotations = {BIND_COMPLETED: "yes"}
        if not dig(claim, "spec", "volumeName"):
            annotations[BOUND_BY_CONTROLLER] = "yes"
        if dig(claim, "spec", "volumeName") != volume["metadata"]["name"] or \
                any(as_dict(meta.get("annotations")).get(k) != v for k, v in annotations.items()):
            claim = self.client.update("v1", "persistentvolumeclaims", {
                **claim, "metadata": _annotated(meta, annotations),
                "spec": {**claim["spec"], "volumeName": volume["metadata"]["name"]}})
            self.log.info("bound", claim=key_of(claim), volume=volume["metadata"]["name"])
        status = {"phase": "Bound", "accessModes": dig(volume, "spec", "accessModes") or [],
                  "capacity": dig(volume, "spec", "capacity") or {}}
        if {k: dig(claim, "status", k) for k in status} != status:
            self.client.update_status("v1", "persistentvolumeclaims", {**claim, "status": {
                **as_dict(claim.get("status")), **status}})
    # [END bind]

    # ------------------------------------------------------------ volumes

    def sync_volume(self, volume: dict) -> None:
        ref = as_dict(dig(volume, "spec", "claimRef"))
        if not ref:
            self.set_volume_phase(volume, "Available")
            return
        if not ref.get("uid"):
            # Reserved by name for a claim that may not exist yet.
            self.set_volume_phase(volume, "Available")
            return
        claim = self.claims.get(ref.get("namespace"), ref.get("name"))
        if claim is None or claim["metadata"]["uid"] != ref["uid"]:
            claim = self.live_claim(ref)
        if claim is None:
            self.release(volume)
        elif dig(claim, "spec", "volumeName") == volume["metadata"]["name"]:
            self.set_volume_phase(volume, "Bound")
        elif dig(claim, "spec", "volumeName") and \
                as_dict(volume["metadata"].get("annotations")).get(BOUND_BY_CONTROLLER):
            # We reserved it, and the claim went with another volume: free it.
            spec = {k: v for k, v in volume["spec"].items() if k != "claimRef"}
            annotations = {k: v for k, v in as_dict(volume["metadata"].get("annotations")).items()
                           if k != BOUND_BY_CONTROLLER}
            freed = self.client.update("v1", "persistentvolumes", {
                **volume, "metadata": {**volume["metadata"], "annotations": annotations}, "spec": spec})
            self.set_volume_phase(freed, "Available")

    def live_claim(self, ref: dict) -> dict | None:
        """The claim a volume names, asked of the API server: our cache may
        simply not have seen a new claim yet, and releasing a volume whose
        claim exists could delete its data."""
        try:
            claim = self.client.get("v1", "persistentvolumeclaims", ref.get("namespace"), ref.get("name"))
        except NotFound:
            return None
        return claim if claim["metadata"]["uid"] == ref.get("uid") else None

    # [START release]
    def release(self, volume: dict) -> None:
        """Its claim is gone: Released, then what its reclaim policy says."""
        if dig(volume, "status", "phase") not in ("Released", "Failed"):
            volume = self.set_volume_phase(volume, "Released")
            self.log.info("released", volume=volume["metadata"]["name"])
        policy = dig(volume, "spec", "persistentVolumeReclaimPolicy")
        provisioned = as_dict(volume["metadata"].get("annotations")).get(PROVISIONED_BY)
        if policy == "Delete" and not provisioned:
            message = (f'error getting deleter volume plugin for volume "{volume["metadata"]["name"]}": '
                       "no deletable volume plugin matched")
            self.set_volume_phase(volume, "Failed", message)
            self.events.event(volume, "Warning", "VolumeFailedDelete", message)
        elif policy == "Recycle":
            self.set_volume_phase(volume, "Failed", "recycling is not supported (deprecated in Kubernetes)")
            self.events.event(volume, "Warning", "VolumeFailedRecycle", "No recycler plugin found for the volume!")
        # Retain: Released until someone deletes it, or clears its claimRef to reuse it.
        # Delete of a provisioned volume: its provisioner's job.
    # [END release]

    # ------------------------------------------------------------ status writes

    def set_volume_phase(self, volume: dict, phase: str, message: str = "") -> dict:
        status = as_dict(volume.get("status"))
        if status.get("phase") == phase and as_str(status.get("message")) == message:
            return volume
        new_status = {k: v for k, v in status.items() if k not in ("message", "reason")}
        new_status["phase"] = phase
        if message:
            new_status["message"] = message
        return self.client.update_status("v1", "persistentvolumes", {**volume, "status": new_status})

    def set_claim_phase(self, claim: dict, phase: str) -> None:
        if dig(claim, "status", "phase") != phase:
            self.client.update_status("v1", "persistentvolumeclaims",
                                      {**claim, "status": {**as_dict(claim.get("status")), "phase": phase}})


def key_of(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def _annotated(meta: dict, annotations: dict) -> dict:
    return {**meta, "annotations": {**as_dict(meta.get("annotations")), **annotations}}
