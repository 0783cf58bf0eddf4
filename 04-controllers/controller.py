"""The shape every controller has: informers -> work queue -> reconcile(key).

A controller watches some kinds through informers (a cache the API server
keeps fresh). Whatever changes, its handlers only turn the change into a
key, "namespace/name" of the object to look at again, and put it on a work
queue. Worker threads take keys off the queue and call reconcile(key),
which reads the *current* state from the caches, compares what is wanted
with what is there, and makes one step towards closing the gap.

         watch events                 keys                 API writes
    API ─────────────▶ informers ───────────▶ work queue ─────▶ reconcile(key) ─▶ API
    server              (caches)   handlers    (dedup,           (level-triggered:
                                                back-off)         reads the caches)

Why this shape, and not "on event X do Y":

- **Level-triggered.** reconcile never asks what happened, only what is.
  An event lost, a restart, two events at once: the next reconcile of the
  key sees the same world and does the right thing.
- **Idempotent.** Running reconcile twice in a row does nothing the second
  time. So it is safe to run it again whenever in doubt (every resync).
- **Restart-safe.** Everything it needs lives in the API server (owner
  references, labels, status); killed at any moment, a new process lists,
  rebuilds its caches and carries on.

A subclass names itself (Kubernetes' controller name), says which informers
it needs and how an object maps to keys, and writes reconcile.
"""
from __future__ import annotations

import threading
import traceback

from common.client.client import APIClient, APIConnectionError, APIStatusError, Conflict
from common.client.events import EventRecorder
from common.client.informer import Informer
from common.client.workqueue import RateLimitingQueue
from common.model.keys import object_key as key_for, split_key  # noqa: F401 (the controllers' names for them)


class Informers:
    """One informer per kind for the whole controller manager (client-go's
    SharedInformerFactory): five controllers that watch pods share one watch
    and one cache, so the API server serves one stream, not five."""

    def __init__(self, client: APIClient, resync_seconds: float = 300):
        self.client = client
        self.resync_seconds = resync_seconds
        self._informers: dict[tuple[str, str], Informer] = {}

    def get(self, group_version: str, plural: str) -> Informer:
        key = (group_version, plural)
        if key not in self._informers:
            self._informers[key] = Informer(self.client, group_version, plural,
                                            resync_seconds=self.resync_seconds)
        return self._informers[key]

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return all(informer.wait_for_sync(timeout) for informer in self._informers.values())

    def stop(self) -> None:
        for informer in self._informers.values():
            informer.stop()


class Controller:
    """Workers that take keys off a rate-limited queue and reconcile them."""

    name = "controller"            # Kubernetes' name: "replicaset", "deployment", ...

    def __init__(self, client: APIClient, informers: Informers, events: EventRecorder, log, workers: int = 2):
        self.client, self.informers, self.events, self.log = client, informers, events, log
        self.workers = workers
        self.queue = RateLimitingQueue(base_delay=0.005, max_delay=300)
        self._threads: list[threading.Thread] = []

    def enqueue(self, obj: dict) -> None:
        self.queue.add(key_for(obj))

    def reconcile(self, key: str) -> None:
        raise NotImplementedError

    # [START worker-loop]
    def run_worker(self) -> None:
        while (key := self.queue.get()) is not None:     # None: shutting down
            try:
                self.reconcile(key)
            except Conflict:
                # Someone wrote the object between our read and our write:
                # normal under concurrency. Our cache will catch up; retry soon.
                self.queue.add_rate_limited(key)
            except (APIConnectionError, APIStatusError) as error:
                self.log.info("will retry", controller=self.name, key=key, error=str(error),
                              retries=self.queue.num_requeues(key))
                self.queue.add_rate_limited(key)
            except Exception:
                self.log.error("reconcile failed", controller=self.name, key=key, trace=traceback.format_exc())
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)                    # success resets the back-off
            finally:
                self.queue.done(key)
    # [END worker-loop]

    def start(self) -> None:
        for i in range(self.workers):
            thread = threading.Thread(target=self.run_worker, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self.queue.shutdown()
        for thread in self._threads:
            thread.join(timeout=5)
