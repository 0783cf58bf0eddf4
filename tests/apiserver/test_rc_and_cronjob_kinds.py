"""Serving ReplicationController (core/v1) and CronJob (batch/v1): defaults,
validation, and the real kubectl's typed commands, which send protobuf
(`kubectl create cronjob`, `kubectl create job --from=cronjob/NAME`)."""
from __future__ import annotations

import json

import pytest

from test_kubectl import Kubectl, k, rows  # noqa: F401 (k is a fixture)

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}


def rc_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/replicationcontrollers" + (f"/{name}" if name else "")


def cj_path(namespace: str, name: str = "") -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/cronjobs" + (f"/{name}" if name else "")


# ----- ReplicationController -----

def test_an_rc_takes_selector_labels_and_replicas_from_its_template(api, namespace):
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"template": TEMPLATE}}
    created = api.post(rc_path(namespace), body)
    assert created.status_code == 201, created.text
    rc = created.json()
    assert rc["spec"]["selector"] == {"app": "web"}
    assert rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1


@pytest.mark.parametrize("change, message", [
    ({"selector": {"app": "other"}}, "spec.template.metadata.labels: Invalid value"),
    ({"replicas": -1}, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    ({"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}},
     'spec.template.spec.restartPolicy: Unsupported value: "Never"'),
])
def test_invalid_rcs_are_refused(api, namespace, change, message):
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"template": TEMPLATE, **change}}
    response = api.post(rc_path(namespace), body)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


def test_the_scale_subresource_of_an_rc(api, namespace):
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "template": TEMPLATE}}
    assert api.post(rc_path(namespace), body).status_code == 201
    scale = api.get(rc_path(namespace, "web") + "/scale").json()
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 2)
    assert api.patch(rc_path(namespace, "web") + "/scale", {"spec": {"replicas": 5}}).status_code == 200
    assert api.get(rc_path(namespace, "web")).json()["spec"]["replicas"] == 5


# ----- CronJob -----

def cronjob(schedule: str = "*/5 * * * *", **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
            "spec": {"schedule": schedule, **spec,
                     "jobTemplate": {"spec": {"template": {"spec": {
                         "restartPolicy": "OnFailure", "containers": [{"name": "hello", "image": "busybox"}]}}}}}}


def test_a_cronjob_gets_kubernetes_defaults(api, namespace):
    created = api.post(cj_path(namespace), cronjob())
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)


@pytest.mark.parametrize("spec, message", [
    ({"schedule": "every five minutes"}, "spec.schedule: Invalid value"),
    ({"schedule": "61 * * * *"}, "spec.schedule: Invalid value"),
    ({"concurrencyPolicy": "Sometimes"}, 'spec.concurrencyPolicy: Unsupported value: "Sometimes"'),
    ({"successfulJobsHistoryLimit": -1}, "spec.successfulJobsHistoryLimit: Invalid value: -1"),
    ({"failedJobsHistoryLimit": -2}, "spec.failedJobsHistoryLimit: Invalid value: -2"),
    ({"startingDeadlineSeconds": -5}, "spec.startingDeadlineSeconds: Invalid value: -5"),
    ({"timeZone": "Mars/Olympus_Mons"}, "spec.timeZone: Invalid value"),
])
def test_invalid_cronjobs_are_refused(api, namespace, spec, message):
    response = api.post(cj_path(namespace), cronjob(**spec))
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


def test_kubectl_create_cronjob_and_a_job_from_it(k, api, namespace):
    out = k("create", "cronjob", "hello", "--image=busybox:1.35", "--schedule=*/5 * * * *", "--", "date")
    assert "cronjob.batch/hello created" in out
    stored = api.get(cj_path(namespace, "hello")).json()
    assert stored["spec"]["schedule"] == "*/5 * * * *"
    assert stored["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
    table = k("get", "cj").splitlines()
    assert table[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert table[1].split()[:9] == ["hello", "*/5", "*", "*", "*", "*", "<none>", "False", "0"]
    assert "cronjob.batch/hello" in k("get", "cronjobs", "-o", "name")
    # `kubectl create job --from=cronjob/...`: a Job from the template, owned by the CronJob.
    out = k("create", "job", "manual-run", "--from=cronjob/hello")
    assert "job.batch/manual-run created" in out
    job = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/manual-run").json()
    ref = job["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("CronJob", "hello", stored["metadata"]["uid"])
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    # A bad schedule is refused with the parser's reason.
    error = k.fails("create", "cronjob", "bad", "--image=busybox", "--schedule=* * *")
    assert "expected exactly 5 fields" in error


def test_kubectl_create_rc_from_a_manifest_and_scale_it(k, api, namespace):
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "template": TEMPLATE}}
    k("create", "-f", k.manifest(body))
    table = rows(k("get", "rc"))
    assert table[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert table[1][:4] == ["web", "1", "0", "0"]           # no controller manager here: nothing made
    k("scale", "rc", "web", "--replicas=3")
    assert json.loads(k("get", "rc", "web", "-o", "json"))["spec"]["replicas"] == 3
