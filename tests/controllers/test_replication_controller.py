"""The replication controller (core/v1 ReplicationController) against a real
API server and controller manager: the ReplicaSet controller's logic with a
plain label map for a selector, and the real kubectl driving it."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from controllers_harness import make_namespace, mark_ready, pods_of, unique, wait_for


def rc(name: str, replicas: int, labels: dict | None = None) -> dict:
    """No selector: the API server defaults it (and the RC's labels) from the template's labels."""
    labels = labels or {"app": name}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": replicas,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}}}


def test_keeps_the_number_of_pods_and_reports_status(api, manager):
    ns = make_namespace(api)
    created = api.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", rc("web", 3))
    assert created.status_code == 201, created.text
    uid = created.json()["metadata"]["uid"]
    wait_for(lambda: len(pods_of(api, ns, "web")) == 3, timeout=20, what="3 pods")
    for pod in pods_of(api, ns, "web"):
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == ("v1", "ReplicationController",
                                                                              "web", uid)
    victim = pods_of(api, ns, "web")[0]["metadata"]["name"]
    api.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    wait_for(lambda: len(pods_of(api, ns, "web")) == 3
             and victim not in {p["metadata"]["name"] for p in pods_of(api, ns, "web")},
             timeout=20, what="a replacement")
    for pod in pods_of(api, ns, "web"):
        mark_ready(api, pod)
    wait_for(lambda: (api.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web").json().get("status") or {})
             .get("readyReplicas") == 3, timeout=20, what="readyReplicas 3")


def test_adopts_a_matching_orphan(api, manager):
    ns = make_namespace(api)
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan", "labels": {"app": "web"}},
              "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}
    assert api.post(f"/api/v1/namespaces/{ns}/pods", orphan).status_code == 201
    api.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", rc("web", 2))
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="2 pods")
    wait_for(lambda: (api.get(f"/api/v1/namespaces/{ns}/pods/orphan").json()["metadata"]
                      .get("ownerReferences") or [{}])[0].get("kind") == "ReplicationController",
             timeout=20, what="the orphan adopted")
    assert len(pods_of(api, ns, "web")) == 2       # adopted, so only one was created


def test_a_selector_that_picks_no_pods_is_refused(api):
    ns = make_namespace(api)
    body = rc("web", 1)
    body["spec"]["selector"] = {"app": "other"}
    response = api.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", body)
    assert response.status_code == 422, response.text
    assert "selector does not match labels in spec.template" in response.json()["message"]


@pytest.fixture
def kubectl_here(kubectl, apiserver, tmp_path):
    ns = unique("ns")
    config = tmp_path / "kubeconfig"
    config.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters: [{{name: c, cluster: {{server: "{apiserver.url}"}}}}]
        users: [{{name: u, user: {{}}}}]
        contexts: [{{name: c, context: {{cluster: c, user: u, namespace: {ns}}}}}]
        current-context: c
        """))
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(tmp_path)}

    def run(*args: str, stdin: str | None = None) -> str:
        result = subprocess.run([kubectl, "--cache-dir", str(tmp_path / "cache"), *args], input=stdin,
                                capture_output=True, text=True, timeout=60, env=env)
        assert result.returncode == 0, f"kubectl {' '.join(args)}:\n{result.stderr}{result.stdout}"
        return result.stdout
    run("create", "namespace", ns)
    run.namespace = ns
    return run


def test_kubectl_get_and_scale_rc(api, manager, kubectl_here):
    ns = kubectl_here.namespace
    kubectl_here("apply", "-f", "-", stdin=json.dumps(rc("web", 2)))
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="2 pods")
    names = kubectl_here("get", "rc", "-o", "name").split()
    assert names == ["replicationcontroller/web"]
    assert "web" in kubectl_here("get", "rc")
    kubectl_here("scale", "rc", "web", "--replicas=4")
    wait_for(lambda: len(pods_of(api, ns, "web")) == 4, timeout=20, what="4 pods after kubectl scale")
    kubectl_here("scale", "rc", "web", "--replicas=1")
    wait_for(lambda: len(pods_of(api, ns, "web")) == 1, timeout=20, what="1 pod after kubectl scale")
    stored = json.loads(kubectl_here("get", "rc", "web", "-o", "json"))
    assert stored["spec"]["selector"] == {"app": "web"} and stored["metadata"]["labels"] == {"app": "web"}
