"""A small client for the API server, shared by every component.

Callers name what they want the way the API does, by group/version, plural,
namespace and name, and the client builds the URL:

    client.get("v1", "pods", "default", "web")          GET /api/v1/namespaces/default/pods/web
    client.list("apps/v1", "deployments")                GET /apis/apps/v1/deployments
    client.list("v1", "pods", field_selector="spec.nodeName=node1")
    client.update_status("v1", "nodes", node)            PUT /api/v1/nodes/node1/status

Errors come back from the server as a `Status` object; the client raises them
as `APIStatusError` (or a subclass: NotFound, Conflict, AlreadyExists,
Invalid, Gone) whose message says which object it was about, so a log line
reads `pods "web" in namespace "default": 409 Conflict: ...`.

Retries. A read (GET, list) that cannot reach the server, or that the server
asks us to repeat (429, 503, 504), is tried again a few times with back-off:
reading twice does no harm. A write is not, except when the connection was
never made at all: if a create or a PATCH was sent and the reply was lost,
we do not know whether it happened, and sending it again could create a
second Event, append to a list twice, or fail with AlreadyExists for our own
object. The caller (a reconcile loop) is the one who can read the current
state and decide, so it gets the error.

Watches are the one streaming call: `watch(...)` returns a `Watch`, an
iterator of (type, object) pairs that ends when the server closes the stream
at timeoutSeconds, raises `WatchExpired` when the server says the version we
asked for is too old (410 Gone), and raises `APIConnectionError` if the
connection drops. common/client/informer.py builds on it.

The bearer token travels in the session's headers and is never logged or
put in an error message.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Iterator
from urllib.parse import quote

import requests
import urllib3

from common.client.backoff import Backoff
from common.client.kubeconfig import Connection, KubeconfigError, from_args
from common.log import get_logger

log = get_logger("client")

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = {"merge": MERGE_PATCH, "strategic": STRATEGIC_MERGE_PATCH, "json": JSON_PATCH}

# Codes with which the server says "not now, try again": safe to repeat for a read.
RETRY_CODES = {429, 503, 504}


# ---------------------------------------------------------------- errors

class APIConnectionError(Exception):
    """The server could not be reached, or a stream was cut off."""


class APIStatusError(Exception):
    """The server answered with a failure Status."""

    def __init__(self, code: int, reason: str, message: str, what: str = "", status: dict | None = None):
        self.code = code
        self.reason = reason
        self.message = message
        self.what = what                  # e.g. 'pods "web" in namespace "default"'
        self.status = status or {}
        prefix = f"{what}: " if what else ""
        super().__init__(f"{prefix}{code} {reason}: {message}")

    @property
    def retry_after(self) -> float | None:
        seconds = (self.status.get("details") or {}).get("retryAfterSeconds")
        return float(seconds) if isinstance(seconds, (int, float)) else None


class NotFound(APIStatusError):
    """404"""


class AlreadyExists(APIStatusError):
    """409 AlreadyExists: a create found the name taken."""


class Conflict(APIStatusError):
    """409 Conflict: our resourceVersion is stale; read again and retry."""


class Invalid(APIStatusError):
    """422: the object failed validation; `status["details"]["causes"]` has the fields."""


class Gone(APIStatusError):
    """410: the resourceVersion we asked for is older than the server keeps."""


class WatchExpired(Gone):
    """A watch's ERROR event with code 410: list again, then watch from the new version."""


def status_error(status: dict, what: str = "", code: int | None = None) -> APIStatusError:
    """The exception for a failure Status (subclass chosen by code and reason)."""
    code = int(status.get("code") or code or 0)
    reason = status.get("reason") or ""
    message = status.get("message") or ""
    if code == 404:
        cls = NotFound
    elif code == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif code == 422:
        cls = Invalid
    elif code == 410:
        cls = Gone
    else:
        cls = APIStatusError
    return cls(code, reason, message, what, status)


def describe(plural: str, group_version: str, namespace: str | None = None, name: str | None = None) -> str:
    """How kubectl names an object: `deployments.apps "web" in namespace "default"`."""
    group = group_version.rpartition("/")[0]
    text = f"{plural}.{group}" if group else plural
    if name:
        text += f' "{name}"'
    if namespace:
        text += f' in namespace "{namespace}"'
    return text


# ---------------------------------------------------------------- the client

class APIClient:
    def __init__(self, connection: Connection, timeout: float = 30.0, read_retries: int = 4,
                 backoff: Backoff | None = None, user_agent: str = "groundup"):
        self.connection = connection
        self.timeout = timeout
        self.read_retries = read_retries
        self._backoff = backoff or Backoff(initial=0.2, maximum=2.0)
        self._session = connection.session()
        self._session.headers["User-Agent"] = user_agent
        # Several informers' watches and the component's own calls share one
        # session: give it enough pooled connections for all of them.
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=32)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def __repr__(self) -> str:
        return f"APIClient({self.connection!r})"     # Connection's repr hides the token

    # ------------------------------------------------ addressing

    @staticmethod
    def path(group_version: str, plural: str, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """/api/v1/... for the core group ("v1"), /apis/GROUP/VERSION/... for the others."""
        base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        parts = [base]
        if namespace:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(plural)
        if name:
            parts.append(quote(name, safe=""))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    # ------------------------------------------------ reads (retried)

    def get(self, group_version: str, plural: str, namespace: str | None, name: str,
            subresource: str | None = None) -> dict:
        what = describe(plural, group_version, namespace, name)
        return self.request("GET", self.path(group_version, plural, namespace, name, subresource), what=what)

    def list(self, group_version: str, plural: str, namespace: str | None = None, *,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, continue_: str | None = None) -> dict:
        """The List object: `items` and `metadata.resourceVersion` (watch from there)."""
        params = _selectors(label_selector, field_selector)
        if limit:
            params["limit"] = str(limit)
        if continue_:
            params["continue"] = continue_
        return self.request("GET", self.path(group_version, plural, namespace), params=params,
                            what=describe(plural, group_version, namespace))

    # ------------------------------------------------ writes (not retried once sent)

    def create(self, group_version: str, plural: str, obj: dict, namespace: str | None = None) -> dict:
        """POST to the collection; namespace defaults to obj's metadata.namespace."""
        meta = obj.get("metadata") or {}
        namespace = namespace or meta.get("namespace")
        what = describe(plural, group_version, namespace, meta.get("name") or meta.get("generateName"))
        return self.request("POST", self.path(group_version, plural, namespace), body=obj, what=what)

    def create_subresource(self, group_version: str, plural: str, namespace: str | None, name: str,
                           subresource: str, body: dict) -> dict:
        """POST to a subresource, such as a pod's binding."""
        return self.request("POST", self.path(group_version, plural, namespace, name, subresource), body=body,
                            what=describe(plural, group_version, namespace, name))

    def update(self, group_version: str, plural: str, obj: dict) -> dict:
        """PUT the whole object. Its metadata.resourceVersion makes this a
        compare-and-swap: if someone wrote in between, Conflict is raised."""
        return self._put(group_version, plural, obj, None)

    def update_status(self, group_version: str, plural: str, obj: dict) -> dict:
        """PUT to the status subresource: only .status changes."""
        return self._put(group_version, plural, obj, "status")

    def _put(self, group_version, plural, obj, subresource):
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
        if not name:
            raise ValueError(f"cannot update {plural}: the object has no metadata.name")
        return self.request("PUT", self.path(group_version, plural, namespace, name, subresource), body=obj,
                            what=describe(plural, group_version, namespace, name))

    def patch(self, group_version: str, plural: str, namespace: str | None, name: str, patch,
              strategy: str = "merge", subresource: str | None = None) -> dict:
        """strategy: "merge" (RFC 7386), "strategic" (lists merge by key, as
        kubectl apply does) or "json" (RFC 6902, a list of operations)."""
        if strategy not in PATCH_TYPES:
            raise ValueError(f"patch strategy must be one of {', '.join(PATCH_TYPES)}, not {strategy!r}")
        return self.request("PATCH", self.path(group_version, plural, namespace, name, subresource),
                            body=patch, content_type=PATCH_TYPES[strategy],
                            what=describe(plural, group_version, namespace, name))

    def delete(self, group_version: str, plural: str, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict | None = None) -> dict:
        """DELETE with DeleteOptions. Returns the object (still there, marked
        with deletionTimestamp, if it has a grace period or finalizers) or a
        success Status."""
        options: dict = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = preconditions
        return self.request("DELETE", self.path(group_version, plural, namespace, name), body=options,
                            what=describe(plural, group_version, namespace, name))

    # ------------------------------------------------ watch

    def watch(self, group_version: str, plural: str, namespace: str | None = None, *,
              resource_version: str | None = None, timeout_seconds: int | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              allow_bookmarks: bool = True) -> "Watch":
        """Open a watch. Without resource_version the server first sends every
        current object as ADDED; with one, only the changes after it.

        The opening request is not retried: the informer decides whether to
        reconnect, re-list or give up."""
        params = _selectors(label_selector, field_selector)
        params["watch"] = "true"
        if resource_version:
            params["resourceVersion"] = str(resource_version)
        if timeout_seconds:
            params["timeoutSeconds"] = str(int(timeout_seconds))
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        what = describe(plural, group_version, namespace)
        # The server ends the stream at timeoutSeconds; if it has gone silent
        # well after that (a half-open connection), give up reading.
        read_timeout = timeout_seconds + 30 if timeout_seconds else None
        url = self.connection.server + self.path(group_version, plural, namespace)
        try:
            # verify= on each call: requests lets REQUESTS_CA_BUNDLE or
            # CURL_CA_BUNDLE in the environment override the session's CA.
            response = self._session.get(url, params=params, stream=True, verify=self._session.verify,
                                         timeout=(min(self.timeout, 10), read_timeout))
        except requests.RequestException as error:
            raise APIConnectionError(f"watch {what}: cannot reach {self.connection.server}: {_short(error)}") from None
        if response.status_code != 200:
            try:
                raise _error_from_response(response, what)
            finally:
                response.close()
        return Watch(response, what)

    # ------------------------------------------------ one request

    def request(self, method: str, path: str, *, body=None, params: dict | None = None,
                content_type: str = "application/json", what: str = "") -> dict:
        """Send one request and return the decoded JSON reply, or raise."""
        url = self.connection.server + path
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type
        key = object()                    # this call's own back-off sequence
        attempt = 0
        try:
            while True:
                attempt += 1
                try:
                    response = self._session.request(method, url, data=data, params=params,
                                                     headers=headers, timeout=self.timeout,
                                                     verify=self._session.verify)
                except requests.RequestException as error:
                    if attempt > self.read_retries or not _may_retry(method, error):
                        raise APIConnectionError(f"{method} {what or path}: cannot reach "
                                                 f"{self.connection.server}: {_short(error)}") from None
                    delay = self._backoff.next(key)
                    log.warning("request failed, retrying", obj=what or path, method=method,
                                error=type(error).__name__, retry_in=f"{delay:.1f}s")
                    time.sleep(delay)
                    continue
                if response.status_code < 400:
                    return response.json() if response.content else {}
                error = _error_from_response(response, what)
                if method == "GET" and error.code in RETRY_CODES and attempt <= self.read_retries:
                    delay = min(error.retry_after or self._backoff.next(key), 5.0)
                    time.sleep(delay)
                    continue
                raise error
        finally:
            self._backoff.forget(key)

    def close(self) -> None:
        self._session.close()


# ---------------------------------------------------------------- a watch stream

class Watch:
    """An open watch: iterate for (type, object); close() from any thread stops it."""

    def __init__(self, response: requests.Response, what: str):
        self._response = response
        self.what = what
        self._closed = False
        self._lock = threading.Lock()     # the socket is not closed while close() shuts it down

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        try:
            for line in self._response.iter_lines():
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    error = status_error(obj, f"watch {self.what}")
                    if error.code == 410:
                        raise WatchExpired(error.code, error.reason, error.message, error.what, obj)
                    raise error
                yield kind, obj
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError, ValueError, KeyError,
                AttributeError) as error:
            # ValueError: a line cut in half when the server died mid-event;
            # AttributeError: http.client reading a response close() just tore down.
            if self._closed:
                return                        # we hung up ourselves: a clean end
            raise APIConnectionError(f"watch {self.what} dropped: {_short(error)}") from None
        finally:
            with self._lock:
                self._response.close()

    def close(self) -> None:
        """Hang up. Safe from another thread: shutting the socket down wakes
        a reader blocked on it (closing alone would not, on Linux)."""
        self._closed = True
        with self._lock:
            try:
                # A second socket object on a duplicate of the descriptor:
                # shutdown() acts on the connection both share.
                duplicate = socket.socket(fileno=os.dup(self._response.raw.fileno()))
            except (OSError, ValueError, AttributeError):
                pass                          # already closed
            else:
                try:
                    duplicate.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                duplicate.close()
            self._response.close()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------- helpers

def _selectors(label_selector: str | None, field_selector: str | None) -> dict:
    params = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


def _may_retry(method: str, error: requests.RequestException) -> bool:
    """Reads always; writes only when the request never left this machine."""
    if method == "GET":
        return True
    if isinstance(error, requests.ConnectTimeout):
        return True
    cause = error.args[0] if error.args else None
    reason = getattr(cause, "reason", None)      # urllib3's MaxRetryError wraps the real cause
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def _error_from_response(response: requests.Response, what: str) -> APIStatusError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return status_error(body, what, response.status_code)
    # Not a Status (a proxy in between?): keep the start of the body for the reader.
    text = response.text[:200].strip() or response.reason
    return status_error({"code": response.status_code, "reason": response.reason or "", "message": text}, what)


def _short(error: Exception) -> str:
    """One line about a connection error, without urllib3's nested reprs."""
    cause = error.args[0] if error.args else error
    reason = getattr(cause, "reason", None)
    return f"{type(error).__name__}: {reason or cause}"


def client_from_args(args, user_agent: str, log) -> APIClient | None:
    """The API client the flags (common.client.kubeconfig.add_flags) describe, or
    None after logging why not (the caller exits with 2, a usage error)."""
    try:
        return APIClient(from_args(args), user_agent=user_agent)
    except KubeconfigError as error:
        log.error("cannot find the API server", error=str(error))
        return None
