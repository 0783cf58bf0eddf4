"""The Job controller: run pods until enough of them succeed.

A ReplicaSet's pods should never stop; a Job's pods should, once their work
is done (restartPolicy Never or OnFailure). The Job counts its pods by
phase and compares:

    succeeded >= completions          ->  Complete
    failed > backoffLimit             ->  Failed, BackoffLimitExceeded
    running longer than the deadline  ->  Failed, DeadlineExceeded
    otherwise                         ->  keep min(parallelism, completions - succeeded) pods running

    completions 3, parallelism 2:   ▶▶  ✓▶  ✓✓▶  ✓✓✓  Complete

The counts are read from the pods themselves, so a restarted controller
counts the same. (Kubernetes also puts a finalizer on each pod, so a
finished pod deleted before it is counted is still counted; we keep the
count monotonic instead: a status number never goes down.)
"""
from __future__ import annotations

import copy
import time
from typing import NamedTuple

from common.client.client import NotFound
from common.client.events import now as timestamp
from controller import split_key
from ownership import adopt, controller_of, is_controlled_by, owner_reference, release, selects
from pod_owner import BURST_PODS, PodOwnerController
from pods import is_active, is_ready, parse_time, pods_to_delete

GROUP_VERSION = "batch/v1"
# What Kubernetes puts on a Job's pods: the uid picks them out, the name is
# for people (`kubectl get pods -l job-name=pi`). Both the short, old keys
# and the batch.kubernetes.io ones.
CONTROLLER_UID, JOB_NAME = "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME = "controller-uid", "job-name"


# ---------------------------------------------------------------- decisions

# [START job-pods-to-start]
def pods_to_start(completions: int | None, parallelism: int, succeeded: int, active: int,
                  suspended: bool = False) -> int:
    """How many pods to start now; negative: how many running pods are too
    many (parallelism lowered, or a suspended Job).

    With completions, run at most what is still to be done. Without
    completions (a work queue), the pods decide: once one has succeeded,
    the work is done and no new pod starts, but the others may finish."""
    if suspended:
        wanted = 0
    elif completions is None:
        wanted = active if succeeded > 0 else parallelism
    else:
        wanted = max(0, min(parallelism, completions - succeeded))
    return wanted - active
# [END job-pods-to-start]


def is_complete(completions: int | None, succeeded: int, active: int) -> bool:
    """Done when enough pods succeeded and none still runs (without
    completions: one succeeded, and the rest have finished too)."""
    if active:
        return False
    return succeeded > 0 if completions is None else succeeded >= completions


def past_backoff_limit(backoff_limit: int, failed: int, restarts: int) -> bool:
    """Failed pods (restartPolicy Never) and container restarts of running
    pods (OnFailure: the kubelet retries in place) both count as retries."""
    return failed + restarts > backoff_limit


class Counts(NamedTuple):
    active: int
    succeeded: int
    failed: int
    ready: int
    restarts: int            # container restarts of active pods (OnFailure retries)


def count_pods(pods: list[dict]) -> Counts:
    active = [p for p in pods if is_active(p)]
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    restarts = sum(c.get("restartCount", 0) for p in active
                   for c in (p.get("status") or {}).get("containerStatuses") or [])
    return Counts(active=len(active), succeeded=phases.count("Succeeded"), failed=phases.count("Failed"),
                  ready=sum(1 for p in active if is_ready(p)), restarts=restarts)


def finished(job: dict) -> str | None:
    """"Complete" or "Failed" once the Job has ended, else None."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def selector_of(job: dict) -> dict:
    """The Job's selector; Kubernetes' API server writes one with the
    Job's uid at creation, ours does not, so we use that one when none is set."""
    return job["spec"].get("selector") or {"matchLabels": {CONTROLLER_UID: job["metadata"]["uid"]}}


# ---------------------------------------------------------------- the controller

class JobController(PodOwnerController):
    name = "job"
    owner_kind = "Job"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.jobs = self.informers.get(GROUP_VERSION, "jobs")
        self.watch_owners_and_pods(self.jobs)          # pod events -> Job keys (pod_owner.py)

    # [START job-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self.jobs.get(namespace, name)
        if job is None:
            self.expectations.forget(key)
            return
        if finished(job) or job["metadata"].get("deletionTimestamp"):
            return                                  # a finished Job starts nothing more
        pods = self.claim_pods(job)
        counts = self.monotonic(job, count_pods(pods))
        spec = job["spec"]
        started = (job.get("status") or {}).get("startTime") or timestamp()
        deadline = spec.get("activeDeadlineSeconds")
        if past_backoff_limit(spec.get("backoffLimit", 6), counts.failed, counts.restarts):
            return self.fail(job, pods, counts, started, "BackoffLimitExceeded",
                             "Job has reached the specified backoff limit")
        if deadline is not None and time.time() - parse_time(started) >= deadline:
            return self.fail(job, pods, counts, started, "DeadlineExceeded",
                             "Job was active longer than specified deadline")
        if is_complete(spec.get("completions"), counts.succeeded, counts.active):
            return self.complete(job, counts, started)
        if self.expectations.satisfied(key):
            change = pods_to_start(spec.get("completions"), spec.get("parallelism", 1), counts.succeeded,
                                   counts.active, suspended=bool(spec.get("suspend")))
            if change > 0:
                self.create_pods(job, key, min(change, BURST_PODS))
            elif change < 0:
                active = [p for p in pods if is_active(p)]
                self.delete_pods(job, key, pods_to_delete(active, -change, time.time()))
        self.update_status(job, {**self.counted(counts), "startTime": started})
        if deadline is not None:                    # nothing else would wake us at the deadline
            self.queue.add_after(key, max(0.0, parse_time(started) + deadline - time.time()) + 0.1)
    # [END job-reconcile]

    @staticmethod
    def monotonic(job: dict, counts: Counts) -> Counts:
        """A finished pod someone deleted still counts: the status keeps it."""
        status = job.get("status") or {}
        return counts._replace(succeeded=max(counts.succeeded, status.get("succeeded", 0)),
                               failed=max(counts.failed, status.get("failed", 0)))

    @staticmethod
    def counted(counts: Counts) -> dict:
        return {"active": counts.active, "succeeded": counts.succeeded, "failed": counts.failed,
                "ready": counts.ready}

    # ------------------------------------------------ endings

    def complete(self, job: dict, counts: Counts, started: str) -> None:
        stamp = timestamp()
        self.update_status(job, {**self.counted(counts), "startTime": started, "completionTime": stamp,
                                 "conditions": self.with_condition(job, "Complete", "CompletionsReached",
                                                                   "Reached expected number of succeeded pods")})
        self.events.event(job, "Normal", "Completed", "Job completed")

    def fail(self, job: dict, pods: list[dict], counts: Counts, started: str, reason: str, message: str) -> None:
        """Stop every running pod; they count as failed, as in Kubernetes."""
        active = [p for p in pods if is_active(p)]
        for pod in active:
            try:
                self.client.delete("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            except NotFound:             # gone already: it still ran, and counts as failed
                pass
            self.events.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        status = {**self.counted(counts), "active": 0, "ready": 0, "failed": counts.failed + len(active),
                  "startTime": started, "conditions": self.with_condition(job, "Failed", reason, message)}
        self.update_status(job, status)
        self.events.event(job, "Warning", reason, message)

    @staticmethod
    def with_condition(job: dict, kind: str, reason: str, message: str) -> list[dict]:
        stamp = timestamp()
        others = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("type") != kind]
        return others + [{"type": kind, "status": "True", "reason": reason, "message": message,
                          "lastProbeTime": stamp, "lastTransitionTime": stamp}]

    def update_status(self, job: dict, status: dict) -> None:
        old = job.get("status") or {}
        if any(old.get(k, 0) != v for k, v in status.items()):
            self.client.update_status(GROUP_VERSION, "jobs", {**job, "status": {**old, **status}})

    # ------------------------------------------------ pods

    def claim_pods(self, job: dict) -> list[dict]:
        namespace, selector = job["metadata"]["namespace"], selector_of(job)
        owned = []
        for pod in self.pods.list():
            if pod["metadata"]["namespace"] != namespace:
                continue
            matches = selects(selector, pod["metadata"].get("labels"))
            if is_controlled_by(pod, job):
                if matches:
                    owned.append(pod)
                else:
                    release(self.client, "v1", "pods", pod, job)
            elif matches and controller_of(pod) is None and is_active(pod):
                owned.append(adopt(self.client, "v1", "pods", pod, job))
        return owned

    def pod_from_template(self, job: dict) -> dict:
        template = copy.deepcopy(job["spec"]["template"])
        meta, uid, name = template.get("metadata") or {}, job["metadata"]["uid"], job["metadata"]["name"]
        labels = {**(meta.get("labels") or {}), CONTROLLER_UID: uid, LEGACY_CONTROLLER_UID: uid,
                  JOB_NAME: name, LEGACY_JOB_NAME: name}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": name + "-", "namespace": job["metadata"]["namespace"],
                             "labels": labels, "annotations": meta.get("annotations") or {},
                             "ownerReferences": [owner_reference(job)]},
                "spec": template.get("spec") or {}}       # restartPolicy as the template says

    def create_pods(self, job: dict, key: str, count: int) -> None:
        self.create_owned_pods(job, key, [self.pod_from_template(job) for _ in range(count)])
