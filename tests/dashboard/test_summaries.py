"""What the page is told of each object (dashboard/summaries.py), table by table."""
from __future__ import annotations

import pytest

from summaries import (summarize_endpoint_slice, summarize_event, summarize_node, summarize_pod, summarize_service,
                       tone_of)


def node(conditions=None, **spec) -> dict:
    return {"metadata": {"name": "node1"}, "spec": spec,
            "status": {"conditions": conditions or [], "allocatable": {"cpu": "1500m", "memory": "2Gi", "pods": "110"},
                       "addresses": [{"type": "Hostname", "address": "n1"},
                                     {"type": "InternalIP", "address": "10.0.0.11"}]}}


def ready(status, reason="", message=""):
    return [{"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": status, "reason": reason, "message": message}]


@pytest.mark.parametrize("conditions, spec, readiness, words", [
    (ready("True"), {}, "True", "Ready"),
    (ready("False"), {}, "False", "NotReady"),
    (ready("Unknown"), {}, "Unknown", "NotReady"),       # kubectl prints NotReady for Unknown too
    (None, {}, "Unknown", "Unknown"),                     # no Ready condition yet: just registered
    (ready("True"), {"unschedulable": True}, "True", "Ready"),
])
def test_a_nodes_readiness_in_kubectls_words(conditions, spec, readiness, words):
    summary = summarize_node(node(conditions, **spec))
    assert (summary["ready"], summary["status"]) == (readiness, words)
    assert summary["cordoned"] is (spec.get("unschedulable") is True)


def test_a_nodes_room_taints_and_address():
    summary = summarize_node(node(ready("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
                                  taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                                          {"key": "gpu", "value": "a100", "effect": "NoSchedule"}]))
    assert summary["taints"] == ["node.kubernetes.io/unreachable:NoExecute", "gpu=a100:NoSchedule"]
    assert (summary["cpu"], summary["memory"], summary["pods"]) == (1500, 2 * 2**30, 110)
    assert summary["address"] == "10.0.0.11"
    assert summary["reason"] == "NodeStatusUnknown Kubelet stopped posting node status."


@pytest.mark.parametrize("status, ready_, tone", [
    ("Running", True, "ok"),
    ("Running", False, "warn"),
    ("Pending", False, "pending"),
    ("ContainerCreating", False, "pending"),
    ("Init:0/1", False, "pending"),
    ("Init:Error", False, "bad"),
    ("Init:CrashLoopBackOff", False, "bad"),
    ("CrashLoopBackOff", False, "bad"),
    ("ImagePullBackOff", False, "bad"),
    ("Error", False, "bad"),
    ("OOMKilled", False, "bad"),
    ("Completed", False, "done"),
    ("Terminating", True, "leaving"),
])
def test_a_pods_colour_follows_its_status(status, ready_, tone):
    assert tone_of(status, ready_) == tone


def pod(**status) -> dict:
    return {"metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"},
                         "ownerReferences": [{"kind": "Node", "name": "n", "controller": False},
                                             {"kind": "ReplicaSet", "name": "web-7d4", "controller": True}]},
            "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                                    {"name": "b", "resources": {"requests": {"cpu": "1"}}}]},
            "status": status}


def test_a_running_pod():
    summary = summarize_pod(pod(phase="Running", podIP="10.244.1.5", containerStatuses=[
        {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}}},
        {"name": "b", "ready": True, "restartCount": 1, "state": {"running": {}}}]))
    assert summary == {"key": "shop/web-1", "namespace": "shop", "name": "web-1", "node": "", "status": "Running",
                       "tone": "ok", "ready": "2/2", "restarts": 3, "ip": "10.244.1.5", "owner": "ReplicaSet/web-7d4",
                       "waiting": "", "cpu": 1250, "memory": 64 * 2**20, "labels": {"app": "web"}}


def test_a_pending_pod_says_why_the_scheduler_left_it():
    message = "0/2 nodes are available: 2 Insufficient cpu."
    summary = summarize_pod(pod(phase="Pending", conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]))
    assert (summary["status"], summary["tone"], summary["waiting"]) == ("Pending", "pending", message)


def test_a_deleted_pod_is_terminating():
    terminating = pod(phase="Running")
    terminating["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    assert (summarize_pod(terminating)["status"], summarize_pod(terminating)["tone"]) == ("Terminating", "leaving")


def test_a_garbled_pod_still_gets_a_card():
    summary = summarize_pod({"metadata": {"name": "x", "namespace": "d", "labels": "no"},
                             "spec": {"containers": "no"}, "status": []})
    assert (summary["key"], summary["status"], summary["cpu"], summary["labels"]) == ("d/x", "Pending", 0, {})


def test_a_service_and_its_endpoints():
    service = {"metadata": {"name": "web", "namespace": "shop"},
               "spec": {"type": "NodePort", "clusterIP": "10.96.0.20",
                        "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}}
    assert summarize_service(service) == {"key": "shop/web", "namespace": "shop", "name": "web", "type": "NodePort",
                                          "clusterIP": "10.96.0.20", "ports": ["80:30080/TCP", "53/UDP"]}
    endpoint_slice = {"metadata": {"name": "web-abcde", "namespace": "shop",
                                   "labels": {"kubernetes.io/service-name": "web"}},
                      "endpoints": [{"addresses": ["10.244.1.5"], "conditions": {"ready": True},
                                     "targetRef": {"kind": "Pod", "name": "web-1"}},
                                    {"addresses": ["10.244.2.7"], "conditions": {"ready": False}},
                                    {"addresses": ["10.244.2.8"]}]}
    assert summarize_endpoint_slice(endpoint_slice) == {
        "key": "shop/web-abcde", "namespace": "shop", "service": "web",
        "addresses": [{"ip": "10.244.1.5", "ready": True, "pod": "web-1"},
                      {"ip": "10.244.2.7", "ready": False, "pod": ""},
                      {"ip": "10.244.2.8", "ready": True, "pod": ""}]}      # no condition: ready, as the API says


def test_an_event_takes_its_newest_time():
    event = {"metadata": {"name": "web.1", "namespace": "shop", "creationTimestamp": "2026-12-01T00:00:00Z"},
             "involvedObject": {"kind": "Pod", "name": "web-1"}, "reason": "Scheduled", "message": "to node1",
             "firstTimestamp": "2026-12-01T00:00:01Z", "lastTimestamp": "2026-12-01T00:00:09Z", "count": 3,
             "source": {"component": "default-scheduler"}}
    assert summarize_event(event) == {"key": "shop/web.1", "namespace": "shop", "type": "Normal",
                                      "reason": "Scheduled", "message": "to node1", "object": "Pod/web-1",
                                      "count": 3, "time": "2026-12-01T00:00:09Z", "source": "default-scheduler"}
