"""The Website operator (04-controllers/website_controller.py): a custom
kind, and a controller of our own that makes it real.

A real API server serves the CRD from 04-controllers/manifests, the
controller manager runs the Deployment, ReplicaSet and garbage collector
controllers, a fake kubelet marks pods Ready, and the operator runs as its
own process, as an operator would."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import yaml

from controllers_harness import ROOT, FakeKubelet, unique, wait_for

OPERATOR = ROOT / "04-controllers" / "website_controller.py"
CRD = ROOT / "04-controllers" / "manifests" / "website-crd.yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
def website_crd(api):
    body = yaml.safe_load(CRD.read_text())
    assert api.post(CRDS, body).status_code == 201

    def established():
        conditions = api.get(f"{CRDS}/{body['metadata']['name']}").json().get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
    wait_for(established, timeout=10, what="the Website CRD to be Established")


@pytest.fixture
def operator(apiserver, website_crd, tmp_path):
    log_path = tmp_path / "website-controller.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen([sys.executable, str(OPERATOR), "--apiserver", apiserver.url],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wait_for(lambda: "controllers running" in log_path.read_text() or process.poll() is not None,
             timeout=30, what="the website controller to start")
    assert process.poll() is None, log_path.read_text()
    yield process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_the_operator_makes_a_deployment_and_service_and_reports_status(api, manager, operator):
    namespace = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": namespace}}).status_code == 201
    websites = f"/apis/example.groundup.dev/v1/namespaces/{namespace}/websites"
    site = {"apiVersion": "example.groundup.dev/v1", "kind": "Website", "metadata": {"name": "hello"},
            "spec": {"replicas": 2, "message": "Hello from a custom resource"}}
    with FakeKubelet(api, namespace):
        made = api.post(websites, site)
        assert made.status_code == 201, made.text
        uid = made.json()["metadata"]["uid"]
        deployment_path = f"/apis/apps/v1/namespaces/{namespace}/deployments/hello"
        deployment = wait_for(lambda: api.get(deployment_path).json() if api.get(deployment_path).ok else None,
                              timeout=20, what="the Website's Deployment")
        assert deployment["metadata"]["ownerReferences"][0]["uid"] == uid
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["image"].startswith("busybox")
        assert {"name": "MESSAGE", "value": "Hello from a custom resource"} in container["env"]
        service = wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/services/hello").json()
                           if api.get(f"/api/v1/namespaces/{namespace}/services/hello").ok else None,
                           timeout=20, what="the Website's Service")
        assert service["spec"]["selector"] == {"website": "hello"}
        assert service["metadata"]["ownerReferences"][0]["uid"] == uid
        # Pods come up (the fake kubelet), the Deployment counts them, the operator reports.
        wait_for(lambda: api.get(f"{websites}/hello").json().get("status", {}).get("availableReplicas") == 2,
                 timeout=30, what="status.availableReplicas 2")
        status = api.get(f"{websites}/hello").json()["status"]
        assert status["url"] == f"http://hello.{namespace}.svc.cluster.local"
        # A change of the spec reaches the Deployment, and the status follows.
        api.patch(f"{websites}/hello", {"spec": {"replicas": 3}})
        wait_for(lambda: api.get(deployment_path).json()["spec"]["replicas"] == 3, timeout=20,
                 what="the Deployment scaled to 3")
        wait_for(lambda: api.get(f"{websites}/hello").json()["status"]["availableReplicas"] == 3,
                 timeout=30, what="status.availableReplicas 3")
