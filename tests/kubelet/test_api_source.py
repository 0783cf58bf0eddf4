"""What the kubelet writes back to the API server, decided without a server."""
from __future__ import annotations

from apiserver_join.api_source import _keep_scheduled

KUBELET = {"phase": "Running", "conditions": [
    {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-22T09:00:05Z"},
    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-22T09:00:06Z"}]}


def test_the_schedulers_pod_scheduled_condition_is_kept():
    stored = {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-22T09:00:01Z"}]}
    written = _keep_scheduled(KUBELET, stored)
    assert written["conditions"][0]["lastTransitionTime"] == "2026-11-22T09:00:01Z"   # the binding's time
    assert written["conditions"][1] == KUBELET["conditions"][1] and written["phase"] == "Running"


def test_a_pod_bound_by_hand_gets_the_kubelets_own():
    assert _keep_scheduled(KUBELET, {}) == KUBELET
