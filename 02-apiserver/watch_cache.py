"""The event history that every watch reads from.

Every write the store acknowledges becomes one Event here, numbered by its
resourceVersion. A watcher is a cursor into this history: it remembers the
position of the last event it sent, and waits on a condition variable (its
kind's) when it has caught up. A write costs the same with one watcher or a
thousand: append, wake whoever waits for that kind. Each watcher filters on
its own thread; the JSON of an event is encoded once, for all of them.

The history is bounded (a ring of `capacity` events). A watcher that asks to
start from a resourceVersion older than the oldest kept event would miss
events, so it is told 410 Gone ("Expired") and must list again: the same
contract as Kubernetes' watch cache and etcd's compaction.

The history outlives the process: the store also writes every event to its
event log (event_log.py) and, when it starts, appends the logged events
here before serving anything, so a watch from before a restart resumes.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

import json_cache


@dataclass
class Event:
    type: str                 # ADDED, MODIFIED, DELETED
    resource_version: int
    resource: object          # registry.Resource
    namespace: str
    obj: dict                 # the object after the change (before it, for DELETED)
    old: dict | None = None   # the object before a MODIFIED: selectors need both
    _encoded: bytes | None = field(default=None, repr=False)

    def encoded(self) -> bytes:
        """`{"type": ..., "object": ...}` and a newline, as a watch sends it: once, for every watcher."""
        if self._encoded is None:             # (a benign race: two threads may both encode, alike)
            self._encoded = encode_event(self.type, self.obj)
        return self._encoded


def encode_event(kind: str, obj: dict) -> bytes:
    return b'{"type":' + json_cache.dumps(kind) + b',"object":' + json_cache.encode(obj) + b"}\n"


class Expired(Exception):
    """The requested resourceVersion is older than the kept history."""


# [START watch-history]
class WatchCache:
    def __init__(self, capacity: int, start_rv: int):
        self._ring: list[Event | None] = [None] * capacity
        self._capacity = capacity
        self._next = 0                    # sequence number of the next event
        self._horizon_rv = start_rv       # events after this rv are all kept
        self._changed = threading.Condition()   # wakes every watcher ...
        self._changed_for: dict = {}      # ... and a kind's Condition (same lock) only its own watchers
        self._expired = False             # the store lost events after these: every watcher must list again

    def append(self, event: Event) -> None:
        """Called by the store, in resourceVersion order, once the write is on disk."""
        with self._changed:
            evicted = self._ring[self._next % self._capacity]
            if evicted is not None:
                self._horizon_rv = evicted.resource_version
            self._ring[self._next % self._capacity] = event
            self._next += 1
            self._changed.notify_all()
            if event.resource in self._changed_for:    # a pod's write wakes no one who waits for Nodes
                self._changed_for[event.resource].notify_all()

    def _position_after(self, rv: int) -> int:
        """The sequence number of the first kept event newer than `rv`."""
        if rv < self._horizon_rv:
            raise Expired(f"too old resource version: {rv} ({self._horizon_rv})")
        low, high = max(0, self._next - self._capacity), self._next
        while low < high:                 # binary search: events are in rv order
            middle = (low + high) // 2
            if self._ring[middle % self._capacity].resource_version <= rv:
                low = middle + 1
            else:
                high = middle
        return low
    # [END watch-history]

    # [START watch-events-after]
    def events_after(self, rv: int, deadline: float, wakeup: float = 1.0, resource=None) -> Iterator[Event | None]:
        """Yield every event newer than `rv` as it happens, until `deadline`.

        Yields None at least every `wakeup` seconds while idle (for a bookmark, or
        to notice that the client went away). Given a `resource`, only its writes wake it."""
        with self._changed:
            position = self._position_after(rv)
            changed = self._changed if resource is None else self._changed_for.setdefault(
                resource, threading.Condition(self._changed._lock))
        while time.monotonic() < deadline:    # also for a watcher that never catches up
            with self._changed:
                if position == self._next:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    changed.wait(min(remaining, wakeup))
                # Checked after the wait too: a burst meanwhile may have
                # overwritten events this watcher has not been sent.
                if position < self._next - self._capacity:
                    raise Expired("the watcher fell behind the kept history")
                if self._expired:
                    raise Expired("the store's history was compacted under this watch")
                batch = [self._ring[i % self._capacity] for i in range(position, self._next)]
                position = self._next
            yield from batch              # sent outside the lock: writers never wait for a slow client
            if not batch:
                yield None
# [END watch-events-after]

    @property
    def horizon(self) -> int:
        return self._horizon_rv

    def expire(self) -> None:
        """End every watch on this history with Expired (etcd_store: etcd
        compacted events this history never got)."""
        with self._changed:
            self._expired = True
            for changed in (self._changed, *self._changed_for.values()):
                changed.notify_all()
