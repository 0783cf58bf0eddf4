"""What makes a StatefulSet pod itself: its name, its disks, its DNS name,
and the order in which the controller makes and removes such pods.

A ReplicaSet's pods are interchangeable (web-x7k2q, web-9fq4z): any one
can go, a new one with a new name replaces it. A database's replicas are
not: replica 0 holds the primary's data, the others know it by name. So a
StatefulSet numbers its pods and each number keeps, for life,

    a name       web-0, web-1, ...               (<set>-<ordinal>)
    a DNS name   web-0.nginx.default.svc.cluster.local
                 (hostname = the pod's name, subdomain = the set's
                  serviceName, a headless Service)
    a disk       the claim www-web-0             (<template>-<set>-<ordinal>)

A pod deleted for any reason comes back with the same name, the same DNS
name and the same claim, so the same data.

Everything here is a pure function of objects, so tables of pods test it;
statefulset.py does the API calls.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from ownership import owner_reference
from pods import is_available

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"

_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def ordinal_of(set_name: str, pod_name: str) -> int | None:
    """web-3 -> 3 for the set "web"; None for a pod that is not one of its."""
    match = _ORDINAL.match(pod_name)
    if match is None or match.group(1) != set_name:
        return None
    return int(match.group(2))


def pod_name(sts: dict, ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


def claim_name(template_name: str, sts: dict, ordinal: int) -> str:
    """The claim of template "www" for pod web-0 is www-web-0: it outlives the
    pod, and the next web-0 finds it again by this name."""
    return f"{template_name}-{pod_name(sts, ordinal)}"


# [START stateful-identity]
def new_pod(sts: dict, template: dict, ordinal: int, revision: str) -> dict:
    """Pod number `ordinal` of the set, made from `template` (the set's
    template at `revision`), with its name, DNS name and disks."""
    meta = template.get("metadata") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    name = pod_name(sts, ordinal)
    spec["hostname"] = name                               # the pod's own DNS label ...
    if sts["spec"].get("serviceName"):
        spec["subdomain"] = sts["spec"]["serviceName"]    # ... under the set's headless Service
    claims = {t["metadata"]["name"]: claim_name(t["metadata"]["name"], sts, ordinal)
              for t in sts["spec"].get("volumeClaimTemplates") or []}
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
    spec["volumes"] = volumes + [{"name": template_name, "persistentVolumeClaim": {"claimName": claim}}
                                 for template_name, claim in claims.items()]
    if not spec["volumes"]:
        del spec["volumes"]
    labels = {**(meta.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
              REVISION_LABEL: revision}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": sts["metadata"]["namespace"], "labels": labels,
                         "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_reference(sts)]},
            "spec": spec}
# [END stateful-identity]


def new_claim(sts: dict, template: dict, ordinal: int) -> dict:
    """The claim for one pod from one of the set's volumeClaimTemplates. It
    carries the set's selector labels, as in Kubernetes, so a person can
    list a set's disks with the same selector as its pods."""
    meta = template.get("metadata") or {}
    match_labels = (sts["spec"].get("selector") or {}).get("matchLabels") or {}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": claim_name(meta["name"], sts, ordinal), "namespace": sts["metadata"]["namespace"],
                          "labels": {**(meta.get("labels") or {}), **match_labels}},
             "spec": copy.deepcopy(template.get("spec") or {})}
    if meta.get("annotations"):
        claim["metadata"]["annotations"] = dict(meta["annotations"])
    return claim


def revision_of(pod: dict) -> str:
    return (pod["metadata"].get("labels") or {}).get(REVISION_LABEL, "")


# ----------------------------------------------------------------- health

def is_running_and_ready(pod: dict, min_ready_seconds: int, now: float) -> bool:
    """What OrderedReady waits for before the next pod: Running, Ready,
    and Ready for minReadySeconds."""
    return (pod.get("status") or {}).get("phase") == "Running" and is_available(pod, min_ready_seconds, now)


def is_terminating(pod: dict) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def has_finished(pod: dict) -> bool:
    """A pod that stopped for good (evicted, or its containers exited):
    the set deletes it and makes the same pod again."""
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


# ----------------------------------------------------------------- the plan

@dataclass
class Plan:
    """What one reconcile does: pods to create (by ordinal, with the revision
    each gets), pods to delete, and why it stops there if it does."""
    create: list[tuple[int, str]] = field(default_factory=list)
    delete: list[dict] = field(default_factory=list)
    waiting_for: str = ""


@dataclass(frozen=True)
class Revisions:
    current: str              # what the pods below the partition keep
    update: str               # the set's template now
    partition: int = 0        # ordinals >= start + partition move to `update`
    rolling: bool = True      # RollingUpdate; False: OnDelete (pods change only when deleted)


# [START stateful-plan]
def plan(pods: dict[int, dict], start: int, replicas: int, revisions: Revisions, *,
         ordered: bool, min_ready_seconds: int = 0, now: float = 0.0) -> Plan:
    """The next steps towards `replicas` pods numbered start, start+1, ...

    ordered (OrderedReady): one step at a time; a pod is made only when every
    pod before it is Running and Ready, and removed (highest first) only when
    every pod kept is. Parallel: every missing pod at once, every extra at once.
    Updates go one pod at a time in both, highest ordinal first, down to the
    partition, each waiting for the one before to be Ready again.
    """
    result = Plan()
    wanted = range(start, start + replicas)

    def healthy(pod: dict) -> bool:               # a pod being deleted may still be Ready: not healthy
        return is_running_and_ready(pod, min_ready_seconds, now) and not is_terminating(pod)

    if make_and_mend(result, pods, wanted, revisions, ordered, healthy):
        return result                             # OrderedReady: a pod before the rest is not ready
    if scale_down(result, pods, wanted, ordered) or result.create or result.delete:
        return result                             # the update waits until the set has its size
    roll(result, pods, wanted, revisions, healthy)
    return result
# [END stateful-plan]


# [START stateful-make-and-mend]
def make_and_mend(result: Plan, pods: dict[int, dict], wanted: range, revisions: Revisions,
                  ordered: bool, healthy) -> bool:
    """1. Every pod that should exist, lowest ordinal first: a missing one
    is made, one that stopped for good is deleted (to come back as itself).
    True: the plan stops here (OrderedReady waits for this step)."""
    for ordinal in wanted:
        pod = pods.get(ordinal)
        if pod is None:
            result.create.append((ordinal, revision_for(ordinal, wanted.start, revisions)))
            if ordered:
                return wait_for(result, f"pod {ordinal} to be created")
        elif has_finished(pod) and not is_terminating(pod):
            result.delete.append(pod)             # it comes back, same name, same disk
            if ordered:
                return wait_for(result, f"{pod['metadata']['name']} to be replaced")
        elif ordered and not healthy(pod):
            state = "terminated" if is_terminating(pod) else "Running and Ready"
            return wait_for(result, f"{pod['metadata']['name']} to be {state}")
    return False
# [END stateful-make-and-mend]


def revision_for(ordinal: int, start: int, revisions: Revisions) -> str:
    """The revision a pod made now is made from: below the partition the
    current one (a pod deleted there comes back as it was), else the update."""
    if revisions.rolling and ordinal < start + revisions.partition:
        return revisions.current
    return revisions.update


# [START stateful-scale-down-and-roll]
def scale_down(result: Plan, pods: dict[int, dict], wanted: range, ordered: bool) -> bool:
    """2. The pods beyond the set's size go, highest ordinal first
    (OrderedReady: one at a time, each once the one before is gone)."""
    for ordinal in sorted((o for o in pods if o not in wanted), reverse=True):
        pod = pods[ordinal]
        if not is_terminating(pod):
            result.delete.append(pod)
        if ordered:
            return wait_for(result, f"{pod['metadata']['name']} to be terminated")
    return False


def roll(result: Plan, pods: dict[int, dict], wanted: range, revisions: Revisions, healthy) -> bool:
    """3. The update: one pod at a time, highest ordinal first, down to the
    partition; each waits for the one before to be Running and Ready again.
    OnDelete: none (a pod changes when someone deletes it)."""
    if not revisions.rolling:
        return False
    for ordinal in reversed(wanted):
        if ordinal < wanted.start + revisions.partition:
            break
        pod = pods[ordinal]
        if revision_of(pod) != revisions.update and not is_terminating(pod):
            result.delete.append(pod)             # make_and_mend makes it anew, from the update revision
            return wait_for(result, f"{pod['metadata']['name']} to be updated")
        if not healthy(pod):
            return wait_for(result, f"{pod['metadata']['name']} to be Running and Ready")
    return False
# [END stateful-scale-down-and-roll]


def wait_for(result: Plan, what: str) -> bool:
    """Note what the plan waits for; True: it stops here."""
    result.waiting_for = what
    return True


# ----------------------------------------------------------------- disks after the pods

@dataclass(frozen=True)
class RetentionPolicy:
    when_deleted: str = "Retain"     # the set deleted: its claims go too (Delete) or stay
    when_scaled: str = "Retain"      # a pod removed by scaling down: its claim goes too or stays

    @classmethod
    def of(cls, sts: dict) -> "RetentionPolicy":
        policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
        return cls(policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain")


# [START claim-owners]
def claim_owners(policy: RetentionPolicy, sts: dict, pod: dict | None, condemned: bool) -> list[dict]:
    """The owner references a claim should carry, so that the garbage
    collector deletes it when the policy says (as Kubernetes does):

      whenDeleted: Delete  -> owned by the set: it goes with the set
      whenScaled: Delete   -> a claim whose pod is being scaled away is owned
                              by that pod instead: it goes with the pod
      Retain               -> no owner: it stays until a person deletes it
    """
    if condemned and policy.when_scaled == "Delete" and pod is not None:
        return [_plain_ref(pod)]
    if policy.when_deleted == "Delete":
        return [_plain_ref(sts)]
    return []
# [END claim-owners]


def _plain_ref(owner: dict) -> dict:
    """An owner, not a controller: the claim is not the set's to manage like a pod."""
    meta = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", "v1"), "kind": owner.get("kind", "Pod"),
            "name": meta["name"], "uid": meta["uid"]}


def with_owners(claim: dict, owners: list[dict], ours: set[str]) -> list[dict] | None:
    """The claim's owner references with ours (uids in `ours`) replaced by
    `owners`; None if nothing changes. Other owners are left alone."""
    current = claim["metadata"].get("ownerReferences") or []
    kept = [ref for ref in current if ref.get("uid") not in ours]
    wanted = kept + owners
    key = lambda refs: sorted(ref.get("uid", "") for ref in refs)    # noqa: E731
    return None if key(current) == key(wanted) else wanted


__all__ = ["POD_NAME_LABEL", "POD_INDEX_LABEL", "REVISION_LABEL", "Plan", "Revisions", "RetentionPolicy",
           "claim_name", "claim_owners", "has_finished", "is_running_and_ready", "is_terminating",
           "make_and_mend", "new_claim", "new_pod", "ordinal_of", "plan", "pod_name", "revision_for",
           "revision_of", "roll", "scale_down", "wait_for", "with_owners"]
