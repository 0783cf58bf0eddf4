"""The durable JSON-file store: one file per object, a learner can `cat` it.

    DATA/registry/core/pods/default/web.json
    DATA/registry/apps/deployments/default/web.json
    DATA/registry/core/nodes/node1.json
    DATA/resource-version

Durability: a write goes to a temporary file in the same directory, is
fsync'd, and renamed over the old file (rename is atomic on POSIX). A process
killed at any moment therefore leaves each object wholly old or wholly new.
Each write's event goes to the event log (event_log.py) before the rename;
that log is the commit point, and it is what makes the rename itself safe
without an fsync of its directory every time: a rename that a power cut
loses is done again at start-up from the log. Each *checkpoint* fsyncs the
directories (a killed predecessor's too) before the log drops any line.

All objects are also kept in memory: reads and lists never touch the disk.

A write has two halves. The quick half runs under one lock: check the
resourceVersion, take the next one, remember the new object for the writers
that come next. The slow half, the fsync, runs outside the lock, so eight
clients' fsyncs overlap and the file system commits them together (a *group
commit*, as databases do). Then the writes are *published* strictly in
resourceVersion order: their events appended to the event log with one
fsync (the commit point), renamed into place, shown to readers and sent to
watchers. Only then does the client get its answer, so a 2xx still means
"on disk", and watchers still see every change in order, also after a
restart: start-up reads the event log back into the watch cache, and
finishes any write the log has but the files do not.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
import uuid
from collections import deque
from pathlib import Path

import api_errors
import json_cache
import registry
from common.log import get_logger
from common.model.nesting import checked, too_deep_at
from event_log import CorruptLog, EventLog, record_line
from event_log import fsync_dir as _fsync_dir
from watch_cache import Event, WatchCache

log = get_logger("apiserver")

# Names become path components, so they are checked here too, whatever the
# REST layer validated: no "/", no "..", no NUL can reach the file system
# (a namespace must be an RFC 1123 name; a name need not, and is escaped, _file_name).
_SAFE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_RV_BLOCK = 1000


def _check_path_part(what: str, value: str) -> None:
    if not isinstance(value, str) or not _SAFE_NAME.match(value) or ".." in value:
        raise api_errors.bad_request(f"invalid {what} {value!r}: must be a lowercase RFC 1123 name")


def _check_name(name: str) -> None:
    """Any name a kind's validation may allow: at most 253 characters, none
    of them "/", "%" or a control character, and not "." or ".." (RBAC's
    rule for path segments; most kinds are stricter, in validation)."""
    if (not isinstance(name, str) or not name or len(name) > 253 or name in (".", "..")
            or any(c in "/%" or ord(c) < 32 or ord(c) == 127 for c in name)):
        raise api_errors.bad_request(f"invalid name {name!r}: may not be empty, '.' or '..', longer than "
                                     "253 characters, or hold '/', '%' or a control character")


def _file_name(name: str) -> str:
    """`web.json`; a name too long for the file system (over 250 bytes, file
    names stop at 255) keeps its start and gets a hash of the whole."""
    if not _SAFE_NAME.match(name) or ".." in name:
        name = _escaped(name)
    if len(name) <= 250:
        return name + ".json"
    return f"{name[:200]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}.json"


def _escaped(name: str) -> str:
    """Most names are RFC 1123 names and are their own file names. RBAC's
    may hold more (system:node, Admin): there every byte outside a-z, 0-9
    and "-" becomes %XX, and since no RFC 1123 name holds a "%", the two
    kinds of file name never meet, and none is "..", or holds a "/"."""
    safe = b"abcdefghijklmnopqrstuvwxyz0123456789-"
    return "".join(chr(b) if b in safe else f"%{b:02X}" for b in name.encode("utf-8"))


def _without_version(obj: dict) -> dict:
    """The object minus its resourceVersion: what "nothing changed" compares."""
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


class _Commit:
    """One acknowledged-to-be write on its way to disk (obj None: a delete)."""

    def __init__(self, resource, namespace: str, name: str, obj: dict | None, path: Path, event: Event):
        self.resource, self.namespace, self.name, self.obj = resource, namespace, name, obj
        self.key = (resource.group, resource.plural, namespace, name)
        self.path, self.event = path, event
        self.temporary: Path | None = None
        self.log_line = b""               # its event, as a line of the event log
        self.ready = False                # its bytes are fsync'd
        self.done = False                 # logged, renamed, shown to readers and watchers


# [START atomic-write]
_temporary_numbers = itertools.count()   # next() on a count is atomic: safe from many threads


def _write_temporary(path: Path, data: bytes) -> Path:
    """The first half of an atomic write: a fsync'd temporary file beside `path`."""
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".tmp-{os.getpid()}-{next(_temporary_numbers)}")   # short: names may be 253 chars
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())          # the bytes are on disk...
    return temporary


def write_file_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new file."""
    temporary = _write_temporary(path, data)
    os.replace(temporary, path)       # ...then the name points at them, atomically
    _fsync_dir(path.parent)           # ...and the new name itself is on disk
# [END atomic-write]


class StoreError(Exception):
    """The data directory cannot be used; the message says why and what to do."""


class FileStore:
    def __init__(self, data_dir: str | os.PathLike, watch_cache_size: int = 10_000, log_segment_size: int | None = None):
        self.root = Path(data_dir)
        self.registry_dir = self.root / "registry"
        try:
            self.registry_dir.mkdir(parents=True, exist_ok=True)
            _fsync_dir(self.root)                 # the name "registry" itself survives a power cut
            probe = self.root / f".tmp-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            raise StoreError(f"cannot use {self.root} as the data directory: {error.strerror} "
                             f"({error.filename}); it must be a writable directory") from None
        self._lock = threading.Lock()             # orders writes, guards the maps
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}   # published: what readers see
        self._unpublished: dict[tuple, _Commit] = {}   # the newest write per object, for the next writer
        self._queue: deque[_Commit] = deque()          # writes in resourceVersion order, not yet published
        self._publishing = threading.Lock()            # one publisher at a time
        self._published_changed = threading.Condition()
        self._rv = 0                                   # the newest version handed out
        self._rv_reserved = 0
        self._unsynced_dirs: set[Path] = set()        # renamed into since the last checkpoint
        self.event_log = EventLog(self.root / "events", keep=watch_cache_size, segment_size=log_segment_size)
        events = self._load()
        self._published_rv = self._rv                  # the newest version readers can see
        self.watch_cache = WatchCache(watch_cache_size, start_rv=self.event_log.horizon)
        for event in events:                           # the history from before the restart
            self.watch_cache.append(event)

    # ----- start-up: the disk is the truth -----

    def _load(self) -> list[Event]:
        """The objects from their files, the recent events from the log."""
        rv_file = self.root / "resource-version"
        if rv_file.exists():
            try:
                self._rv = int(rv_file.read_text().strip() or 0)
            except (ValueError, OSError) as error:
                raise StoreError(f"{rv_file} should hold one number, the reserved resourceVersion ceiling: "
                                 f"{error}. Restore it, or remove it to start from the objects' versions") from None
        loaded, set_aside = 0, set()
        for path in sorted(self.registry_dir.rglob("*")):
            if path.name.startswith(".tmp-"):
                path.unlink()             # a write that was cut off: its old file is intact
                continue
            if not path.is_file() or path.suffix != ".json" or len(path.relative_to(self.registry_dir).parts) < 3:
                continue
            obj = self._read_object(path)
            if obj is None:
                set_aside.add(path)
                continue
            group, plural = path.relative_to(self.registry_dir).parts[:2]
            meta = obj["metadata"]
            bucket = self._objects.setdefault(("" if group == "core" else group, plural), {})
            bucket[(meta.get("namespace", ""), meta["name"])] = obj
            self._rv = max(self._rv, int(meta.get("resourceVersion", 0)))
            loaded += 1
        events = self._replay_event_log(set_aside)
        # Reserve the next block of resourceVersions before serving anything:
        # versions handed out before a crash are never handed out again.
        self._reserve(self._rv + _RV_BLOCK)
        log.info("store loaded", objects=loaded, resource_version=self._rv, data_dir=str(self.root))
        log.info("watch history loaded", events=len(events), since=self.event_log.horizon)
        return events

    def _replay_event_log(self, set_aside: set[Path]) -> list[Event]:
        """Read the event log back, and finish the writes it has but the files
        do not: the server died after the log's fsync, before the rename."""
        try:
            records = self.event_log.open(start_rv=self._rv)
        except CorruptLog as error:
            raise StoreError(str(error)) from None
        events, newest = [], {}
        for record in records:
            resource = registry.lookup(record["group"], record["version"], record["plural"])
            if resource is None:
                continue                  # a kind this server no longer serves: nobody can watch it
            if too_deep_at(record["object"]) or too_deep_at(record.get("old")):   # (see _read_object)
                log.info("event nested too deeply left out", file=str(self.event_log.directory), rv=record["rv"])
                continue
            event = Event(record["type"], record["rv"], resource, record["namespace"], record["object"], record.get("old"))
            events.append(event)
            newest[(resource, event.namespace, event.obj["metadata"]["name"])] = event
        for event in newest.values():
            path = self._path(event.resource, event.namespace, event.obj["metadata"]["name"])
            if path not in set_aside:
                self._finish(event)       # (a file set aside stays aside: someone must look at it)
            # A killed process's renames may not be durable yet: fsync'd at our next checkpoint.
            self._unsynced_dirs.add(path.parent)
        self._rv = max([self._rv] + [event.resource_version for event in events])
        return events

    def _finish(self, event: Event) -> None:
        """Make an object's file agree with its newest logged event."""
        name = event.obj["metadata"]["name"]
        on_disk = self.get(event.resource, event.namespace, name)
        if on_disk is not None and int(on_disk["metadata"]["resourceVersion"]) >= event.resource_version:
            return                        # the usual case: the rename happened
        path = self._path(event.resource, event.namespace, name)
        if event.type == "DELETED":
            if on_disk is None:
                return
            path.unlink(missing_ok=True)
            _fsync_dir(path.parent)
            self._bucket(event.resource).pop((event.namespace, name))
        else:
            write_file_atomically(path, json.dumps(event.obj, indent=2).encode() + b"\n")
            self._bucket(event.resource)[(event.namespace, name)] = event.obj
        log.info("finished a write from the event log", resource=event.resource.plural,
                 obj=f"{event.namespace}/{name}".lstrip("/"), resource_version=event.resource_version)

    def _read_object(self, path: Path) -> dict | None:
        try:
            obj = checked(json.loads(path.read_bytes()))   # an older version stored objects of any depth
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
        return self._published_rv

    def wait_for_resource_version(self, rv: int, timeout: float) -> int:
        """Nothing to wait for: this store is the only writer, so a version
        it has not published is one it never gave out."""
        return self._published_rv

    def _bucket(self, resource) -> dict:
        return self._objects.setdefault((resource.group, resource.plural), {})

    def get(self, resource, namespace: str, name: str) -> dict | None:
        return self._bucket(resource).get((namespace or "", name))

    def list(self, resource, namespace: str | None = None, resource_version: int = 0) -> tuple[list[dict], int]:
        """`resource_version` (a later page's snapshot) is not kept here: the
        file store serves a list's later pages from the live state."""
        with self._lock:                  # a consistent snapshot at one resourceVersion
            items = list(self._bucket(resource).items())
            rv = self._published_rv
        if namespace:
            items = [item for item in items if item[0][0] == namespace]
        items.sort(key=lambda item: item[0])
        return [obj for _, obj in items], rv

    # ----- writes -----

    def _path(self, resource, namespace: str, name: str) -> Path:
        _check_name(name)
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

    def _latest(self, resource, namespace: str, name: str) -> dict | None:
        """The object as the next writer must see it: with writes not yet published."""
        pending = self._unpublished.get((resource.group, resource.plural, namespace or "", name))
        return pending.obj if pending else self.get(resource, namespace, name)

    def _enqueue(self, resource, namespace: str, name: str, obj: dict | None, event: Event) -> "_Commit":
        """The quick half of a write (under the lock): take its place in the order."""
        commit = _Commit(resource, namespace or "", name, obj, self._path(resource, namespace, name), event)
        self._unpublished[commit.key] = commit
        self._queue.append(commit)
        return commit

    def _stamp(self, obj: dict) -> int:
        rv = self._next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        return rv

    # [START group-commit]
    def _commit(self, commit: "_Commit") -> None:
        """The slow half (no lock held): fsync, then wait until published in order."""
        try:
            if commit.obj is not None:
                commit.temporary = _write_temporary(commit.path, json.dumps(commit.obj, indent=2).encode() + b"\n")
            commit.log_line = record_line(commit.event)     # the object's one compact encoding (json_cache)
            commit.ready = True
            with self._publishing:
                self._publish_ready()
        except Exception as error:        # noqa: BLE001 (any failure here must stop the server)
            # The disk refused a write the others may already build on (or
            # the write could not be made): the memory no longer matches the
            # disk, and later writes would wait for this one forever. Stop;
            # the disk is the truth, and a restart starts from it.
            log.error("cannot write to the data directory; stopping", file=str(commit.path), error=repr(error))
            os._exit(1)
        self._wait_published(commit)

    def _wait_published(self, commit: "_Commit") -> None:
        with self._published_changed:
            self._published_changed.wait_for(lambda: commit.done)
    # [END group-commit]

    # [START group-commit-publish]
    def _publish_ready(self) -> None:
        """Publish the writes at the head of the queue whose fsync is done."""
        with self._lock:
            batch = []
            while self._queue and self._queue[0].ready:
                batch.append(self._queue.popleft())
        if not batch:
            return                        # the head is still in its fsync: its writer publishes
        # The commit point: from here on a restart finishes these writes.
        self.event_log.append([commit.log_line for commit in batch])
        for commit in batch:              # in resourceVersion order
            if commit.obj is None:
                commit.path.unlink(missing_ok=True)
            else:
                os.replace(commit.temporary, commit.path)
            self._unsynced_dirs.add(commit.path.parent)
        if self.event_log.full:
            self._checkpoint(batch[-1].event.resource_version)
        with self._lock:                  # readers and watchers see the batch at once
            for commit in batch:
                bucket = self._objects.setdefault((commit.resource.group, commit.resource.plural), {})
                if commit.obj is None:
                    bucket.pop((commit.namespace, commit.name), None)
                else:
                    bucket[(commit.namespace, commit.name)] = commit.obj
                if self._unpublished.get(commit.key) is commit:
                    del self._unpublished[commit.key]
                self._published_rv = commit.event.resource_version
                self.watch_cache.append(commit.event)
        with self._published_changed:
            for commit in batch:
                commit.done = True
            self._published_changed.notify_all()
    # [END group-commit-publish]

    def _checkpoint(self, last_rv: int) -> None:
        """Make every rename so far durable, then let the log drop old lines:
        no start-up will need them to finish a write."""
        directories = set(self._unsynced_dirs)
        for directory in self._unsynced_dirs:    # and the new directories' own names, up to registry/
            directories.update(parent for parent in directory.parents
                               if parent == self.registry_dir or self.registry_dir in parent.parents)
        for directory in directories:
            _fsync_dir(directory)
        self._unsynced_dirs.clear()
        self.event_log.rotate(last_rv)

    def create(self, resource, obj: dict) -> dict:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        with self._lock:
            if self._latest(resource, namespace, name) is not None:
                raise api_errors.already_exists(resource, name)
            rv = self._stamp(obj)
            commit = self._enqueue(resource, namespace, name, obj, Event("ADDED", rv, resource, namespace, obj))
        self._commit(commit)
        return obj

    # [START optimistic-concurrency]
    def update(self, resource, namespace: str, name: str, update_fn) -> dict:
        while True:
            with self._lock:
                current = self._latest(resource, namespace, name)
            if current is None:
                raise api_errors.not_found(resource, name)
            # update_fn runs admission, which may read the store: never under the lock.
            new = update_fn(json_cache.private_copy(current))
            expected = new["metadata"].get("resourceVersion")
            with self._lock:
                if self._latest(resource, namespace, name) is not current:
                    continue              # someone wrote meanwhile: run update_fn on theirs (a
                                          # client's stale resourceVersion is then a 409 below)
                if expected and expected != current["metadata"]["resourceVersion"]:
                    # The client read an older version than the one stored now:
                    # someone else wrote in between. Refuse; the client re-reads and retries.
                    raise api_errors.conflict(resource, name)
                if _without_version(new) == _without_version(current):
                    # Nothing changed: no new version, no event. If the current
                    # object is itself still on its way to disk, wait for it.
                    pending = self._unpublished.get((resource.group, resource.plural, namespace or "", name))
                    break
                pending = None
                rv = self._stamp(new)
                commit = self._enqueue(resource, namespace, name, new,
                                       Event("MODIFIED", rv, resource, namespace or "", new, current))
            self._commit(commit)
            return new
        if pending is not None:
            self._wait_published(pending)
        return current
    # [END optimistic-concurrency]

    def delete(self, resource, namespace: str, name: str, precondition=None) -> dict:
        with self._lock:
            current = self._latest(resource, namespace, name)
            if current is None:
                raise api_errors.not_found(resource, name)
            if precondition:
                precondition(current)
            # A DELETED event carries the object as it was, with the
            # resourceVersion of the deletion itself.
            gone = json_cache.private_copy(current)
            rv = self._stamp(gone)
            commit = self._enqueue(resource, namespace, name, None,
                                   Event("DELETED", rv, resource, namespace or "", gone, current))
        self._commit(commit)
        return gone

    def problem(self) -> str | None:
        return None                       # (a disk that fails stops the server: _commit)

    def close(self) -> None:
        with self._publishing:            # not in the middle of a batch
            self.event_log.close()
