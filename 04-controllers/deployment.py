"""The Deployment controller: roll a set of pods from one template to the next.

A Deployment does not manage pods. It manages ReplicaSets, one per version
of its pod template, and lets the ReplicaSet controller manage the pods:

    Deployment web (template v2, replicas 3)
      ├── ReplicaSet web-7c9f8 (template v1, revision 1)  3 -> 2 -> 1 -> 0
      └── ReplicaSet web-5d6b4 (template v2, revision 2)  0 -> 1 -> 2 -> 3

Each ReplicaSet is named after a hash of its template (the
`pod-template-hash` label, also added to its selector so the two sets never
claim each other's pods). Changing the template makes a new ReplicaSet;
reverting it (`kubectl rollout undo`) finds the old one again by its hash.
The old ReplicaSets, scaled to 0, are the rollout history.
"""
from __future__ import annotations

import copy
import json
import time

from common.client.events import now
from controller import Controller, key_for, split_key
from ownership import adopt, controller_of, is_controlled_by, owner_reference, selects
from pods import parse_time
from rolling_update import healthy_scale_down, scale_down_limit, scale_up_new, surge_and_unavailable

GROUP_VERSION = "apps/v1"
REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
HASH_LABEL = "pod-template-hash"
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"     # Kubernetes' rand.SafeEncodeString: no vowels


def template_hash(template: dict) -> str:
    """A short, stable name for a pod template: FNV-1a of its JSON, written
    with Kubernetes' vowel-free alphabet (so a hash never spells a word)."""
    digest = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(digest))


def without_hash(template: dict) -> dict:
    """The template as the Deployment would have it: no hash label, and no
    empty values. Go clients write `creationTimestamp: null` and
    `resources: {}` where we have nothing (kubectl rollout undo copies a
    template that way); Kubernetes compares templates with those equal to
    absent, and so must we, or an undo would make a new ReplicaSet."""
    template = copy.deepcopy(template)
    ((template.get("metadata") or {}).get("labels") or {}).pop(HASH_LABEL, None)
    return _without_empty(template)


def _without_empty(value):
    if isinstance(value, dict):
        cleaned = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in cleaned.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_without_empty(v) for v in value]
    return value


def revision_of(rs: dict) -> int:
    value = (rs["metadata"].get("annotations") or {}).get(REVISION, "0")
    return int(value) if value.isdigit() else 0


class DeploymentController(Controller):
    name = "deployment"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Deployment key -> (reason, message, time) of the last step a
        # reconcile took: the Progressing condition's lastUpdateTime.
        self._progress: dict[str, tuple[str, str, str]] = {}
        self.deployments = self.informers.get(GROUP_VERSION, "deployments")
        self.replicasets = self.informers.get(GROUP_VERSION, "replicasets")
        self.deployments.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                                     on_delete=self.enqueue)
        self.replicasets.add_handler(on_add=self.replicaset_changed,
                                     on_update=lambda old, new: self.replicaset_changed(new),
                                     on_delete=self.replicaset_changed)
        # Recreate waits for old pods to be gone, not only counted out: a
        # stopping pod leaves its ReplicaSet's count at once, its node later.
        self.pods = self.informers.get("v1", "pods")
        self.pods.add_handler(on_delete=self.pod_deleted)

    def replicaset_changed(self, rs: dict) -> None:
        ref = controller_of(rs)
        if ref is not None and ref.get("kind") == "Deployment":
            self.queue.add(f"{rs['metadata']['namespace']}/{ref['name']}")

    def pod_deleted(self, pod: dict) -> None:
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "ReplicaSet":
            rs = self.replicasets.get(pod["metadata"]["namespace"], ref["name"])
            if rs is not None:
                self.replicaset_changed(rs)

    def old_pods_running(self, old: list[dict]) -> bool:
        """Any pod of an old ReplicaSet not finished, stopping ones included."""
        uids = {rs["metadata"]["uid"] for rs in old}
        return any((controller_of(pod) or {}).get("uid") in uids
                   and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                   for pod in self.pods.list())

    # ------------------------------------------------ reconcile

    # [START deployment-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        deployment = self.deployments.get(namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return                              # the garbage collector removes its ReplicaSets
        replicasets = self.claim_replicasets(deployment)
        new, old = self.new_and_old(deployment, replicasets)
        if deployment["spec"].get("paused"):
            self.update_status(deployment, new, old)     # paused: report, change nothing
            return
        if new is None:
            new = self.create_new_replicaset(deployment, old)
        if (deployment["spec"].get("strategy") or {}).get("type") == "Recreate":
            changed = self.recreate_step(deployment, new, old)
        else:
            changed = self.rolling_step(deployment, new, old)
        if not changed and self.is_complete(deployment, new, old):
            self.clean_up_history(deployment, old)
        self.update_status(deployment, new, old)
    # [END deployment-reconcile]

    def claim_replicasets(self, deployment: dict) -> list[dict]:
        namespace = deployment["metadata"]["namespace"]
        selector = deployment["spec"].get("selector")
        owned = []
        for rs in self.replicasets.list():
            if rs["metadata"]["namespace"] != namespace:
                continue
            if is_controlled_by(rs, deployment):
                owned.append(rs)
            elif controller_of(rs) is None and selects(selector, rs["metadata"].get("labels")):
                owned.append(adopt(self.client, GROUP_VERSION, "replicasets", rs, deployment))
        return owned

    def new_and_old(self, deployment: dict, replicasets: list[dict]) -> tuple[dict | None, list[dict]]:
        """The ReplicaSet whose template is the Deployment's (ignoring the
        hash label), and the others, oldest revision first."""
        wanted = without_hash(deployment["spec"]["template"])
        new = next((rs for rs in replicasets if without_hash(rs["spec"]["template"]) == wanted), None)
        old = sorted((rs for rs in replicasets if rs is not new), key=revision_of)
        if new is not None:
            new = self.keep_newest_revision(deployment, new, old)
        return new, old

    def keep_newest_revision(self, deployment: dict, new: dict, old: list[dict]) -> dict:
        """After `rollout undo` an old ReplicaSet is the new one again: it
        gets the next revision number, and the Deployment says so."""
        latest = max([revision_of(rs) for rs in old] + [0])
        if revision_of(new) <= latest:
            new = self.client.patch(GROUP_VERSION, "replicasets", new["metadata"]["namespace"],
                                    new["metadata"]["name"],
                                    {"metadata": {"annotations": {REVISION: str(latest + 1)}}})
        self.set_deployment_revision(deployment, revision_of(new))
        return new

    def set_deployment_revision(self, deployment: dict, revision: int) -> None:
        if (deployment["metadata"].get("annotations") or {}).get(REVISION) != str(revision):
            meta = deployment["metadata"]
            self.client.patch(GROUP_VERSION, "deployments", meta["namespace"], meta["name"],
                              {"metadata": {"annotations": {REVISION: str(revision)}}})

    def create_new_replicaset(self, deployment: dict, old: list[dict]) -> dict:
        meta, spec = deployment["metadata"], deployment["spec"]
        template = copy.deepcopy(spec["template"])
        pod_hash = template_hash(without_hash(template))
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = copy.deepcopy(spec["selector"])
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        revision = max([revision_of(rs) for rs in old] + [0]) + 1
        annotations = {REVISION: str(revision)}
        if CHANGE_CAUSE in (meta.get("annotations") or {}):
            annotations[CHANGE_CAUSE] = meta["annotations"][CHANGE_CAUSE]
        surge, _ = surge_and_unavailable(spec.get("strategy"), spec.get("replicas", 1))
        rolling = (spec.get("strategy") or {}).get("type") != "Recreate"
        replicas = (scale_up_new(spec.get("replicas", 1), surge, 0, self.total(old)) if rolling or not self.total(old)
                    else 0)
        rs = {"apiVersion": GROUP_VERSION, "kind": "ReplicaSet",
              "metadata": {"name": f"{meta['name']}-{pod_hash}", "namespace": meta["namespace"],
                           "labels": template["metadata"]["labels"], "annotations": annotations,
                           "ownerReferences": [owner_reference(deployment)]},
              "spec": {"replicas": replicas, "minReadySeconds": spec.get("minReadySeconds", 0),
                       "selector": selector, "template": template}}
        created = self.client.create(GROUP_VERSION, "replicasets", rs)
        self.events.event(deployment, "Normal", "ScalingReplicaSet",
                          f"Scaled up replica set {created['metadata']['name']} to {replicas}")
        self.set_deployment_revision(deployment, revision)
        self.progress(deployment, "NewReplicaSetCreated", f'Created new replica set "{created["metadata"]["name"]}"')
        return created

    # ------------------------------------------------ the two strategies

    @staticmethod
    def total(replicasets: list[dict]) -> int:
        return sum(rs["spec"].get("replicas", 0) for rs in replicasets)

    @staticmethod
    def available(replicasets: list[dict]) -> int:
        return sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in replicasets)

    def rolling_step(self, deployment: dict, new: dict, old: list[dict]) -> bool:
        replicas = deployment["spec"].get("replicas", 1)
        surge, unavailable = surge_and_unavailable(deployment["spec"].get("strategy"), replicas)
        new_replicas = new["spec"].get("replicas", 0)
        wanted = scale_up_new(replicas, surge, new_replicas, self.total(old) + new_replicas)
        if wanted != new_replicas:
            self.scale(deployment, new, wanted)
            return True
        new_unavailable = new_replicas - (new.get("status") or {}).get("availableReplicas", 0)
        limit = scale_down_limit(replicas, unavailable, self.total(old) + new_replicas, new_unavailable)
        # Old pods that are not available give no capacity: they go first.
        changed = False
        for rs in old:
            unhealthy = rs["spec"].get("replicas", 0) - (rs.get("status") or {}).get("availableReplicas", 0)
            step = min(limit, max(unhealthy, 0))
            if step > 0:
                self.scale(deployment, rs, rs["spec"]["replicas"] - step)
                limit -= step
                changed = True
        if changed:
            return True
        budget = min(limit, healthy_scale_down(replicas, unavailable, self.available(old + [new])))
        for rs in old:                           # oldest revision first
            step = min(budget, rs["spec"].get("replicas", 0))
            if step > 0:
                self.scale(deployment, rs, rs["spec"]["replicas"] - step)
                budget -= step
                changed = True
        return changed

    def recreate_step(self, deployment: dict, new: dict, old: list[dict]) -> bool:
        """Every old pod stops before any new one starts (for apps that cannot
        run two versions at once)."""
        running_old = [rs for rs in old if rs["spec"].get("replicas", 0) > 0]
        for rs in running_old:
            self.scale(deployment, rs, 0)
        if running_old or self.old_pods_running(old):
            return bool(running_old)             # wait for the old pods to be gone
        replicas = deployment["spec"].get("replicas", 1)
        if new["spec"].get("replicas", 0) != replicas:
            self.scale(deployment, new, replicas)
            return True
        return False

    def scale(self, deployment: dict, rs: dict, replicas: int) -> None:
        before = rs["spec"].get("replicas", 0)
        self.client.patch(GROUP_VERSION, "replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"],
                          {"spec": {"replicas": replicas},
                           "metadata": {"resourceVersion": rs["metadata"]["resourceVersion"]}})
        direction = "up" if replicas > before else "down"
        self.events.event(deployment, "Normal", "ScalingReplicaSet",
                          f"Scaled {direction} replica set {rs['metadata']['name']} to {replicas} from {before}")
        self.progress(deployment, "ReplicaSetUpdated", f'ReplicaSet "{rs["metadata"]["name"]}" is progressing.')

    # ------------------------------------------------ history and status

    def is_complete(self, deployment: dict, new: dict, old: list[dict]) -> bool:
        replicas = deployment["spec"].get("replicas", 1)
        status = new.get("status") or {}
        return (new["spec"].get("replicas", 0) == replicas and status.get("availableReplicas", 0) == replicas
                and status.get("replicas", 0) == replicas
                and not any((rs.get("status") or {}).get("replicas", 0) for rs in old))

    def clean_up_history(self, deployment: dict, old: list[dict]) -> None:
        """Keep revisionHistoryLimit old ReplicaSets (default 10) for `rollout undo`."""
        limit = deployment["spec"].get("revisionHistoryLimit", 10)
        idle = [rs for rs in old if rs["spec"].get("replicas", 0) == 0
                and not (rs.get("status") or {}).get("replicas", 0)]
        for rs in idle[:max(0, len(idle) - limit)]:
            self.client.delete(GROUP_VERSION, "replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"])

    def progress(self, deployment: dict, reason: str, message: str) -> None:
        """Remember that the rollout moved (the Progressing condition's
        lastUpdateTime): progressDeadlineSeconds counts from here."""
        self._progress[key_for(deployment)] = (reason, message, now())

    def update_status(self, deployment: dict, new: dict | None, old: list[dict]) -> None:
        spec = deployment["spec"]
        replicas = spec.get("replicas", 1)
        everything = old + ([new] if new else [])
        sums = {field: sum((rs.get("status") or {}).get(field, 0) for rs in everything)
                for field in ("replicas", "readyReplicas", "availableReplicas")}
        updated = (new.get("status") or {}).get("replicas", 0) if new else 0
        _, unavailable = surge_and_unavailable(spec.get("strategy"), replicas)
        status = {"observedGeneration": deployment["metadata"].get("generation", 1),
                  "replicas": sums["replicas"], "updatedReplicas": updated,
                  "readyReplicas": sums["readyReplicas"], "availableReplicas": sums["availableReplicas"],
                  "unavailableReplicas": max(0, replicas - sums["availableReplicas"])}
        old_status = deployment.get("status") or {}
        conditions = {c["type"]: c for c in old_status.get("conditions") or []}
        available = sums["availableReplicas"] >= replicas - unavailable
        conditions["Available"] = self.condition(
            conditions.get("Available"), "Available", available,
            "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "Deployment has minimum availability." if available else "Deployment does not have minimum availability.")
        conditions["Progressing"] = self.progressing(deployment, new, old, conditions.get("Progressing"))
        status["conditions"] = [conditions["Available"], conditions["Progressing"]]
        if any(old_status.get(k) != v for k, v in status.items()):
            self.client.update_status(GROUP_VERSION, "deployments", {**deployment, "status": status})
        # Only now is the step written down: had the write failed (a Conflict,
        # say), the retry must still know the rollout moved.
        self._progress.pop(key_for(deployment), None)

    def progressing(self, deployment: dict, new: dict | None, old: list[dict], previous: dict | None) -> dict:
        name = new["metadata"]["name"] if new else deployment["metadata"]["name"]
        moved = self._progress.get(key_for(deployment))
        if new is not None and self.is_complete(deployment, new, old):
            return self.condition(previous, "Progressing", True, "NewReplicaSetAvailable",
                                  f'ReplicaSet "{name}" has successfully progressed.')
        if moved is not None:
            reason, message, when = moved
            return {**self.condition(previous, "Progressing", True, reason, message), "lastUpdateTime": when}
        deadline = deployment["spec"].get("progressDeadlineSeconds", 600)
        last = parse_time((previous or {}).get("lastUpdateTime"))
        if previous and previous.get("reason") != "NewReplicaSetAvailable" and last is not None:
            if time.time() - last > deadline:
                return self.condition(previous, "Progressing", False, "ProgressDeadlineExceeded",
                                      f'ReplicaSet "{name}" has timed out progressing.')
            self.queue.add_after(key_for(deployment), deadline - (time.time() - last) + 1)
        return previous or self.condition(None, "Progressing", True, "ReplicaSetUpdated",
                                          f'ReplicaSet "{name}" is progressing.')

    @staticmethod
    def condition(previous: dict | None, kind: str, status: bool, reason: str, message: str) -> dict:
        value = "True" if status else "False"
        stamp = now()
        if previous and previous.get("status") == value and previous.get("reason") == reason \
                and previous.get("message") == message:
            return previous
        changed = not previous or previous.get("status") != value
        return {"type": kind, "status": value, "reason": reason, "message": message, "lastUpdateTime": stamp,
                "lastTransitionTime": stamp if changed else previous.get("lastTransitionTime", stamp)}
