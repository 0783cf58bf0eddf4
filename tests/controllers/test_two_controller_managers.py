"""Two controller managers with --leader-elect beside one real API server:
one acts, the other waits; SIGKILL the leader and the other takes over once
the lease runs out; SIGTERM it and it hands the lease over at once."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from controllers_harness import CONTROLLER_MANAGER, ROOT, ControllerManager, replicaset, wait_for
from test_replicaset import make_namespace, pods_of

from common.client.leader_election import JITTER

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
# Short durations so the test waits seconds, not the default 15.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.5
SHORT = ("--leader-elect", "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
         "--leader-elect-retry-period", "500ms")
# A follower may need up to a lease duration from the last renewal it saw,
# plus one jittered retry period; the margin is for a busy 2-core machine.
TAKEOVER = LEASE_DURATION + RETRY_PERIOD * (1 + JITTER) + 5


class Candidate(ControllerManager):
    """A controller manager that may not lead: it counts as started once it
    campaigns for the lease, not once its controllers run."""

    def start(self) -> "Candidate":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(CONTROLLER_MANAGER), "--apiserver", self.url, *self.flags],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        wait_for(lambda: "attempting to acquire leader lease" in self.log() or self._exited(), timeout=30,
                 what=f"the controller manager to campaign (log: {self.log_path})")
        assert self.process.poll() is None, f"the controller manager exited:\n{self.log()}"
        return self

    @property
    def identity(self) -> str:
        return re.search(r"attempting to acquire leader lease identity=(\S+)", self.log()).group(1)

    def leading(self) -> bool:
        return "controllers running" in self.log()


def holder(api) -> str | None:
    response = api.get(LEASE)
    return response.json()["spec"].get("holderIdentity") if response.status_code == 200 else None


def replicaset_events(api, namespace: str) -> dict[str, int]:
    """reason -> how many times, over the ReplicaSet controller's events."""
    counts: dict[str, int] = {}
    for event in api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]:
        counts[event["reason"]] = counts.get(event["reason"], 0) + event.get("count", 1)
    return counts


def test_one_acts_and_the_other_takes_over_a_killed_leader(api, apiserver, tmp_path):
    first = Candidate(apiserver.url, tmp_path, *SHORT).start()
    second = None
    try:
        wait_for(first.leading, timeout=20, what="the first controller manager to lead")
        second = Candidate(apiserver.url, tmp_path, *SHORT).start()
        wait_for(lambda: "new leader elected" in second.log(), timeout=20, what="the second to see a leader")
        assert holder(api) == first.identity

        # Exactly one acts: three pods, each created once.
        ns = make_namespace(api)
        api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 3))
        wait_for(lambda: len(pods_of(api, ns, "web")) == 3, timeout=20, what="3 pods")
        wait_for(lambda: replicaset_events(api, ns).get("SuccessfulCreate") == 3, timeout=10,
                 what="3 SuccessfulCreate events")
        assert "SuccessfulDelete" not in replicaset_events(api, ns)
        assert not second.leading(), second.log()

        # The leader dies without a word; the lease runs out; the other leads and acts.
        first.kill()
        wait_for(lambda: holder(api) == second.identity, timeout=TAKEOVER, what="the second to take the lease")
        wait_for(second.leading, timeout=10, what="the second's controllers to run")
        assert api.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/web/scale",
                         {"spec": {"replicas": 5}}).status_code == 200
        wait_for(lambda: len(pods_of(api, ns, "web")) == 5, timeout=20, what="5 pods, made by the new leader")

        lease = api.get(LEASE).json()["spec"]
        assert lease["leaseTransitions"] == 1 and lease["leaseDurationSeconds"] == 3
        messages = {e["message"] for e in api.get("/api/v1/namespaces/kube-system/events").json()["items"]
                    if e["reason"] == "LeaderElection"}
        assert {f"{first.identity} became leader", f"{second.identity} became leader"} <= messages
    finally:
        first.stop()
        if second:
            second.stop()


def test_a_stopped_leader_releases_the_lease_at_once(api, apiserver, tmp_path):
    """With a 60 s lease, the other could only take over this soon if the
    leader, on SIGTERM, wrote the lease as free."""
    slow = ("--leader-elect", "--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "40s",
            "--leader-elect-retry-period", "500ms")
    first = Candidate(apiserver.url, tmp_path, *slow).start()
    second = None
    try:
        wait_for(first.leading, timeout=20, what="the first controller manager to lead")
        second = Candidate(apiserver.url, tmp_path, *slow).start()
        wait_for(lambda: "new leader elected" in second.log(), timeout=20, what="the second to see a leader")

        first.stop()
        assert first.process.returncode == 0, first.log()
        assert "released lease" in first.log()
        assert holder(api) in (None, second.identity)      # free, or already taken
        wait_for(lambda: holder(api) == second.identity, timeout=20, what="the second to take the free lease")
        wait_for(second.leading, timeout=10, what="the second's controllers to run")
    finally:
        first.stop()
        if second:
            second.stop()


def test_a_leader_that_cannot_renew_exits(api, apiserver, tmp_path):
    """The API server goes away: the leader cannot renew, and after the renew
    deadline it exits (code 1) rather than go on acting unsure of its lease."""
    manager = Candidate(apiserver.url, tmp_path, *SHORT).start()
    try:
        wait_for(manager.leading, timeout=20, what="the controller manager to lead")
        apiserver.kill()
        wait_for(lambda: manager.process.poll() is not None, timeout=RENEW_DEADLINE + 10, what="the leader to exit")
        assert manager.process.returncode == 1
        assert "failed to renew lease: renew deadline passed" in manager.log()
        assert "leaderelection lost" in manager.log()
    finally:
        manager.stop()


def test_without_leader_election_no_lease_is_written(api, manager):
    assert api.get(LEASE).status_code == 404


def test_the_controller_manager_holds_its_lease_on_the_secure_port_with_its_own_token(tmp_path):
    """02-apiserver/policy.jsonl lets the user "controller-manager" write its Lease."""
    from controllers_harness import Client
    from test_gauntlet import SecureServer

    certs = tmp_path / "certs"
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs),
                    "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    server = SecureServer(tmp_path / "data", certs).start()
    # The kubeconfig's token and CA, on the secure port (--apiserver wins over its server).
    manager = Candidate(server.secure_url, tmp_path, "--kubeconfig", str(certs / "controller-manager.kubeconfig"),
                        *SHORT)
    try:
        manager.start()
        wait_for(manager.leading, timeout=20, what=f"the controller manager to lead (log: {manager.log_path})")
        assert holder(Client(server.url)) == manager.identity       # read as the admin, on the insecure port
        assert "cannot read or write the lease" not in manager.log()
    finally:
        manager.stop()
        server.stop()
