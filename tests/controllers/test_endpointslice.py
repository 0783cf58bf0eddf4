"""The endpointslice controller: tables of endpoints and slicing, the
EndpointSlice's validation, then a real API server and controller manager
keeping a Service's slices."""
from __future__ import annotations

import os
import subprocess

import pytest

from common.model.validate import validate_object
from controllers_harness import ControllerManager, mark_ready, unique, wait_for
from endpointslice import (MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, endpoint_for, plan_slices,
                           slice_body)

SERVICE = {"metadata": {"name": "web", "namespace": "default", "uid": "uid-web", "labels": {"tier": "front"}},
           "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}


def pod(name, ip="10.0.0.1", ready=True, port=8080, node="node1", deleting=False, phase="Running"):
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": meta, "status": status, "spec": {"nodeName": node, "containers": [
        {"name": "main", "ports": [{"name": "http", "containerPort": port}]}]}}


def pods(count, **kwargs):
    return [pod(f"p{i:03}", ip=f"10.0.{i // 250}.{i % 250 + 1}", **kwargs) for i in range(count)]


def conditions(**values):
    return {"ready": False, "serving": False, "terminating": False, **values}


# ----- one pod -----

@pytest.mark.parametrize("the_pod, expected", [
    (pod("a"), conditions(ready=True, serving=True)),
    (pod("a", ready=False), conditions()),
    # Still serving its open connections while it goes, but no new traffic.
    (pod("a", deleting=True), conditions(serving=True, terminating=True)),
    (pod("a", ready=False, deleting=True), conditions(terminating=True)),
    (pod("a", ip=None), None),                               # no address yet
    (pod("a", phase="Succeeded"), None),                     # finished
    (pod("a", phase="Failed"), None),
])
def test_a_pods_endpoint_and_its_conditions(the_pod, expected):
    endpoint = endpoint_for(SERVICE, the_pod, "IPv4")
    assert (endpoint and endpoint["conditions"]) == expected
    if endpoint:
        assert endpoint["addresses"] == ["10.0.0.1"] and endpoint["nodeName"] == "node1"
        assert endpoint["targetRef"] == {"kind": "Pod", "namespace": "default", "name": "a", "uid": "uid-a"}


def test_a_pod_under_its_subdomain_service_has_a_hostname():
    the_pod = pod("web-0")
    the_pod["spec"].update(hostname="web-0", subdomain=SERVICE["metadata"]["name"])
    assert endpoint_for(SERVICE, the_pod, "IPv4")["hostname"] == "web-0"
    the_pod["spec"]["subdomain"] = "other"
    assert "hostname" not in endpoint_for(SERVICE, the_pod, "IPv4")


def test_publish_not_ready_addresses_makes_every_endpoint_ready():
    service = {**SERVICE, "spec": {**SERVICE["spec"], "publishNotReadyAddresses": True}}
    assert endpoint_for(service, pod("a", ready=False), "IPv4")["conditions"] == conditions(ready=True)


def test_an_ipv6_service_takes_the_pods_ipv6_address():
    dual = pod("a")
    dual["status"]["podIPs"] = [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]
    assert endpoint_for(SERVICE, dual, "IPv6")["addresses"] == ["fd00::1"]
    assert endpoint_for(SERVICE, pod("b"), "IPv6") is None


# ----- slicing -----

def existing(bodies):
    """Slices as the server would return them: each with a name and a resourceVersion."""
    return [{**body, "metadata": {**body["metadata"], "name": f"web-{i:05}", "resourceVersion": str(i + 1)}}
            for i, body in enumerate(bodies)]


def uids(slice_):
    return [e["targetRef"]["uid"] for e in slice_["endpoints"]]


@pytest.mark.parametrize("count, max_endpoints, sizes", [
    (0, 100, [0]),                 # an empty placeholder: "no pods", not "not done yet"
    (1, 100, [1]),
    (100, 100, [100]),
    (101, 100, [100, 1]),
    (250, 100, [100, 100, 50]),
    (7, 3, [3, 3, 1]),
])
def test_new_slices_hold_at_most_max_endpoints(count, max_endpoints, sizes):
    plan = plan_slices(SERVICE, pods(count), [], max_endpoints)
    assert [len(s["endpoints"]) for s in plan.create] == sizes and not plan.update and not plan.delete
    for s in plan.create:
        assert s["metadata"]["generateName"] == "web-" and s["addressType"] == "IPv4"
        assert s["metadata"]["labels"] == {"tier": "front", SERVICE_NAME_LABEL: "web", MANAGED_BY_LABEL: MANAGED_BY}
        assert s["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                                     "uid": "uid-web", "controller": True,
                                                     "blockOwnerDeletion": True}]
        assert s["ports"] == ([{"name": "web", "protocol": "TCP", "port": 8080}] if count else [])


def test_pods_that_resolve_a_named_port_differently_go_in_different_slices():
    plan = plan_slices(SERVICE, [pod("old", "10.0.0.1", port=8080), pod("new", "10.0.0.2", port=9090)], [], 100)
    assert sorted((s["ports"][0]["port"], uids(s)) for s in plan.create) == [(8080, ["uid-old"]), (9090, ["uid-new"])]


def test_nothing_changes_nothing_is_written():
    current = existing(plan_slices(SERVICE, pods(250), [], 100).create)
    plan = plan_slices(SERVICE, pods(250), current, 100)
    assert (plan.create, plan.update, plan.delete) == ([], [], [])


def test_a_pods_change_rewrites_only_its_own_slice():
    current = existing(plan_slices(SERVICE, pods(250), [], 100).create)
    changed = pods(250)
    changed[150] = pod("p150", ip="10.0.0.151", ready=False)
    plan = plan_slices(SERVICE, changed, current, 100)
    assert not plan.create and not plan.delete
    assert [s["metadata"]["name"] for s in plan.update] == ["web-00001"]
    assert plan.update[0]["metadata"]["resourceVersion"] == "2"           # an update of what we read
    assert plan.update[0]["endpoints"][50]["conditions"] == conditions()


def test_a_deleted_pod_leaves_its_slice_and_a_new_one_fills_the_room():
    current = existing(plan_slices(SERVICE, pods(150), [], 100).create)     # 100 + 50
    fewer = [p for p in pods(150) if p["metadata"]["name"] != "p010"]
    plan = plan_slices(SERVICE, fewer, current, 100)
    assert [s["metadata"]["name"] for s in plan.update] == ["web-00000"] and len(plan.update[0]["endpoints"]) == 99
    plan = plan_slices(SERVICE, fewer + [pod("q", ip="10.9.9.9")], current, 100)
    assert {s["metadata"]["name"]: len(s["endpoints"]) for s in plan.update} == {"web-00000": 100}
    assert not plan.create


def test_emptied_slices_are_deleted_and_the_last_one_kept_as_a_placeholder():
    current = existing(plan_slices(SERVICE, pods(150), [], 100).create)
    plan = plan_slices(SERVICE, pods(50), current, 100)         # the first 50 all sit in the first slice
    assert [s["metadata"]["name"] for s in plan.delete] == ["web-00001"]
    plan = plan_slices(SERVICE, [], current, 100)
    assert {s["metadata"]["name"] for s in plan.delete} == {"web-00000", "web-00001"}
    assert [s["endpoints"] for s in plan.create] == [[]]


def test_stale_slices_are_deleted():
    mine = existing(plan_slices(SERVICE, pods(3), [], 100).create)
    recreated = {**SERVICE, "metadata": {**SERVICE["metadata"], "uid": "uid-web-2"}}
    plan = plan_slices(recreated, pods(3), mine, 100)
    assert plan.delete == mine and len(plan.create) == 1 and uids(plan.create[0]) == ["uid-p000", "uid-p001", "uid-p002"]
    ipv6 = {**mine[0], "addressType": "IPv6"}
    assert plan_slices(SERVICE, pods(3), [ipv6], 100).delete == [ipv6]


def test_a_slice_body_keeps_what_it_was_given():
    base = existing([slice_body(SERVICE, [], [])])[0]
    base["metadata"]["annotations"] = {"note": "kept"}
    assert slice_body(SERVICE, [], [], base=base)["metadata"]["annotations"] == {"note": "kept"}


# ----- validation -----

def endpoint_slice(address_type="IPv4", addresses=("10.0.0.1",), ports=({"name": "http", "port": 80},)):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "namespace": "default"}, "addressType": address_type,
            "endpoints": [{"addresses": list(addresses), "conditions": {"ready": True}}], "ports": list(ports)}


@pytest.mark.parametrize("obj, errors", [
    (endpoint_slice(), []),
    (endpoint_slice("IPv6", ["fd00::1"]), []),
    (endpoint_slice("FQDN", ["web.example.com", "db.example.com."]), []),
    (endpoint_slice(None), ["addressType: Required value"]),
    (endpoint_slice("IPX"), ['addressType: Unsupported value: "IPX": supported values: "FQDN", "IPv4", "IPv6"']),
    (endpoint_slice("IPv4", ["fd00::1"]),
     ['endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address']),
    (endpoint_slice("IPv6", ["10.0.0.1"]),
     ['endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address']),
    (endpoint_slice("IPv4", ["127.0.0.1"]), ['endpoints[0].addresses[0]: Invalid value: "127.0.0.1": '
                                             'may not be in the loopback range (127.0.0.0/8, ::1/128)']),
    (endpoint_slice("FQDN", ["localhost"]), ['endpoints[0].addresses[0]: Invalid value: "localhost": '
                                             'should be a domain with at least two segments separated by dots']),
    (endpoint_slice("IPv4", []), ["endpoints[0].addresses: Required value: must contain at least 1 address"]),
    (endpoint_slice(ports=[{"name": "http", "port": 80}, {"name": "http", "port": 81}]),
     ['ports[1].name: Duplicate value: "http"']),
    (endpoint_slice(ports=[{"name": "http", "port": 80, "protocol": "HTTP"}]),
     ['ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']),
])
def test_endpoint_slice_validation(obj, errors):
    assert [str(e) for e in validate_object("discovery.k8s.io", "EndpointSlice", obj)] == errors


def test_a_slices_address_type_is_immutable():
    errors = validate_object("discovery.k8s.io", "EndpointSlice", endpoint_slice("IPv6", ["fd00::1"]),
                             old=endpoint_slice())
    assert [str(e) for e in errors] == ['addressType: Invalid value: "IPv6": field is immutable']


# ----- end to end -----

SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"


def make_service(api, ns, name="web"):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    reply = api.post(f"/api/v1/namespaces/{ns}/services", service)
    assert reply.status_code == 201, reply.text
    return reply.json()


def make_pods(api, ns, count, ready=lambda i: True, app="web"):
    for i in range(count):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{app}-{i}", "labels": {"app": app}},
                "spec": {"nodeName": "node1", "containers": [{"name": "main", "image": "busybox:1.35"}]}}
        reply = api.post(f"/api/v1/namespaces/{ns}/pods", body)
        assert reply.status_code == 201, reply.text
        ip = f"10.244.{i // 250}.{i % 250 + 2}"
        api.patch(f"/api/v1/namespaces/{ns}/pods/{app}-{i}/status", {"status": {"podIP": ip, "phase": "Running"}})
        if ready(i):
            mark_ready(api, reply.json())


def slices_of(api, ns, service="web"):
    reply = api.get(SLICES.format(ns=ns), params={"labelSelector": f"{SERVICE_NAME_LABEL}={service}"})
    assert reply.status_code == 200, reply.text
    return reply.json()["items"]


def by_pod(slices):
    return {e["targetRef"]["name"]: e for s in slices for e in s["endpoints"]}


def namespace(api):
    ns = unique("ns")
    api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    return ns


def test_ready_and_unready_pods_share_one_slice_with_their_conditions(api, manager):
    ns = namespace(api)
    service = make_service(api, ns)
    make_pods(api, ns, 4, ready=lambda i: i != 3)
    wait_for(lambda: len(by_pod(slices_of(api, ns))) == 4 and by_pod(slices_of(api, ns))["web-2"]["conditions"]["ready"],
             timeout=20, what="4 endpoints in the Service's slice")
    [only] = slices_of(api, ns)
    assert only["metadata"]["name"].startswith("web-") and only["addressType"] == "IPv4"
    assert only["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGED_BY
    assert only["metadata"]["ownerReferences"][0]["uid"] == service["metadata"]["uid"]
    assert only["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    endpoints = by_pod([only])
    assert {name: e["conditions"] for name, e in endpoints.items()} == {
        "web-0": conditions(ready=True, serving=True), "web-1": conditions(ready=True, serving=True),
        "web-2": conditions(ready=True, serving=True), "web-3": conditions()}
    assert endpoints["web-3"]["addresses"] == ["10.244.0.5"] and endpoints["web-3"]["nodeName"] == "node1"
    # Settled, the controller writes nothing more (a loop of updates would show here).
    version = only["metadata"]["resourceVersion"]
    api.patch(f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"annotations": {"poke": "1"}}},
              content_type="application/merge-patch+json")
    wait_for(lambda: api.get(f"/api/v1/namespaces/{ns}/services/web").json()["metadata"].get("annotations"),
             timeout=10, what="the poke")
    assert slices_of(api, ns)[0]["metadata"]["resourceVersion"] == version

    # Deleting a pod updates the slice in place: terminating while its
    # kubelet stops it (there is none here), then gone.
    assert api.delete(f"/api/v1/namespaces/{ns}/pods/web-1").status_code in (200, 202)
    if api.get(f"/api/v1/namespaces/{ns}/pods/web-1").status_code == 200:
        wait_for(lambda: by_pod(slices_of(api, ns))["web-1"]["conditions"] == conditions(serving=True, terminating=True),
                 timeout=20, what="the deleted pod's endpoint terminating")
        api.delete(f"/api/v1/namespaces/{ns}/pods/web-1", {"gracePeriodSeconds": 0})
    wait_for(lambda: sorted(by_pod(slices_of(api, ns))) == ["web-0", "web-2", "web-3"],
             timeout=20, what="the deleted pod's endpoint gone")
    assert [s["metadata"]["name"] for s in slices_of(api, ns)] == [only["metadata"]["name"]]

    # A slice someone else manages for the same Service is left alone.
    theirs = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
              "metadata": {"name": "web-by-hand", "labels": {SERVICE_NAME_LABEL: "web",
                                                             MANAGED_BY_LABEL: "someone-else"}},
              "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.9.9"]}], "ports": []}
    assert api.post(SLICES.format(ns=ns), theirs).status_code == 201

    # Deleting the Service removes its slices.
    api.delete(f"/api/v1/namespaces/{ns}/services/web")
    wait_for(lambda: [s["metadata"]["name"] for s in slices_of(api, ns)] == ["web-by-hand"],
             timeout=20, what="the Service's slices removed with it, the hand-made one kept")


def test_250_pods_make_3_slices_of_at_most_100(api, apiserver, tmp_path):
    ns = namespace(api)
    make_service(api, ns)
    make_pods(api, ns, 250)
    manager = ControllerManager(apiserver.url, tmp_path, "--controllers", "endpointslice",
                                "--max-endpoints-per-slice", "100").start()
    try:
        wait_for(lambda: len(by_pod(slices_of(api, ns))) == 250, timeout=60, what="250 endpoints in slices")
        sizes = sorted(len(s["endpoints"]) for s in slices_of(api, ns))
        assert sizes == [50, 100, 100]
    finally:
        manager.stop()
    assert "Traceback" not in manager.log()


def test_kubectl_shows_the_slices_and_describe_service_their_addresses(api, apiserver, kubectl, tmp_path):
    ns = namespace(api)
    make_service(api, ns)
    make_pods(api, ns, 2, ready=lambda i: i == 0)
    # No endpoints controller: what kubectl shows can only come from the slices.
    manager = ControllerManager(apiserver.url, tmp_path, "--controllers", "endpointslice").start()
    try:
        wait_for(lambda: len(by_pod(slices_of(api, ns))) == 2, timeout=20, what="2 endpoints in the Service's slice")
    finally:
        manager.stop()
    assert api.get(f"/api/v1/namespaces/{ns}/endpoints/web").status_code == 404

    def run(*args: str) -> str:
        result = subprocess.run([kubectl, "--server", apiserver.url, "-n", ns, *args], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
        assert result.returncode == 0, result.stderr
        return result.stdout

    header, row = run("get", "endpointslices").splitlines()
    assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert row.split()[1:4] == ["IPv4", "8080", "10.244.0.2,10.244.0.3"]
    # kubectl 1.32 reads a Service's endpoints from its slices (the ready ones only).
    described = dict(line.split(":", 1) for line in run("describe", "service", "web").splitlines() if ":" in line)
    assert described["Endpoints"].strip() == "10.244.0.2:8080"
