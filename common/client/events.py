"""Events: the short notes components leave on objects for people to read.

`kubectl describe pod web` ends with a table of them:

    Type     Reason   Age               From     Message
    Normal   Pulled   2m                kubelet  Container image "busybox:1.35" already present on machine
    Warning  BackOff  30s (x4 over 2m)  kubelet  Back-off restarting failed container app in pod web_default(…)

Each is a core/v1 Event in the object's namespace, pointing at the object
(involvedObject). A component records them through an EventRecorder:

    events = EventRecorder(client, "kubelet", host="node1")
    events.event(pod, "Normal", "Started", "Started container app", field_path="spec.containers{app}")

Recording never blocks and never fails: what to write goes onto a bounded
queue that background writer threads empty (one by default; `writers=4`
for a component that records an event per pod in a burst, the scheduler:
each Event always goes to the same writer, so its create comes before its
count's PATCHes). If the API server is away, or the queue is full, the
write is dropped: counted in `dropped` (a component's /metrics shows it)
and logged as a warning, the first time and every hundredth time after.
As in Kubernetes, events are best effort: they are for people, and no
component may depend on them; but no event is lost without a count.

A component in trouble can say the same thing forever (a crash loop, a pod
that never fits), so before anything is queued the EventCorrelator, after
client-go's, decides what reaches the API server at all:

1. EventAggregator: similar events (same object, type and reason, only the
   message differs) are combined once ten different messages came within
   ten minutes: from the tenth on, one Event "(combined from similar
   events): <the latest message>" counts them all.
2. EventLog (client-go's eventLogger): an exact repeat bumps the existing
   Event's count and lastTimestamp (one PATCH) instead of creating another
   object. That is the "(x4 over 2m)".
3. SpamFilter: a token bucket per object: 25 events at once, then one
   every five minutes. The rest are dropped, counted in `filtered` and
   logged. A dropped repeat is still counted, so the next one written
   carries the true count.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from common.client.client import APIClient, APIConnectionError, APIStatusError, NotFound
from common.times import rfc3339 as now  # noqa: F401 (events.now() for the controllers)

# Kubernetes' defaults (client-go tools/record/events_cache.go).
MAX_SIMILAR = 10                 # different messages about one thing before they are combined
SIMILAR_WINDOW = 600.0           # seconds of quiet after which similar events count from zero again
SPAM_BURST = 25                  # events about one object that may come at once ...
SPAM_REFILL = 300.0              # ... then one more every this many seconds
REMEMBERED = 4096                # entries in each of the three caches, least recently used forgotten
COMBINED = "(combined from similar events): "


def reference(obj: dict, field_path: str | None = None) -> dict:
    """An ObjectReference to obj (a full object, or already a reference)."""
    if "metadata" not in obj:
        ref = {k: v for k, v in obj.items() if v}
    else:
        meta = obj["metadata"]
        ref = {"kind": obj.get("kind", ""), "apiVersion": obj.get("apiVersion", ""),
               "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
               "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}
        ref = {k: v for k, v in ref.items() if v}
    if field_path:
        ref["fieldPath"] = field_path
    return ref


class LRU:
    """A dict that keeps only its `size` most recently used keys, so that a
    long-running component's memory of past events stays bounded."""

    def __init__(self, size: int):
        self._items: OrderedDict = OrderedDict()
        self._size = size

    def get(self, key):
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key, value) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


@dataclass(frozen=True)
class Record:
    """One call to EventRecorder.event, before correlation."""
    involved: dict
    type: str
    reason: str
    message: str
    at: str                      # wall clock, for the Event's timestamps

    def object_key(self) -> tuple:
        """The object itself: not which container (fieldPath), not which
        version of it (a pod's resourceVersion changes between repeats)."""
        return tuple(self.involved.get(k, "") for k in ("kind", "apiVersion", "namespace", "name", "uid"))

    def similar_key(self) -> tuple:
        return "similar", self.object_key(), self.type, self.reason

    def exact_key(self) -> tuple:
        return "exact", self.object_key(), self.involved.get("fieldPath", ""), self.type, self.reason, self.message


@dataclass(frozen=True)
class EventWrite:
    """What the writer thread sends: the Event as it should now read, new
    (POST it) or a repeat (PATCH its count, lastTimestamp and message)."""
    event: dict
    new: bool


@dataclass
class _SimilarEvents:
    messages: set[str]
    last_seen: float


class EventAggregator:
    """Folds similar events (only the message differs) into one combined Event."""

    def __init__(self, clock: Callable[[], float], max_similar: int = MAX_SIMILAR,
                 window: float = SIMILAR_WINDOW, remembered: int = REMEMBERED):
        self.clock, self.max_similar, self.window = clock, max_similar, window
        self._groups = LRU(remembered)

    def aggregate(self, record: Record) -> tuple[Record, tuple]:
        """The record to log, and the key that says which Event it counts on."""
        at = self.clock()
        group = self._groups.get(record.similar_key())
        if group is None or at - group.last_seen > self.window:
            group = _SimilarEvents(set(), at)
            self._groups.put(record.similar_key(), group)
        group.last_seen = at
        if len(group.messages) < self.max_similar:      # never keep more than it takes to decide
            group.messages.add(record.message)
        if len(group.messages) < self.max_similar:
            return record, record.exact_key()
        # Too many different messages to be useful one by one: all of them,
        # from now until the group goes quiet, count on one Event.
        return replace(record, message=COMBINED + record.message), record.similar_key()


class EventLog:
    """Remembers the Events already recorded, so a repeat becomes a count."""

    def __init__(self, component: str, host: str | None, remembered: int = REMEMBERED):
        self.source = {k: v for k, v in (("component", component), ("host", host)) if v}
        self._events = LRU(remembered)

    def observe(self, record: Record, key: tuple) -> EventWrite:
        seen = self._events.get(key)
        if seen is None:
            write = EventWrite(self._new_event(record), new=True)
        else:
            write = EventWrite({**seen, "count": seen["count"] + 1, "lastTimestamp": record.at,
                                "message": record.message}, new=False)
        self._events.put(key, write.event)
        return write

    def _new_event(self, record: Record) -> dict:
        namespace = record.involved.get("namespace") or "default"
        # The name is ours to choose (as client-go does: object name, then
        # the time in hex), so a repeat knows what to PATCH before the
        # create has even been sent.
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{record.involved.get('name', 'unknown')}.{time.time_ns():x}",
                         "namespace": namespace},
            "involvedObject": record.involved,
            "type": record.type, "reason": record.reason, "message": record.message,
            "source": self.source,
            "reportingComponent": self.source["component"], "reportingInstance": self.source.get("host", ""),
            "firstTimestamp": record.at, "lastTimestamp": record.at, "count": 1,
        }


# [START token-bucket]
class TokenBucket:
    """Starts full with `burst` tokens and gains one every `refill` seconds,
    never holding more than `burst`. Each event spends one; none left, no event."""

    def __init__(self, burst: int, refill: float, at: float):
        self.burst, self.refill = burst, refill
        self.tokens = float(burst)
        self.updated = at

    def take(self, at: float) -> bool:
        # Tokens earned since last time, computed now rather than by a timer:
        # a bucket for an object nobody mentions again costs nothing.
        self.tokens = min(self.burst, self.tokens + (at - self.updated) / self.refill)
        self.updated = at
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
# [END token-bucket]


class SpamFilter:
    """One token bucket per object (client-go's EventSourceObjectSpamFilter;
    the source is this recorder's own)."""

    def __init__(self, clock: Callable[[], float], burst: int = SPAM_BURST, refill: float = SPAM_REFILL,
                 remembered: int = REMEMBERED):
        self.clock, self.burst, self.refill = clock, burst, refill
        self._buckets = LRU(remembered)

    def allow(self, record: Record) -> bool:
        at = self.clock()
        bucket = self._buckets.get(record.object_key())
        if bucket is None:
            bucket = TokenBucket(self.burst, self.refill, at)
            self._buckets.put(record.object_key(), bucket)
        return bucket.take(at)


class EventCorrelator:
    """Decides, event by event, what to write: a new Event, a count on an
    existing one, or nothing. Not thread-safe: the recorder holds a lock."""

    def __init__(self, component: str, host: str | None = None, *, clock: Callable[[], float] = time.monotonic,
                 remembered: int = REMEMBERED):
        self.aggregator = EventAggregator(clock, remembered=remembered)
        self.log = EventLog(component, host, remembered=remembered)
        self.spam_filter = SpamFilter(clock, remembered=remembered)

    # [START event-correlate]
    def correlate(self, record: Record) -> EventWrite | None:
        """What to write for this event; None if the spam filter drops it."""
        # 1. Ten different messages of one kind about one object are noise
        #    one by one: from the tenth on they count on one combined Event.
        record, key = self.aggregator.aggregate(record)
        # 2. A repeat of an Event already written bumps its count instead of
        #    creating another (a create, then PATCHes).
        write = self.log.observe(record, key)
        # 3. Last, the rate per object. Filtering after counting means a
        #    dropped repeat still counts: the next write carries the total.
        if not self.spam_filter.allow(record):
            return None
        return write
    # [END event-correlate]


class EventRecorder:
    """Records Events for one component (source.component) on one host."""

    def __init__(self, client: APIClient | None, component: str, host: str | None = None, *,
                 log=None, queue_size: int = 1000, remembered: int = REMEMBERED,
                 clock: Callable[[], float] = time.monotonic, writers: int = 1):
        self.client = client
        self.component = component
        self.host = host
        self.log = log
        self.written = 0          # creates + patches, for tests and benchmarks
        self.dropped = 0          # lost: the queue was full or the API server failed
        self.filtered = 0         # not sent, on purpose: over the spam filter's rate
        self.correlator = EventCorrelator(component, host, clock=clock, remembered=remembered)
        self._lock = threading.Lock()      # event() is called from many threads
        # One queue per writer thread, the bound shared out among them.
        self._queues: list[queue.Queue[EventWrite | None]] = [
            queue.Queue(maxsize=max(1, queue_size // max(1, writers))) for _ in range(max(1, writers))]
        self._threads: list[threading.Thread] = []

    @property
    def _thread(self) -> threading.Thread | None:
        return self._threads[0] if self._threads else None

    def start(self) -> "EventRecorder":
        if self.client is not None and not self._threads:
            self._threads = [threading.Thread(target=self._run, args=(q,), name=f"{self.component}-events-{i}",
                                              daemon=True) for i, q in enumerate(self._queues)]
            for thread in self._threads:
                thread.start()
        return self

    def queued(self) -> int:
        """Events waiting for a writer."""
        return sum(q.qsize() for q in self._queues)

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued, for up to timeout seconds; the rest is dropped (and counted)."""
        if self._threads:
            deadline = time.monotonic() + timeout
            for q in self._queues:
                q.put(None)
            for thread in self._threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
            self._threads = []
            left = sum(max(q.qsize() - 1, 0) for q in self._queues)   # the None is not an event
            if left:
                self._count_dropped(left, "the recorder stopped before writing them")

    def event(self, obj: dict, type: str, reason: str, message: str, field_path: str | None = None) -> None:
        """Record one event about obj; returns at once."""
        if self._thread is None:      # no API server (chapter 01 on its own): nothing to record to
            return
        record = Record(reference(obj, field_path), type, reason, message, now())
        # Correlating here, not on the writer thread, keeps what the filter
        # drops out of the queue, where it could crowd out other events.
        with self._lock:
            write = self.correlator.correlate(record)
            if write is None:
                self.filtered += 1
        if write is None:
            if self.log:
                self.log.info("event not written: over the limit of events about one object", obj=_name(record),
                              reason=reason, filtered=self.filtered)
            return
        # Always the same writer for one Event: its create before its PATCHes.
        try:
            self._queues[hash(write.event["metadata"]["name"]) % len(self._queues)].put_nowait(write)
        except queue.Full:
            self._count_dropped(1, "the queue is full")

    def _count_dropped(self, count: int, why: str) -> None:
        """Count what is lost, and say so in the log: the first time, then every hundredth."""
        with self._lock:
            before, self.dropped = self.dropped, self.dropped + count
        if self.log and (before == 0 or before // 100 != self.dropped // 100):
            self.log.warning("events dropped", reason=why, dropped=self.dropped)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event recorded so far is written (or dropped)."""
        deadline = time.monotonic() + timeout
        while any(q.unfinished_tasks for q in self._queues) and time.monotonic() < deadline:
            time.sleep(0.01)
        return not any(q.unfinished_tasks for q in self._queues)

    # --- the writer thread ----------------------------------------------------

    def _run(self, writes: queue.Queue) -> None:
        while True:
            write = writes.get()
            try:
                if write is None:
                    return
                self._write(write)
            except (APIConnectionError, APIStatusError) as error:
                if self.log:
                    self.log.debug("event dropped", obj=_name(write.event), reason=write.event["reason"],
                                   error=str(error))
                self._count_dropped(1, f"the API server refused or was away: {error}")
            except Exception as error:   # never let the writer die: events must not stop a component
                if self.log:
                    self.log.error("event writer failed", error=f"{type(error).__name__}: {error}")
                self._count_dropped(1, "the writer failed")
            finally:
                writes.task_done()

    # [START event-write]
    def _write(self, write: EventWrite) -> None:
        """POST a new Event; PATCH a repeat's count, lastTimestamp and message."""
        event = write.event
        namespace, name = event["metadata"]["namespace"], event["metadata"]["name"]
        if not write.new:
            try:
                self.client.patch("v1", "events", namespace, name,
                                  {"count": event["count"], "lastTimestamp": event["lastTimestamp"],
                                   "message": event["message"]}, strategy="merge")
                self._count_written()
                return
            except NotFound:
                # Events expire (an hour, in Kubernetes), and a create may
                # have been dropped while the API server was away: write it
                # whole, with its count so far.
                pass
        self.client.create("v1", "events", event, namespace=namespace)
        self._count_written()
    # [END event-write]

    def _count_written(self) -> None:
        with self._lock:          # several writer threads
            self.written += 1


def _name(about: Record | dict) -> str:
    """namespace/name of what an event is about, for log lines."""
    involved = about.involved if isinstance(about, Record) else about["involvedObject"]
    return f"{involved.get('namespace') or '-'}/{involved.get('name', '?')}"
