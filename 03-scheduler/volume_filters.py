"""Plugins that judge a node by the pod's volumes: VolumeBinding and VolumeRestrictions.

A pod's PersistentVolumeClaim may tie it to a place. A claim bound to a
local volume (a directory on node2) can only be mounted on node2, so the
pod must go there or nowhere. A claim not bound yet, whose class says
WaitForFirstConsumer, waits for this very decision: the scheduler picks a
node where a volume for it exists or can be made, writes that node on the
claim (`volume.kubernetes.io/selected-node`) before binding the pod, and
the binder (chapter 04) follows. A claim not bound yet whose class binds
Immediately is the binder's to bind first: the pod waits until it is.

The seed posts' scheduler had a volume check too: "is another pod already
using the same volume?". For claims that is ReadWriteOncePod: one pod in
the whole cluster may use such a claim at a time.

The reason strings are Kubernetes' own (pkg/scheduler/framework/plugins/
volumebinding and volumerestrictions), so FailedScheduling reads the same.
"""
from __future__ import annotations

from typing import Callable

from common.model.lenient import as_dict, as_str, dig
from common.model.persistent_volumes import (READ_WRITE_ONCE_POD, SELECTED_NODE, WAIT_FOR_FIRST_CONSUMER,
                                             best_volume, binding_mode, class_of, claim_names,
                                             volume_allows_node)
from framework import SKIP, Plugin, Rejected

UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

Getter = Callable[[str | None, str], "dict | None"]      # an informer's get(namespace, name)


class VolumeBinding(Plugin):
    """Bound claims: only the nodes their volumes allow. Waiting claims: only
    nodes with a volume to bind, or a provisioner to make one."""

    name = "VolumeBinding"

    def __init__(self, claims: Getter, volumes: Callable[[], list[dict]], classes: Getter,
                 write_selected_node: Callable[[dict, str], None] = lambda claim, node: None):
        self.claims, self.volumes, self.classes = claims, volumes, classes
        self.write_selected_node = write_selected_node

    # [START volume-binding-prepare]
    def prepare(self, pod, nodes: list, state: dict):
        """Sort the pod's claims: bound (their volumes decide), waiting for a
        node (this decision is theirs), or not bound yet (the pod waits)."""
        names = claim_names(pod.pod)
        if not names:
            return SKIP
        bound, waiting = [], []
        for name in names:
            claim = self.claims(pod.namespace, name)
            if claim is None:
                return Rejected(f'persistentvolumeclaim "{name}" not found')
            if claim["metadata"].get("deletionTimestamp"):
                return Rejected(f'persistentvolumeclaim "{name}" is being deleted')
            if dig(claim, "spec", "volumeName"):
                bound.append(self.volumes_by_name().get(dig(claim, "spec", "volumeName")))
            elif binding_mode(self.storage_class(claim)) == WAIT_FOR_FIRST_CONSUMER:
                waiting.append(claim)
            else:
                return Rejected(UNBOUND_IMMEDIATE)
        state[self.name] = (bound, waiting)
        return None
    # [END volume-binding-prepare]

    # [START volume-binding-filter]
    def filter(self, pod, node, state) -> tuple[str, ...]:
        bound, waiting = state[self.name]
        if any(volume is None for volume in bound):
            return (PV_NOT_EXIST,)
        if not all(volume_allows_node(volume, node) for volume in bound):
            return (NODE_CONFLICT,)
        taken: set[str] = set()            # two claims of one pod cannot share a volume
        for claim in waiting:
            chosen = as_dict(claim["metadata"].get("annotations")).get(SELECTED_NODE)
            if chosen and chosen != node.name:
                return (NODE_CONFLICT,)    # its volume is being made on that node already
            free = [v for v in self.volumes() if v["metadata"]["name"] not in taken]
            volume = best_volume(claim, free, node)
            if volume is not None:
                taken.add(volume["metadata"]["name"])
            elif not self.can_provision(claim):
                return (BIND_CONFLICT,)
        return ()
    # [END volume-binding-filter]

    def pre_bind(self, pod, node_name: str) -> None:
        """Tell the binder (and a provisioner) where the pod goes, before it goes."""
        for name in claim_names(pod.pod):
            claim = self.claims(pod.namespace, name)
            if claim is None or dig(claim, "spec", "volumeName"):
                continue
            if as_dict(claim["metadata"].get("annotations")).get(SELECTED_NODE) != node_name \
                    and binding_mode(self.storage_class(claim)) == WAIT_FOR_FIRST_CONSUMER:
                self.write_selected_node(claim, node_name)

    def storage_class(self, claim: dict) -> dict | None:
        return self.classes(None, class_of(claim)) if class_of(claim) else None

    def can_provision(self, claim: dict) -> bool:
        provisioner = as_str((self.storage_class(claim) or {}).get("provisioner"))
        return bool(provisioner) and provisioner != NO_PROVISIONER

    def volumes_by_name(self) -> dict[str, dict]:
        return {v["metadata"]["name"]: v for v in self.volumes()}


class VolumeRestrictions(Plugin):
    """A ReadWriteOncePod claim already in use by another pod keeps this one
    off every node (the API server would let both through; the kubelet
    could not tell which one the claim meant)."""

    name = "VolumeRestrictions"

    def __init__(self, claims: Getter):
        self.claims = claims

    # [START volume-restrictions]
    def prepare(self, pod, nodes: list, state: dict):
        one_pod_claims = set()
        for name in claim_names(pod.pod):
            claim = self.claims(pod.namespace, name)
            if claim is not None and READ_WRITE_ONCE_POD in (dig(claim, "spec", "accessModes") or []):
                one_pod_claims.add(name)
        if not one_pod_claims:
            return SKIP
        in_use = any(other.key != pod.key and other.namespace == pod.namespace
                     and one_pod_claims & set(claim_names(other.pod))
                     for node in nodes for other in node.pods.values())
        state[self.name] = in_use
        return None

    def filter(self, pod, node, state) -> tuple[str, ...]:
        return (RWOP_CONFLICT,) if state[self.name] else ()
    # [END volume-restrictions]
