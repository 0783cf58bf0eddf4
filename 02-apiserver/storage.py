"""What the REST layer needs from a storage backend, and nothing more.

Kubernetes keeps its objects in etcd behind a small interface
(k8s.io/apiserver/pkg/storage.Interface). Ours is the same idea: the REST
layer calls these methods and never touches files, so the second backend,
etcd_store.EtcdStore (--storage-backend etcd3), sits beside
file_store.FileStore without a change to the REST layer.

Rules every backend keeps:
- resourceVersion is one counter for the whole cluster. Every create, update
  and delete takes a higher value (the next one, or etcd's next revision);
  it never goes backwards, also across restarts.
- A method returns only once the change is durable.
- Objects handed out are shared and must not be mutated: copy before changing.
- Every acknowledged change is appended to `watch_cache` in resourceVersion order,
  and is there again after a restart (file_store keeps them in an event log,
  etcd_store replays them from etcd's history):
  a watch from a version before the restart resumes, unless that version is
  older than the kept window (then 410).
"""
from __future__ import annotations

from typing import Callable, Protocol

from watch_cache import WatchCache

UpdateFn = Callable[[dict], dict]   # current object (a private copy) -> new object


class Store(Protocol):
    watch_cache: WatchCache

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion readers can see (published): a watch may start there."""

    def wait_for_resource_version(self, rv: int, timeout: float) -> int:
        """Give the watch history up to `timeout` seconds to reach `rv` (written
        through another API server); return the newest version it has."""

    def get(self, resource, namespace: str, name: str) -> dict | None: ...

    def list(self, resource, namespace: str | None = None, resource_version: int = 0) -> tuple[list[dict], int]:
        """Objects sorted by (namespace, name), and the resourceVersion they are
        current at; with `resource_version`, as they were then, where the
        backend keeps old versions (etcd does; 410 once compacted)."""

    def create(self, resource, obj: dict) -> dict:
        """Store a new object; raises api_errors AlreadyExists."""

    def update(self, resource, namespace: str, name: str, update_fn: UpdateFn) -> dict:
        """Read-modify-write as one step: `update_fn` gets a copy of the current
        object and returns the new one (or raises). If the new object carries a
        metadata.resourceVersion that is not the current one, the update fails
        with 409 Conflict: optimistic concurrency."""

    def delete(self, resource, namespace: str, name: str,
               precondition: Callable[[dict], None] | None = None) -> dict:
        """Remove an object and return it as it was last stored."""

    def problem(self) -> str | None:
        """Why the store cannot serve right now (for /readyz), or None."""

    def close(self) -> None: ...
