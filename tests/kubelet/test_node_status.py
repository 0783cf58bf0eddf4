"""The Node a kubelet registers: measured from this machine, accepted by the API server."""
from __future__ import annotations

import os

import node_status


def test_the_node_describes_this_machine():
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24")
    status = node["status"]
    assert status["capacity"]["cpu"] == str(os.cpu_count())
    assert status["capacity"]["memory"].endswith("Ki") and int(status["capacity"]["memory"][:-2]) > 0
    assert status["capacity"]["pods"] == "110" and status["allocatable"] == status["capacity"]
    assert {"type": "InternalIP", "address": "10.213.0.5"} in status["addresses"]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10255}}
    assert status["nodeInfo"]["containerRuntimeVersion"] == "docker://20.10.24"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node1"
    assert [c["type"] for c in status["conditions"]] == ["Ready"]


def test_the_api_server_validates_it_as_is():
    from common.validate import validate_object
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24")
    assert validate_object("", "Node", node, namespaced=False) == []


def test_a_heartbeat_renews_the_time_and_keeps_the_transition():
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24")
    ready = node["status"]["conditions"][0]
    ready["lastTransitionTime"] = ready["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"
    renewed = node_status.heartbeat(node)["conditions"][0]
    assert renewed["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert renewed["lastHeartbeatTime"] != "2026-01-01T00:00:00Z" and renewed["status"] == "True"
