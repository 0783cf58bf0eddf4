"""Two schedulers with --leader-elect beside one real API server: the
leader binds every pod, the other binds none; SIGKILL the leader and the
other takes the lease once it runs out, and binds the pods that come next."""
from __future__ import annotations

import re
import subprocess
import sys

from scheduler_harness import wait_for

from common.client.leader_election import JITTER

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
LEASE_DURATION, RETRY_PERIOD = 3.0, 0.5
SHORT = ("--leader-elect", "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
         "--leader-elect-retry-period", "500ms")
# A lease duration from the last renewal the follower saw, one jittered
# retry period, and a margin for a busy 2-core machine.
TAKEOVER = LEASE_DURATION + RETRY_PERIOD * (1 + JITTER) + 5


def identity(scheduler) -> str:
    return re.search(r"attempting to acquire leader lease identity=(\S+)", scheduler.log()).group(1)


def holder(cluster) -> str | None:
    response = cluster.api.get(LEASE)
    return response.json()["spec"].get("holderIdentity") if response.status_code == 200 else None


def bindings(scheduler) -> int:
    return scheduler.log().count(": bound node=")


def test_one_schedules_and_the_other_takes_over_a_killed_leader(cluster):
    cluster.add_node("node1")
    cluster.add_node("node2")
    first = cluster.scheduler(*SHORT)                  # no lease yet: it leads, and says "scheduling"
    second = cluster.scheduler(*SHORT, wait=False)
    wait_for(lambda: second.process.poll() is None and "new leader elected" in second.log(), 20,
             what=f"the second scheduler to see a leader (log: {second.log_path})")
    assert holder(cluster) == identity(first)

    for i in range(4):
        cluster.create_pod(f"web-{i}", cpu="100m")
    wait_for(lambda: cluster.all_bound(4), 20, what="4 pods bound")
    for i in range(4):
        [scheduled] = wait_for(lambda: cluster.events(f"web-{i}", "Scheduled"), 10, what="a Scheduled event")
        assert scheduled.get("count", 1) == 1
    assert bindings(first) == 4
    assert bindings(second) == 0 and " INFO scheduling " not in second.log(), second.log()

    first.kill()
    wait_for(lambda: holder(cluster) == identity(second), TAKEOVER, what="the second to take the lease")
    for i in range(4, 6):
        cluster.create_pod(f"web-{i}", cpu="100m")
    wait_for(lambda: cluster.all_bound(6), 20, what="the new pods bound by the new leader")
    assert bindings(second) == 2

    assert second.stop() == 0
    assert "released lease" in second.log()
    assert holder(cluster) is None


def test_the_scheduler_holds_its_lease_on_the_secure_port_with_its_own_token(tmp_path):
    """02-apiserver/policy.jsonl lets the user "scheduler" write its Lease."""
    from scheduler_harness import ROOT, Client, SchedulerProcess
    from test_gauntlet import SecureServer

    certs = tmp_path / "certs"
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs),
                    "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    server = SecureServer(tmp_path / "data", certs).start()
    scheduler = None
    try:
        # The kubeconfig's token and CA, on the secure port (--apiserver wins over its server).
        scheduler = SchedulerProcess(tmp_path, server.secure_url, "--kubeconfig", str(certs / "scheduler.kubeconfig"),
                                     *SHORT).start()
        lease = Client(server.url).get(LEASE).json()              # read as the admin, on the insecure port
        assert lease["spec"]["holderIdentity"] == identity(scheduler)
        # Refused is the failure; a read that timed out on a busy machine (CI,
        # 1 s) is retried, and is not what this test is about.
        refused = [line for line in scheduler.log().splitlines()
                   if "cannot read or write the lease" in line and ("403" in line or "orbidden" in line)]
        assert not refused, refused
    finally:
        if scheduler:
            scheduler.stop()
        server.stop()
