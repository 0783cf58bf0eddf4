"""One set of watches for the whole dashboard, fanned out to every open tab.

The page is one more client of the API server, built like the controllers:
an informer per kind (list, then watch, re-list after a 410, reconnect after
an outage: common/client/informer.py). What the informers report is turned
into small summaries (summaries.py) and kept here, and every change is
handed to each open tab as one message.

Why fan out here instead of giving each tab its own watches: twenty tabs on
a projector and on learners' laptops would be twenty sets of watches, and
the API server would do twenty times the work for the same news. Here there
is one set per dashboard process, whatever the number of tabs: a tab costs
the dashboard a queue, and the API server nothing.

Changes go out in batches: the first change after a quiet moment at once,
then at most one message every BATCH_SECONDS, holding everything that
changed meanwhile (an object changed twice is sent once, as it is now). A
rollout or a benchmark at 100 changes a second is ten messages a second
per tab, not a hundred: a tenth of the writes here, and of the messages
each browser must wake up for, parse and draw.

A tab that joins gets a snapshot first (everything known, and what is
wrong), then the changes after it. Taking the snapshot and joining the list
of subscribers happen under one lock, the same lock every change is
published under, so a tab misses nothing and sees nothing twice: the
list-then-watch promise of the informer, passed on to the browser.
"""
from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass
from typing import Callable

from common.client.client import APIClient, APIConnectionError, APIStatusError
from common.client.informer import Informer
from common.log import get_logger

from summaries import (summarize_endpoint_slice, summarize_event, summarize_namespace, summarize_node,
                       summarize_pod, summarize_service)

log = get_logger("dashboard")

EVENTS_IN_SNAPSHOT = 60        # a new tab gets the latest Events, not the whole history
QUEUE_LIMIT = 500              # messages a slow tab may fall behind (50 s of batches) before it is cut off (and re-joins)
BATCH_SECONDS = 0.1            # at most ten messages a second to each tab, however fast the cluster changes


@dataclass(frozen=True)
class Kind:
    name: str                  # what the browser calls it: "pods"
    group_version: str
    plural: str
    summarize: Callable[[dict], dict]


KINDS = (
    Kind("nodes", "v1", "nodes", summarize_node),
    Kind("pods", "v1", "pods", summarize_pod),
    Kind("services", "v1", "services", summarize_service),
    Kind("endpointslices", "discovery.k8s.io/v1", "endpointslices", summarize_endpoint_slice),
    Kind("events", "v1", "events", summarize_event),
    Kind("namespaces", "v1", "namespaces", summarize_namespace),
)


def describe_trouble(error: Exception | None) -> dict | None:
    """What the page says when an informer cannot do its work: the server
    cannot be reached (the page shows "reconnecting"), or it refuses (a
    banner naming the kind and the server's own message, e.g. 403)."""
    if error is None:
        return None
    if isinstance(error, APIStatusError):
        return {"reason": error.reason or "Failure", "code": error.code, "message": error.message}
    if isinstance(error, APIConnectionError):
        return {"reason": "Unreachable", "code": 0, "message": str(error)}
    return {"reason": type(error).__name__, "code": 0, "message": str(error)}


class Subscription:
    """One tab's queue of messages (already encoded: encoded once, sent to all)."""

    def __init__(self):
        self.messages: queue.Queue[str | None] = queue.Queue(QUEUE_LIMIT)
        self.cut_off = False       # fell too far behind: its stream ends, the browser re-joins

    def offer(self, message: str | None) -> None:
        try:
            self.messages.put_nowait(message)
        except queue.Full:
            self.cut_off = True


class ClusterView:
    """The cluster as the page shows it, and the tabs that watch it."""

    # [START one-set-of-watches]
    def __init__(self, client: APIClient, kinds=KINDS):
        self.kinds = {kind.name: kind for kind in kinds}
        self._lock = threading.Lock()                 # state and subscribers change together
        self._objects: dict[str, dict[str, dict]] = {name: {} for name in self.kinds}
        self._troubles: dict[str, dict | None] = {name: None for name in self.kinds}
        self._subscribers: set[Subscription] = set()
        self._pending: dict[tuple[str, str], dict] = {}   # changes not yet sent, by (kind, key)
        self._news = threading.Event()                # set when _pending gains a change
        self._stopped = threading.Event()
        self.informers = {name: Informer(client, kind.group_version, kind.plural)
                          for name, kind in self.kinds.items()}
        for name, informer in self.informers.items():
            informer.add_handler(on_add=lambda obj, name=name: self._upsert(name, obj),
                                 on_update=lambda old, new, name=name: self._upsert(name, new),
                                 on_delete=lambda obj, name=name: self._delete(name, obj))
            informer.add_trouble_handler(lambda informer, name=name: self._trouble(name, informer.trouble))
    # [END one-set-of-watches]

    def _upsert(self, kind: str, obj: dict) -> None:
        summary = self.kinds[kind].summarize(obj)
        with self._lock:
            self._objects[kind][summary["key"]] = summary
            self._note(kind, summary["key"], {"kind": kind, "op": "upsert", "object": summary})

    def _delete(self, kind: str, obj: dict) -> None:
        key = self.kinds[kind].summarize(obj)["key"]
        with self._lock:
            self._objects[kind].pop(key, None)
            self._note(kind, key, {"kind": kind, "op": "delete", "key": key})

    # [START batches]
    def _note(self, kind: str, key: str, change: dict) -> None:
        """Keep a change for the next batch; a later change of the same
        object replaces it (the caller holds the lock)."""
        self._pending.pop((kind, key), None)          # re-inserted: the batch keeps the order of last changes
        self._pending[(kind, key)] = change
        self._news.set()

    def _flush(self) -> None:
        """Send what is pending as one message to every tab (the caller holds the lock)."""
        if self._pending:
            self._publish("changes", list(self._pending.values()))
            self._pending.clear()

    def _send_batches(self) -> None:
        """The first change after a quiet spell goes out at once; then at
        most one batch every BATCH_SECONDS."""
        while True:
            self._news.wait()
            if self._stopped.is_set():
                return
            with self._lock:
                self._news.clear()
                self._flush()
            if self._stopped.wait(BATCH_SECONDS):
                return
    # [END batches]

    def _trouble(self, kind: str, error: Exception | None) -> None:
        trouble = describe_trouble(error)
        with self._lock:
            self._flush()                             # the changes before the trouble, first
            self._troubles[kind] = trouble
            self._publish("trouble", {"kind": kind, "trouble": trouble})

    # [START fan-out]
    def _publish(self, event: str, data: dict) -> None:
        """Encode once, hand to every tab (the caller holds the lock)."""
        message = encode(event, data)
        for subscription in self._subscribers:
            subscription.offer(message)

    def subscribe(self) -> Subscription:
        """A new tab: a snapshot of everything, then every change after it."""
        subscription = Subscription()
        with self._lock:
            self._flush()                             # the others get what the snapshot will hold
            subscription.offer(encode("snapshot", self._snapshot()))
            self._subscribers.add(subscription)
        return subscription
# [END fan-out]

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    @property
    def tabs(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def snapshot(self) -> dict:
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> dict:
        objects = {kind: list(found.values()) for kind, found in self._objects.items()}
        objects["events"] = sorted(objects["events"], key=lambda e: e["time"])[-EVENTS_IN_SNAPSHOT:]
        synced = {name: informer.has_synced() for name, informer in self.informers.items()}
        return {"objects": objects, "troubles": dict(self._troubles), "synced": synced}

    def start(self) -> "ClusterView":
        for informer in self.informers.values():
            informer.start()
        threading.Thread(target=self._announce_syncs, daemon=True, name="announce syncs").start()
        threading.Thread(target=self._send_batches, daemon=True, name="send batches").start()
        return self

    def _announce_syncs(self) -> None:
        """Tell the tabs when each kind's first list is in: an empty list
        (no Services yet) brings no change, and the page would say
        "loading" forever."""
        for name, informer in self.informers.items():
            while not informer.wait_for_sync(timeout=1):
                if self._stopped.is_set():
                    return
            with self._lock:
                self._flush()
                self._publish("synced", {"kind": name})

    def stop(self) -> None:
        self._stopped.set()
        self._news.set()                              # wakes the batch sender, to end
        for informer in self.informers.values():
            informer.stop(timeout=2)
        with self._lock:
            self._flush()
            for subscription in self._subscribers:
                subscription.offer(None)              # ends each tab's stream


def encode(event: str, data: dict) -> str:
    """One Server-Sent Event: a named event and its JSON on one data line
    (JSON has no raw newline in it, so one line always suffices)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
