"""Expectations: what a controller has asked for and not yet seen happen.

A ReplicaSet wants 3 pods and has 0, so reconcile creates 3. The creates
succeed at once, but the pod informer hears of the new pods a moment later.
If reconcile runs again in between (any event on the ReplicaSet will do),
its cache still shows 0 pods and it would create 3 more. So before it
writes, the controller notes "expect 3 creates for default/web", the pod
informer counts them off as they arrive, and reconcile only manages the
replicas of a key whose expectations are met. (It still writes status.)

Expectations live in memory only, which is safe: a restarted controller
lists first, so its cache already holds every pod it created before.
An expectation that is never met (a create that failed silently, an event
lost) expires after a timeout, as in Kubernetes (5 minutes), and reconcile
goes back to trusting the cache.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

TIMEOUT_SECONDS = 300


@dataclass
class _Pending:
    adds: int = 0
    deletes: set[str] = field(default_factory=set)     # pod keys whose deletion we wait to see
    since: float = 0.0


class Expectations:
    def __init__(self, clock: Callable[[], float] = time.monotonic, timeout: float = TIMEOUT_SECONDS):
        self.clock, self.timeout = clock, timeout
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()      # informer thread and workers both use it

    def expect_creates(self, key: str, count: int) -> None:
        with self._lock:
            self._pending_for(key).adds += count

    def expect_deletes(self, key: str, pod_keys: list[str]) -> None:
        with self._lock:
            self._pending_for(key).deletes.update(pod_keys)

    def _pending_for(self, key: str) -> _Pending:
        """The key's open record, or a new one if it has none or it is met:
        a reconcile that both creates and deletes (a DaemonSet's) adds to
        one record instead of the second call hiding the first."""
        pending = self._pending.get(key)
        if pending is None or self._met(pending):
            pending = self._pending[key] = _Pending(since=self.clock())
        return pending

    def _met(self, pending: _Pending) -> bool:
        return (pending.adds <= 0 and not pending.deletes) or self.clock() - pending.since > self.timeout

    def created(self, key: str) -> None:
        """A create was seen on the watch, or will never happen (it failed)."""
        with self._lock:
            if key in self._pending:
                self._pending[key].adds -= 1

    def deleted(self, key: str, pod_key: str) -> None:
        with self._lock:
            if key in self._pending:
                self._pending[key].deletes.discard(pod_key)

    def satisfied(self, key: str) -> bool:
        with self._lock:
            pending = self._pending.get(key)
            return pending is None or self._met(pending)

    def forget(self, key: str) -> None:
        with self._lock:
            self._pending.pop(key, None)
