"""The serviceaccount controller and root-ca-cert-publisher: every namespace
gets `default` and kube-root-ca.crt from the controller manager, once the
API server no longer makes them (no NoControllerManager)."""
from __future__ import annotations

import pytest

from controllers_harness import APIServer, ControllerManager, make_namespace, wait_for
from test_garbage_collector import WITH_CONTROLLERS, exists

CA = "-----BEGIN CERTIFICATE-----\nnot checked by the publisher\n-----END CERTIFICATE-----\n"


@pytest.fixture
def apiserver(tmp_path):
    server = APIServer(tmp_path / "data", "--enable-admission-plugins", WITH_CONTROLLERS + ",ServiceAccount").start()
    yield server
    server.stop()


@pytest.fixture
def manager(apiserver, tmp_path):
    (tmp_path / "ca.crt").write_text(CA)
    running = ControllerManager(apiserver.url, tmp_path, "--controllers", "serviceaccount,root-ca-cert-publisher",
                                "--root-ca-file", str(tmp_path / "ca.crt")).start()
    yield running
    running.stop()


def test_without_the_controllers_a_namespace_has_neither(api):
    ns = make_namespace(api)
    assert not exists(api, f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    assert not exists(api, f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt")
    # The admission plugin waits a moment for `default`, then refuses, as Kubernetes does.
    refused = api.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "app", "image": "busybox:1.35"}]}})
    assert refused.status_code == 403
    assert 'serviceaccount "default" not found' in refused.json()["message"]


def test_every_namespace_gets_default_and_the_ca_and_gets_them_back(api, manager):
    ns = make_namespace(api)
    account = f"/api/v1/namespaces/{ns}/serviceaccounts/default"
    ca = f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"
    wait_for(lambda: exists(api, account) and exists(api, ca), 20, what="default and kube-root-ca.crt")
    assert api.get(ca).json()["data"] == {"ca.crt": CA}
    first_uid = api.get(account).json()["metadata"]["uid"]
    api.delete(account)
    api.patch(ca, {"data": {"ca.crt": "tampered"}})
    wait_for(lambda: exists(api, account) and api.get(account).json()["metadata"]["uid"] != first_uid, 20,
             what="a new default ServiceAccount")
    wait_for(lambda: api.get(ca).json()["data"] == {"ca.crt": CA}, 20, what="the CA restored")
    # A pod now runs as `default`.
    made = api.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "app", "image": "busybox:1.35"}]}})
    assert made.status_code == 201 and made.json()["spec"]["serviceAccountName"] == "default"
