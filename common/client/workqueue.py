"""A work queue of keys, with the guarantees of client-go's workqueue.

Why not call reconcile straight from the informer's handlers? Because the
components after the API server are *level-triggered*: an event only says
"look at namespace/name again", and reconcile reads the current state from
the cache and closes the gap to the desired one. What matters is the key,
not the event, and a queue of keys gives us four things a handler cannot:

1. **De-duplication.** Ten updates to one pod while the workers are busy
   become one entry: reconcile runs once, on the latest state.
2. **No two workers on one key.** A key handed to a worker is "processing"
   until the worker calls done(key). Added again meanwhile, it is marked
   dirty and queued again only at done, so two workers never race to create
   the same replica or bind the same pod, while other keys run in parallel.
3. **Back-off on failure.** A key whose reconcile failed comes back after a
   delay that doubles with every failure (add_rate_limited), so a broken
   object cannot spin a worker hot; forget(key) after a success resets it.
4. **Slow work off the informer's thread.** Handlers just add a key and
   return, so the cache never falls behind a slow reconcile.

Otherwise the queue is first in, first out. Keys are any hashable value but
None, usually the string "namespace/name".

A worker loop, the same in the scheduler, every controller and the kubelet's
pod workers::

    queue = RateLimitingQueue(base_delay=0.005, max_delay=1000)

    def worker():
        while (key := queue.get()) is not None:  # None: shut down and drained
            try:
                reconcile(key)                  # read the cache, close the gap
            except Exception:
                queue.add_rate_limited(key)     # again later, later each time
            else:
                queue.forget(key)               # success resets the back-off
            finally:
                queue.done(key)                 # let a dirty key run again

What client-go does beyond this: its default controller rate limiter also
caps the overall rate (a token bucket, 10 per second, bursts of 100) and
takes the larger of the two delays; it has metrics, and a shutdown that can
wait for in-flight keys to finish. Our per-key delays come from
common.client.backoff.Backoff, which also forgets a key's failures after it has
been quiet for twice the maximum delay; client-go keeps counting until forget.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque

from common.client.backoff import Backoff


class WorkQueue:
    """Keys waiting for a worker: de-duplicated, FIFO, one worker per key.

    Two sets say where a key stands: *dirty* (it needs a reconcile) and
    *processing* (a worker has it); a key changed mid-reconcile is in both.
    The queue holds the keys that are dirty and not processing, in the
    order they became so.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # getters wait here
        self._queue: deque = deque()
        self._dirty: set = set()
        self._processing: set = set()
        self._shutting_down = False

    def add(self, key) -> None:
        """Ask for key to be processed (once, however often it is added)."""
        if key is None:
            raise ValueError("None cannot be a key: get() returns None to mean 'shut down'")
        with self._lock:
            self._add_locked(key)

    def _add_locked(self, key) -> None:
        # Dirty already: it is queued, or will be at done(); once is enough.
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        # A worker has it: done() queues it again, so it never runs twice at once.
        if key in self._processing:
            return
        self._queue.append(key)
        self._ready.notify()

    # [START workqueue-get]
    def get(self, timeout: float | None = None):
        """The next key to process, marked processing until done(key).
        Blocks; returns None on timeout, or once shut down and drained."""
        with self._lock:
            self._ready.wait_for(lambda: self._queue or self._shutting_down, timeout)
            if not self._queue:
                return None
            key = self._queue.popleft()
            self._processing.add(key)
            # Adds from now on mean "changed since this worker started":
            # they mark the key dirty again and are honoured at done().
            self._dirty.discard(key)
            return key

    def done(self, key) -> None:
        """The worker has finished with key; if it was added meanwhile, queue it again."""
        with self._lock:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._ready.notify()
    # [END workqueue-get]

    def len(self) -> int:
        """Keys waiting for a worker (not those being processed)."""
        with self._lock:
            return len(self._queue)

    __len__ = len

    def shutdown(self) -> None:
        """Refuse new keys and wake every getter; keys already queued can
        still be got, and get() returns None once they are gone."""
        with self._lock:
            self._shutting_down = True
            self._ready.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down


class RateLimitingQueue(WorkQueue):
    """A WorkQueue that can also add a key later: after a fixed delay
    (add_after) or after its own growing back-off (add_rate_limited).

    Delayed keys wait in a heap ordered by when they are due; one timer
    thread sleeps until the earliest is due (or until an earlier one
    arrives) and moves it into the queue. A key waiting twice keeps the
    earlier time, as client-go does.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0):
        super().__init__()
        self._backoff = Backoff(base_delay, max_delay)
        self._requeues: dict = {}
        self._timer = threading.Condition(self._lock)  # the timer thread waits here
        self._heap: list = []      # (due, tie-breaker, key); stale entries skipped
        self._due: dict = {}       # key -> the time it is actually due
        self._order = itertools.count()  # equal times keep insertion order; keys never compared
        self._thread = threading.Thread(target=self._move_due_keys, name="workqueue-delay", daemon=True)
        self._thread.start()

    def add_after(self, key, delay: float) -> None:
        """Add key once delay seconds have passed (at once if delay <= 0)."""
        if delay <= 0:
            self.add(key)
            return
        if key is None:
            raise ValueError("None cannot be a key: get() returns None to mean 'shut down'")
        due = time.monotonic() + delay
        with self._lock:
            if self._shutting_down:
                return
            if key in self._due and self._due[key] <= due:
                return  # already due sooner
            # The old heap entry, if any, stays behind; _due says it is stale.
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._order), key))
            self._timer.notify()

    def add_rate_limited(self, key) -> None:
        """Add key after its back-off: base_delay, doubling each call, up to max_delay."""
        delay = self._backoff.next(key)
        with self._lock:
            self._requeues[key] = self._requeues.get(key, 0) + 1
        self.add_after(key, delay)

    def forget(self, key) -> None:
        """Key succeeded: its next failure starts again at base_delay.
        (It does not remove key from the queue.)"""
        self._backoff.forget(key)
        with self._lock:
            self._requeues.pop(key, None)

    def num_requeues(self, key) -> int:
        """How many times add_rate_limited(key) was called since the last forget."""
        with self._lock:
            return self._requeues.get(key, 0)

    def shutdown(self) -> None:
        """As WorkQueue.shutdown; keys still waiting for their delay are dropped."""
        super().shutdown()
        with self._lock:
            self._timer.notify_all()
        self._thread.join()

    def _move_due_keys(self) -> None:
        with self._lock:
            while not self._shutting_down:
                if not self._heap:
                    self._timer.wait()
                    continue
                due, _, key = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    # Woken early by an add_after that may be due sooner: look again.
                    self._timer.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if self._due.get(key) == due:
                    del self._due[key]
                    self._add_locked(key)
