"""The Job controller: its decisions as tables, then against a real API
server, as a real process. No kubelet: the test ends each pod as a kubelet
would, by writing Succeeded or Failed through the pod's /status."""
from __future__ import annotations

import subprocess
import threading

import pytest

from controllers_harness import unique, wait_for
from job import count_pods, is_complete, past_backoff_limit, pods_to_start


# ---------------------------------------------------------------- decisions


@pytest.mark.parametrize("completions, parallelism, succeeded, active, suspended, start, why", [
    (1, 1, 0, 0, False, 1, "the default Job: one pod"),
    (3, 2, 0, 0, False, 2, "parallelism caps the start"),
    (3, 2, 0, 2, False, 0, "two running: enough"),
    (3, 2, 1, 1, False, 1, "one done, one running: start one more"),
    (3, 2, 2, 1, False, 0, "one left to do and running: no more"),
    (3, 2, 2, 0, False, 1, "one left to do"),
    (3, 2, 3, 0, False, 0, "all done"),
    (5, 3, 4, 0, False, 1, "never more than what is left"),
    (3, 1, 0, 3, False, -2, "parallelism lowered to 1: two too many"),
    (3, 2, 0, 2, True, -2, "suspended: stop them all"),
    (None, 3, 0, 0, False, 3, "a work queue: parallelism pods"),
    (None, 3, 0, 1, False, 2, "a work queue with one running"),
    (None, 3, 1, 2, False, 0, "a work queue where one succeeded: no new pods, the others finish"),
    (0, 2, 0, 0, False, 0, "completions 0: nothing to do"),
])
def test_how_many_pods_to_start(completions, parallelism, succeeded, active, suspended, start, why):
    assert pods_to_start(completions, parallelism, succeeded, active, suspended=suspended) == start, why


@pytest.mark.parametrize("completions, succeeded, active, complete", [
    (3, 3, 0, True), (3, 2, 0, False), (3, 3, 1, False), (3, 4, 0, True),
    (None, 0, 0, False), (None, 1, 1, False), (None, 1, 0, True), (0, 0, 0, True)])
def test_when_a_job_is_complete(completions, succeeded, active, complete):
    assert is_complete(completions, succeeded, active) is complete


@pytest.mark.parametrize("limit, failed, restarts, past", [
    (6, 0, 0, False), (6, 6, 0, False), (6, 7, 0, True), (0, 1, 0, True), (0, 0, 0, False),
    (2, 1, 2, True), (2, 0, 2, False)])
def test_backoff_limit_counts_failed_pods_and_restarts(limit, failed, restarts, past):
    assert past_backoff_limit(limit, failed, restarts) is past


def test_counting_pods_by_phase():
    def p(phase, ready=False, restarts=0, deleting=False):
        meta = {"name": "x", **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
        status = {"phase": phase, "containerStatuses": [{"restartCount": restarts}],
                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
        return {"metadata": meta, "status": status}
    counts = count_pods([p("Running", ready=True, restarts=1), p("Pending"), p("Succeeded"), p("Succeeded"),
                         p("Failed"), p("Running", deleting=True)])
    assert counts == (2, 2, 1, 1, 1)      # active, succeeded, failed, ready, restarts


# ---------------------------------------------------------------- end to end


def job(name, completions=1, parallelism=1, restart_policy="Never", **spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": completions, "parallelism": parallelism,
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"restartPolicy": restart_policy,
                                           "containers": [{"name": "main", "image": "busybox:1.35"}]}}, **spec}}


@pytest.fixture
def ns(api) -> str:
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def job_pods(api, ns, name):
    return api.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"job-name={name}"}).json()["items"]


def running(api, ns, name):
    return [p for p in job_pods(api, ns, name) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not p["metadata"].get("deletionTimestamp")]


def finish(api, pod, phase):
    """What a kubelet reports when the pod's containers have exited."""
    meta = pod["metadata"]
    code = 0 if phase == "Succeeded" else 1
    status = {"phase": phase, "containerStatuses": [
        {"name": "main", "ready": False, "restartCount": 0, "image": "busybox:1.35", "imageID": "",
         "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}}]}
    response = api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                         {"status": status}, content_type="application/merge-patch+json")
    assert response.status_code == 200, response.text


def status_of(api, ns, name):
    return api.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}").json().get("status") or {}


def condition(api, ns, name, kind):
    return next((c for c in status_of(api, ns, name).get("conditions") or [] if c["type"] == kind), None)


class MostRunning:
    """Polls in the background for the most pods of a Job running at once."""

    def __init__(self, api, ns, name):
        self.api, self.ns, self.name, self.most = api, ns, name, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)

    def _run(self):
        while not self._stop.wait(0.05):
            try:
                self.most = max(self.most, len(running(self.api, self.ns, self.name)))
            except Exception:
                continue


def test_completions_3_parallelism_2_completes(api, apiserver, manager, ns, kubectl, tmp_path):
    created = api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", job("pi", completions=3, parallelism=2)).json()
    finished = set()
    with MostRunning(api, ns, "pi") as watch:
        while len(finished) < 3:
            pods = wait_for(lambda: running(api, ns, "pi"), timeout=20, what=f"a running pod after {len(finished)}")
            for pod in pods:
                finish(api, pod, "Succeeded")
                finished.add(pod["metadata"]["name"])
        result = subprocess.run([kubectl, "-s", apiserver.url, "-n", ns, "--cache-dir", str(tmp_path / "cache"),
                                 "wait", "--for=condition=complete", "job/pi", "--timeout=30s"],
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "job.batch/pi condition met" in result.stdout, result.stderr + result.stdout
    assert watch.most <= 2, f"{watch.most} pods ran at once with parallelism 2"
    assert len(finished) == 3 and len(job_pods(api, ns, "pi")) == 3, "exactly three pods for three completions"
    status = status_of(api, ns, "pi")
    assert (status["succeeded"], status["active"], status["failed"]) == (3, 0, 0)
    assert status["startTime"] and status["completionTime"]
    assert condition(api, ns, "pi", "Complete")["status"] == "True"
    for pod in job_pods(api, ns, "pi"):
        labels = pod["metadata"]["labels"]
        assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "pi"
        assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] == created["metadata"]["uid"]
        assert pod["spec"]["restartPolicy"] == "Never"
        assert pod["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]


def test_failing_pods_reach_the_backoff_limit_and_stop(api, manager, ns):
    api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", job("flaky", backoffLimit=2))
    failed = set()
    while condition(api, ns, "flaky", "Failed") is None:
        pods = wait_for(lambda: running(api, ns, "flaky") or condition(api, ns, "flaky", "Failed"), timeout=20,
                        what=f"a pod to fail, or the Job failed, after {len(failed)} failures")
        if isinstance(pods, list):
            for pod in pods:
                finish(api, pod, "Failed")
                failed.add(pod["metadata"]["name"])
        assert len(failed) <= 3, f"{len(failed)} pods failed with backoffLimit 2: more than backoffLimit + 1"
    failure = condition(api, ns, "flaky", "Failed")
    assert (failure["status"], failure["reason"]) == ("True", "BackoffLimitExceeded")
    assert len(failed) == 3
    # Finished: a Job that has failed starts nothing more.
    api.patch(f"/apis/batch/v1/namespaces/{ns}/jobs/flaky", {"metadata": {"labels": {"poke": "1"}}})
    wait_for(lambda: status_of(api, ns, "flaky").get("failed") == 3, timeout=20, what="failed 3")
    assert len(job_pods(api, ns, "flaky")) == 3 and not running(api, ns, "flaky")


def test_active_deadline_fails_the_job_and_stops_its_pods(api, manager, ns):
    api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", job("slow", parallelism=2, completions=4,
                                                         activeDeadlineSeconds=2))
    wait_for(lambda: condition(api, ns, "slow", "Failed"), timeout=30, what="the Job failed at its deadline")
    assert condition(api, ns, "slow", "Failed")["reason"] == "DeadlineExceeded"
    wait_for(lambda: not running(api, ns, "slow"), timeout=20, what="its running pods deleted")
    assert status_of(api, ns, "slow")["active"] == 0
