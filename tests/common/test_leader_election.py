"""Leader election (common/client/leader_election.py) without processes: the
acquire-or-renew decision as a table on a fake clock, then the elector
against an in-memory Lease that does the API server's compare-and-swap."""
from __future__ import annotations

import argparse
import copy
import threading
from pathlib import Path

import pytest

import abac
from abac import Attributes
from authentication import User
from common.client.client import AlreadyExists, APIConnectionError, Conflict, NotFound
from common.client.leader_election import (COORDINATION, LeaderElectionConfig, LeaderElector, add_flags,
                                    config_from_args, decide)

ME, OTHER = "master1_aaaa", "master2_bbbb"
STAMP, EARLIER = "2026-11-23T10:00:30.000000Z", "2026-11-23T09:00:00.000000Z"


def held(holder: str, *, transitions: int = 2, seconds: int = 15) -> dict:
    return {"holderIdentity": holder, "leaseDurationSeconds": seconds, "acquireTime": EARLIER,
            "renewTime": EARLIER, "leaseTransitions": transitions}


def taken(transitions: int) -> dict:
    return {"holderIdentity": ME, "leaseDurationSeconds": 15, "acquireTime": STAMP, "renewTime": STAMP,
            "leaseTransitions": transitions}


# ---------------------------------------------------------------- the decision

# (lease spec as read, seconds since we saw it change, what we write or None, why)
DECISIONS = [
    (None, 0, taken(0), "no lease yet"),
    ({}, 0, taken(1), "the lease is free"),
    ({**held(""), "leaseTransitions": 4}, 0, taken(5), "the lease is free"),          # released by its holder
    (held(OTHER), 5, None, f"held by {OTHER}"),
    (held(OTHER), 14.9, None, f"held by {OTHER}"),
    (held(OTHER), 15, taken(3), f"{OTHER} has not renewed for 15.0s (lease 15s)"),  # expired
    (held(OTHER, seconds=40), 20, None, f"held by {OTHER}"),    # the holder's own duration counts, not ours
    (held(ME), 3, {**taken(2), "acquireTime": EARLIER}, "renewing our own lease"),  # keeps acquireTime and count
    (held(ME), 60, {**taken(2), "acquireTime": EARLIER}, "renewing our own lease"),  # even after a long pause
]


@pytest.mark.parametrize("current, silent, written, why", DECISIONS, ids=[
    "no-lease", "empty-spec", "released", "held", "held-just-before-expiry", "expired",
    "holder-duration", "ours", "ours-late"])
def test_decide(current, silent, written, why):
    decision = decide(current, identity=ME, observed_at=100.0, now=100.0 + silent, stamp=STAMP,
                      lease_duration_seconds=15)
    assert (decision.spec, decision.why) == (written, why)


def test_expiry_is_measured_on_our_clock_not_by_the_lease_renew_time():
    """The Lease says it was renewed an hour ago (the holder's clock is
    behind ours); we only just saw it change, so it is held."""
    decision = decide(held(OTHER), identity=ME, observed_at=500.0, now=501.0, stamp=STAMP,
                      lease_duration_seconds=15)
    assert decision.spec is None


# ---------------------------------------------------------------- config and flags

@pytest.mark.parametrize("lease, renew, retry, message", [
    (15, 10, 2, None),
    (3, 2, 0.5, None),
    (10, 10, 2, "--leader-elect-lease-duration (10s) must be longer than --leader-elect-renew-deadline (10s)"),
    (15, 2.4, 2, "--leader-elect-renew-deadline (2.4s) must be longer than 1.2 x --leader-elect-retry-period (2s)"),
    (0.5, 0.2, 0.1, "--leader-elect-lease-duration must be at least 1s, not 0.5s"),
])
def test_config_checks_the_durations_fit_together(lease, renew, retry, message):
    if message is None:
        LeaderElectionConfig("kube-system", "x", ME, lease, renew, retry)
        return
    with pytest.raises(ValueError) as caught:
        LeaderElectionConfig("kube-system", "x", ME, lease, renew, retry)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("argv, leader_elect", [([], False), (["--leader-elect"], True),
                                                (["--leader-elect=true"], True), (["--leader-elect=false"], False)])
def test_flags(argv, leader_elect):
    parser = argparse.ArgumentParser()
    add_flags(parser, "kube-scheduler")
    args = parser.parse_args(argv + ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
                                     "--leader-elect-retry-period", "500ms"])
    assert args.leader_elect is leader_elect
    config = config_from_args(args)
    assert (config.namespace, config.name, config.lease_duration, config.renew_deadline, config.retry_period) == \
        ("kube-system", "kube-scheduler", 3, 2, 0.5)
    host, _, suffix = config.identity.rpartition("_")
    assert host and len(suffix) == 36               # hostname_uuid, as Kubernetes
    assert config_from_args(args).identity != config.identity


# ---------------------------------------------------------------- the elector, on a fake API server

class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeLeases:
    """One namespace of Leases, with the API server's rules: create refuses
    a taken name, update refuses a stale resourceVersion (409)."""

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.version = 0
        self.before_write = None        # a hook: another writer gets in between read and write
        self._lock = threading.RLock()    # compare and swap as one step, as the server's store does

    def get(self, group_version, plural, namespace, name):
        assert (group_version, plural) == (COORDINATION, "leases")
        if name not in self.objects:
            raise NotFound(404, "NotFound", f'leases "{name}" not found')
        return copy.deepcopy(self.objects[name])

    def create(self, group_version, plural, obj, namespace=None):
        self._hook()
        name = obj["metadata"]["name"]
        with self._lock:
            if name in self.objects:
                raise AlreadyExists(409, "AlreadyExists", f'leases "{name}" already exists')
            return self._store(obj)

    def update(self, group_version, plural, obj):
        self._hook()
        name = obj["metadata"]["name"]
        with self._lock:
            if obj["metadata"].get("resourceVersion") != self.objects[name]["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "the object has been modified")
            return self._store(obj)

    def _hook(self):
        hook, self.before_write = self.before_write, None
        if hook:
            hook()

    def _store(self, obj):
        self.version += 1
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    def holder(self, name="kube-scheduler"):
        return self.objects[name]["spec"].get("holderIdentity")


class QuietLog:
    def __init__(self):
        self.lines = []

    def _add(self, event, obj=None, **fields):
        self.lines.append(event)

    debug = info = warning = error = _add


def elector(api, identity, clock, **callbacks) -> LeaderElector:
    config = LeaderElectionConfig("kube-system", "kube-scheduler", identity, lease_duration=15, renew_deadline=10,
                                  retry_period=callbacks.pop("retry_period", 2))
    callbacks.setdefault("on_started_leading", lambda: None)
    # renewTime moves with the clock: a renewal is a change the others see.
    return LeaderElector(api, config, clock=clock, wall_clock=lambda: f"t={clock.now}", log=QuietLog(), **callbacks)


def test_first_candidate_creates_the_lease_the_second_waits_then_takes_over_a_silent_holder():
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    assert a.try_acquire_or_renew() == ME
    assert b.try_acquire_or_renew() == ME                 # held: b writes nothing
    assert api.version == 1 and "new leader elected" in b.log.lines
    clock.now += 14
    assert b.try_acquire_or_renew() == ME                 # b first saw it 14 s ago: not yet
    clock.now += 1
    assert b.try_acquire_or_renew() == OTHER              # 15 s of silence: b takes it
    assert api.objects["kube-scheduler"]["spec"]["leaseTransitions"] == 1
    assert a.try_acquire_or_renew() == OTHER              # a, back from its pause, sees it lost


def test_a_renewing_holder_keeps_the_lease():
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    a.try_acquire_or_renew()
    for _ in range(20):                                   # 40 s, renewed every 2 s
        clock.now += 2
        assert a.try_acquire_or_renew() == ME
        assert b.try_acquire_or_renew() == ME
    assert api.objects["kube-scheduler"]["spec"]["leaseTransitions"] == 0


def test_a_conflict_means_someone_else_wrote_first():
    """Both saw the lease expire; the other's write lands between our read
    and our write, so ours carries a stale resourceVersion: 409, not leader."""
    api, clock = FakeLeases(), FakeClock()
    old = elector(api, "old_holder", clock)
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    old.try_acquire_or_renew()
    a.try_acquire_or_renew(), b.try_acquire_or_renew()
    clock.now += 16
    api.before_write = lambda: b.try_acquire_or_renew()   # b wins the race
    assert a.try_acquire_or_renew() is None
    assert "lease changed between our read and our write" in a.log.lines
    assert api.holder() == OTHER
    assert a.try_acquire_or_renew() == OTHER              # the next round reads afresh


def test_a_conflict_on_create_too():
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    api.before_write = lambda: b.try_acquire_or_renew()
    assert a.try_acquire_or_renew() is None and api.holder() == OTHER


def test_release_writes_a_free_lease_that_the_other_takes_at_once():
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    a.release()
    assert api.holder() is None and api.objects["kube-scheduler"]["spec"]["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew() == OTHER              # no waiting out the 15 s


def test_release_leaves_a_lease_that_is_no_longer_ours():
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, ME, clock), elector(api, OTHER, clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.now += 15
    b.try_acquire_or_renew()
    a.release()
    assert api.holder() == OTHER


def test_run_stops_leading_when_the_renew_deadline_passes():
    """The API server goes away after we took the lease; every failed try
    costs a second on the fake clock: run() gives up at the 10 s deadline
    and returns False (the component then exits), without on_stopped_leading."""
    api, clock = FakeLeases(), FakeClock()
    started, stopped = threading.Event(), []

    def fail_and_tick(*args):
        clock.now += 1
        raise APIConnectionError("cannot reach the API server")

    a = elector(api, ME, clock, retry_period=0.001, on_started_leading=started.set,
                on_stopped_leading=lambda: stopped.append(True))
    original_get = api.get

    def get(*args):
        if started.is_set():
            return fail_and_tick()
        return original_get(*args)

    api.get = get
    assert a.run(threading.Event()) is False
    assert started.is_set() and not stopped and not a.is_leader()
    assert "failed to renew lease: renew deadline passed" in a.log.lines
    assert 10 <= clock.now - 1000 <= 11


def test_run_stops_leading_at_once_when_another_holds_the_lease():
    """Someone else wrote the lease (a person with kubectl, or a candidate
    whose clock ran fast): the leader does not wait for its deadline."""
    api, clock = FakeLeases(), FakeClock()

    def someone_takes_it():                     # runs beside a's renewals: retries its own 409s
        for _ in range(1000):                   # a bound, not a hang, should a's renewals never pause
            lease = api.get(COORDINATION, "leases", "kube-system", "kube-scheduler")
            lease["spec"]["holderIdentity"] = OTHER
            try:
                api.update(COORDINATION, "leases", lease)
                return
            except Conflict:
                continue
        raise AssertionError("1000 conflicts in a row: the lease never stood still long enough to take")

    a = elector(api, ME, clock, retry_period=0.001, on_started_leading=someone_takes_it)
    assert a.run(threading.Event()) is False
    assert "lease taken over" in a.log.lines


def test_a_clean_stop_stops_the_work_first_then_releases():
    api, clock = FakeLeases(), FakeClock()
    stop, seen = threading.Event(), []
    a = elector(api, ME, clock, retry_period=0.001, on_started_leading=stop.set,
                on_stopped_leading=lambda: seen.append(api.holder()))
    assert a.run(stop) is True
    assert seen == [ME]                          # still ours while the work stops ...
    assert api.holder() is None                  # ... released after


def test_a_candidate_stopped_before_it_leads_starts_nothing():
    api, clock = FakeLeases(), FakeClock()
    elector(api, OTHER, clock).try_acquire_or_renew()
    stop, started = threading.Event(), []
    stop.set()
    a = elector(api, ME, clock, on_started_leading=lambda: started.append(True))
    assert a.run(stop) is True and not started and api.holder() == OTHER


# ---------------------------------------------------------------- the example policy

POLICY_FILE = Path(__file__).resolve().parents[2] / "02-apiserver" / "policy.jsonl"


@pytest.mark.parametrize("user, verb, namespace, allowed", [
    ("scheduler", "create", "kube-system", True),
    ("scheduler", "update", "kube-system", True),
    ("scheduler", "get", "kube-system", True),
    ("scheduler", "update", "default", False),
    ("controller-manager", "create", "kube-system", True),
    ("controller-manager", "update", "kube-system", True),
    ("controller-manager", "update", "kube-node-lease", False),
])
def test_policy_lets_the_components_hold_their_leases(user, verb, namespace, allowed):
    authz = abac.ABACAuthorizer(POLICY_FILE)
    attributes = Attributes(verb, "leases", "", "coordination.k8s.io", namespace, "" if verb == "create" else "x")
    try:
        authz.authorize(User(user, ("system:authenticated",)), attributes)
        result = True
    except Exception as error:
        assert getattr(error, "code", None) == 403, error
        result = False
    assert result is allowed
