"""The etcd store: the same interface as file_store.FileStore, kept in etcd.

    apiserver.py --storage-backend etcd3 --etcd-servers http://127.0.0.1:2379

Keys are laid out as Kubernetes lays them under --etcd-prefix (/registry):

    /registry/pods/default/web                    a namespaced object
    /registry/minions/node1                       a cluster-scoped one (nodes keep their old name)
    /registry/stable.example.com/crontabs/default/cron   a custom resource: group/plural

The value is the object's JSON without its resourceVersion: the version is
etcd's, the key's mod_revision, set on every read. So a resourceVersion
means the same thing through every API server on this etcd, and a list's
resourceVersion is the revision the whole range was read at.

The three writes are transactions that compare before they change:

    create   create_revision == 0   (the key does not exist)   else 409 AlreadyExists
    update   mod_revision == what update_fn was given          else read again, run it again
    delete   mod_revision == what the precondition saw         else read again, check again

The watch cache (watch_cache.py, which every watch reads) is fed by one
etcd watch on the whole prefix, as Kubernetes' cacher is fed by its watch
on etcd: a thousand watching clients cost etcd one watch. At start-up that
watch begins `watch_cache_size` revisions back, so a client's watch from
before a restart of this API server still resumes, from etcd's history
instead of an event log; a version etcd has compacted away is 410 Gone.
A write returns once this server's watch cache has its event, so a client
that writes and then watches from the version it got misses nothing.
"""
from __future__ import annotations

import contextlib
import copy
import json
import re
import threading
import time

import api_errors
import registry
from common.log import get_logger
from etcd_client import Compacted, EtcdClient, EtcdError, EtcdUnavailable, EtcdUnknownOutcome, decode, encode
from file_store import StoreError
from watch_cache import Event, WatchCache

log = get_logger("apiserver")

# Where Kubernetes keeps a kind whose key is not simply its plural.
_KUBERNETES_KEYS = {
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("", "endpoints"): "services/endpoints",
    ("", "replicationcontrollers"): "controllers",
    ("apiextensions.k8s.io", "customresourcedefinitions"): "apiextensions.k8s.io/customresourcedefinitions",
}
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SECONDS_TO_SEE_OWN_WRITE = 10


def _check_name(name: str) -> None:
    """A name becomes one segment of a key: Kubernetes' rule for path segments."""
    if (not isinstance(name, str) or not name or len(name) > 253 or name in (".", "..")
            or any(c in "/%" or ord(c) < 32 or ord(c) == 127 for c in name)):
        raise api_errors.bad_request(f"invalid name {name!r}: may not be empty, '.' or '..', longer than "
                                     "253 characters, or hold '/', '%' or a control character")


def _without_version(obj: dict) -> dict:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


class EtcdStore:
    def __init__(self, endpoints: list[str], prefix: str = "/registry", watch_cache_size: int = 10_000):
        self.client = EtcdClient(endpoints)
        self.prefix = "/" + prefix.strip("/")
        self._capacity = watch_cache_size
        self._seen = 0                           # the watch cache has every event up to this revision
        self._seen_changed = threading.Condition()
        self._closed = False
        self._complaint: str | None = None       # the feed's last error, said once
        try:
            current = int(self.client.range(self.prefix + "/", prefix=True, count_only=True)["header"]["revision"])
        except EtcdError as error:
            raise StoreError(f"cannot use etcd at {','.join(endpoints)}: {error}") from None
        # The watch replays the recent history into the watch cache, as the
        # file store reads its event log back. A watch that starts before
        # the replay is done still gets every event after its version: they
        # arrive in order (watch.py skips those it asked to start after).
        start = self._oldest_kept(max(1, current - watch_cache_size + 1))
        self.watch_cache = WatchCache(watch_cache_size, start_rv=start - 1)
        self._seen = current
        threading.Thread(target=self._feed, args=(start,), daemon=True, name="etcd-watch").start()
        log.info("store ready", backend="etcd3", endpoints=",".join(endpoints), prefix=self.prefix,
                 resource_version=current, history_since=self.watch_cache.horizon)

    def _oldest_kept(self, wanted: int) -> int:
        """`wanted`, or the oldest revision etcd still has if it compacted that
        one away (a watch from there says where its history begins)."""
        try:
            self.client.range(self.prefix + "/", prefix=True, revision=wanted, count_only=True)
            return wanted
        except Compacted:
            pass
        try:
            for _ in self.client.watch(self.prefix + "/", wanted):
                pass
        except Compacted as error:
            return error.compact_revision
        raise StoreError("etcd compacted its history but did not say up to where")

    # ----- keys and values -----

    def key_prefix(self, resource) -> str:
        """/registry/pods: where every object of a kind lives."""
        part = _KUBERNETES_KEYS.get((resource.group, resource.plural))
        if part is None:
            built_in = resource in registry.RESOURCES
            part = resource.plural if built_in else f"{resource.group}/{resource.plural}"
        return f"{self.prefix}/{part}"

    def key(self, resource, namespace: str, name: str) -> str:
        _check_name(name)
        if not resource.namespaced:
            return f"{self.key_prefix(resource)}/{name}"
        if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
            raise api_errors.bad_request(f"invalid namespace {namespace!r}: must be a lowercase RFC 1123 label")
        return f"{self.key_prefix(resource)}/{namespace}/{name}"

    @staticmethod
    def _value(obj: dict) -> str:
        return encode(json.dumps(_without_version(obj), separators=(",", ":")))

    @staticmethod
    def _object(kv: dict) -> dict:
        """A stored object, its resourceVersion the key's mod_revision."""
        obj = json.loads(decode(kv["value"]))
        obj["metadata"]["resourceVersion"] = kv["mod_revision"]
        return obj

    # ----- reads -----

    @property
    def resource_version(self) -> int:
        return self._seen

    def wait_for_resource_version(self, rv: int, timeout: float) -> int:
        """Wait until the watch cache has every event up to `rv` (another
        API server may have made it a moment ago); the revision it has."""
        with self._seen_changed:
            self._seen_changed.wait_for(lambda: self._seen >= rv, timeout)
            return self._seen

    def _kv(self, key: str) -> dict | None:
        with etcd_errors():
            kvs = self.client.range(key).get("kvs")
        return kvs[0] if kvs else None

    def get(self, resource, namespace: str, name: str) -> dict | None:
        kv = self._kv(self.key(resource, namespace, name))
        return self._object(kv) if kv else None

    def list(self, resource, namespace: str | None = None, resource_version: int = 0) -> tuple[list[dict], int]:
        """Every object of a kind as of one revision: now, or `resource_version`
        (a later page of a list reads the same snapshot as its first)."""
        prefix = f"{self.key_prefix(resource)}/" + (f"{namespace}/" if namespace and resource.namespaced else "")
        with etcd_errors():
            answer = self.client.range(prefix, prefix=True, revision=resource_version)
        items = [self._object(kv) for kv in answer.get("kvs", [])]
        items.sort(key=lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
        return items, resource_version or int(answer["header"]["revision"])

    # ----- writes -----

    def _written(self, obj: dict, answer: dict) -> dict:
        """Stamp a written object with its revision; return once watchers can see it."""
        rv = int(answer["header"]["revision"])
        obj["metadata"]["resourceVersion"] = str(rv)
        if self.wait_for_resource_version(rv, _SECONDS_TO_SEE_OWN_WRITE) < rv:
            log.info("etcd's watch is behind this write", resource_version=rv, seen=self._seen)
        return obj

    # [START etcd-create]
    def create(self, resource, obj: dict) -> dict:
        meta = obj["metadata"]
        key = encode(self.key(resource, meta.get("namespace", ""), meta["name"]))
        with etcd_errors():
            answer = self.client.txn(
                compare=[{"key": key, "target": "CREATE", "create_revision": "0"}],   # no such key yet
                success=[{"request_put": {"key": key, "value": self._value(obj)}}])
        if not answer.get("succeeded"):       # (false is left out of etcd's JSON)
            raise api_errors.already_exists(resource, meta["name"])
        return self._written(obj, answer)
    # [END etcd-create]

    # [START etcd-update]
    def update(self, resource, namespace: str, name: str, update_fn) -> dict:
        key = self.key(resource, namespace, name)
        kv = self._kv(key)
        while True:
            if kv is None:
                raise api_errors.not_found(resource, name)
            current = self._object(kv)
            new = update_fn(copy.deepcopy(current))   # admission and validation: may take a while
            expected = new["metadata"].get("resourceVersion")
            if expected and expected != current["metadata"]["resourceVersion"]:
                raise api_errors.conflict(resource, name)    # the client read an older version
            if _without_version(new) == _without_version(current):
                return current                    # nothing changed: no revision, no event
            # Write only if the key is still at the revision update_fn saw:
            # etcd checks and writes in one step, on every API server's behalf.
            with etcd_errors():
                answer = self.client.txn(
                    compare=[{"key": encode(key), "target": "MOD", "mod_revision": kv["mod_revision"]}],
                    success=[{"request_put": {"key": encode(key), "value": self._value(new)}}],
                    failure=[{"request_range": {"key": encode(key)}}])
            if answer.get("succeeded"):
                return self._written(new, answer)
            # Someone wrote in between: run update_fn again on theirs (a
            # client's own stale resourceVersion is then the 409 above).
            kvs = answer["responses"][0]["response_range"].get("kvs")
            kv = kvs[0] if kvs else None
    # [END etcd-update]

    def delete(self, resource, namespace: str, name: str, precondition=None) -> dict:
        key = self.key(resource, namespace, name)
        kv = self._kv(key)
        while True:
            if kv is None:
                raise api_errors.not_found(resource, name)
            current = self._object(kv)
            if precondition:
                precondition(current)
            with etcd_errors():
                answer = self.client.txn(
                    compare=[{"key": encode(key), "target": "MOD", "mod_revision": kv["mod_revision"]}],
                    success=[{"request_delete_range": {"key": encode(key)}}],
                    failure=[{"request_range": {"key": encode(key)}}])
            if answer.get("succeeded"):
                # As Kubernetes does: the object as it was, at the deletion's revision.
                return self._written(current, answer)
            kvs = answer["responses"][0]["response_range"].get("kvs")
            kv = kvs[0] if kvs else None

    def problem(self) -> str | None:
        try:
            self.client.range(self.prefix + "/", prefix=True, count_only=True)   # a linearizable read: needs a majority
        except EtcdError as error:
            return str(error)
        return None

    def close(self) -> None:
        self._closed = True
        self.client.close()                   # ends the watch that feeds the cache

    # ----- the watch cache, fed by one etcd watch -----

    # [START etcd-watch-feed]
    def _feed(self, start: int) -> None:
        """Follow etcd's watch on the whole prefix; after a break, resume
        from the revision after the last one seen, so no event is lost."""
        next_revision = start
        while not self._closed:
            try:
                for response in self.client.watch(self.prefix + "/", next_revision):
                    events = response.get("events") or []
                    for change in events:
                        event = self._event(change)
                        if event is not None:
                            self.watch_cache.append(event)
                    if events:
                        last = int(events[-1]["kv"]["mod_revision"])
                    elif not response.get("created") and "revision" in response.get("header", {}):
                        last = int(response["header"]["revision"])   # progress: nothing newer yet
                    else:
                        continue
                    next_revision = last + 1
                    self._saw(last)
            except Compacted as error:
                # etcd no longer has the events after our last one. Watchers
                # of the old history get 410 and list again; the new history
                # starts where etcd's does.
                log.info("etcd compacted the history this watch needed; watchers must list again",
                         compacted_at=error.compact_revision)
                self.watch_cache.expire()
                self.watch_cache = WatchCache(self._capacity, start_rv=error.compact_revision - 1)
                next_revision = error.compact_revision
            except EtcdError as error:
                self._complain(str(error), next_revision)   # once per outage, not every 0.2 s
            except Exception as error:        # noqa: BLE001 (this thread must outlive any surprise)
                log.error("etcd's watch failed; watching again", error=repr(error), since=next_revision)
            if self._closed:
                return
            time.sleep(0.2)                       # (a member that went away: the client tries the next)
    # [END etcd-watch-feed]

    def _saw(self, revision: int) -> None:
        self._complaint = None                    # the watch works (again)
        with self._seen_changed:
            self._seen = max(self._seen, revision)
            self._seen_changed.notify_all()

    def _complain(self, error: str, since: int) -> None:
        if error != self._complaint:
            log.info("etcd's watch broke; watching again", error=error, since=since)
        self._complaint = error

    def _event(self, change: dict) -> Event | None:
        """etcd's PUT or DELETE as the watch cache's ADDED, MODIFIED or DELETED."""
        kv, previous = change["kv"], change.get("prev_kv")
        old = self._object(previous) if previous else None
        if change.get("type") == "DELETE":
            if old is None:
                return None
            obj, kind = copy.deepcopy(old), "DELETED"
            obj["metadata"]["resourceVersion"] = kv["mod_revision"]
        else:
            # By the key's own history, not by prev_kv: the first event after
            # a compaction comes without the value before it.
            created = kv.get("create_revision") == kv["mod_revision"]
            obj, kind = self._object(kv), ("ADDED" if created else "MODIFIED")
        group = obj.get("apiVersion", "").rpartition("/")[0]
        resource = registry.for_kind(group, obj.get("kind", ""))
        if resource is None:
            return None                           # a kind this server does not serve: nobody can watch it
        return Event(kind, int(kv["mod_revision"]), resource, obj["metadata"].get("namespace", ""), obj, old)


@contextlib.contextmanager
def etcd_errors():
    """etcd's failures as the Status a client can act on."""
    try:
        yield
    except EtcdUnavailable as error:
        raise api_errors.APIError(503, "ServiceUnavailable", f"storage unavailable: {error}") from None
    except EtcdUnknownOutcome as error:
        # Kubernetes says the same (a 504 Timeout): read the object again to know.
        raise api_errors.APIError(504, "Timeout", f"{error}; read the object again to see") from None
    except Compacted:
        # Only a later page of a list reads an old revision: Kubernetes' words for it.
        raise api_errors.gone("The provided continue parameter is too old to display a consistent list "
                              "result. You can start a new list without the continue parameter.") from None
    except EtcdError as error:
        if "future revision" in str(error):
            # Only a `continue` token can ask for a revision etcd has not
            # reached: one made up, or from another cluster.
            raise api_errors.bad_request("invalid continue token: pass the metadata.continue of the "
                                         "previous page") from None
        raise api_errors.internal(f"etcd: {error}") from None
