"""The namespace controller: a deleted namespace is emptied, then removed.

The API server here runs without NoControllerManager (chapter 02's
stand-in, which empties namespaces itself), so what happens is the
controller's doing."""
from __future__ import annotations

import subprocess
import sys

import pytest

from controllers_harness import ROOT, APIServer, Client, FakeKubelet, make_namespace, wait_for
from test_deployment import deployment
from test_garbage_collector import WITH_CONTROLLERS, exists, hold, items, release


@pytest.fixture
def apiserver(tmp_path):
    server = APIServer(tmp_path / "data", "--enable-admission-plugins", WITH_CONTROLLERS).start()
    yield server
    server.stop()


def test_the_server_alone_marks_the_namespace_and_finalize_lets_it_go(api):
    # No controller manager: the namespace waits, Terminating, for someone to finalize it.
    ns = make_namespace(api)
    assert api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}}).status_code == 201
    marked = api.delete(f"/api/v1/namespaces/{ns}").json()
    assert marked["status"]["phase"] == "Terminating" and marked["spec"]["finalizers"] == ["kubernetes"]
    assert exists(api, f"/api/v1/namespaces/{ns}/configmaps/c"), "emptying is the controller's job"
    refused = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "late"}})
    assert refused.status_code == 403 and "being terminated" in refused.json()["message"]
    # finalize changes spec.finalizers and nothing else...
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"ignored": "yes"}},
            "spec": {"finalizers": []}}
    response = api.put(f"/api/v1/namespaces/{ns}/finalize", body)
    assert response.status_code == 200, response.text
    assert "ignored" not in (response.json()["metadata"].get("labels") or {})
    # ...and with none left, the namespace goes.
    assert not exists(api, f"/api/v1/namespaces/{ns}")


def test_a_namespace_is_emptied_then_removed(api, apiserver, manager, kubectl, tmp_path):
    ns = make_namespace(api)
    with FakeKubelet(api, ns):
        assert api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", 2)).status_code == 201
        for name in ("settings", "flags", "motd"):
            assert api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}}).status_code == 201
        bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}
        assert api.post(f"/api/v1/namespaces/{ns}/pods", bare).status_code == 201
        wait_for(lambda: len(items(api, f"/api/v1/namespaces/{ns}/pods")) == 3, timeout=30, what="three pods")
    held = api.get(f"/api/v1/namespaces/{ns}/pods/bare").json()
    hold(api, held)

    result = subprocess.run([kubectl, "-s", apiserver.url, "--cache-dir", str(tmp_path / "cache"),
                             "delete", "namespace", ns, "--wait=false"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

    # Everything but the held pod goes; the namespace waits for it.
    def only_the_held_pod_left():
        left = [f"{kind}/{o['metadata']['name']}" for kind, path in (
            ("deployments", f"/apis/apps/v1/namespaces/{ns}/deployments"),
            ("replicasets", f"/apis/apps/v1/namespaces/{ns}/replicasets"),
            ("pods", f"/api/v1/namespaces/{ns}/pods"),
            ("configmaps", f"/api/v1/namespaces/{ns}/configmaps")) for o in items(api, path)]
        return left == ["pods/bare"]
    wait_for(only_the_held_pod_left, timeout=30, what="the namespace emptied but for the held pod")
    namespace = api.get(f"/api/v1/namespaces/{ns}").json()
    assert namespace["status"]["phase"] == "Terminating" and namespace["spec"]["finalizers"] == ["kubernetes"]

    release(api, held)
    wait_for(lambda: not exists(api, f"/api/v1/namespaces/{ns}"), timeout=30, what="the namespace gone")


def test_under_abac_the_controller_manager_empties_a_namespace_of_every_kind(tmp_path):
    """02-apiserver/policy.jsonl lets the user "controller-manager" delete
    whatever a namespace holds, not only what its other controllers own (a
    Secret, a Service, a LimitRange, a Role...), so the namespace goes
    instead of staying Terminating."""
    from controllers_harness import ControllerManager
    from test_gauntlet import SecureServer

    certs = tmp_path / "certs"
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs),
                    "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    server = SecureServer(tmp_path / "data", certs, "--enable-admission-plugins", WITH_CONTROLLERS).start()
    manager = ControllerManager(server.secure_url, tmp_path, "--kubeconfig",
                                str(certs / "controller-manager.kubeconfig"))
    try:
        manager.start()
        admin = Client(server.url)          # the insecure port: the administrator
        ns = make_namespace(admin)
        contents = {
            "secrets": ("/api/v1", {"metadata": {"name": "password"}, "stringData": {"password": "s3cret"}}),
            "services": ("/api/v1", {"metadata": {"name": "web"},
                                     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
            "limitranges": ("/api/v1", {"metadata": {"name": "limits"}, "spec": {"limits": [
                {"type": "Container", "default": {"cpu": "100m"}}]}}),
            "roles": ("/apis/rbac.authorization.k8s.io/v1", {"metadata": {"name": "reader"}, "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        }
        for resource, (prefix, body) in contents.items():
            response = admin.post(f"{prefix}/namespaces/{ns}/{resource}", body)
            assert response.status_code == 201, response.text
        assert admin.delete(f"/api/v1/namespaces/{ns}").status_code == 200
        wait_for(lambda: not exists(admin, f"/api/v1/namespaces/{ns}"), timeout=30,
                 what=f"the namespace gone (log: {manager.log_path})")
        assert "403" not in manager.log(), manager.log()
    finally:
        manager.stop()
        server.stop()
