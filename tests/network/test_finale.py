"""Chapter 05's finale (05-proxy-dns/finale.py): a two-tier application keeps answering.

A cluster of its own on the module's machines, complete this time: every
controller (with a node monitor of a few seconds, not 40), the scheduler,
and on node1 and node2 a kubelet, a route agent, the proxy in iptables
mode, cluster DNS and an ingress controller. The frontend is asked ten
times a second, as shop.example through the ingress on both nodes (from
this computer, outside the cluster), while a backend pod is deleted, node2's
kubelet is stopped and started again, and the backend is rolled to v2;
the failures during each must stay within what lesson-3 says, and say why.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import finale
from network_harness import Cluster


@pytest.fixture(scope="module")
def full_cluster(machines):
    workdir = Path(tempfile.mkdtemp(prefix="groundup-finale-", dir="/var/tmp"))  # not /tmp: each machine has its own
    made = Cluster(machines, workdir)
    try:
        made.bring_up("--node-monitor-grace-period", "6", "--node-monitor-period", "1", scheduler=True,
                      proxy_mode="iptables", ingress=True)
        yield made
    finally:
        made.tear_down()
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_application_answers_through_a_deletion_a_stopped_kubelet_and_a_roll(full_cluster):
    try:
        outcomes, tally = finale.run(full_cluster, report=lambda line: None)
    except AssertionError:
        print(full_cluster.logs())
        raise
    by_event = {o.event: o for o in outcomes}
    print("\n".join(f"{o.event}: {o.requests} requests, failed: {o.failures}" for o in outcomes))
    # The loop kept going all along (ten a second, minus slow answers).
    assert all(o.requests >= 20 for o in outcomes), outcomes
    # The bounds lesson-3-an-application-that-survives.md states, and why:
    # a deleted pod leaves the endpoints as its deletion starts, long
    # before its container stops (it ignores SIGTERM and is killed after
    # its 5 s grace period);
    assert by_event["a backend pod deleted"].failures == []
    # a stopped kubelet leaves its containers running; they leave the
    # endpoints when evicted, and stop only when the kubelet is back;
    assert by_event["node2's kubelet stopped, then started again"].failures == []
    # a roll adds a new pod to the endpoints once its readiness probe
    # passes and removes an old one as its deletion starts.
    assert by_event["the backend rolled to v2"].failures == []
    assert set(tally.answers) == {"backend v1", "backend v2"}, tally.answers
