"""Events: the short notes components leave on objects for people to read.

`kubectl describe pod web` ends with a table of them:

    Type     Reason   Age               From     Message
    Normal   Pulled   2m                kubelet  Container image "busybox:1.35" already present on machine
    Warning  BackOff  30s (x4 over 2m)  kubelet  Back-off restarting failed container app in pod web_default(…)

Each is a core/v1 Event in the object's namespace, pointing at the object
(involvedObject). A component records them through an EventRecorder:

    events = EventRecorder(client, "kubelet", host="node1")
    events.event(pod, "Normal", "Started", "Started container app", field_path="spec.containers{app}")

Two things make this cheap enough to call from anywhere:

- recording never blocks and never fails: events go onto a queue that one
  background thread writes; if the API server is away, or the queue is
  full, they are dropped (as in Kubernetes, events are best effort: they
  are for people, no component may depend on them);
- repeats are merged: the same reason and message about the same object
  bumps the existing Event's `count` and `lastTimestamp` (one PATCH)
  instead of creating another object. That is the "(x4 over 2m)".

Kubernetes' recorder also folds *similar* events (same reason, different
messages, more than ten in ten minutes) into one "combined" event and rate
limits each object's events; we keep only the merging of exact repeats.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from common.client import APIClient, APIConnectionError, APIStatusError, NotFound


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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


@dataclass(frozen=True)
class _Record:
    involved: dict
    type: str
    reason: str
    message: str
    at: str

    def key(self) -> tuple:
        """What makes two events "the same": object, type, reason, message.
        (resourceVersion is left out: a pod's status changes between repeats.)"""
        involved = tuple(sorted((k, v) for k, v in self.involved.items() if k != "resourceVersion"))
        return involved, self.type, self.reason, self.message


class EventRecorder:
    """Records Events for one component (source.component) on one host."""

    def __init__(self, client: APIClient | None, component: str, host: str | None = None, *,
                 log=None, queue_size: int = 1000, remembered: int = 4096):
        self.client = client
        self.component = component
        self.host = host
        self.log = log
        self.written = 0          # creates + patches, for tests and benchmarks
        self.dropped = 0
        self._queue: queue.Queue[_Record | None] = queue.Queue(maxsize=queue_size)
        # key -> (event namespace, event name, count), newest last, bounded.
        self._seen: OrderedDict[tuple, tuple[str, str, int]] = OrderedDict()
        self._remembered = remembered
        self._thread: threading.Thread | None = None

    def start(self) -> "EventRecorder":
        if self.client is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"{self.component}-events", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued, for up to timeout seconds; the rest is dropped (and counted)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=timeout)
            self._thread = None
            self.dropped += max(self._queue.qsize() - 1, 0)   # the None is not an event

    def event(self, obj: dict, type: str, reason: str, message: str, field_path: str | None = None) -> None:
        """Record one event about obj; returns at once."""
        if self._thread is None:      # no API server (chapter 01 on its own): nothing to record to
            return
        try:
            self._queue.put_nowait(_Record(reference(obj, field_path), type, reason, message, now()))
        except queue.Full:
            self.dropped += 1

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event recorded so far is written (or dropped)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    # --- the writer thread ----------------------------------------------------

    def _run(self) -> None:
        while True:
            record = self._queue.get()
            try:
                if record is None:
                    return
                self._write(record)
            except (APIConnectionError, APIStatusError) as error:
                self.dropped += 1
                if self.log:
                    self.log.debug("event dropped", obj=record.involved.get("name"), reason=record.reason,
                                   error=str(error))
            except Exception as error:   # never let the writer die: events must not stop a component
                self.dropped += 1
                if self.log:
                    self.log.error("event writer failed", error=f"{type(error).__name__}: {error}")
            finally:
                self._queue.task_done()

    # [START event-merge]
    def _write(self, record: _Record) -> None:
        """A repeat bumps the existing Event's count; anything else creates one."""
        key = record.key()
        seen = self._seen.get(key)
        if seen:
            namespace, name, count = seen
            try:
                self.client.patch("v1", "events", namespace, name,
                                  {"count": count + 1, "lastTimestamp": record.at}, strategy="merge")
                self._remember(key, (namespace, name, count + 1))
                return
            except NotFound:          # deleted (events expire): start a new one
                pass
        namespace = record.involved.get("namespace") or "default"
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{record.involved.get('name', 'unknown')}.{time.time_ns():x}",
                         "namespace": namespace},
            "involvedObject": record.involved,
            "type": record.type, "reason": record.reason, "message": record.message,
            "source": {k: v for k, v in (("component", self.component), ("host", self.host)) if v},
            "reportingComponent": self.component, "reportingInstance": self.host or "",
            "firstTimestamp": record.at, "lastTimestamp": record.at, "count": 1,
        }
        created = self.client.create("v1", "events", event, namespace=namespace)
        self._remember(key, (namespace, created["metadata"]["name"], 1))
    # [END event-merge]

    def _remember(self, key: tuple, value: tuple[str, str, int]) -> None:
        self.written += 1
        self._seen[key] = value
        self._seen.move_to_end(key)
        while len(self._seen) > self._remembered:
            self._seen.popitem(last=False)
