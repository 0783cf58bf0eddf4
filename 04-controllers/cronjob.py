"""The CronJob controller: make a Job from a template at each scheduled time.

A CronJob is to a Job what a Job is to a pod: the controller creates Jobs
and leaves running them to the Job controller. Its one question is "is a run
due?", answered from the schedule, the time of the last run it made
(status.lastScheduleTime) and the clock:

    schedule "*/5 * * * *", last run 10:00, now 10:11
        due: 10:05 and 10:10 -> start only the latest, 10:10
        (with startingDeadlineSeconds 60, 10:10 is still due; at 10:12 it is not)

Each Job is named after the run it is for, `<cronjob>-<minutes since the
epoch>`, so the name is the idempotency key: a controller killed after
creating the Job but before writing lastScheduleTime tries again, gets
AlreadyExists, and knows the run happened. Nothing polls: after each
reconcile the key is requeued for the next scheduled time.
"""
from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import NamedTuple
from zoneinfo import ZoneInfo

from common.model import cron
from common.client.client import AlreadyExists, NotFound
from common import times
from controller import Controller, split_key
from job import finished
from ownership import controller_of, is_controlled_by, owner_reference

GROUP_VERSION = "batch/v1"          # CronJobs and the Jobs they make
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
# More missed runs than this and something is wrong (a clock jump, a long
# outage): Kubernetes says so in an event rather than counting on.
TOO_MANY_MISSED = 100


# ---------------------------------------------------------------- decisions

class Due(NamedTuple):
    run: datetime | None        # the latest run to start now, if any
    missed: int                 # how many scheduled times passed without a run (run included)
    next: datetime              # the next scheduled time after now: when to look again
    too_late: datetime | None = None    # without a run: the latest slot the starting deadline let pass


# [START cronjob-due]
def due_run(schedule: cron.Schedule, last: datetime, now: datetime,
            starting_deadline: float | None = None) -> Due:
    """Which run, if any, is due at `now`.

    `last` is the last run started (or the CronJob's creation). Every
    scheduled time in (last, now] was missed; only the latest is started,
    as in Kubernetes. A run older than the starting deadline is too late:
    its slot is skipped, not run late."""
    earliest = last
    if starting_deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=starting_deadline))
    run, missed, t = latest_slot(schedule, earliest, now)
    too_late = None
    if run is None and earliest > last:
        too_late = latest_slot(schedule, last, earliest)[0]
    return Due(run, missed, t, too_late)
# [END cronjob-due]


def latest_slot(schedule: cron.Schedule, after: datetime, until: datetime) -> tuple[datetime | None, int, datetime]:
    """The latest scheduled time in (after, until], how many there were, and the first one after `until`."""
    latest, count, t = None, 0, schedule.next_after(after)
    while t <= until:
        latest, count = t, count + 1
        if count > TOO_MANY_MISSED:          # stop counting; the latest is found by stepping from near the end
            t = schedule.next_after(max(t, until - timedelta(days=1)))
            continue
        t = schedule.next_after(t)
    return latest, count, t


def job_name(cronjob_name: str, run: datetime) -> str:
    """<cronjob>-<minutes since the epoch>: the same run always gets the same name."""
    return f"{cronjob_name}-{int(run.timestamp()) // 60}"


def history_to_delete(jobs: list[dict], limit: int) -> list[dict]:
    """The oldest finished Jobs beyond the limit (Jobs of one outcome)."""
    jobs = sorted(jobs, key=lambda j: ((j.get("status") or {}).get("startTime")
                                       or j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"]))
    return jobs[:max(0, len(jobs) - limit)]


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def rfc3339(moment: datetime) -> str:
    return times.rfc3339(moment.timestamp())


# ---------------------------------------------------------------- the controller

class CronJobController(Controller):
    name = "cronjob"

    def __init__(self, *args, clock=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.cronjobs = self.informers.get(GROUP_VERSION, "cronjobs")
        self.jobs = self.informers.get(GROUP_VERSION, "jobs")
        self.cronjobs.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))
        # A Job of ours that starts, finishes or goes: its CronJob's active list changes.
        self.jobs.add_handler(on_add=self.job_changed, on_update=lambda old, new: self.job_changed(new),
                              on_delete=self.job_changed)

    def job_changed(self, job: dict) -> None:
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.queue.add(f"{job['metadata']['namespace']}/{ref['name']}")

    # [START cronjob-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        cronjob = self.cronjobs.get(namespace, name)
        if cronjob is None or cronjob["metadata"].get("deletionTimestamp"):
            return                                   # the garbage collector takes its Jobs
        spec, now = cronjob["spec"], self.clock()
        jobs = [j for j in self.jobs.list() if j["metadata"]["namespace"] == namespace
                and is_controlled_by(j, cronjob)]
        status = self.observe(cronjob, jobs)         # active list, lastSuccessfulTime
        self.clean_up_history(cronjob, jobs)
        schedule = cron.parse(spec["schedule"])
        last = parse_time(status.get("lastScheduleTime")) or parse_time(cronjob["metadata"]["creationTimestamp"])
        zone = ZoneInfo(spec["timeZone"]) if spec.get("timeZone") else timezone.utc
        due = due_run(schedule, last.astimezone(zone), now.astimezone(zone), spec.get("startingDeadlineSeconds"))
        if due.missed > TOO_MANY_MISSED:
            self.events.event(cronjob, "Warning", "TooManyMissedTimes",
                              f"too many missed start times: {due.missed}. Set or decrease "
                              ".spec.startingDeadlineSeconds or check clock skew")
        if due.run is not None and not spec.get("suspend"):
            self.start_run(cronjob, status, due.run)
        elif due.too_late is not None and not spec.get("suspend"):
            self.events.event(cronjob, "Warning", "MissSchedule", "Missed scheduled time to start a job: "
                              + due.too_late.strftime("%a, %d %b %Y %H:%M:%S %z"))
        self.write_status(cronjob, status)
        if not spec.get("suspend"):                  # a suspended CronJob wakes on its next update
            self.queue.add_after(key, max(0.0, (due.next - now).total_seconds()) + 0.1)
    # [END cronjob-reconcile]

    def start_run(self, cronjob: dict, status: dict, run: datetime) -> None:
        policy = cronjob["spec"].get("concurrencyPolicy", "Allow")
        if status["active"] and policy == "Forbid":
            # Skipped, not recorded: when the active Job ends, the run is still
            # due (if inside the starting deadline) and starts then.
            self.events.event(cronjob, "Normal", "JobAlreadyActive", "Not starting job because prior execution "
                                                                      "is running and concurrency policy is Forbid")
            return
        if status["active"] and policy == "Replace":
            for ref in status["active"]:
                try:
                    self.client.delete(GROUP_VERSION, "jobs", ref["namespace"], ref["name"],
                                       propagation_policy="Background")
                except NotFound:
                    pass
                self.events.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {ref['name']}")
            status["active"] = []
        try:
            job = self.client.create(GROUP_VERSION, "jobs", self.job_for(cronjob, run))
            self.events.event(cronjob, "Normal", "SuccessfulCreate", f"Created job {job['metadata']['name']}")
        except AlreadyExists:
            # Made before a restart (or by the other worker): the run happened.
            job = self.client.get(GROUP_VERSION, "jobs", cronjob["metadata"]["namespace"],
                                  job_name(cronjob["metadata"]["name"], run))
            if not is_controlled_by(job, cronjob):
                raise
        if not finished(job) and all(ref["uid"] != job["metadata"]["uid"] for ref in status["active"]):
            status["active"].append(reference(job))
        status["lastScheduleTime"] = rfc3339(run)

    def job_for(self, cronjob: dict, run: datetime) -> dict:
        template = copy.deepcopy(cronjob["spec"]["jobTemplate"])
        meta = template.get("metadata") or {}
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name(cronjob["metadata"]["name"], run),
                             "namespace": cronjob["metadata"]["namespace"],
                             "labels": meta.get("labels") or {},
                             "annotations": {**(meta.get("annotations") or {}), SCHEDULED_TIMESTAMP: rfc3339(run)},
                             "ownerReferences": [owner_reference(cronjob)]},
                "spec": template.get("spec") or {}}

    # ------------------------------------------------ status and history

    def observe(self, cronjob: dict, jobs: list[dict]) -> dict:
        """status.active from the Jobs themselves: running Jobs of ours in it,
        finished or vanished ones out (a restart loses nothing)."""
        status = copy.deepcopy(cronjob.get("status") or {})
        by_uid = {j["metadata"]["uid"]: j for j in jobs}
        active = []
        for ref in status.get("active") or []:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                job = self.live_job(ref)      # our cache may not have seen a Job we just made
            if job is not None and not finished(job):
                active.append(ref)            # kept as written: no status churn on every Job update
        listed = {ref.get("uid") for ref in active}
        active += [reference(j) for j in sorted(jobs, key=lambda j: j["metadata"]["name"])
                   if j["metadata"]["uid"] not in listed and not finished(j)
                   and not j["metadata"].get("deletionTimestamp")]
        status["active"] = active
        for job in jobs:
            if finished(job) == "Complete":
                done = (job.get("status") or {}).get("completionTime")
                if done and (status.get("lastSuccessfulTime") or "") < done:
                    status["lastSuccessfulTime"] = done
        return status

    def live_job(self, ref: dict) -> dict | None:
        try:
            job = self.client.get(GROUP_VERSION, "jobs", ref["namespace"], ref["name"])
        except NotFound:
            return None
        return job if job["metadata"]["uid"] == ref.get("uid") else None

    def clean_up_history(self, cronjob: dict, jobs: list[dict]) -> None:
        spec = cronjob["spec"]
        for outcome, limit in (("Complete", spec.get("successfulJobsHistoryLimit", 3)),
                               ("Failed", spec.get("failedJobsHistoryLimit", 1))):
            if limit is None:
                continue
            ended = [j for j in jobs if finished(j) == outcome and not j["metadata"].get("deletionTimestamp")]
            for job in history_to_delete(ended, limit):
                try:
                    self.client.delete(GROUP_VERSION, "jobs", job["metadata"]["namespace"],
                                       job["metadata"]["name"], propagation_policy="Background")
                except NotFound:
                    continue
                self.events.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")

    def write_status(self, cronjob: dict, status: dict) -> None:
        if not status["active"]:
            del status["active"]              # omitempty, as Kubernetes writes it
        if status != (cronjob.get("status") or {}):
            self.client.update_status(GROUP_VERSION, "cronjobs", {**cronjob, "status": status})


def reference(job: dict) -> dict:
    meta = job["metadata"]
    return {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "namespace": meta["namespace"],
            "uid": meta["uid"], "resourceVersion": meta.get("resourceVersion", "")}
