"""Watch: one long HTTP response that carries every change as it happens.

    GET /api/v1/namespaces/default/pods?watch=true&resourceVersion=1234

    {"type":"ADDED","object":{...pod...}}
    {"type":"MODIFIED","object":{...}}
    {"type":"DELETED","object":{...}}

The response never "finishes" until timeoutSeconds: it is the long polling
the whole cluster runs on. A client remembers the resourceVersion of the last
event it saw; when the connection drops, it watches again from there and
misses nothing, also when the server itself restarted in between (its
history is read back from its event log). If that version is older than the
server's kept history, it gets an ERROR event with a 410 Gone status and
must list again.

Calls out of the core, to take on trust on a first read: the registered
`hooks.table` turns each event's object into a Table row when `kubectl
get -w` asks for tables; `list_options` checks the version.
"""
from __future__ import annotations

import random
import select
import socket
import threading
import time

from flask import Response, request

import api_errors
import decode
import list_options
from watch_cache import Expired, encode_event


class WatchCounter:
    """Bounds the number of open watches: each one holds a thread and a socket."""

    def __init__(self, limit: int):
        self.limit = limit
        self.open = 0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            if self.open >= self.limit:
                raise api_errors.too_many_requests(
                    f"too many open watches ({self.limit}, the --max-watches limit): "
                    "close some, or raise the limit")
            self.open += 1

    def release(self) -> None:
        with self._lock:
            self.open -= 1


def _client_gone(sock) -> bool:
    """True when the client closed its end (an abandoned watch): the socket
    is readable and a peek finds end-of-file."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (OSError, ValueError):
        return True


def stream(server, info, labels, fields, table=None) -> Response:
    """`table`: kubectl's Table printer, when `kubectl get -w` asked for one (rest._table)."""
    args = request.args
    timeout = decode.query_int(args, "timeoutSeconds", None)
    if not timeout:                          # absent or 0: the server's default
        # Kubernetes ends watches after a random 30-60 minutes, so that
        # clients spread out their reconnects; so do we.
        timeout = int(server.max_watch_seconds * (1 + random.random()))
    timeout = min(timeout, 2 * server.max_watch_seconds)
    bookmarks = args.get("allowWatchBookmarks") in ("true", "1")
    start_rv = list_options.watch_from(server.store, args)   # None: no version given; 504: one not reached
    resource, namespace = info.resource, info.namespace
    store = server.store
    server.watches.acquire()
    sock = request.environ.get("werkzeug.socket")

    def matches(obj: dict | None) -> bool:
        return obj is not None and (not namespace or obj["metadata"].get("namespace") == namespace) \
            and labels.matches(obj["metadata"].get("labels")) and fields.matches(obj)

    def encode(kind: str, obj: dict) -> bytes:
        if table:
            return encode_event(kind, table(resource, [obj], None))
        return encode_event(kind, obj)

    # [START watch-loop]
    def events():
        try:
            yield b""                           # send the headers now: the client knows it is connected
            since = start_rv
            if since is None:
                # No version given: first the current objects as ADDED, then changes.
                items, since = store.list(resource, namespace or None)
                for obj in items:
                    if matches(obj):
                        yield encode("ADDED", obj)
            deadline = time.monotonic() + timeout
            last_sent = time.monotonic()
            for event in store.watch_cache.events_after(since, deadline, resource=resource):
                if event is None:                # idle: a chance to bookmark, or to notice the client left
                    if _client_gone(sock):
                        return
                    if bookmarks and time.monotonic() - last_sent > server.bookmark_seconds:
                        yield _bookmark(resource, since)   # "you have seen everything up to here"
                        last_sent = time.monotonic()
                    continue
                if event.resource_version <= since:
                    continue                    # (etcd_store replays its history while watches start)
                since = event.resource_version
                if event.resource is not resource:
                    continue
                was, now = matches(event.old), matches(event.obj)
                if event.type == "MODIFIED" and was != now:
                    # It moved into or out of the selection: to this watcher,
                    # it appeared or disappeared.
                    yield encode("ADDED" if now else "DELETED", event.obj)
                elif now:
                    yield event.encoded() if not table else encode(event.type, event.obj)
                else:
                    continue
                last_sent = time.monotonic()
        except Expired as error:
            yield encode_event("ERROR", api_errors.gone(str(error)).status())
    # [END watch-loop]

    response = Response(events(), mimetype="application/json")
    response.call_on_close(server.watches.release)   # also when the client left before the first event
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


def _bookmark(resource, rv: int) -> bytes:
    return encode_event("BOOKMARK", {"kind": resource.kind, "apiVersion": resource.api_version,
                                     "metadata": {"resourceVersion": str(rv)}})

