"""Chapter 04's decisions as tables: which pods go first, when an
expectation is met, which controllers run. No server needed."""
from __future__ import annotations

import pytest

from controller_manager import chosen
from expectations import Expectations
from pods import deletion_rank, is_active, is_available, pods_to_delete

NOW = 1_800_000_000.0


def at(seconds_ago: float) -> str:
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def pod(name, node="node1", phase="Running", ready_for=None, restarts=0, age=600, deleting=False):
    status = {"phase": phase, "containerStatuses": [{"name": "main", "restartCount": restarts}]}
    if ready_for is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": at(ready_for)}]
    meta = {"name": name, "namespace": "default", "creationTimestamp": at(age)}
    if deleting:
        meta["deletionTimestamp"] = at(0)
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


@pytest.mark.parametrize("first, then, why", [
    (pod("a", node=None, phase="Pending"), pod("b", ready_for=100), "not yet on a node goes first"),
    (pod("a", phase="Pending"), pod("b", phase="Running"), "pending before running"),
    (pod("a", phase="Unknown"), pod("b", phase="Running"), "unknown before running"),
    (pod("a"), pod("b", ready_for=5), "not ready before ready"),
    (pod("a", ready_for=5), pod("b", ready_for=500), "ready for less time first"),
    (pod("a", ready_for=60, restarts=4), pod("b", ready_for=60, restarts=0), "more restarts first"),
    (pod("a", ready_for=60, age=10), pod("b", ready_for=60, age=900), "newer first"),
])
def test_the_least_useful_pod_is_deleted_first(first, then, why):
    assert deletion_rank(first, NOW) < deletion_rank(then, NOW), why
    assert pods_to_delete([then, first], 1, NOW) == [first], why


@pytest.mark.parametrize("p, active", [
    (pod("a"), True),
    (pod("a", phase="Pending"), True),
    (pod("a", phase="Succeeded"), False),
    (pod("a", phase="Failed"), False),          # evicted or failed: replaced, not counted
    (pod("a", deleting=True), False),           # on its way out
])
def test_which_pods_count_towards_replicas(p, active):
    assert is_active(p) is active


@pytest.mark.parametrize("ready_for, min_ready, available", [
    (None, 0, False), (0, 0, True), (5, 10, False), (10, 10, True), (30, 10, True)])
def test_available_means_ready_for_min_ready_seconds(ready_for, min_ready, available):
    assert is_available(pod("a", ready_for=ready_for), min_ready, NOW) is available


def test_expectations_hold_reconcile_until_the_creates_are_seen():
    clock = [0.0]
    expectations = Expectations(clock=lambda: clock[0], timeout=300)
    assert expectations.satisfied("default/web")            # nothing asked: trust the cache
    expectations.expect_creates("default/web", 2)
    assert not expectations.satisfied("default/web")
    expectations.created("default/web")
    assert not expectations.satisfied("default/web")
    expectations.created("default/web")
    assert expectations.satisfied("default/web")
    expectations.expect_deletes("default/web", ["default/web-a"])
    expectations.deleted("default/web", "default/web-b")   # someone else's delete
    assert not expectations.satisfied("default/web")
    clock[0] = 301                                          # never seen: stop waiting
    assert expectations.satisfied("default/web")


@pytest.mark.parametrize("spec, names", [
    ("*", ["replicaset", "replicationcontroller", "deployment", "endpoints", "endpointslice", "daemonset",
           "statefulset", "job", "cronjob", "nodelifecycle", "nodeipam", "garbagecollector", "namespace",
           "serviceaccount", "root-ca-cert-publisher", "persistentvolume-binder", "local-path-provisioner",
           "pvc-protection"]),
    ("*,-replicaset", ["replicationcontroller", "deployment", "endpoints", "endpointslice", "daemonset",
                       "statefulset", "job", "cronjob", "nodelifecycle", "nodeipam", "garbagecollector", "namespace",
                       "serviceaccount", "root-ca-cert-publisher", "persistentvolume-binder",
                       "local-path-provisioner", "pvc-protection"]),
    ("replicaset", ["replicaset"]),
])
def test_choosing_controllers(spec, names):
    assert chosen(spec) == names


def test_an_unknown_controller_is_named():
    with pytest.raises(ValueError, match="unknown controller.*replicaset-typo"):
        chosen("replicaset-typo")


def test_creates_and_deletes_expected_in_one_reconcile_are_both_waited_for():
    # A DaemonSet may create on one node and delete on another at once: the
    # second call must add to the first, not replace it.
    expectations = Expectations(clock=lambda: 0.0)
    expectations.expect_deletes("default/ds", ["default/ds-old"])
    expectations.expect_creates("default/ds", 1)
    expectations.created("default/ds")
    assert not expectations.satisfied("default/ds"), "the delete was forgotten"
    expectations.deleted("default/ds", "default/ds-old")
    assert expectations.satisfied("default/ds")
