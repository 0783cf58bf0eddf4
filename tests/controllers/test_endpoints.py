"""The endpoints controller: a table of port resolution and subsets, then
a real API server and controller manager keeping a Service's Endpoints."""
from __future__ import annotations

import pytest

from controllers_harness import mark_ready, unique, wait_for
from endpoints import resolve_port, subsets_for


def pod(name, ip, ready=True, ports=(("http", 8080),), node="node1", deleting=False):
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    status = {"podIP": ip} if ip else {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": meta, "status": status, "spec": {"nodeName": node, "containers": [
        {"name": "main", "ports": [{"name": n, "containerPort": p} for n, p in ports]}]}}


SERVICE = {"metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}


@pytest.mark.parametrize("target, ports, expected", [
    (8080, (), 8080),
    ("9090", (), 9090),
    ("http", (("http", 8080),), 8080),
    ("http", (("metrics", 9100),), None),         # the pod has no port by that name
])
def test_a_named_target_port_is_resolved_per_pod(target, ports, expected):
    assert resolve_port({"port": 80, "targetPort": target}, pod("a", "10.0.0.1", ports=ports)) == expected


@pytest.mark.parametrize("hostname, subdomain, expected", [
    ("web-0", "web", "web-0"),         # a StatefulSet's pod under its headless Service: web-0.web.default.svc
    ("web-0", "other", None),          # another Service's subdomain: no name here
    ("", "web", None),                 # no hostname of its own
])
def test_a_pod_that_names_the_service_as_its_subdomain_gets_its_hostname(hostname, subdomain, expected):
    the_pod = pod("web-0", "10.0.0.1")
    the_pod["spec"].update(hostname=hostname, subdomain=subdomain)
    assert subsets_for(SERVICE, [the_pod])[0]["addresses"][0].get("hostname") == expected


def test_ready_and_not_ready_pods_and_pods_without_an_address():
    subsets = subsets_for(SERVICE, [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", ready=False),
                                    pod("c", None), pod("d", "10.0.0.4", deleting=True)])
    assert len(subsets) == 1
    assert [a["ip"] for a in subsets[0]["addresses"]] == ["10.0.0.1"]
    assert [a["ip"] for a in subsets[0]["notReadyAddresses"]] == ["10.0.0.2"]
    assert subsets[0]["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
    assert subsets[0]["addresses"][0]["targetRef"] == {"kind": "Pod", "namespace": "default", "name": "a",
                                                       "uid": "uid-a"}


def test_pods_that_resolve_a_port_differently_are_in_different_subsets():
    # Mid-rollout from 8080 to 9090 under the same port name.
    subsets = subsets_for(SERVICE, [pod("old", "10.0.0.1", ports=(("http", 8080),)),
                                    pod("new", "10.0.0.2", ports=(("http", 9090),))])
    assert sorted((s["ports"][0]["port"], s["addresses"][0]["ip"]) for s in subsets) == \
        [(8080, "10.0.0.1"), (9090, "10.0.0.2")]


def test_a_service_gets_the_ips_of_its_ready_pods(api, manager):
    ns = unique("ns")
    api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    assert api.post(f"/api/v1/namespaces/{ns}/services", service).status_code == 201
    for name, ip in (("a", "10.213.0.11"), ("b", "10.213.0.12")):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}
        created = api.post(f"/api/v1/namespaces/{ns}/pods", body).json()
        api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {"podIP": ip, "phase": "Running"}})
        if name == "a":
            mark_ready(api, created)

    def subsets():
        reply = api.get(f"/api/v1/namespaces/{ns}/endpoints/web")
        return reply.json().get("subsets") if reply.status_code == 200 else None

    wait_for(lambda: subsets() and [a["ip"] for a in subsets()[0].get("addresses", [])] == ["10.213.0.11"]
             and [a["ip"] for a in subsets()[0].get("notReadyAddresses", [])] == ["10.213.0.12"],
             timeout=20, what="a ready and a not-ready address")
    api.delete(f"/api/v1/namespaces/{ns}/pods/a")
    wait_for(lambda: not (subsets() or [{}])[0].get("addresses"), timeout=20, what="the deleted pod's address gone")
    api.delete(f"/api/v1/namespaces/{ns}/services/web")
    wait_for(lambda: api.get(f"/api/v1/namespaces/{ns}/endpoints/web").status_code == 404,
             timeout=20, what="the Endpoints removed with their Service")
