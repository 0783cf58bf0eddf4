"""The scheduling queue: which pending pod is tried next, and when a pod that
did not fit is tried again.

Three places a pending pod can wait, as in Kubernetes:

    active         ready to be tried; highest spec.priority first, then oldest first
    backoff        failed recently; back in active once its back-off has passed
                   (1 s, doubling with every failure, at most 10 s)
    unschedulable  no node could take it. Trying again is pointless until
                   something changes, so it waits for a *cluster event*: a node
                   added or changed, or a bound pod deleted (room freed). Then
                   every unschedulable pod moves on at once: to active, or to
                   backoff if its back-off has not passed yet (so a burst of
                   events cannot make a pod spin). Without any event it still
                   comes back by itself after max_unschedulable_wait (60 s;
                   Kubernetes waits 5 minutes), in case we missed what changed.

Nothing polls. pop() sleeps on a condition variable until a pod is active
or the earliest back-off ends, whichever comes first.

A pod that fails while an event arrives could miss that event (it was
being tried, so it was in no list the event could move). So every event
bumps a counter, each pod remembers the counter when it was popped, and a
pod that comes back after an event goes to backoff, not unschedulable.

The queue holds keys and the PodInfo it was given; the scheduler looks the
pod up again when it pops it, so an entry for a pod deleted meanwhile is
harmless.

Why not the controllers' work queue (common/client/workqueue.py), which can also
add a key later? Kubernetes does not use it here either: its scheduler has
a queue of its own (PriorityQueue: an active heap ordered by priority, a
back-off heap, the unschedulable pods), because pods are tried in
priority order and parked until a cluster event, which a FIFO of keys
cannot express. And the back-off is the pod's own (1 s doubled per failed
attempt, kept with the pod), as the scheduler's calculateBackoffDuration
computes it, not common/client/backoff.py's, whose delays decay with time as
client-go's flowcontrol.Backoff does for the kubelet (kube-scheduler's
scheduling_queue.go; kubernetes/community's sig-scheduling/scheduler_queues.md).
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from dataclasses import dataclass, field


@dataclass
class QueuedPod:
    key: str
    priority: int
    arrival: float                   # when it first entered the queue: the tie-break after priority
    attempts: int = 0                # failed tries so far (sets the back-off)
    backoff_until: float = 0.0       # the end of its back-off (it will not be tried before)
    ready_at: float = 0.0            # backoff / unschedulable: when it becomes active by itself
    popped_at_event: int = 0         # the event counter when last popped
    where: str = ""                  # "active", "backoff", "unschedulable", "in flight"
    order: int = field(default=0)    # heap tie-break; bumped when re-pushed


class SchedulingQueue:
    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 max_unschedulable_wait: float = 60.0, clock=time.monotonic):
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_wait = max_unschedulable_wait
        self._clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._pods: dict[str, QueuedPod] = {}
        self._active: list = []          # heap of (-priority, arrival, order, key); stale entries skipped
        self._waiting: list = []         # heap of (ready_at, order, key) for backoff and unschedulable
        self._order = itertools.count()
        self._events = 0                 # cluster events seen so far
        self._closed = False

    # ------------------------------------------------ from the pod informer

    def add(self, key: str, priority: int = 0) -> None:
        """A new pending pod (or one seen again after a restart of the watch)."""
        with self._lock:
            if key in self._pods or self._closed:
                return
            queued = self._pods[key] = QueuedPod(key, priority, self._clock())
            self._activate(queued)

    def update(self, key: str, priority: int = 0) -> None:
        """The pod's spec or labels changed: whatever kept it out may be gone,
        so an unschedulable pod gets another try (after its back-off)."""
        with self._lock:
            queued = self._pods.get(key)
            if queued is None:
                return
            queued.priority = priority
            if queued.where == "unschedulable":
                self._move_on(queued, self._clock())
            elif queued.where == "active":
                self._activate(queued)       # re-push: the priority may have changed
            elif queued.where == "in flight":
                # Being tried on its old spec: if that fails, do not park it.
                queued.popped_at_event = -1

    def delete(self, key: str) -> None:
        """Bound or deleted: nothing more to do for it."""
        with self._lock:
            self._pods.pop(key, None)        # heap entries left behind are skipped

    # ------------------------------------------------ the scheduling loop

    def pop(self, timeout: float | None = None) -> QueuedPod | None:
        """The next pod to try; blocks. None on timeout or once closed."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._lock:
            while not self._closed:
                now = self._clock()
                self._release_due(now)
                queued = self._next_active()
                if queued is not None:
                    queued.where = "in flight"
                    queued.popped_at_event = self._events
                    return queued
                wake = self._waiting[0][0] if self._waiting else None
                if deadline is not None:
                    if now >= deadline:
                        return None
                    wake = deadline if wake is None else min(wake, deadline)
                self._changed.wait(None if wake is None else max(wake - now, 0.001))
            return None

    def unschedulable(self, queued: QueuedPod) -> None:
        """No node fits. Wait for a cluster event (or a back-off, if one came meanwhile)."""
        with self._lock:
            if self._pods.get(queued.key) is not queued:
                return                       # deleted or bound while it was being tried
            now = self._clock()
            queued.attempts += 1
            queued.backoff_until = now + self._delay(queued, self.max_backoff)
            if self._events != queued.popped_at_event:
                self._wait(queued, "backoff", queued.backoff_until)
            else:
                self._wait(queued, "unschedulable", now + self.max_unschedulable_wait)

    def backoff(self, queued: QueuedPod) -> None:
        """Something failed that is worth retrying soon (the API server was away)."""
        with self._lock:
            if self._pods.get(queued.key) is not queued:
                return
            queued.attempts += 1
            queued.backoff_until = self._clock() + self._delay(queued, self.max_backoff)
            self._wait(queued, "backoff", queued.backoff_until)

    def done(self, queued: QueuedPod) -> None:
        """Finished with this pod (bound, or gone). Only this entry: a pod
        re-created under the same name meanwhile has an entry of its own."""
        with self._lock:
            if self._pods.get(queued.key) is queued:
                del self._pods[queued.key]

    # ------------------------------------------------ cluster events

    def cluster_event(self, what: str) -> int:
        """A node added or changed, or room freed: give every unschedulable pod
        another try. Returns how many pods moved."""
        with self._lock:
            self._events += 1
            now = self._clock()
            stuck = [q for q in self._pods.values() if q.where == "unschedulable"]
            for queued in stuck:
                self._move_on(queued, now)
            return len(stuck)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._changed.notify_all()

    def counts(self) -> dict[str, int]:
        with self._lock:
            counts: dict[str, int] = {}
            for queued in self._pods.values():
                counts[queued.where] = counts.get(queued.where, 0) + 1
            return counts

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)

    # ------------------------------------------------ inside (lock held)

    def _delay(self, queued: QueuedPod, cap: float) -> float:
        """initial_backoff, doubled for every failure after the first, at most cap."""
        return min(self.initial_backoff * 2 ** min(queued.attempts - 1, 30), cap)

    def _activate(self, queued: QueuedPod) -> None:
        queued.where = "active"
        queued.order = next(self._order)
        heapq.heappush(self._active, (-queued.priority, queued.arrival, queued.order, queued.key))
        self._changed.notify()

    def _wait(self, queued: QueuedPod, where: str, ready_at: float) -> None:
        queued.where, queued.ready_at = where, ready_at
        queued.order = next(self._order)
        heapq.heappush(self._waiting, (ready_at, queued.order, queued.key))
        self._changed.notify()

    def _move_on(self, queued: QueuedPod, now: float) -> None:
        """Out of unschedulable: active if its back-off is over, else backoff until it is."""
        if queued.backoff_until <= now:
            self._activate(queued)
        else:
            self._wait(queued, "backoff", queued.backoff_until)

    def _release_due(self, now: float) -> None:
        while self._waiting and self._waiting[0][0] <= now:
            _, order, key = heapq.heappop(self._waiting)
            queued = self._pods.get(key)
            if queued is not None and queued.order == order and queued.where in ("backoff", "unschedulable"):
                self._activate(queued)

    def _next_active(self) -> QueuedPod | None:
        while self._active:
            _, _, order, key = heapq.heappop(self._active)
            queued = self._pods.get(key)
            if queued is not None and queued.order == order and queued.where == "active":
                return queued
        return None
