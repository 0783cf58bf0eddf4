"""The Node a kubelet registers: measured from this machine, accepted by the API server."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import node_allocatable
from apiserver_join import node_status

ROOT = Path(__file__).resolve().parents[2]


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
    from common.model.validate import validate_object
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24")
    assert validate_object("", "Node", node, namespaced=False) == []


def test_a_heartbeat_renews_the_time_and_keeps_the_transition():
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24")
    ready = node["status"]["conditions"][0]
    ready["lastTransitionTime"] = ready["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"
    renewed = node_status.heartbeat(node)["conditions"][0]
    assert renewed["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert renewed["lastHeartbeatTime"] != "2026-01-01T00:00:00Z" and renewed["status"] == "True"


def test_allocatable_is_capacity_minus_both_reservations():
    from common.model.quantity import parse_quantity as q
    system = node_allocatable.parse_reservation("--system-reserved", "cpu=250m,memory=256Mi")
    kube = node_allocatable.parse_reservation("--kube-reserved", "cpu=100m, ephemeral-storage=1Gi")
    node = node_status.node_object("node1", "10.213.0.5", 10255, "20.10.24", (system, kube))
    capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
    assert q(capacity["cpu"]) - q(allocatable["cpu"]) == q("350m")
    assert q(capacity["memory"]) - q(allocatable["memory"]) == q("256Mi")
    assert q(capacity["ephemeral-storage"]) - q(allocatable["ephemeral-storage"]) == q("1Gi")
    assert allocatable["pods"] == capacity["pods"]
    from common.model.validate import validate_object
    assert validate_object("", "Node", node, namespaced=False) == []


@pytest.mark.parametrize("text, says", [
    ("cpu", "give resource=quantity pairs"),
    ("gpu=1", "the resource one of cpu, memory, ephemeral-storage"),
    ("memory=lots", "invalid quantity 'lots'"),
    ("cpu=-1", "cannot be negative"),
])
def test_a_bad_reservation_is_refused_naming_the_flag_and_the_pair(text, says):
    with pytest.raises(node_allocatable.ReservationError) as refused:
        node_allocatable.parse_reservation("--system-reserved", text)
    assert str(refused.value).startswith(f"--system-reserved: {text.split(',')[0]!r}") and says in str(refused.value)


def test_the_kubelet_will_not_start_reserving_more_than_the_machine_has():
    done = subprocess.run([sys.executable, str(ROOT / "01-kubelet" / "kubelet.py"), "--kube-reserved",
                           f"cpu={(os.cpu_count() or 1) + 1}"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "the reservations keep" in done.stderr and "more than the node has" in done.stderr
