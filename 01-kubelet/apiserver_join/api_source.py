"""Pods from the API server: the kubelet's second pod source, beside --manifests.

The kubelet watches only the pods bound to its node (a field selector,
`spec.nodeName=<this node>`), through the shared informer (common/client/informer.py),
so the sync loop asks `pods()` exactly as it asks the manifest directory.
After each sync, `report()` works out what the API server should hear back:

- status: a pod's status, written through its /status subresource, and
  only when it changed (no status storms);
- deletion: a pod deleted in the API keeps its object, with a
  deletionTimestamp, until this kubelet has stopped its containers; then the
  kubelet deletes it for good (grace period 0);
- mirror pods: each static pod gets a copy in the API (mirror_pods.py).

`report()` only decides, from memory; a writer thread of its own does the
HTTP. A slow or absent API server then never holds up the sync loop, and
the pods keep running whatever the network does.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from apiserver_join.mirror_pods import config_hash, is_mirror, is_static, mirror_hash, mirror_of
from common.client.backoff import Backoff
from common.client.client import AlreadyExists, APIClient, APIConnectionError, APIStatusError, Conflict, NotFound
from common.client.informer import Informer
from common.model.keys import object_key as pod_key


class ApiSource:
    def __init__(self, client: APIClient, node_name: str, log, on_change=None):
        self.client = client
        self.node_name = node_name
        self.log = log
        self.informer = Informer(client, "v1", "pods", field_selector=f"spec.nodeName={node_name}")
        if on_change:                       # wake the sync loop at once, not at its next tick
            self.informer.add_handler(lambda obj: on_change(), lambda old, new: on_change(),
                                      lambda obj: on_change())
        self.writes = 0                     # requests the writer made, for tests and benchmarks
        self._sent: dict[str, dict] = {}    # API pod uid -> the status last handed to the writer
        self._pending: dict[tuple[str, str], Callable[[], None]] = {}   # (what, pod key) -> write
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._conflicts: set[str] = set()   # static pods whose name a regular API pod has
        # Creates and deletes being sent, or done but not yet seen through
        # the watch: not to be done again meanwhile. (what, pod key or uid).
        self._in_flight: set[tuple[str, str]] = set()
        self._done: dict[tuple[str, str], float] = {}      # -> when

    def start(self) -> "ApiSource":
        self.informer.start()
        threading.Thread(target=self._write_loop, name="api-writer", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._kick.set()
        self.informer.stop()

    def has_synced(self) -> bool:
        """Has it listed the API's pods yet? Until then the kubelet must not
        remove containers it does not know: they may be this source's."""
        return self.informer.has_synced()

    def terminating(self) -> dict[str, dict]:
        """uid -> pod for the pods bound here that are being deleted: their
        spec (preStop hooks) and deletionGracePeriodSeconds say how to stop them."""
        return {pod["metadata"]["uid"]: pod for pod in self.informer.list()
                if pod["metadata"].get("deletionTimestamp") and not is_mirror(pod)}

    # [START api-source]
    def pods(self) -> dict[str, dict]:
        """uid -> pod for every pod bound here that is not being deleted
        (mirror pods are not run: their static pod is)."""
        return {pod["metadata"]["uid"]: pod for pod in self.informer.list()
                if not pod["metadata"].get("deletionTimestamp") and not is_mirror(pod)}

    def report(self, pods: dict[str, dict], statuses: dict[str, dict], running: set[str]) -> None:
        """After a sync: pods is every pod the kubelet runs (ours and static
        ones), statuses their latest status, running the uids that still
        have containers. Decide what to write; the writer thread writes it."""
        if not self.has_synced():
            return
        in_api = {pod_key(pod): pod for pod in self.informer.list()}
        for uid, pod in pods.items():
            api_pod = in_api.get(pod_key(pod))
            if is_static(pod):
                api_pod = self._mirror(pod, api_pod)
            elif api_pod is not None and api_pod["metadata"]["uid"] != uid:
                api_pod = None                # a newer pod by that name: not this one's status
            if api_pod is not None and uid in statuses:
                self._write_status(api_pod, statuses[uid])
        for key, api_pod in in_api.items():
            meta = api_pod["metadata"]
            if is_mirror(api_pod):
                static = next((p for p in pods.values() if pod_key(p) == key), None)
                if static is None or meta.get("deletionTimestamp"):
                    self._delete(api_pod)      # its manifest is gone, or someone deleted it
            elif meta.get("deletionTimestamp") and meta["uid"] not in running:
                self._delete(api_pod)          # its containers are stopped: finish the deletion
    # [END api-source]

    def _mirror(self, static: dict, api_pod: dict | None) -> dict | None:
        """The static pod's mirror in the API, or None while it is being made."""
        key = pod_key(static)
        if api_pod is None or (is_mirror(api_pod) and mirror_hash(api_pod) != config_hash(static)
                               and not api_pod["metadata"].get("deletionTimestamp")):
            if api_pod is not None:            # the manifest changed: replace the mirror
                self._delete(api_pod)
            else:
                self._queue(("create", key), lambda: self._create_mirror(static), once=True)
            return None
        if not is_mirror(api_pod):
            if key not in self._conflicts:
                self._conflicts.add(key)
                self.log.warning("a pod of the API server has this static pod's name; no mirror pod",
                                 obj=key, hint="rename one of them")
            return None
        return None if api_pod["metadata"].get("deletionTimestamp") else api_pod

    def _write_status(self, api_pod: dict, status: dict) -> None:
        uid = api_pod["metadata"]["uid"]
        before = api_pod.get("status") or {}
        status = _keep_scheduled(status, before)
        if self._sent.get(uid) == status or before == status:
            return
        self._sent[uid] = status
        # A merge patch keeps fields it does not mention: name the ones the
        # new status no longer has (null), so the stored status is exactly ours.
        # metadata.uid makes it apply only to this pod, not a namesake.
        patch = {"metadata": {"uid": uid}, "status": {**{k: None for k in before if k not in status}, **status}}
        namespace, name = api_pod["metadata"]["namespace"], api_pod["metadata"]["name"]

        def write():
            try:
                self.client.patch("v1", "pods", namespace, name, patch, strategy="merge", subresource="status")
            except (NotFound, Conflict):
                pass                           # gone, or replaced by a namesake: nothing to report to
            except (APIConnectionError, APIStatusError):
                self._sent.pop(uid, None)      # the next sync decides again
                raise
        self._queue(("status", f"{namespace}/{name}"), write)

    def _delete(self, api_pod: dict) -> None:
        meta = api_pod["metadata"]

        def delete():
            try:
                self.client.delete("v1", "pods", meta["namespace"], meta["name"], grace_period_seconds=0,
                                   preconditions={"uid": meta["uid"]})
                self.log.info("mirror pod deleted" if is_mirror(api_pod) else "pod deleted", obj=pod_key(api_pod))
            except (NotFound, Conflict):
                pass
            self._sent.pop(meta["uid"], None)
        self._queue(("delete", meta["uid"]), delete, once=True)

    def _create_mirror(self, static: dict) -> None:
        try:
            node = self.client.get("v1", "nodes", None, self.node_name)
        except NotFound:                       # not registered yet; the mirror waits for its owner
            self.log.debug("mirror pod waits for the node to register", obj=pod_key(static))
            return
        try:
            self.client.create("v1", "pods", mirror_of(static, node), namespace=static["metadata"]["namespace"])
            self.log.info("mirror pod created", obj=pod_key(static))
        except AlreadyExists:
            pass

    # --- the writer thread ----------------------------------------------------

    def _queue(self, what: tuple[str, str], write: Callable[[], None], once: bool = False) -> None:
        """Newest wins: a status queued twice before the writer got to it is
        written once. once: a create or delete, not repeated for 5 seconds
        after it was done (the watch has not shown its effect yet)."""
        with self._lock:
            if once and (what in self._in_flight or time.monotonic() - self._done.get(what, -10.0) < 5.0):
                return
            self._pending[what] = write
        self._kick.set()

    def _write_loop(self) -> None:
        backoff = Backoff(0.5, 10.0)
        while not self._stop.is_set():
            self._kick.wait()
            self._kick.clear()
            with self._lock:
                batch, self._pending = self._pending, {}
                self._in_flight = {what for what in batch if what[0] != "status"}
            failed = False
            for (what, key), write in batch.items():
                try:
                    write()
                    self.writes += 1
                    if what != "status":
                        with self._lock:
                            self._done[(what, key)] = time.monotonic()
                            self._in_flight.discard((what, key))
                except (APIConnectionError, APIStatusError) as error:
                    failed = True
                    self.log.warning(f"cannot write to the API server ({what}); will retry", obj=key,
                                     error=str(error))
                    if what != "status":       # a status is decided afresh each sync; the rest is retried
                        with self._lock:
                            self._in_flight.discard((what, key))
                            self._pending.setdefault((what, key), write)
                except Exception as error:     # a bug: say so, and keep the writer alive
                    self.log.error(f"writing to the API server failed ({what})", obj=key,
                                   error=f"{type(error).__name__}: {error}")
                    with self._lock:
                        self._in_flight.discard((what, key))
            now = time.monotonic()
            with self._lock:
                self._done = {k: t for k, t in self._done.items() if now - t < 5.0}
            if failed:
                self._stop.wait(backoff.next("api"))
                self._kick.set()
            else:
                backoff.forget("api")


def _keep_scheduled(status: dict, stored: dict) -> dict:
    """The PodScheduled condition belongs to whoever placed the pod (the
    scheduler's binding sets it, with its time): keep the stored one rather
    than the kubelet's own, as the real kubelet does."""
    scheduled = next((c for c in stored.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
    if scheduled is None:
        return status
    conditions = [scheduled if c.get("type") == "PodScheduled" else c for c in status.get("conditions") or []]
    return {**status, "conditions": conditions}
