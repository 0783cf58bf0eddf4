"""The ReplicaSet controller: keep `spec.replicas` pods running from a template.

This is the seed posts' replication controller, in today's form. Its whole
job is one comparison, made again whenever anything relevant changes:

    wanted = rs.spec.replicas
    have   = the active pods this ReplicaSet controls
    have < wanted  ->  create the difference from spec.template
    have > wanted  ->  delete the difference, least useful pods first

A pod that dies, a node that goes away (chapter 04's node lifecycle
controller deletes its pods), a `kubectl scale`: each is just a new "have"
or "wanted", and the same comparison repairs it.
"""
from __future__ import annotations

import copy
import time

from controller import key_for, split_key
from pod_owner import BURST_PODS, PodOwnerController
from ownership import adopt, controller_of, is_controlled_by, owner_reference, release, selects
from pods import is_active, is_available, is_ready, pods_to_delete

GROUP_VERSION = "apps/v1"


class ReplicaSetController(PodOwnerController):
    name = "replicaset"
    owner_kind = "ReplicaSet"
    # The kind this controller keeps: the ReplicationController subclass
    # below changes these four and nothing else (Kubernetes does the same:
    # its replication controller is the ReplicaSet controller, reconfigured).
    group_version, plural = GROUP_VERSION, "replicasets"

    @staticmethod
    def selector_of(rs: dict) -> dict | None:
        """The owner's selector as a LabelSelector (matchLabels, matchExpressions)."""
        return rs["spec"].get("selector")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.replicasets = self.informers.get(self.group_version, self.plural)
        self.watch_owners_and_pods(self.replicasets)   # pod events -> ReplicaSet keys (pod_owner.py)

    # ------------------------------------------------ reconcile

    # [START replicaset-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        rs = self.replicasets.get(namespace, name)
        if rs is None:                          # deleted: the garbage collector takes its pods
            self.expectations.forget(key)
            return
        pods = self.claim_pods(rs)              # ours, after adopting and releasing
        active = [pod for pod in pods if is_active(pod)]
        if self.expectations.satisfied(key) and not rs["metadata"].get("deletionTimestamp"):
            wanted = rs["spec"].get("replicas", 1)
            if len(active) < wanted:
                self.create_pods(rs, key, wanted - len(active))
            elif len(active) > wanted:
                self.delete_pods(rs, key, pods_to_delete(active, len(active) - wanted, time.time()))
        self.update_status(rs, active)
    # [END replicaset-reconcile]

    def claim_pods(self, rs: dict) -> list[dict]:
        namespace = rs["metadata"]["namespace"]
        owned = []
        for pod in self.pods.list():
            if pod["metadata"]["namespace"] != namespace:
                continue
            matches = selects(self.selector_of(rs), pod["metadata"].get("labels"))
            if is_controlled_by(pod, rs):
                if matches:
                    owned.append(pod)
                elif not rs["metadata"].get("deletionTimestamp"):
                    release(self.client, "v1", "pods", pod, rs)
                    self.log.info("released", controller=self.name, replicaset=key_for(rs), pod=key_for(pod))
            elif matches and controller_of(pod) is None and is_active(pod) \
                    and not rs["metadata"].get("deletionTimestamp"):
                owned.append(adopt(self.client, "v1", "pods", pod, rs))
                self.log.info("adopted", controller=self.name, replicaset=key_for(rs), pod=key_for(pod))
        return owned

    def pod_from_template(self, rs: dict) -> dict:
        template = copy.deepcopy(rs["spec"]["template"])
        meta = template.get("metadata") or {}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": rs["metadata"]["name"] + "-",
                             "namespace": rs["metadata"]["namespace"],
                             "labels": meta.get("labels") or {},
                             "annotations": meta.get("annotations") or {},
                             "ownerReferences": [owner_reference(rs)]},
                "spec": template.get("spec") or {}}

    def create_pods(self, rs: dict, key: str, count: int) -> None:
        self.create_owned_pods(rs, key, [self.pod_from_template(rs) for _ in range(min(count, BURST_PODS))])

    def update_status(self, rs: dict, active: list[dict]) -> None:
        template_labels = ((rs["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = rs["spec"].get("minReadySeconds", 0)
        now = time.time()
        status = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if template_labels.items()
                                        <= (p["metadata"].get("labels") or {}).items()),
            "readyReplicas": sum(1 for p in active if is_ready(p)),
            "availableReplicas": sum(1 for p in active if is_available(p, min_ready, now)),
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        old = {k: (rs.get("status") or {}).get(k, 0) for k in status}
        if old != status:
            self.client.update_status(self.group_version, self.plural,
                                      {**rs, "status": {**(rs.get("status") or {}), **status}})
        unavailable = [p for p in active if is_ready(p) and not is_available(p, min_ready, now)]
        if unavailable:
            # Nothing will tell us when minReadySeconds has passed: look again then.
            self.queue.add_after(key_for(rs), min_ready)


class ReplicationControllerController(ReplicaSetController):
    """The seed posts' replication controller (core/v1): a ReplicaSet whose
    selector is a plain label map, `{app: web}`, matched by equality only."""
    name = "replicationcontroller"
    owner_kind = "ReplicationController"
    group_version, plural = "v1", "replicationcontrollers"

    @staticmethod
    def selector_of(rc: dict) -> dict | None:
        return {"matchLabels": rc["spec"]["selector"]} if rc["spec"].get("selector") else None

    def adopters(self, pod: dict) -> list[dict]:
        # pod_owner.py reads spec.selector as a LabelSelector; ours is a map.
        return [rc for rc in self.owners.list()
                if rc["metadata"]["namespace"] == pod["metadata"]["namespace"]
                and selects(self.selector_of(rc), pod["metadata"].get("labels"))]
