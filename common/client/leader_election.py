"""Leader election: run two copies of a component, and let one of them act.

Two replica set controllers acting at once would both create the missing
pods; two schedulers would race for every binding. Yet a single copy is a
single point of failure. Kubernetes runs several copies of the scheduler
and of the controller manager and lets them elect a leader through a small
object in the API server, a Lease:

    kube-system/kube-controller-manager
      spec.holderIdentity        master1_6f1c2...  who acts
      spec.leaseDurationSeconds  15                how long the others wait for a silent holder
      spec.acquireTime           ...               when the holder took the lease
      spec.renewTime             ...               when it last said "still here"
      spec.leaseTransitions      3                 how many times it changed hands

Every copy (a candidate) reads the Lease every retry period (2 s) and
decides what to write (`decide`, a pure function):

- no Lease, no holder, or a holder silent for a whole lease duration: take it;
- our own: renew it (renewTime moves on);
- someone else's, heard from recently: leave it and wait.

The write is a compare-and-swap: the PUT carries the resourceVersion we
read, and if anyone wrote the Lease in between, the API server refuses it
with 409 Conflict. When two candidates see an expired lease at once, both
try, and exactly one of them wins.

"Silent for a lease duration" is measured on our own clock, from the
moment *we* last saw the Lease change, never by comparing its renewTime
with our clock: two machines' clocks may disagree by more than a lease.

The leader renews every retry period. If it cannot renew for a whole renew
deadline (10 s, shorter than the 15 s lease), it stops leading and the
component exits, as Kubernetes' components do: the threads it started
while leading are still running, and only the end of the process stops
them all at once. The others wait 15 s from the last renewal they saw,
so for a few seconds nobody acts, rather than two at once.

On a clean stop (SIGTERM) the leader first stops its work, then writes
the Lease as free (client-go's ReleaseOnCancel), so another copy takes
over at its next retry instead of waiting out the lease.
"""
from __future__ import annotations

import argparse
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from common.client.client import APIClient, APIConnectionError, APIStatusError, AlreadyExists, Conflict, NotFound
from common.client.kubeconfig import Connection
from common.log import get_logger
from common.times import duration, micro_time

COORDINATION = "coordination.k8s.io/v1"
# client-go's JitterFactor: a candidate waits between 1 and 2.2 retry periods,
# so that copies started together do not all ask at the same moment.
JITTER = 1.2


def new_identity() -> str:
    """hostname_random, as Kubernetes' components name themselves: the host
    tells a person where the leader runs, the random part tells two copies
    on one host (or a restarted copy) apart."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str                   # --leader-elect-resource-namespace
    name: str                        # --leader-elect-resource-name
    identity: str
    lease_duration: float = 15.0     # seconds: how long the others wait for a silent leader
    renew_deadline: float = 10.0     # seconds: how long the leader tries to renew before giving up
    retry_period: float = 2.0        # seconds between tries
    release_on_cancel: bool = True   # on a clean stop, write the lease as free

    def __post_init__(self):
        # The same checks as client-go's NewLeaderElector, in flag names.
        if self.lease_duration < 1:
            raise ValueError(f"--leader-elect-lease-duration must be at least 1s, not {self.lease_duration:g}s")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(f"--leader-elect-lease-duration ({self.lease_duration:g}s) must be longer than "
                             f"--leader-elect-renew-deadline ({self.renew_deadline:g}s): a leader must give up "
                             "before the others may take over")
        if self.renew_deadline <= self.retry_period * JITTER:
            raise ValueError(f"--leader-elect-renew-deadline ({self.renew_deadline:g}s) must be longer than "
                             f"{JITTER} x --leader-elect-retry-period ({self.retry_period:g}s): "
                             "a leader must get more than one try")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def lease_duration_seconds(self) -> int:
        return int(self.lease_duration)       # the Lease holds whole seconds


# ---------------------------------------------------------------- the decision

@dataclass(frozen=True)
class Decision:
    spec: dict | None        # the Lease spec to write; None: leave the Lease alone
    why: str                 # for the log


# [START leader-election-decide]
def decide(current: dict | None, *, identity: str, observed_at: float, now: float,
           stamp: str, lease_duration_seconds: int) -> Decision:
    """What to write to the Lease, given its spec as we read it (None: no
    Lease yet) and since when it has looked like that on our clock
    (observed_at). stamp is the wall-clock time to record in it."""
    ours = {"holderIdentity": identity, "leaseDurationSeconds": lease_duration_seconds,
            "acquireTime": stamp, "renewTime": stamp}
    if current is None:
        return Decision({**ours, "leaseTransitions": 0}, "no lease yet")
    holder = current.get("holderIdentity") or ""
    transitions = current.get("leaseTransitions") or 0
    if holder == identity:
        # Renewing: the time we took it and the count of hand-overs stay.
        return Decision({**ours, "acquireTime": current.get("acquireTime") or stamp,
                         "leaseTransitions": transitions}, "renewing our own lease")
    if not holder:
        return Decision({**ours, "leaseTransitions": transitions + 1}, "the lease is free")
    # The holder's own promise counts: it said how long to wait for it.
    duration = current.get("leaseDurationSeconds") or lease_duration_seconds
    silent = now - observed_at
    if silent < duration:
        return Decision(None, f"held by {holder}")
    return Decision({**ours, "leaseTransitions": transitions + 1},
                    f"{holder} has not renewed for {silent:.1f}s (lease {duration}s)")
# [END leader-election-decide]


# ---------------------------------------------------------------- the elector

class LeaderElector:
    """Campaigns for one Lease; calls on_started_leading (in a thread of its
    own) once it holds it, and on_stopped_leading on a clean stop.

    client-go also calls OnStoppedLeading when the lease is lost, and the
    components exit inside it; here run() returns False instead, so that
    the exit stands in the component's main, where a reader sees it."""

    def __init__(self, client: APIClient, config: LeaderElectionConfig, *,
                 on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None] | None = None,
                 events=None, log=None, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], str] = micro_time):
        self.client, self.config = client, config
        self.on_started_leading, self.on_stopped_leading = on_started_leading, on_stopped_leading
        self.events = events               # an EventRecorder, or None
        self.log = log or get_logger("leader-election")
        self.clock, self.wall_clock = clock, wall_clock
        self.lease: dict | None = None     # as last read or written: its resourceVersion guards our next write
        self._observed_spec: dict | None = None
        self._observed_at = 0.0            # our clock, when the spec last changed in our eyes
        self._leading = threading.Event()

    def is_leader(self) -> bool:
        return self._leading.is_set()

    # [START leader-election-run]
    def run(self, stop: threading.Event) -> bool:
        """Campaign until we lead; lead while we can renew; until stop is set.

        True after a clean stop: our work stopped first (on_stopped_leading),
        then the lease released. False when leadership was lost: the caller
        must exit at once, since what it started while leading still runs."""
        self.log.info("attempting to acquire leader lease", obj=self.config.key, identity=self.config.identity)
        if not self._acquire(stop):
            return True                                   # stopped before we ever led
        self._leading.set()
        self._record_event("became leader")
        threading.Thread(target=self.on_started_leading, name="leading", daemon=True).start()
        kept = self._renew(stop)
        self._leading.clear()
        if not kept:
            return False
        if self.on_stopped_leading:
            self.on_stopped_leading()
        if self.config.release_on_cancel:
            self.release()
        self._record_event("stopped leading")
        return True
    # [END leader-election-run]

    def _acquire(self, stop: threading.Event) -> bool:
        """Try every retry period (with jitter) until we hold the lease."""
        while not stop.is_set():
            if self.try_acquire_or_renew() == self.config.identity:
                return True
            stop.wait(self.config.retry_period * (1 + random.random() * JITTER))
        return False

    def _renew(self, stop: threading.Event) -> bool:
        """Renew every retry period until stop; False once the lease is
        someone else's, or a renew deadline passed without one renewal."""
        renewed_at = self.clock()
        while not stop.wait(self.config.retry_period):
            holder = self.try_acquire_or_renew()
            if holder == self.config.identity:
                renewed_at = self.clock()
            elif holder is not None:
                self.log.error("lease taken over", obj=self.config.key, holder=holder)
                return False
            elif self.clock() - renewed_at >= self.config.renew_deadline:
                self.log.error("failed to renew lease: renew deadline passed", obj=self.config.key,
                               deadline=f"{self.config.renew_deadline:g}s")
                return False
        return True

    # [START try-acquire-or-renew]
    def try_acquire_or_renew(self) -> str | None:
        """One round: read the Lease, decide, write. Returns who holds it
        now: our identity after a successful write, the holder's while it is
        valid, None when we cannot tell (API server away, or a 409: someone
        wrote between our read and our write; the next round reads again)."""
        now = self.clock()
        try:
            lease = self._read()
            self._observe(lease, now)
            current = None if lease is None else (lease.get("spec") or {})
            decision = decide(current, identity=self.config.identity, observed_at=self._observed_at, now=now,
                              stamp=self.wall_clock(), lease_duration_seconds=self.config.lease_duration_seconds)
            if decision.spec is None:
                return lease["spec"]["holderIdentity"]
            self.lease = self._write(lease, decision.spec)
        except (Conflict, AlreadyExists):
            self.log.info("lease changed between our read and our write", obj=self.config.key)
            return None
        except (APIConnectionError, APIStatusError) as error:
            self.log.warning("cannot read or write the lease", obj=self.config.key, error=str(error))
            return None
        self._observe(self.lease, now)
        if not self.is_leader():
            self.log.info("successfully acquired lease", obj=self.config.key, identity=self.config.identity,
                          why=decision.why)
        return self.config.identity
    # [END try-acquire-or-renew]

    def release(self) -> None:
        """Write the lease as free, if it is still ours: no holder, a
        one-second duration. Another candidate takes it at its next try."""
        if self.lease is None or self.lease["spec"].get("holderIdentity") != self.config.identity:
            return
        stamp = self.wall_clock()
        spec = {"leaseDurationSeconds": 1, "acquireTime": stamp, "renewTime": stamp,
                "leaseTransitions": self.lease["spec"].get("leaseTransitions") or 0}
        try:
            self.lease = self.client.update(COORDINATION, "leases", {**self.lease, "spec": spec})
            self.log.info("released lease", obj=self.config.key)
        except (APIConnectionError, APIStatusError) as error:
            # 409: someone wrote it since, so it is not ours to release.
            self.log.warning("cannot release the lease", obj=self.config.key, error=str(error))

    # ------------------------------------------------ the Lease object

    def _read(self) -> dict | None:
        try:
            return self.client.get(COORDINATION, "leases", self.config.namespace, self.config.name)
        except NotFound:
            return None

    def _write(self, lease: dict | None, spec: dict) -> dict:
        if lease is None:
            return self.client.create(COORDINATION, "leases", {
                "apiVersion": COORDINATION, "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace}, "spec": spec})
        # The whole object goes back, metadata.resourceVersion included: the compare-and-swap.
        return self.client.update(COORDINATION, "leases", {**lease, "spec": spec})

    def _observe(self, lease: dict | None, now: float) -> None:
        """Remember when the Lease last changed, on our clock."""
        spec = (lease or {}).get("spec")
        if spec == self._observed_spec:
            return
        holder = (spec or {}).get("holderIdentity")
        if holder and holder != (self._observed_spec or {}).get("holderIdentity") and holder != self.config.identity:
            self.log.info("new leader elected", obj=self.config.key, holder=holder)
        self._observed_spec, self._observed_at = spec, now

    def _record_event(self, what: str) -> None:
        if self.events is not None and self.lease is not None:
            self.events.event(self.lease, "Normal", "LeaderElection", f"{self.config.identity} {what}")


# ---------------------------------------------------------------- for the components

def lease_client(connection: Connection, config: LeaderElectionConfig, user_agent: str) -> APIClient:
    """An API client of the elector's own. Each request gives up after a
    retry period (at least a second), so a hung request cannot carry a
    leader past its renew deadline; and nothing is retried behind the
    elector's back: it tries again itself, every retry period."""
    return APIClient(connection, timeout=max(config.retry_period, 1.0), read_retries=0, user_agent=user_agent)


def _true_or_false(text: str) -> bool:
    if text.lower() in ("true", "1"):
        return True
    if text.lower() in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def add_flags(parser: argparse.ArgumentParser, resource_name: str) -> None:
    """Kubernetes' --leader-elect flags, with its defaults (but off unless asked)."""
    group = parser.add_argument_group("leader election")
    group.add_argument("--leader-elect", nargs="?", const=True, default=False, type=_true_or_false,
                       metavar="true|false",
                       help="run as one of several copies: act only while holding a Lease "
                            "(Kubernetes turns this on by default; here it is off, since a lesson runs one copy)")
    group.add_argument("--leader-elect-lease-duration", type=duration, default=15.0, metavar="DURATION",
                       help="how long the other copies wait for a silent leader before taking over (default 15s)")
    group.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0, metavar="DURATION",
                       help="how long the leader keeps trying to renew before it stops leading (default 10s)")
    group.add_argument("--leader-elect-retry-period", type=duration, default=2.0, metavar="DURATION",
                       help="how often every copy tries to acquire or renew (default 2s)")
    group.add_argument("--leader-elect-resource-namespace", default="kube-system", metavar="NAMESPACE",
                       help="the Lease's namespace (default kube-system)")
    group.add_argument("--leader-elect-resource-name", default=resource_name, metavar="NAME",
                       help=f"the Lease's name (default {resource_name}); copies that share it elect one leader")


def config_from_args(args: argparse.Namespace, identity: str | None = None) -> LeaderElectionConfig:
    """The config the flags describe; ValueError if the durations do not fit together."""
    return LeaderElectionConfig(
        namespace=args.leader_elect_resource_namespace, name=args.leader_elect_resource_name,
        identity=identity or new_identity(), lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline, retry_period=args.leader_elect_retry_period)
