"""coordination.k8s.io/v1 Lease: served, validated, printed and allowed as Kubernetes does.

Leases are the kubelets' cheap heartbeat (kube-node-lease/<node>), so the
checks follow what a kubelet and `kubectl get leases` need: create, read,
list across namespaces, a stale write refused with 409, Kubernetes' own
validation messages, the NAME/HOLDER/AGE table, and a node allowed to write
them in kube-node-lease only.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import abac
import api_errors
from kubectl_compat import printers
import registry
from abac import Attributes
from apiserver_harness import unique
from authentication import User
from common.model.validate import validate_object
from common.model.validation_coordination import TIME_MSG
from test_kubectl import k, rows  # noqa: F401 (k is a fixture)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{}/leases"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
POLICY_FILE = Path(__file__).resolve().parents[2] / "02-apiserver" / "policy.jsonl"
RENEWED = "2026-11-22T08:36:33.123456Z"


def lease(name: str, holder: str | None = None, **spec) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": holder or name, "leaseDurationSeconds": 40, "renewTime": RENEWED, **spec}}


# ----- validation: Kubernetes' paths and messages (pure) -----

@pytest.mark.parametrize("spec, errors", [
    ({}, []),
    ({"holderIdentity": "node1", "leaseDurationSeconds": 40, "leaseTransitions": 0,
      "acquireTime": "2026-11-22T08:00:00Z", "renewTime": "2026-11-22T10:36:33.123456+02:00"}, []),
    ({"leaseDurationSeconds": 0}, ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]),
    ({"leaseDurationSeconds": -5}, ["spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0"]),
    ({"leaseDurationSeconds": 2**31}, ["spec.leaseDurationSeconds: Invalid value: 2147483648: "
                                       "must be less than or equal to 2147483647"]),
    ({"leaseDurationSeconds": "40"}, ['spec.leaseDurationSeconds: Invalid value: "40": must be an integer']),
    ({"leaseTransitions": -1}, ["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"]),
    ({"holderIdentity": 7}, ["spec.holderIdentity: Invalid value: 7: must be a string (put it in quotes)"]),
    ({"renewTime": "yesterday"}, [f'spec.renewTime: Invalid value: "yesterday": {TIME_MSG}']),
    ({"acquireTime": "2026-02-31T08:00:00Z"}, [f'spec.acquireTime: Invalid value: "2026-02-31T08:00:00Z": {TIME_MSG}']),
    ({"renewTime": 1700000000}, ["spec.renewTime: Invalid value: 1700000000: must be a string (put it in quotes)"]),
], ids=["empty", "full", "zero-duration", "negative-duration", "int32-overflow", "duration-string",
        "negative-transitions", "holder-number", "renew-not-a-time", "no-such-day", "renew-number"])
def test_validation(spec, errors):
    obj = {**lease("node1"), "spec": spec}
    obj["metadata"]["namespace"] = "kube-node-lease"
    assert [str(e) for e in validate_object("coordination.k8s.io", "Lease", obj)] == errors


# ----- the printer: NAME, HOLDER, AGE (pure) -----

def test_printer_row_is_name_holder_age():
    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
    obj = lease("node1")
    obj["metadata"].update(namespace="kube-node-lease", creationTimestamp="2026-11-22T11:55:00Z")
    released = {**lease("leader"), "spec": {"leaseDurationSeconds": 15}}
    released["metadata"]["creationTimestamp"] = "2026-11-20T12:00:00Z"
    table = printers.to_table(registry.for_kind("coordination.k8s.io", "Lease"), [obj, released], now=now)
    assert [(c["name"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "name"), ("Holder", ""), ("Age", "")]
    assert [r["cells"] for r in table["rows"]] == [["node1", "node1", "5m"], ["leader", "", "2d"]]


# ----- ABAC: the example policy lets nodes keep their leases, in kube-node-lease only -----

NODE = User("system:node:node1", ("system:nodes", "system:authenticated"))
VIEWER = User("viewer", ("system:authenticated",))
COORDINATION = "coordination.k8s.io"


@pytest.mark.parametrize("user, verb, namespace, expected", [
    *[(NODE, verb, "kube-node-lease", True) for verb in ("create", "get", "update", "patch")],
    (NODE, "update", "kube-system", False),      # leader-election leases are not a node's
    (NODE, "list", "", False),
    (VIEWER, "list", "kube-node-lease", True),
    (VIEWER, "update", "kube-node-lease", False),
])
def test_example_policy_for_leases(user, verb, namespace, expected):
    authz = abac.ABACAuthorizer(POLICY_FILE)
    attributes = Attributes(verb, "leases", "", COORDINATION, namespace, "node1" if verb != "list" else "")
    try:
        authz.authorize(user, attributes)
        allowed = True
    except api_errors.APIError as error:
        assert error.code == 403
        allowed = False
    assert allowed is expected


# ----- the REST API -----

def test_create_get_list_and_a_stale_update(api, namespace):
    created = api.post(LEASES.format(namespace), lease("node1"))
    assert created.status_code == 201, created.text
    stored = created.json()
    assert stored["metadata"]["namespace"] == namespace and stored["metadata"]["uid"]
    assert stored["spec"] == lease("node1")["spec"]
    got = api.get(LEASES.format(namespace) + "/node1").json()
    assert got["spec"]["renewTime"] == RENEWED                    # a MicroTime comes back as it was sent
    listed = api.get(LEASES.format(namespace)).json()
    assert listed["kind"] == "LeaseList" and [i["metadata"]["name"] for i in listed["items"]] == ["node1"]
    everywhere = api.get("/apis/coordination.k8s.io/v1/leases").json()
    assert ("node1", namespace) in {(i["metadata"]["name"], i["metadata"]["namespace"]) for i in everywhere["items"]}

    got["spec"]["renewTime"] = "2026-11-22T08:36:43.000001Z"
    renewed = api.put(LEASES.format(namespace) + "/node1", got)
    assert renewed.status_code == 200, renewed.text
    stale = api.put(LEASES.format(namespace) + "/node1", got)     # the resourceVersion renewed replaced
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"


def test_an_invalid_lease_is_422_with_the_field(api, namespace):
    response = api.post(LEASES.format(namespace), lease("bad", leaseDurationSeconds=0))
    assert response.status_code == 422
    status = response.json()
    assert status["details"]["kind"] == "Lease" and status["details"]["group"] == COORDINATION
    assert "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0" in status["message"]


def test_strict_field_validation_refuses_a_typo(api, namespace):
    body = lease("typo")
    body["spec"]["holderIdentty"] = "node1"
    response = api.post(LEASES.format(namespace) + "?fieldValidation=Strict", body)
    assert response.status_code == 400
    assert 'strict decoding error: unknown field "spec.holderIdentty"' in response.json()["message"]


def test_the_table_for_kubectl_get(api, namespace):
    assert api.post(LEASES.format(namespace), lease("node1", "node1")).status_code == 201
    table = api.get(LEASES.format(namespace), headers=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert [r["cells"][:2] for r in table["rows"]] == [["node1", "node1"]]


def test_discovery_and_openapi_name_the_group(api):
    groups = api.get("/apis").json()["groups"]
    assert {"name": "coordination.k8s.io", "versions": [{"groupVersion": "coordination.k8s.io/v1",
            "version": "v1"}], "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}} \
        in groups
    resources = api.get("/apis/coordination.k8s.io/v1").json()["resources"]
    assert [(r["name"], r["namespaced"], r["kind"]) for r in resources] == [("leases", True, "Lease")]
    assert "apis/coordination.k8s.io/v1" in api.get("/openapi/v3").json()["paths"]


# ----- the real kubectl -----

def test_kubectl_lists_explains_and_gets_leases(k, api, namespace):
    assert api.post(LEASES.format(namespace), lease("node1")).status_code == 201
    resources = [r for r in rows(k("api-resources")) if r[0] == "leases"]
    assert resources == [["leases", "coordination.k8s.io/v1", "true", "Lease"]]
    assert "holderIdentity" in k("explain", "lease.spec")
    table = rows(k("get", "leases", "-A"))
    assert table[0] == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
    assert [namespace, "node1", "node1"] in [r[:3] for r in table[1:]]
    error = k.fails("apply", "-f", k.manifest(lease("zero", leaseDurationSeconds=0)))
    assert "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0" in error


# ----- the kubelet's side (01-kubelet/apiserver_join/node_registration.py), in process, against the real server -----

def test_the_kubelets_node_lease_renews_without_reading_and_recovers_from_a_conflict(apiserver, api):
    from common.client.client import APIClient
    from common.client.kubeconfig import Connection
    from common.log import get_logger
    from apiserver_join.node_registration import LEASE_NAMESPACE, NodeLease

    name = unique("node")
    path = LEASES.format(LEASE_NAMESPACE) + f"/{name}"
    node_lease = NodeLease(APIClient(Connection(apiserver.url), timeout=10), name, get_logger("test-leases"))
    node_lease.renew()                                    # no Node yet: nothing to own the lease
    assert node_lease.latest is None and api.get(path).status_code == 404
    node = api.post("/api/v1/nodes", {"metadata": {"name": name}}).json()
    try:
        node_lease.renew()                                # created, owned by the Node
        created = api.get(path).json()
        assert created["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        node_lease.renew()                                # renewed from the copy it keeps
        renewed = api.get(path).json()
        assert renewed["spec"]["renewTime"] > created["spec"]["renewTime"]
        assert node_lease.latest["metadata"]["resourceVersion"] == renewed["metadata"]["resourceVersion"]

        renewed["spec"]["holderIdentity"] = "someone-else"     # another writer: the kept copy is stale
        assert api.put(path, renewed).status_code == 200
        node_lease.renew()                                # 409: forgets its copy, pods unaffected
        assert node_lease.latest is None
        node_lease.renew()                                # next round: reads it afresh and renews
        after = api.get(path).json()
        assert after["spec"]["renewTime"] > renewed["spec"]["renewTime"]
        assert after["spec"]["holderIdentity"] == "someone-else"   # renewing never rewrites the rest
    finally:
        api.delete(path)
        api.delete(f"/api/v1/nodes/{name}")
