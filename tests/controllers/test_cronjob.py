"""The CronJob controller: its "which run is due" decision on a fake clock,
then the real controller manager beside a real API server.

End to end, a test never waits for the clock to reach a schedule: it makes
the CronJob suspended, writes a lastScheduleTime in the past (as a
controller that had been down for a while would find it), and resumes it.
"""
from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

import pytest

from controllers_harness import ROOT, make_namespace, wait_for

sys.path.insert(0, str(ROOT / "04-controllers"))
from common.model import cron  # noqa: E402
from cronjob import due_run, history_to_delete, job_name  # noqa: E402


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# ---------------------------------------------------------------- decisions

@pytest.mark.parametrize("schedule, last, now, deadline, run, missed, next_", [
    # Nothing due yet: look again at the next slot.
    ("*/5 * * * *", "2026-11-23 10:00", "2026-11-23 10:03", None, None, 0, "2026-11-23 10:05"),
    # Exactly on the slot counts.
    ("*/5 * * * *", "2026-11-23 10:00", "2026-11-23 10:05", None, "2026-11-23 10:05", 1, "2026-11-23 10:10"),
    # Two slots missed (the controller was down): only the latest runs.
    ("*/5 * * * *", "2026-11-23 10:00", "2026-11-23 10:11", None, "2026-11-23 10:10", 2, "2026-11-23 10:15"),
    # The latest missed slot is inside the starting deadline: still run.
    ("*/5 * * * *", "2026-11-23 10:00", "2026-11-23 10:11", 120, "2026-11-23 10:10", 1, "2026-11-23 10:15"),
    # ...and outside it: too late, skipped (and said: test_a_slot_past_its_deadline_is_named).
    ("*/5 * * * *", "2026-11-23 10:00", "2026-11-23 10:12", 60, None, 0, "2026-11-23 10:15"),
    # Descriptors and day-of-week, as robfig/cron reads them.
    ("@hourly", "2026-11-23 10:00", "2026-11-23 12:30", None, "2026-11-23 12:00", 2, "2026-11-23 13:00"),
    ("0 9 * * 1", "2026-11-16 09:00", "2026-11-23 10:00", None, "2026-11-23 09:00", 1, "2026-11-30 09:00"),
    ("@every 90s", "2026-11-23 10:00", "2026-11-23 10:04", None, "2026-11-23 10:03", 2, "2026-11-23 10:04:30"),
])
def test_which_run_is_due(schedule, last, now, deadline, run, missed, next_):
    due = due_run(cron.parse(schedule), at(last), at(now), deadline)
    assert due.run == (at(run) if run else None)
    assert (due.missed, due.next) == (missed, at(next_))


def test_a_slot_past_its_deadline_is_named():
    due = due_run(cron.parse("0 0 1 1 *"), at("2024-01-01 00:00"), at("2026-11-23 10:00"), 60)
    assert due.run is None and due.too_late == at("2026-01-01 00:00")
    assert due_run(cron.parse("*/5 * * * *"), at("2026-11-23 10:00"), at("2026-11-23 10:03"), 60).too_late is None


def test_a_long_outage_is_counted_without_walking_every_minute():
    schedule = cron.parse("* * * * *")
    steps = []
    real_next_after = schedule.next_after
    schedule.next_after = lambda t: steps.append(t) or real_next_after(t)
    due = due_run(schedule, at("2020-01-01 00:00"), at("2026-11-23 10:00:30"))
    assert due.run == at("2026-11-23 10:00") and due.missed > 100
    assert len(steps) < 2000          # the ~3.6 million minutes since 2020 are not walked one by one
    steps.clear()
    due = due_run(schedule, at("2020-01-01 00:00"), at("2026-11-23 10:00:30"), 30)
    assert due.run is None and due.too_late == at("2026-11-23 10:00") and len(steps) < 2000


@pytest.mark.parametrize("schedule, error", [
    ("* * * *", "expected exactly 5 fields, found 4"),
    ("*/5 * * * * *", "expected exactly 5 fields, found 6"),
    ("61 * * * *", "invalid schedule"),
    ("@fortnightly", "unrecognized descriptor"),
    ("TZ=UTC * * * * *", "use timeZone field instead"),
    ("", "empty schedule"),
])
def test_schedules_that_do_not_parse(schedule, error):
    with pytest.raises(cron.ScheduleError, match=error):
        cron.parse(schedule)


def test_the_job_name_is_the_minute_of_its_run():
    # The same run always gets the same name: the name is the idempotency key.
    assert job_name("hello", at("2026-11-23 10:05")) == f"hello-{int(at('2026-11-23 10:05').timestamp()) // 60}"
    assert job_name("hello", at("2026-11-23 10:05")) == job_name("hello", at("2026-11-23 10:05:00"))


def test_history_keeps_the_newest():
    jobs = [{"metadata": {"name": f"j{i}", "creationTimestamp": f"2026-11-23T10:0{i}:00Z"}} for i in (3, 1, 2, 4)]
    assert [j["metadata"]["name"] for j in history_to_delete(jobs, 2)] == ["j1", "j2"]
    assert history_to_delete(jobs, 5) == [] and len(history_to_delete(jobs, 0)) == 4


# ---------------------------------------------------------------- end to end

def cronjob(name: str, schedule: str = "* * * * *", **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "suspend": True, **spec,
                     "jobTemplate": {"metadata": {"labels": {"cron": name}},
                                     "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                                         {"name": "main", "image": "busybox:1.35"}]}}}}}}


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def create_suspended(api, ns: str, body: dict, last: datetime) -> dict:
    """A suspended CronJob whose last run was at `last`."""
    created = api.post(f"/apis/batch/v1/namespaces/{ns}/cronjobs", body)
    assert created.status_code == 201, created.text
    name = body["metadata"]["name"]
    response = api.patch(f"/apis/batch/v1/namespaces/{ns}/cronjobs/{name}/status",
                         {"status": {"lastScheduleTime": rfc3339(last)}},
                         content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text
    return response.json()


def resume(api, ns: str, name: str) -> None:
    response = api.patch(f"/apis/batch/v1/namespaces/{ns}/cronjobs/{name}", {"spec": {"suspend": False}},
                         content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text


def jobs_of(api, ns: str) -> list[dict]:
    return [j for j in api.get(f"/apis/batch/v1/namespaces/{ns}/jobs").json()["items"]
            if not j["metadata"].get("deletionTimestamp")]


def status_of(api, ns: str, name: str) -> dict:
    return api.get(f"/apis/batch/v1/namespaces/{ns}/cronjobs/{name}").json().get("status") or {}


def this_minute() -> datetime:
    return datetime.now(timezone.utc).replace(second=0, microsecond=0)


def finish(api, job: dict, outcome: str = "Complete", started: str | None = None) -> None:
    """What the Job controller writes when a Job ends (started: its startTime,
    by default its creation)."""
    now = rfc3339(datetime.now(timezone.utc))
    status = {"conditions": [{"type": outcome, "status": "True", "lastTransitionTime": now}],
              "startTime": started or job["metadata"]["creationTimestamp"]}
    if outcome == "Complete":
        status["completionTime"], status["succeeded"] = now, 1
    response = api.patch(f"/apis/batch/v1/namespaces/{job['metadata']['namespace']}/jobs/"
                         f"{job['metadata']['name']}/status", {"status": status},
                         content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text


def test_a_missed_run_starts_one_job_named_for_its_minute(api, manager):
    ns = make_namespace(api)
    create_suspended(api, ns, cronjob("hello"), this_minute() - timedelta(minutes=3))
    assert jobs_of(api, ns) == []                          # suspended: nothing starts
    resume(api, ns, "hello")
    wait_for(lambda: len(jobs_of(api, ns)) == 1, timeout=20, what="one Job for the latest missed run")
    job = jobs_of(api, ns)[0]
    # The run is the latest full minute (the test may have crossed into the next one).
    run_minute = int(job["metadata"]["name"].rsplit("-", 1)[1])
    assert run_minute * 60 >= (this_minute() - timedelta(minutes=1)).timestamp()
    assert job["metadata"]["labels"]["cron"] == "hello"
    ref = job["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("CronJob", "hello", True)
    wait_for(lambda: [a["name"] for a in status_of(api, ns, "hello").get("active", [])] == [job["metadata"]["name"]],
             timeout=20, what="status.active naming the Job")
    assert status_of(api, ns, "hello")["lastScheduleTime"] == rfc3339(datetime.fromtimestamp(run_minute * 60,
                                                                                             timezone.utc))
    # The Job ends: out of active, and the success is recorded.
    finish(api, job)
    wait_for(lambda: not status_of(api, ns, "hello").get("active")
             and status_of(api, ns, "hello").get("lastSuccessfulTime"), timeout=20, what="active emptied")


def test_a_job_already_made_for_the_run_is_not_made_twice(api, manager):
    """A controller killed between creating the Job and recording the run:
    the next one finds the Job by its name and only records the run."""
    ns = make_namespace(api)
    made = create_suspended(api, ns, cronjob("hello"), this_minute() - timedelta(minutes=3))
    run = this_minute()
    existing = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name("hello", run), "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "CronJob", "name": "hello", "uid": made["metadata"]["uid"],
                     "controller": True, "blockOwnerDeletion": True}]},
                "spec": made["spec"]["jobTemplate"]["spec"]}
    assert api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", existing).status_code == 201
    resume(api, ns, "hello")
    wait_for(lambda: status_of(api, ns, "hello").get("lastScheduleTime", "") >= rfc3339(run),
             timeout=20, what="the run recorded")
    if this_minute() == run:                                # no new minute began meanwhile
        assert [j["metadata"]["name"] for j in jobs_of(api, ns)] == [job_name("hello", run)]


def test_a_deadline_passed_skips_the_run(api, manager):
    ns = make_namespace(api)
    # Yearly, last run over a year ago, 60 s to start: that slot is long gone.
    create_suspended(api, ns, cronjob("yearly", "0 0 1 1 *", startingDeadlineSeconds=60),
                     datetime(2024, 1, 1, tzinfo=timezone.utc))
    resume(api, ns, "yearly")
    # The controller says it let the run pass (Kubernetes' event), and no Job came.
    wait_for(lambda: any(e["reason"] == "MissSchedule" and e["involvedObject"]["name"] == "yearly"
                         and e["message"] == f"Missed scheduled time to start a job: "
                                            f"Thu, 01 Jan {this_minute().year} 00:00:00 +0000"
                         for e in api.get(f"/api/v1/namespaces/{ns}/events").json()["items"]),
             timeout=20, what="the MissSchedule event for this year's run")
    assert jobs_of(api, ns) == []
    assert status_of(api, ns, "yearly")["lastScheduleTime"] == "2024-01-01T00:00:00Z"


def test_history_limits_delete_the_oldest_finished_jobs(api, manager):
    ns = make_namespace(api)
    made = create_suspended(api, ns, cronjob("tidy", "0 0 1 1 *", successfulJobsHistoryLimit=1,
                                             failedJobsHistoryLimit=0), this_minute())
    owner = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "tidy", "uid": made["metadata"]["uid"],
              "controller": True}]
    for i, outcome in enumerate(("Complete", "Complete", "Failed")):
        body = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"tidy-{i}", "ownerReferences": owner},
                "spec": made["spec"]["jobTemplate"]["spec"]}
        created = api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", body)
        assert created.status_code == 201, created.text
        finish(api, created.json(), outcome, started=f"2026-01-01T00:0{i}:00Z")   # tidy-0 oldest
    resume(api, ns, "tidy")
    wait_for(lambda: [j["metadata"]["name"] for j in jobs_of(api, ns)] == ["tidy-1"], timeout=20,
             what="only the newest successful Job kept")


def test_forbid_waits_for_the_running_job_and_replace_stops_it(api, manager):
    ns = make_namespace(api)
    create_suspended(api, ns, cronjob("once", concurrencyPolicy="Forbid"), this_minute() - timedelta(minutes=3))
    resume(api, ns, "once")
    wait_for(lambda: len(jobs_of(api, ns)) == 1, timeout=20, what="the first Job")
    first = jobs_of(api, ns)[0]
    # The next minute's run comes while the first Job still runs: Forbid skips it.
    wait_for(lambda: this_minute().timestamp() > int(first["metadata"]["name"].rsplit("-", 1)[1]) * 60,
             timeout=70, interval=0.5, what="the next minute")
    # The controller says it skipped the run (as Kubernetes' does) rather than the test sleeping on it.
    wait_for(lambda: any(e["reason"] == "JobAlreadyActive" and e["involvedObject"]["name"] == "once"
                         for e in api.get(f"/api/v1/namespaces/{ns}/events").json()["items"]),
             timeout=20, what="the JobAlreadyActive event for the next minute's run")
    assert [j["metadata"]["name"] for j in jobs_of(api, ns)] == [first["metadata"]["name"]]
    # Replace: the running Job goes and the due run starts.
    response = api.patch(f"/apis/batch/v1/namespaces/{ns}/cronjobs/once", {"spec": {"concurrencyPolicy": "Replace"}},
                         content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text
    # One read per poll: the answer is one Job, not the first. (Read twice,
    # or read again after, it can catch a later minute's Replace between
    # its delete and its create, with no Job at all: Replace at work too.)
    def replaced() -> bool:
        names = [j["metadata"]["name"] for j in jobs_of(api, ns)]
        return len(names) == 1 and names[0] != first["metadata"]["name"]
    wait_for(replaced, timeout=20, what="the running Job replaced by the new run's, and only it")
