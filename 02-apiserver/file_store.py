"""The durable JSON-file store: one file per object, a learner can `cat` it.

    DATA/registry/core/pods/default/web.json
    DATA/registry/apps/deployments/default/web.json
    DATA/registry/core/nodes/node1.json
    DATA/resource-version

Durability: a write goes to a temporary file in the same directory, is
fsync'd, renamed over the old file (rename is atomic on POSIX), and the
directory is fsync'd so the rename itself survives a crash. A process killed
at any moment therefore leaves each object wholly old or wholly new.

All objects are also kept in memory: reads and lists never touch the disk.
Writes are serialised by one lock, which is also what hands out
resourceVersions in order (etcd orders its writes through Raft for the same
reason).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import threading
import uuid
from pathlib import Path

import api_errors
from common.log import get_logger
from watch_cache import Event, WatchCache

log = get_logger("apiserver")

# Names become path components, so they are checked here too, whatever the
# REST layer validated: no "/", no "..", no NUL can reach the file system.
_SAFE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_RV_BLOCK = 1000


def _check_path_part(what: str, value: str) -> None:
    if not isinstance(value, str) or not _SAFE_NAME.match(value) or ".." in value:
        raise api_errors.bad_request(f"invalid {what} {value!r}: must be a lowercase RFC 1123 name")


def _file_name(name: str) -> str:
    """`web.json`; a name too long for the file system (over 250 bytes, file
    names stop at 255) keeps its start and gets a hash of the whole."""
    if len(name) <= 250:
        return name + ".json"
    return f"{name[:200]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}.json"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# [START atomic-write]
def write_file_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".tmp-{uuid.uuid4().hex}")   # short: names may be 253 characters
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())          # the bytes are on disk...
    os.replace(temporary, path)       # ...then the name points at them, atomically
    _fsync_dir(path.parent)           # ...and the new name itself is on disk
# [END atomic-write]


class StoreError(Exception):
    """The data directory cannot be used; the message says why and what to do."""


class FileStore:
    def __init__(self, data_dir: str | os.PathLike, watch_cache_size: int = 10_000):
        self.root = Path(data_dir)
        self.registry_dir = self.root / "registry"
        try:
            self.registry_dir.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".tmp-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            raise StoreError(f"cannot use {self.root} as the data directory: {error.strerror} "
                             f"({error.filename}); it must be a writable directory") from None
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}
        self._rv = 0
        self._rv_reserved = 0
        self._load()
        self.watch_cache = WatchCache(watch_cache_size, start_rv=self._rv)

    # ----- start-up: the disk is the truth -----

    def _load(self) -> None:
        rv_file = self.root / "resource-version"
        if rv_file.exists():
            try:
                self._rv = int(rv_file.read_text().strip() or 0)
            except (ValueError, OSError) as error:
                raise StoreError(f"{rv_file} should hold one number, the reserved resourceVersion ceiling: "
                                 f"{error}. Restore it, or remove it to start from the objects' versions") from None
        loaded = 0
        for path in sorted(self.registry_dir.rglob("*")):
            if path.name.startswith(".tmp-"):
                path.unlink()             # a write that was cut off: its old file is intact
                continue
            if not path.is_file() or path.suffix != ".json" or len(path.relative_to(self.registry_dir).parts) < 3:
                continue
            obj = self._read_object(path)
            if obj is None:
                continue
            group, plural = path.relative_to(self.registry_dir).parts[:2]
            meta = obj["metadata"]
            bucket = self._objects.setdefault(("" if group == "core" else group, plural), {})
            bucket[(meta.get("namespace", ""), meta["name"])] = obj
            self._rv = max(self._rv, int(meta.get("resourceVersion", 0)))
            loaded += 1
        # Reserve the next block of resourceVersions before serving anything:
        # versions handed out before a crash are never handed out again.
        self._reserve(self._rv + _RV_BLOCK)
        log.info("store loaded", objects=loaded, resource_version=self._rv, data_dir=str(self.root))

    def _read_object(self, path: Path) -> dict | None:
        try:
            obj = json.loads(path.read_bytes())
            int(obj["metadata"]["resourceVersion"])
            if not isinstance(obj["metadata"]["name"], str):
                raise TypeError("metadata.name is not a string")
            return obj
        except (ValueError, KeyError, TypeError, RecursionError) as error:
            # Atomic writes make this impossible unless someone edited the
            # file by hand; keep it aside rather than serve or lose it.
            aside = path.with_name(path.name + ".corrupt")
            path.rename(aside)
            log.info("unreadable object set aside", file=str(aside), error=str(error))
            return None

    def _reserve(self, ceiling: int) -> None:
        write_file_atomically(self.root / "resource-version", f"{ceiling}\n".encode())
        self._rv_reserved = ceiling

    # ----- reads -----

    @property
    def resource_version(self) -> int:
        return self._rv

    def _bucket(self, resource) -> dict:
        return self._objects.setdefault((resource.group, resource.plural), {})

    def get(self, resource, namespace: str, name: str) -> dict | None:
        return self._bucket(resource).get((namespace or "", name))

    def list(self, resource, namespace: str | None = None) -> tuple[list[dict], int]:
        with self._lock:                  # a consistent snapshot at one resourceVersion
            items = list(self._bucket(resource).items())
            rv = self._rv
        if namespace:
            items = [item for item in items if item[0][0] == namespace]
        items.sort(key=lambda item: item[0])
        return [obj for _, obj in items], rv

    # ----- writes -----

    def _path(self, resource, namespace: str, name: str) -> Path:
        _check_path_part("name", name)
        parts = [resource.group or "core", resource.plural]
        if resource.namespaced:
            _check_path_part("namespace", namespace)
            parts.append(namespace)
        return self.registry_dir.joinpath(*parts, _file_name(name))

    def _next_rv(self) -> int:
        self._rv += 1
        if self._rv > self._rv_reserved:
            self._reserve(self._rv + _RV_BLOCK)
        return self._rv

    def _write(self, resource, obj: dict, kind: str, old: dict | None) -> dict:
        """Stamp the next resourceVersion, make it durable, publish the event."""
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        path = self._path(resource, namespace, name)
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        write_file_atomically(path, json.dumps(obj, indent=2).encode() + b"\n")
        self._bucket(resource)[(namespace, name)] = obj
        self.watch_cache.append(Event(kind, rv, resource, namespace, obj, old))
        return obj

    def create(self, resource, obj: dict) -> dict:
        meta = obj["metadata"]
        with self._lock:
            if (meta.get("namespace", ""), meta["name"]) in self._bucket(resource):
                raise api_errors.already_exists(resource, meta["name"])
            return self._write(resource, obj, "ADDED", None)

    # [START optimistic-concurrency]
    def update(self, resource, namespace: str, name: str, update_fn) -> dict:
        with self._lock:
            current = self.get(resource, namespace, name)
            if current is None:
                raise api_errors.not_found(resource, name)
            new = update_fn(copy.deepcopy(current))
            expected = new["metadata"].get("resourceVersion")
            if expected and expected != current["metadata"]["resourceVersion"]:
                # The client read an older version than the one stored now:
                # someone else wrote in between. Refuse; the client re-reads and retries.
                raise api_errors.conflict(resource, name)
            if new == current:
                return current            # nothing changed: no new version, no event
            return self._write(resource, new, "MODIFIED", current)
    # [END optimistic-concurrency]

    def delete(self, resource, namespace: str, name: str, precondition=None) -> dict:
        with self._lock:
            current = self.get(resource, namespace, name)
            if current is None:
                raise api_errors.not_found(resource, name)
            if precondition:
                precondition(current)
            path = self._path(resource, namespace, name)
            path.unlink()
            _fsync_dir(path.parent)
            del self._bucket(resource)[(namespace or "", name)]
            # A DELETED event carries the object as it was, with the
            # resourceVersion of the deletion itself.
            gone = copy.deepcopy(current)
            rv = self._next_rv()
            gone["metadata"]["resourceVersion"] = str(rv)
            self.watch_cache.append(Event("DELETED", rv, resource, namespace or "", gone, current))
            return gone

    def close(self) -> None:
        pass
