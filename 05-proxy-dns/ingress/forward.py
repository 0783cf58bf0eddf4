"""The forward: a small threaded HTTP/1.1 reverse proxy that streams.

Why our own and not a library: the lesson is the forward itself (read the
request, pick a pod, pass the bytes on), and the standard library has the
two halves already: http.server parses what the client sends, http.client
speaks to the pod. Between them we only move bytes, 64 KiB at a time, so a
1 GB upload or download passes through a few buffers, never whole. A
thread per client connection is the service proxy's model too (proxy.py);
it is simple to follow, and fast enough for a lesson (BENCHMARKS.md has
the figures against a direct connection).

What it adds to a request, as ingress-nginx does: X-Forwarded-For (the
client's address, after any the client sent), X-Forwarded-Host (the Host
the client asked for), X-Forwarded-Proto (http or https), X-Forwarded-Port
and X-Real-IP. What it answers itself:

    404  no rule matches and there is no default backend
    503  the Service is missing, lacks the port, or has no ready endpoint
    502  every ready endpoint refused or reset the connection
    504  the endpoint did not answer within --upstream-timeout (or no
         endpoint accepted a connection within --connect-timeout)
    413  the body is larger than --max-body-size
    400  no Host header (HTTP/1.1 requires one), a malformed body, or
         framing two parties could read differently (below)
    501  a transfer coding other than chunked

Request smuggling: if the proxy and the pod could disagree on where a
request's body ends, a client could hide a second request inside the
first one's body, one the proxy never routed. So, as RFC 9112 section 6.3
asks, a request with both Content-Length and Transfer-Encoding, with two
Content-Length or two Host headers, or whose last transfer coding is not
chunked, gets a 400 and its connection is closed; and the framing the pod
sees is the proxy's own (the client's Content-Length and
Transfer-Encoding are not passed on).
"""
from __future__ import annotations

import http.client
import itertools
import re
import select
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from ingress.match import match
from ingress.routes import Backend, RoutingTable

CHUNK = 64 * 1024
# Headers about one connection, not the request: never passed on (RFC 9110 7.6.1).
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
              "te", "trailer", "upgrade", "expect"}
FORWARDED = {"x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip"}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# A request with one of these may be sent again if a pod dropped it
# (RFC 9110 9.2.2); a POST or PATCH may have been applied: never re-sent.
IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"}
FRAMING = {"content-length", "transfer-encoding"}   # the proxy sets its own (see Request smuggling)
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")      # hex digits only: no sign, no 0x, no _
MAX_IDLE_PER_ENDPOINT = 32


class UpstreamFailed(Exception):
    """No endpoint took the request: (status, reason) for the client."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


# [START ingress-round-robin]
class RoundRobin:
    """Each backend's endpoints in turn; a refused one sends the request to
    the next, so the order to try is the whole list, starting at the turn."""

    def __init__(self):
        self._turns: dict[Backend, itertools.count] = {}
        self._lock = threading.Lock()

    def order(self, backend: Backend, endpoints: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
        with self._lock:
            turn = next(self._turns.setdefault(backend, itertools.count()))
        start = turn % len(endpoints)
        return list(endpoints[start:] + endpoints[:start])
# [END ingress-round-robin]


class UpstreamConnection(http.client.HTTPConnection):
    """A connection to a pod that sends each piece at once (no Nagle: see
    IngressHandler), so a body's last piece never waits for an ACK.

    Two timeouts, as ingress-nginx has (proxy-connect-timeout 5 s): a short
    one to connect, so a pod that is gone without a word (its SYNs
    unanswered) costs a request a few seconds before the next pod is tried,
    and the long one for the answer, which a busy pod may need."""

    def __init__(self, host: str, port: int, connect_timeout: float, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.connect_timeout = connect_timeout

    def connect(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), self.connect_timeout)
        self.sock.settimeout(self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Pool:
    """Idle keep-alive connections to endpoints, reused for the next request
    (a new TCP connection per request would cost the pod a thread each)."""

    def __init__(self, timeout: float, connect_timeout: float = 5.0):
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._idle: dict[tuple[str, int], list[UpstreamConnection]] = {}
        self._current: set[tuple[str, int]] | None = None   # the addresses of the latest table
        self._lock = threading.Lock()

    def get(self, endpoint: tuple[str, int]) -> tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it was used before (it may have been closed since)."""
        while True:
            with self._lock:
                idle = self._idle.get(endpoint)
                conn = idle.pop() if idle else None
            if conn is None:
                return self.new(endpoint), False
            if not closed_by_peer(conn):
                return conn, True
            conn.close()

    def new(self, endpoint: tuple[str, int]) -> UpstreamConnection:
        return UpstreamConnection(*endpoint, connect_timeout=self.connect_timeout, timeout=self.timeout)

    def keep_only(self, table: RoutingTable) -> None:
        """Close the idle connections to addresses no backend has any more
        (called on each new routing table): pods come and go, and each
        address left behind would hold its sockets open for good."""
        current = {e for target in table.targets.values() for e in target.endpoints}
        with self._lock:
            self._current = current
            gone = [e for e in self._idle if e not in current]
            closing = [conn for e in gone for conn in self._idle.pop(e)]
        for conn in closing:
            conn.close()

    def put(self, endpoint: tuple[str, int], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            # A request in flight during a rebuild may end after it: not kept if its pod left meanwhile.
            wanted = self._current is None or endpoint in self._current
            idle = self._idle.setdefault(endpoint, []) if wanted else None
            if idle is not None and len(idle) < MAX_IDLE_PER_ENDPOINT:
                idle.append(conn)
                return
        conn.close()


def closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """An idle connection with something to read has been closed by the pod
    (an idle connection has nothing to say): do not send on it."""
    if conn.sock is None:
        return True
    readable, _, _ = select.select([conn.sock], [], [], 0)
    return bool(readable)


class IngressServer(ThreadingHTTPServer):
    """One listening port (HTTP, or HTTPS with a TLS context)."""
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, table: Callable[[], RoutingTable], tls: ssl.SSLContext | None = None,
                 max_body_size: int = 0, upstream_timeout: float = 60.0, client_timeout: float = 60.0,
                 connect_timeout: float = 5.0, log=None,
                 match: Callable[[RoutingTable, str, str], Backend | None] = match):
        # match: the routing rules (ingress/match.py); chapter 05's Build it
        # yourself passes the learner's own.
        self.table, self.tls, self.log, self.match = table, tls, log, match
        self.scheme = "https" if tls else "http"
        self.max_body_size, self.client_timeout = max_body_size, client_timeout
        self.balancer, self.pool = RoundRobin(), Pool(upstream_timeout, connect_timeout)
        super().__init__(address, IngressHandler)

    def handle_error(self, request, client_address) -> None:
        """One log line, not socketserver's traceback on stderr."""
        if self.log:
            self.log.warning("connection failed", client=client_address[0], error=repr(sys.exc_info()[1]))

    def get_request(self):
        """Accept; with TLS the handshake waits for the client's own thread
        (setup below), so a client that stalls in it blocks nobody."""
        sock, address = super().get_request()
        if self.tls:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class IngressHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"          # keep-alive with the client
    # Headers and body leave in separate writes: with Nagle's algorithm the
    # body would wait for the client's delayed ACK of the headers (40 ms).
    disable_nagle_algorithm = True
    server: IngressServer
    server_version = "groundup-ingress"

    def setup(self) -> None:
        self.timeout = self.server.client_timeout     # a client that stalls is let go after this
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            try:
                self.connection.do_handshake()
            except (OSError, ssl.SSLError):
                self.close_connection = True
                self.rfile = _Empty()                 # handle() then reads nothing and ends

    def log_message(self, format, *args) -> None:    # noqa: A002: the name http.server uses
        pass                                          # one line per request would drown the log; see -v

    def parse_request(self) -> bool:
        """http.server's parse, then a refusal of any framing the pod could
        read otherwise than we do (module docstring: Request smuggling)."""
        if not super().parse_request():
            return False
        problem, status = self.framing_problem()
        if problem:
            self.close_connection = True                   # where this request ends is unknown
            self.answer(status, problem)
            return False
        return True

    def framing_problem(self) -> tuple[str, int]:
        """What is wrong with the request's Host and body framing, and the status; ("", 0) if nothing."""
        for name in ("Host", "Content-Length"):
            if len(self.headers.get_all(name) or []) > 1:
                return f"more than one {name} header", 400
        encodings = self.headers.get_all("Transfer-Encoding")
        if encodings is None:
            return "", 0
        if self.headers.get("Content-Length") is not None:
            return "Content-Length and Transfer-Encoding together (RFC 9112 section 6.3)", 400
        codings = [c.strip().lower() for value in encodings for c in value.split(",") if c.strip()]
        if not codings or codings[-1] != "chunked":
            return f"Transfer-Encoding {', '.join(encodings)!r}: chunked must be the last coding", 400
        if len(codings) > 1:
            return f"Transfer-Encoding {', '.join(encodings)!r}: only chunked is supported", 501
        return "", 0

    # [START forward]
    def proxy(self) -> None:
        """Route one request: match, pick an endpoint, stream both ways."""
        host = self.headers.get("Host")
        if not host:
            return self.answer(400, "a Host header is required")
        table = self.server.table()
        backend = self.server.match(table, host, self.path)
        if backend is None:
            return self.answer(404, "default backend - 404: no rule matches this host and path")
        target = table.target(backend)
        if not target.endpoints:
            return self.answer(503, f"no endpoint for {backend}: {target.problem}")
        length = self.body_length()
        if length is None:
            return                                     # answered already (400 or 413)
        try:
            response, conn, endpoint = self.send_upstream(backend, target.endpoints, length)
        except UpstreamFailed as failed:
            return self.answer(failed.status, failed.reason)
        self.relay(response, conn, endpoint)
    # [END forward]

    def body_length(self) -> int | str | None:
        """The request body's length, "chunked", or None once refused."""
        if self.headers.get("Transfer-Encoding") is not None:
            return "chunked"                               # and nothing else: framing_problem saw to that
        text = self.headers.get("Content-Length", "0").strip() or "0"
        if not (text.isascii() and text.isdigit()):
            self.answer(400, f"Content-Length {text!r} is not a number")
            return None
        length = int(text)
        if self.server.max_body_size and length > self.server.max_body_size:
            self.answer(413, f"the body ({length} bytes) is larger than the limit "
                             f"({self.server.max_body_size} bytes, --max-body-size)")
            return None
        return length

    def upstream_headers(self, length: int | str) -> list[tuple[str, str]]:
        named_in_connection = {h.strip().lower() for h in self.headers.get("Connection", "").split(",")}
        client_ip = self.client_address[0]
        earlier = self.headers.get("X-Forwarded-For")
        dropped = HOP_BY_HOP | FORWARDED | FRAMING | named_in_connection
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in dropped]
        # The framing of what we send, as we will send it.
        if length == "chunked":
            headers.append(("Transfer-Encoding", "chunked"))
        elif length or self.headers.get("Content-Length") is not None:
            headers.append(("Content-Length", str(length)))
        local_port = self.connection.getsockname()[1]
        headers += [("X-Forwarded-For", f"{earlier}, {client_ip}" if earlier else client_ip),
                    ("X-Forwarded-Host", self.headers["Host"]),
                    ("X-Forwarded-Proto", self.server.scheme),
                    ("X-Forwarded-Port", str(local_port)),
                    ("X-Real-IP", client_ip)]
        return headers

    # [START send-upstream]
    def send_upstream(self, backend: Backend, endpoints, length):
        """Send the request to the first endpoint in turn that takes it; the
        response, with its connection and endpoint.

        Another endpoint is tried when this one did not accept the connection
        (refused, or silent for --connect-timeout): it has seen nothing. Once
        the request went out, a pod that drops it may have acted on it, so it
        is sent again only if its method is idempotent (RFC 9110 9.2.2) and
        it had no body (a streamed body cannot be sent twice)."""
        headers = self.upstream_headers(length)
        again = self.command in IDEMPOTENT and length == 0
        last_error, timed_out = "no endpoint", False
        for endpoint in self.server.balancer.order(backend, endpoints):
            where = f"{endpoint[0]}:{endpoint[1]}"
            conn, reused = self.server.pool.get(endpoint)
            try:
                if conn.sock is None:
                    conn.connect()
            except OSError as error:                       # refused, unreachable, or no SYN-ACK in time
                conn.close()
                timed_out = isinstance(error, TimeoutError)
                last_error = f"{where}: {'no connection within --connect-timeout' if timed_out else error}"
                continue
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders()
                self.stream_body(conn, length)
                return conn.getresponse(), conn, endpoint
            except ClientGone as gone:
                conn.close()
                raise UpstreamFailed(gone.status, gone.reason)
            except TimeoutError:
                conn.close()
                raise UpstreamFailed(504, f"{where} did not answer in time")
            except (OSError, http.client.HTTPException) as error:   # reset, closed, or not HTTP
                conn.close()
                last_error, timed_out = f"{where}: {error!r}", False
                if not again:
                    break                                  # it may have acted on it: not twice
                if reused:                                 # a pooled connection the pod had closed
                    return self._retry_fresh(endpoint, headers)
        if timed_out:
            raise UpstreamFailed(504, f"no endpoint of {backend} accepted a connection ({last_error})")
        raise UpstreamFailed(502, f"no endpoint of {backend} took the request ({last_error})")
    # [END send-upstream]

    def _retry_fresh(self, endpoint, headers):
        conn = self.server.pool.new(endpoint)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders()
            return conn.getresponse(), conn, endpoint
        except TimeoutError:
            conn.close()
            raise UpstreamFailed(504, f"{endpoint[0]}:{endpoint[1]} did not answer in time")
        except (OSError, http.client.HTTPException) as error:
            conn.close()
            raise UpstreamFailed(502, f"{endpoint[0]}:{endpoint[1]}: {error!r}")

    # [START stream-body]
    def stream_body(self, conn: http.client.HTTPConnection, length: int | str) -> None:
        """The request body, piece by piece, as it arrives: never held whole."""
        if length == "chunked":
            sent = 0
            for piece in self.chunks():
                sent += len(piece)
                if self.server.max_body_size and sent > self.server.max_body_size:
                    raise ClientGone(f"the body is larger than the limit ({self.server.max_body_size} bytes, "
                                     "--max-body-size)", 413)
                conn.send(piece)
            return
        left = length
        while left > 0:
            piece = self._read(min(CHUNK, left))
            conn.send(piece)
            left -= len(piece)
    # [END stream-body]

    def _read(self, size: int) -> bytes:
        try:
            piece = self.rfile.read1(size) if hasattr(self.rfile, "read1") else self.rfile.read(size)
        except (TimeoutError, OSError) as error:
            raise ClientGone(str(error)) from error
        if not piece:
            raise ClientGone("the client closed the connection in the middle of its body")
        return piece

    def chunks(self):
        """A chunked body as it came: each chunk re-sent with its framing."""
        while True:
            line = self._readline()
            size_text = line.split(b";", 1)[0].strip()
            if not CHUNK_SIZE.fullmatch(size_text):       # int() alone would take "-1", "0x5", "1_0"
                raise ClientGone(f"bad chunk size {size_text!r}")
            size = int(size_text, 16)
            if size == 0:
                trailer = b""
                while (line := self._readline()) not in (b"\r\n", b"\n"):
                    trailer += line
                yield b"0\r\n" + trailer + b"\r\n"
                return
            yield f"{size:x}\r\n".encode()
            left = size
            while left:
                piece = self._read(min(CHUNK, left))
                left -= len(piece)
                yield piece
            self._readline()                               # the CRLF after the data
            yield b"\r\n"

    def _readline(self) -> bytes:
        try:
            line = self.rfile.readline(1024)
        except (TimeoutError, OSError) as error:
            raise ClientGone(str(error)) from error
        if not line:
            raise ClientGone("the client closed the connection in the middle of its body")
        return line

    # [START relay-response]
    def relay(self, response: http.client.HTTPResponse, conn, endpoint) -> None:
        """The pod's answer to the client as it comes: status, headers, body."""
        if self.server.log:                                # with -v: a line per request
            self.server.log.debug("request", host=self.headers["Host"], path=self.path,
                                  endpoint=f"{endpoint[0]}:{endpoint[1]}", status=response.status)
        self.send_response_only(response.status, response.reason)
        named_in_connection = {h.strip().lower() for h in (response.getheader("Connection") or "").split(",")}
        dropped = HOP_BY_HOP | named_in_connection | {"transfer-encoding"}
        for name, value in response.getheaders():
            if name.lower() not in dropped:
                self.send_header(name, value)
        # No length known ahead (chunked, or "until close"): chunked to an
        # HTTP/1.1 client; an HTTP/1.0 one knows no chunked (RFC 9112 6.1),
        # so it gets the bytes as they come and the end of the connection.
        unframed = response.length is None and self.command != "HEAD" and response.status not in (204, 304)
        rechunk = unframed and self.request_version != "HTTP/1.0"
        if rechunk:
            self.send_header("Transfer-Encoding", "chunked")
        elif unframed:
            self.send_header("Connection", "close")        # sets close_connection too
        self.end_headers()
        try:
            while piece := response.read1(CHUNK):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if rechunk else piece)
            complete = not response.length                 # a Content-Length not all there: cut short
            if rechunk and complete:
                self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):       # e.g. IncompleteRead: a chunked answer cut short
            complete = False
        if not complete:
            self.close_connection = True                   # the client must see the answer is not whole
            conn.close()
            return
        response.close()                                   # read to the end: the connection is free again
        if response.will_close:
            conn.close()
        else:
            self.server.pool.put(endpoint, conn)
    # [END relay-response]

    def answer(self, status: int, text: str) -> None:
        """An answer of the controller's own, as plain text."""
        body = (text + "\n").encode()
        if self.headers is not None and (self.headers.get("Content-Length", "0") not in ("", "0")
                                         or self.headers.get("Transfer-Encoding")):
            self.close_connection = True                   # the body is unread: this connection is spent
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except OSError:
            self.close_connection = True
        if self.server.log and status >= 500:
            self.server.log.warning("request failed", status=status, host=self.headers.get("Host", ""),
                                    path=self.path, reason=text)


class ClientGone(Exception):
    """The client's body ended early, stalled, was malformed or too large."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason, self.status = f"the request body: {reason}", status


class _Empty:
    """An rfile with nothing in it: after a failed TLS handshake."""

    def readline(self, *args) -> bytes:
        return b""

    def read(self, *args) -> bytes:
        return b""

    def close(self) -> None:
        pass


for _method in METHODS:
    setattr(IngressHandler, f"do_{_method}", IngressHandler.proxy)
