"""The StatefulSet controller: pods with names and disks that last.

    StatefulSet web (replicas 3, serviceName nginx, claim template www)
      ├── web-0   hostname web-0, subdomain nginx, volume www -> claim www-web-0
      ├── web-1   ...                                          -> claim www-web-1
      └── web-2   ...                                          -> claim www-web-2

One reconcile, level-triggered like every controller here:

1. history: the set's template now is a ControllerRevision (made if new);
   that is the *update* revision. The *current* one is what the pods had
   when the last rollout finished (controller_history.py).
2. pods: which of web-0..web-N-1 exist, which are extra (stateful_pods.plan
   decides the next steps: in order, one at a time, by default).
3. disks: each pod's claims are made before the pod, and never deleted
   with it; their owner references follow persistentVolumeClaimRetentionPolicy.
4. status: the counts `kubectl get sts` and `kubectl rollout status` read.
"""
from __future__ import annotations

import time

from common.client.client import AlreadyExists, NotFound
from controller import key_for, split_key
from controller_history import find_equal, new_revision, number_of, template_in, to_forget
from ownership import adopt, controller_of, is_controlled_by, release, selects
from pod_owner import PodOwnerController
from pods import is_ready
from stateful_pods import (Revisions, RetentionPolicy, claim_name, claim_owners, is_running_and_ready,
                           is_terminating, new_claim, new_pod, ordinal_of, plan, revision_of, with_owners)

GROUP_VERSION = "apps/v1"


def first_ordinal(sts: dict) -> int:
    """spec.ordinals.start: a set may number its pods from 5, say, when it
    takes over from another set that had 0..4."""
    return (sts["spec"].get("ordinals") or {}).get("start", 0)


class StatefulSetController(PodOwnerController):
    name = "statefulset"
    owner_kind = "StatefulSet"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.statefulsets = self.informers.get(GROUP_VERSION, "statefulsets")
        self.watch_owners_and_pods(self.statefulsets)      # pod events -> set keys (pod_owner.py)
        self.revisions = self.informers.get(GROUP_VERSION, "controllerrevisions")
        self.claims = self.informers.get("v1", "persistentvolumeclaims")
        self.claims.add_handler(on_delete=self.claim_deleted)

    def claim_deleted(self, claim: dict) -> None:
        """A pod waiting for its claim to finish going can be given a new one now."""
        for sts in self.statefulsets.list():
            if sts["metadata"]["namespace"] == claim["metadata"]["namespace"] and \
                    sts["spec"].get("volumeClaimTemplates"):
                self.enqueue(sts)

    # ------------------------------------------------ reconcile

    # [START statefulset-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        sts = self.statefulsets.get(namespace, name)
        if sts is None:                 # deleted: the garbage collector takes its pods (and claims it owns)
            self.expectations.forget(key)
            return
        if sts["metadata"].get("deletionTimestamp"):
            return
        revisions, history = self.sync_history(sts)
        pods = self.claim_pods(sts)
        self.update_claim_owners(sts, pods)
        if self.expectations.satisfied(key):
            steps = plan(pods, first_ordinal(sts), sts["spec"].get("replicas", 1), revisions,
                         ordered=sts["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady",
                         min_ready_seconds=sts["spec"].get("minReadySeconds", 0), now=time.time())
            self.delete_pods(sts, key, steps.delete)
            for ordinal, revision in steps.create:
                if self.create_claims(sts, ordinal):      # the disks first, then the pod that mounts them
                    self.create_pod(sts, key, ordinal, revision, history)
        self.update_status(sts, pods, revisions)
        self.forget_old_revisions(sts, pods, history, revisions)
    # [END statefulset-reconcile]

    # ------------------------------------------------ history

    def sync_history(self, sts: dict) -> tuple[Revisions, dict[str, dict]]:
        """The update revision (made or renumbered if need be) and the current
        one; returns them with every revision of the set, by name."""
        history = {r["metadata"]["name"]: r for r in self.owned_revisions(sts)}
        template = sts["spec"]["template"]
        newest = max((number_of(r) for r in history.values()), default=0)
        update = find_equal(list(history.values()), template)
        if update is None:
            update = self.create_revision(sts, newest + 1, history)
        elif number_of(update) < newest:
            # Back to an older template (kubectl rollout undo): the same
            # revision, now the latest.
            update = self.client.patch(GROUP_VERSION, "controllerrevisions", update["metadata"]["namespace"],
                                       update["metadata"]["name"], {"revision": newest + 1})
        history[update["metadata"]["name"]] = update
        status = sts.get("status") or {}
        current = status.get("currentRevision")
        if current not in history:
            current = update["metadata"]["name"]
        strategy = sts["spec"].get("updateStrategy") or {}
        partition = (strategy.get("rollingUpdate") or {}).get("partition", 0)
        return Revisions(current=current, update=update["metadata"]["name"], partition=partition,
                         rolling=strategy.get("type", "RollingUpdate") == "RollingUpdate"), history

    def owned_revisions(self, sts: dict) -> list[dict]:
        namespace, selector = sts["metadata"]["namespace"], sts["spec"].get("selector")
        owned = []
        for revision in self.revisions.list():
            if revision["metadata"]["namespace"] != namespace:
                continue
            if is_controlled_by(revision, sts):
                owned.append(revision)
            elif controller_of(revision) is None and selects(selector, revision["metadata"].get("labels")):
                owned.append(adopt(self.client, GROUP_VERSION, "controllerrevisions", revision, sts))
        return owned

    def create_revision(self, sts: dict, number: int, history: dict[str, dict]) -> dict:
        collisions = (sts.get("status") or {}).get("collisionCount", 0)
        while True:
            revision = new_revision(sts, number, collisions)
            try:
                return self.client.create(GROUP_VERSION, "controllerrevisions", revision)
            except AlreadyExists:
                taken = self.client.get(GROUP_VERSION, "controllerrevisions", sts["metadata"]["namespace"],
                                        revision["metadata"]["name"])
                if is_controlled_by(taken, sts) and taken.get("data") == revision["data"]:
                    return taken                    # ours, made by a reconcile our cache has not seen yet
                collisions += 1                     # someone else's: a new hash, and the status says why
                self.client.patch(GROUP_VERSION, "statefulsets", sts["metadata"]["namespace"],
                                  sts["metadata"]["name"], {"status": {"collisionCount": collisions}},
                                  subresource="status")

    def forget_old_revisions(self, sts: dict, pods: dict[int, dict], history: dict[str, dict],
                             revisions: Revisions) -> None:
        live = {revisions.current, revisions.update} | {revision_of(p) for p in pods.values()}
        for revision in to_forget(list(history.values()), live, sts["spec"].get("revisionHistoryLimit", 10)):
            try:
                self.client.delete(GROUP_VERSION, "controllerrevisions", revision["metadata"]["namespace"],
                                   revision["metadata"]["name"])
            except NotFound:
                pass

    # ------------------------------------------------ pods

    def claim_pods(self, sts: dict) -> dict[int, dict]:
        """The set's pods by ordinal: owned ones, plus orphans with one of its
        names and its labels (adopted); owned pods that stopped matching are released."""
        namespace, name, selector = sts["metadata"]["namespace"], sts["metadata"]["name"], sts["spec"].get("selector")
        owned: dict[int, dict] = {}
        for pod in self.pods.list():
            if pod["metadata"]["namespace"] != namespace:
                continue
            ordinal = ordinal_of(name, pod["metadata"]["name"])
            matches = ordinal is not None and selects(selector, pod["metadata"].get("labels"))
            if is_controlled_by(pod, sts):
                if matches:
                    owned[ordinal] = pod
                else:
                    release(self.client, "v1", "pods", pod, sts)
            elif matches and controller_of(pod) is None and not is_terminating(pod):
                owned[ordinal] = adopt(self.client, "v1", "pods", pod, sts)
        return owned

    def create_pod(self, sts: dict, key: str, ordinal: int, revision: str, history: dict[str, dict]) -> None:
        # The revision's own template: below the partition, that is the old one.
        template = template_in(history[revision]) if revision in history else sts["spec"]["template"]
        pod = new_pod(sts, template, ordinal, revision)
        self.expectations.expect_creates(key, 1)
        try:
            self.client.create("v1", "pods", pod)
        except AlreadyExists:
            self.expectations.created(key)                   # our cache was behind; next reconcile sees it
            return
        except Exception as error:
            self.expectations.created(key)
            self.events.event(sts, "Warning", "FailedCreate",
                              f"create Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} "
                              f"failed error: {error}")
            raise
        self.events.event(sts, "Normal", "SuccessfulCreate",
                          f"create Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} successful")

    # ------------------------------------------------ claims

    def create_claims(self, sts: dict, ordinal: int) -> bool:
        """Make the pod's missing claims; False while one is still being
        deleted (the pod must not start on the old disk as it goes)."""
        policy = RetentionPolicy.of(sts)
        for template in sts["spec"].get("volumeClaimTemplates") or []:
            name = claim_name(template["metadata"]["name"], sts, ordinal)
            existing = self.claims.get(sts["metadata"]["namespace"], name)
            if existing is not None:
                if is_terminating(existing):
                    return False
                continue
            claim = new_claim(sts, template, ordinal)
            owners = claim_owners(policy, sts, None, condemned=False)
            if owners:
                claim["metadata"]["ownerReferences"] = owners
            try:
                self.client.create("v1", "persistentvolumeclaims", claim)
            except AlreadyExists:
                continue
            except Exception as error:
                self.events.event(sts, "Warning", "FailedCreate",
                                  f"create Claim {name} for Pod {sts['metadata']['name']}-{ordinal} "
                                  f"in StatefulSet {sts['metadata']['name']} failed error: {error}")
                raise
            self.events.event(sts, "Normal", "SuccessfulCreate",
                              f"create Claim {name} Pod {sts['metadata']['name']}-{ordinal} "
                              f"in StatefulSet {sts['metadata']['name']} success")
        return True

    def update_claim_owners(self, sts: dict, pods: dict[int, dict]) -> None:
        """Keep each claim's owner references as the retention policy says:
        the set's own (goes with the set) or a condemned pod's (goes with it)."""
        templates = sts["spec"].get("volumeClaimTemplates") or []
        if not templates:
            return
        policy, start = RetentionPolicy.of(sts), first_ordinal(sts)
        wanted = range(start, start + sts["spec"].get("replicas", 1))
        ours = {sts["metadata"]["uid"]} | {p["metadata"]["uid"] for p in pods.values()}
        for ordinal, pod in pods.items():
            for template in templates:
                claim = self.claims.get(sts["metadata"]["namespace"],
                                        claim_name(template["metadata"]["name"], sts, ordinal))
                if claim is None or is_terminating(claim):
                    continue
                refs = with_owners(claim, claim_owners(policy, sts, pod, condemned=ordinal not in wanted), ours)
                if refs is not None:
                    self.client.patch("v1", "persistentvolumeclaims", claim["metadata"]["namespace"],
                                      claim["metadata"]["name"],
                                      {"metadata": {"ownerReferences": refs or None,
                                                    "resourceVersion": claim["metadata"]["resourceVersion"]}})

    # ------------------------------------------------ status

    def update_status(self, sts: dict, pods: dict[int, dict], revisions: Revisions) -> None:
        min_ready, now = sts["spec"].get("minReadySeconds", 0), time.time()
        live = [p for p in pods.values() if not is_terminating(p)]
        status = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": sum(1 for p in pods.values() if is_running_and_ready(p, 0, now)),
            "availableReplicas": sum(1 for p in pods.values() if is_running_and_ready(p, min_ready, now)),
            "currentReplicas": sum(1 for p in live if revision_of(p) == revisions.current),
            "updatedReplicas": sum(1 for p in live if revision_of(p) == revisions.update),
            "currentRevision": revisions.current,
            "updateRevision": revisions.update,
        }
        replicas = sts["spec"].get("replicas", 1)
        if revisions.rolling and status["updatedReplicas"] == replicas == status["readyReplicas"] \
                == status["replicas"]:
            # Every pod runs the new template and is ready: the rollout is over.
            status["currentRevision"], status["currentReplicas"] = revisions.update, status["updatedReplicas"]
        old = sts.get("status") or {}
        if any(old.get(k) != v for k, v in status.items()):
            self.client.update_status(GROUP_VERSION, "statefulsets", {**sts, "status": {**old, **status}})
        if any(is_ready(p) and not is_running_and_ready(p, min_ready, now) for p in live) and min_ready:
            self.queue.add_after(key_for(sts), min_ready)     # nothing else will say when minReadySeconds is up

