"""etcd's v3 API over the HTTP/JSON gateway every etcd serves, with `requests`.

    POST http://127.0.0.1:2379/v3/kv/range   {"key": "L3JlZ2lzdHJ5L3BvZHMv", "range_end": ...}
    POST http://127.0.0.1:2379/v3/kv/txn     {"compare": [...], "success": [...], "failure": [...]}
    POST http://127.0.0.1:2379/v3/watch      {"create_request": {...}}  -> one JSON object per line

etcd's real clients speak gRPC. Its gateway (at /v3/ since etcd 3.4;
/v3beta/ and /v3alpha/ before) takes the same messages as JSON: keys and
values are base64, 64-bit numbers are strings, a field that is false or 0
is left out.

Why no Python etcd package: `etcd3` (python-etcd3) last released in 2020
and its generated gRPC code needs the protobuf 3 runtime of its time;
`etcd3-py` stopped in 2019; `aetcd` is asyncio-only, and this server is
threads. `etcd3gw` (OpenStack's) is maintained and uses this same gateway,
but it hides the compare of a transaction and the revision of a watch
behind its own calls, and those two are what chapter 02 teaches. What we
need is four calls, so they are here, in plain sight.

Several members (--etcd-servers a,b,c): a request goes to the member that
answered last; on a connection error it tries the next one, as etcd's own
client balances. If none answers, or the one that answers has no leader
(its majority is gone), the caller gets EtcdUnavailable.
"""
from __future__ import annotations

import base64
import json
import socket
import threading
from typing import Iterator

import requests

# Longer than etcd's own request timeout (5 s plus two election timeouts):
# a member without a majority answers "request timed out" by then.
REQUEST_TIMEOUT = 10
CONNECT_TIMEOUT = 1

# gRPC status codes etcd answers with (in the JSON's "code").
_OUT_OF_RANGE = 11      # "mvcc: required revision has been compacted"
_UNAVAILABLE = 14       # no leader, stopping, ...


class EtcdError(Exception):
    """etcd answered with an error; `code` is the gRPC status code."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code


class EtcdUnavailable(EtcdError):
    """No member answered, or none could reach a majority."""


class EtcdUnknownOutcome(EtcdError):
    """A write whose answer never came: it may or may not have happened."""


def _never_sent(error: requests.RequestException) -> bool:
    """No connection was made, so the request surely did nothing. A reset or
    a read timeout after sending is no such proof."""
    return isinstance(error, requests.ConnectTimeout) or (
        isinstance(error, requests.ConnectionError) and "NewConnectionError" in repr(error))


class Compacted(EtcdError):
    """The revision asked for is older than etcd's compaction: its history is gone."""

    def __init__(self, message: str, compact_revision: int = 0):
        super().__init__(message, _OUT_OF_RANGE)
        self.compact_revision = compact_revision


def encode(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def decode(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def prefix_end(prefix: str) -> str:
    """The range_end that makes a range or watch cover every key under
    `prefix`: the prefix with its last byte plus one (/registry/ -> /registry0)."""
    raw = prefix.encode()
    return encode(raw[:-1] + bytes([raw[-1] + 1]))


class EtcdClient:
    def __init__(self, endpoints: list[str]):
        if not endpoints:
            raise ValueError("at least one etcd endpoint is needed")
        self.endpoints = [url.rstrip("/") for url in endpoints]
        self._current = 0                     # the member that answered last
        self._watches: set[requests.Response] = set()
        self._watches_lock = threading.Lock()
        self._closed = False
        self._local = threading.local()       # a kept-alive Session per thread

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            # No proxy from http_proxy and the like between us and etcd, and
            # no scan of the environment on every request (a third of a call's time).
            session.trust_env = False
        return session

    def call(self, path: str, body: dict, stream: bool = False) -> requests.Response | dict:
        """POST one request, trying each member in turn while none answers.
        A write (a txn) is tried again only when it surely did not happen
        (no connection, no leader): after a timeout it may have committed,
        and doing it twice could be a 409 for the client's own create."""
        failures = []
        write = path == "kv/txn"
        for attempt in range(len(self.endpoints)):
            index = (self._current + attempt) % len(self.endpoints)
            url = self.endpoints[index] + "/v3/" + path
            try:
                response = self._session().post(url, data=json.dumps(body), stream=stream,
                                                timeout=(CONNECT_TIMEOUT, None if stream else REQUEST_TIMEOUT))
            except requests.RequestException as error:
                if write and not _never_sent(error):
                    raise EtcdUnknownOutcome(f"etcd did not say whether the write happened: {self.endpoints[index]}: "
                                             f"{type(error).__name__}") from None
                failures.append(f"{self.endpoints[index]}: {type(error).__name__}")
                continue
            answer = response if stream and response.ok else _json(response)
            if isinstance(answer, dict) and "error" in answer:
                code = int(answer.get("code", 0))
                if write and "timed out" in answer["error"]:
                    raise EtcdUnknownOutcome(f"etcd did not say whether the write happened: {answer['error']}")
                if code == _UNAVAILABLE or "timed out" in answer["error"] or "no leader" in answer["error"]:
                    failures.append(f"{self.endpoints[index]}: {answer['error']}")
                    continue                  # another member may still have a majority
                if code == _OUT_OF_RANGE and "compacted" in answer["error"]:
                    raise Compacted(answer["error"])
                raise EtcdError(answer["error"], code)
            self._current = index
            return answer
        raise EtcdUnavailable("etcd is unavailable: " + "; ".join(failures), _UNAVAILABLE)

    # ----- the four calls -----

    def range(self, key: str, prefix: bool = False, revision: int = 0, count_only: bool = False) -> dict:
        """One key, or every key under a prefix, as of `revision` (0: now)."""
        body = {"key": encode(key)}
        if prefix:
            body["range_end"] = prefix_end(key)
        if revision:
            body["revision"] = str(revision)
        if count_only:
            body["count_only"] = True
        return self.call("kv/range", body)

    def txn(self, compare: list[dict], success: list[dict], failure: list[dict] = ()) -> dict:
        """All or nothing: if every compare holds, do `success`, else `failure`."""
        return self.call("kv/txn", {"compare": compare, "success": success, "failure": list(failure)})

    def watch(self, prefix: str, start_revision: int) -> Iterator[dict]:
        """Every change under `prefix` from `start_revision` on, as etcd's
        watch responses (each with `events` and `header.revision`). Ends when
        the connection does; raises Compacted if the start is too old."""
        request = {"create_request": {"key": encode(prefix), "range_end": prefix_end(prefix),
                                      "start_revision": str(start_revision), "prev_kv": True,
                                      "progress_notify": True}}
        response = self.call("watch", request, stream=True)
        with self._watches_lock:
            if self._closed:                  # close() came while this watch was being opened
                response.close()
                return
            self._watches.add(response)
        try:
            for line in response.iter_lines():
                if not line:
                    continue
                message = json.loads(line)
                if "result" not in message:       # the gateway streams an error as {"error": {...}}
                    error = message.get("error") or {}
                    raise EtcdError(f"etcd's watch failed: {error.get('message') or message}", int(error.get("code", 0)))
                result = message["result"]
                if result.get("compact_revision"):
                    raise Compacted(f"etcdserver: mvcc: required revision has been compacted "
                                    f"(watch from {start_revision}, compacted at {result['compact_revision']})",
                                    int(result["compact_revision"]))
                if result.get("canceled"):
                    raise EtcdError(f"etcd cancelled the watch: {result.get('cancel_reason', 'no reason given')}")
                yield result
        except (requests.RequestException, ValueError, AttributeError, OSError):
            # The member went away (mid-line), or close() closed the stream
            # under us (http.client then finds no file to read: AttributeError).
            return
        finally:
            with self._watches_lock:
                self._watches.discard(response)
            response.close()

    def close(self) -> None:
        """End every open watch: their loops see the stream end. (Shut the
        socket down: closing a response that another thread reads blocks.)"""
        with self._watches_lock:
            self._closed = True
            watches = list(self._watches)
        for response in watches:
            sock = getattr(getattr(response.raw, "_connection", None), "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass                      # already gone

    def compact(self, revision: int) -> None:
        self.call("kv/compaction", {"revision": str(revision), "physical": True})

    def status(self) -> dict:
        return self.call("maintenance/status", {})


def _json(response: requests.Response) -> dict:
    try:
        return response.json()
    except ValueError:
        return {"error": f"HTTP {response.status_code} from etcd's gateway: {response.text[:200]}",
                "code": _UNAVAILABLE if response.status_code >= 500 else 0}
