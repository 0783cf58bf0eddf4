"""An informer: a local, always-fresh copy of one kind of object, with callbacks.

Every component after the API server needs the same thing: "tell me about
every pod bound to my node, and every change to one, without asking over
and over". Polling would cost the server a full list per client per second;
instead each component keeps a cache that the server keeps up to date.

How it stays up to date (the same contract client-go's reflector relies on):

1. **List.** GET the collection once. Besides the items, the reply carries
   `metadata.resourceVersion`: the version of the whole store this list is a
   snapshot of. Every write to the server gets the next, higher number.
2. **Watch from there.** GET the collection again with `watch=true&
   resourceVersion=N`: the server streams every change *after* N, one JSON
   line each (ADDED, MODIFIED, DELETED), so list + watch together miss
   nothing and repeat nothing. We remember the resourceVersion of every
   event we see. When the stream is quiet the server sends BOOKMARK events,
   which carry no object, only "you are up to date as of version M", so the
   number we remember stays recent.
3. **Reconnect from the last version.** A watch ends (the server closes it
   at timeoutSeconds so that clients spread out) or breaks (the network, a
   server restart). We open a new one from the last version we saw, and
   again miss nothing.
4. **410 Gone means list again.** The server keeps only a bounded history
   (its watch window; etcd compacts too). After a long outage the version
   we remember may be older than anything it still has (our API server
   keeps its last 10,000 events on disk, across restarts), and it answers
   with an ERROR event, code 410. Then we list again and
   compare the new list with our cache: new objects become on_add, changed
   ones on_update, and objects in our cache that the list no longer has
   become on_delete, because they were deleted while we could not see.
5. **Resync.** Every resync_seconds we call on_update(obj, obj) for every
   cached object. Nothing changed on the server; this is a chance for a
   controller to retry work that failed, or notice drift in the world
   outside the API server (a container that died). It costs no requests.

Handlers run one at a time on the informer's thread, see each change
exactly once, and never see an object older than one they already saw
(we compare resourceVersions as numbers, which is what this server, like
etcd, hands out). That is a liberty a client of our server may take, but
not a client written for Kubernetes 1.32: its API contract calls
resourceVersions opaque strings, to compare only for equality, until 1.35
made ordering between versions of one resource part of it (KEP-5504;
kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions).

Handlers must not modify the objects they are given: the cache holds the
same dicts. Copy first (copy.deepcopy) to change one.

    informer = Informer(client, "v1", "pods", field_selector="spec.nodeName=node1")
    informer.add_handler(on_add=start_pod, on_update=sync_pod, on_delete=stop_pod)
    informer.start()
    informer.wait_for_sync(timeout=30)
"""
from __future__ import annotations

import random
import sys
import threading
from typing import Callable

from common.client.backoff import Backoff
from common.client.client import APIClient, APIConnectionError, APIStatusError, Gone, Watch, describe
from common.log import get_logger

log = get_logger("informer")

Key = tuple[str, str]            # (namespace or "", name)


def key_of(obj: dict) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


def _version(obj: dict) -> int:
    rv = (obj.get("metadata") or {}).get("resourceVersion") or "0"
    return int(rv) if rv.isdigit() else 0


class Informer:
    def __init__(self, client: APIClient, group_version: str, plural: str, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_seconds: float = 0, watch_timeout_seconds: int | None = None,
                 backoff: Backoff | None = None):
        self.client = client
        self.group_version, self.plural, self.namespace = group_version, plural, namespace
        self.label_selector, self.field_selector = label_selector, field_selector
        self.resync_seconds = resync_seconds          # 0: never
        self.watch_timeout_seconds = watch_timeout_seconds
        self.backoff = backoff or Backoff(initial=0.2, maximum=10.0)
        self.what = describe(plural, group_version, namespace) + \
            "".join(f" {s}" for s in (label_selector, field_selector) if s)

        self._cache: dict[Key, dict] = {}
        self._cache_lock = threading.Lock()           # guards _cache: readers from any thread
        self._dispatch = threading.RLock()            # one change (cache + handlers) at a time
        self._handlers: list[tuple[Callable | None, Callable | None, Callable | None]] = []
        self._synced = threading.Event()
        self._resource_version: str | None = None     # where the next watch starts; None: list first
        self._watch: Watch | None = None
        self._watch_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lists = 0                                # how many times we listed (1 + one per 410)
        self._trouble: Exception | None = None        # why the last attempt failed; None: it works
        self._trouble_handlers: list[Callable[["Informer"], None]] = []

    # ------------------------------------------------ what callers use

    def add_handler(self, on_add: Callable[[dict], None] | None = None,
                    on_update: Callable[[dict, dict], None] | None = None,
                    on_delete: Callable[[dict], None] | None = None) -> None:
        """Register callbacks. A handler added after the first list is told
        about every cached object as on_add first, so it starts complete."""
        with self._dispatch:
            self._handlers.append((on_add, on_update, on_delete))
            if on_add and self._synced.is_set():
                for obj in self.list():
                    self._call(on_add, obj)

    def get(self, namespace: str | None, name: str) -> dict | None:
        with self._cache_lock:
            return self._cache.get((namespace or "", name))

    def list(self) -> list[dict]:
        with self._cache_lock:
            return list(self._cache.values())

    def has_synced(self) -> bool:
        """True once the first list is in the cache (and the handlers told)."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def trouble(self) -> Exception | None:
        """Why the last list or watch failed (APIConnectionError: cannot reach
        the server; APIStatusError: it refused, e.g. 403), or None once one
        works again. Retrying goes on regardless: this only says so."""
        return self._trouble

    def add_trouble_handler(self, handler: Callable[["Informer"], None]) -> None:
        """handler(informer) runs when trouble changes: a page or a health
        check can say "cannot reach the server" without parsing the log."""
        self._trouble_handlers.append(handler)

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen (list, event or bookmark)."""
        return self._resource_version

    def start(self) -> "Informer":
        """Run in a daemon thread until stop()."""
        self._thread = threading.Thread(target=self.run, args=(self._stop,), daemon=True,
                                        name=f"informer {self.what}")
        self._thread.start()
        return self

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        self._hang_up()
        if self._thread:
            self._thread.join(timeout)

    # ------------------------------------------------ the loop

    # [START informer-loop]
    def run(self, stop: threading.Event) -> None:
        """List, then watch from the list's version, forever; until stop is set."""
        threading.Thread(target=self._hang_up_on, args=(stop,), daemon=True).start()
        if self.resync_seconds:
            threading.Thread(target=self._resync_every, args=(stop,), daemon=True).start()
        while not stop.is_set():
            try:
                if self._resource_version is None:
                    self._relist()                     # the whole state, and its version
                self._watch_from_last_version(stop)    # then every change after it
            except Gone as error:                      # the server's history no longer reaches back
                log.info("watch expired, listing again", obj=self.what, error=error.message)
                self._resource_version = None
                self._pause(stop, "relist")
            except APIStatusError as error:            # e.g. 504 "too large resource version"
                log.warning("watch refused, listing again", obj=self.what, error=str(error))
                self._resource_version = None
                self._pause(stop, "relist")
            except APIConnectionError as error:        # dropped or unreachable: resume from the version
                log.warning("cannot watch, will reconnect", obj=self.what, error=str(error),
                            resource_version=self._resource_version)
                self._pause(stop, "connect")
    # [END informer-loop]

    def _watch_from_last_version(self, stop: threading.Event) -> None:
        timeout = self.watch_timeout_seconds or random.randint(300, 600)   # spread reconnects, as client-go
        watch = self.client.watch(self.group_version, self.plural, self.namespace,
                                  resource_version=self._resource_version, timeout_seconds=timeout,
                                  label_selector=self.label_selector, field_selector=self.field_selector)
        with self._watch_lock:
            self._watch = watch
        self.backoff.forget((self, "connect"))         # the server answers again
        self._set_trouble(None)
        try:
            if stop.is_set():
                return
            for kind, obj in watch:
                if stop.is_set():
                    return
                if kind != "BOOKMARK":
                    with self._dispatch:
                        self._apply(kind, obj)
                self._resource_version = obj["metadata"]["resourceVersion"]
                self.backoff.forget((self, "relist"))  # the watch works: the next failure starts small
        finally:
            with self._watch_lock:
                self._watch = None
            watch.close()
        self.backoff.forget((self, "relist"))          # ended at timeoutSeconds, as it should

    def _relist(self) -> None:
        listing = self.client.list(self.group_version, self.plural, self.namespace,
                                   label_selector=self.label_selector, field_selector=self.field_selector)
        self.lists += 1
        kind = (listing.get("kind") or "").removesuffix("List")
        with self._dispatch:
            listed = set()
            for obj in listing.get("items") or []:
                obj.setdefault("kind", kind)           # Kubernetes leaves these out of list items
                obj.setdefault("apiVersion", self.group_version)
                listed.add(key_of(obj))
                self._apply("ADDED", obj)
            with self._cache_lock:
                vanished = [obj for key, obj in self._cache.items() if key not in listed]
            for obj in vanished:                       # deleted while we were not watching
                self._apply("DELETED", obj)
            self._resource_version = listing["metadata"]["resourceVersion"]
        # Said before synced is set: whoever waits for the sync and then logs
        # ("controllers running") logs after this line, never before it.
        log.info("listed", obj=self.what, items=len(listed), resource_version=self._resource_version)
        self._synced.set()
        self.backoff.forget((self, "connect"))
        self._set_trouble(None)

    # ------------------------------------------------ one change: cache, then handlers

    def _apply(self, kind: str, obj: dict) -> None:
        """Bring the cache up to obj and tell the handlers, unless we know it already."""
        key = key_of(obj)
        with self._cache_lock:
            old = self._cache.get(key)
            if kind == "DELETED":
                if old is None:
                    return                             # never saw it: nothing to take back
                del self._cache[key]
            else:
                if old is not None and _version(obj) <= _version(old):
                    return                             # a repeat, or older than what handlers saw
                self._cache[key] = obj
        if kind == "DELETED":
            self._notify(2, obj)
        elif old is None:
            self._notify(0, obj)
        elif old["metadata"].get("uid") != obj["metadata"].get("uid"):
            self._notify(2, old)                       # deleted and re-created under the same name
            self._notify(0, obj)
        else:
            self._notify(1, old, obj)

    def _notify(self, which: int, *args) -> None:
        for handler in self._handlers:
            if handler[which]:
                self._call(handler[which], *args)

    def _call(self, handler: Callable, *args) -> None:
        try:
            handler(*args)
        except Exception as error:                    # one bad handler must not stop the informer
            log.error("handler failed", obj="/".join(filter(None, key_of(args[-1]))),
                      handler=getattr(handler, "__name__", repr(handler)), error=repr(error))

    def _set_trouble(self, error: Exception | None) -> None:
        before = self._trouble
        self._trouble = error
        if (before is None) != (error is None) or str(before) != str(error):
            for handler in self._trouble_handlers:
                try:
                    handler(self)
                except Exception as failure:          # a broken watcher of our health must not stop us
                    log.error("trouble handler failed", obj=self.what, error=repr(failure))

    # ------------------------------------------------ resync and stopping

    def _resync_every(self, stop: threading.Event) -> None:
        while not stop.wait(self.resync_seconds):
            if not self._synced.is_set():
                continue
            with self._dispatch:
                for obj in self.list():
                    self._notify(1, obj, obj)

    def _pause(self, stop: threading.Event, trouble: str) -> None:
        """Wait before the next attempt. Two sequences: failing to reach the
        server, and lists that keep being outrun (410 right after a list).
        Either grows while it repeats and starts small again once things work.
        Called from run()'s except clauses: the error being handled is the
        trouble to report (a 410 is routine, the server answered)."""
        error = sys.exception()
        self._set_trouble(None if isinstance(error, Gone) else error)
        stop.wait(self.backoff.next((self, trouble)))

    @property
    def retry_delay(self) -> float:
        """The current wait between attempts to reach the server (0: none)."""
        return self.backoff.delay((self, "connect"))

    def _hang_up_on(self, stop: threading.Event) -> None:
        stop.wait()
        self._hang_up()

    def _hang_up(self) -> None:
        with self._watch_lock:
            watch = self._watch
        if watch is not None:
            watch.close()
