"""The forward: a small threaded HTTP/1.1 reverse proxy that streams.

Why our own and not a library: the lesson is the forward itself (read the
request, pick a pod, pass the bytes on). A thread per client connection is
the service proxy's model too (proxy.py), simple to follow. The bytes move
64 KiB at a time, so a 1 GB upload or download passes through a few
buffers, never whole.

Why not http.server and http.client, which the first version used: under
`make bench-05-ingress` py-spy showed them as the largest part (about 45%)
of the controller's Python time per request (BENCHMARKS.md: parsing the
request's head, and the answer's, through the email package; an
HTTPResponse and its file object per answer), so that through the controller a keep-alive client got about a
quarter of what it got straight from the pod. A proxy needs few facts from
a head: where it ends, the Host, the body's framing and the Connection
options; everything else passes on as it came. So ingress/http1.py reads a
head in one buffered recv and parses it in one pass, strictly (below), and
the pod's answer is relayed with its head and the first piece of its body
in one send. h11 (a maintained HTTP/1.1 state machine) was weighed: it
would parse for us, but into event objects per message, the same kind of
per-request cost; the framing rules are short and are part of the lesson.

What it adds to a request, as ingress-nginx does: X-Forwarded-For (the
client's address, after any the client sent), X-Forwarded-Host (the Host
the client asked for), X-Forwarded-Proto (http or https), X-Forwarded-Port
and X-Real-IP. What it answers itself:

    404  no rule matches and there is no default backend
    503  the Service is missing, lacks the port, or has no ready endpoint
    502  every ready endpoint refused or reset the connection, or answered
         something that is not HTTP
    504  the endpoint did not answer within --upstream-timeout (or no
         endpoint accepted a connection within --connect-timeout)
    413  the body is larger than --max-body-size
    400  no Host header (HTTP/1.1 requires one), a malformed head or body,
         or framing two parties could read differently (below)
    431  a head over 64 KiB or with more than 100 fields
    501  a method it does not forward, or a transfer coding other than chunked
    505  an HTTP version other than 1.0 and 1.1

Request smuggling: if the proxy and the pod could disagree on where a
request's body ends, a client could hide a second request inside the
first one's body, one the proxy never routed. So, as RFC 9112 section 6.3
asks, a request with both Content-Length and Transfer-Encoding, with two
Content-Length or two Host headers, or whose last transfer coding is not
chunked, gets a 400 and its connection is closed; so does a head with a
folded line (obs-fold), a line not ended by CRLF, or a chunk size that is
not plain hex. The framing the pod sees is the proxy's own (the client's
Content-Length and Transfer-Encoding are not passed on).
"""
from __future__ import annotations

import itertools
import select
import socket
import socketserver
import ssl
import sys
import threading
from email.utils import formatdate
from http import HTTPStatus
from typing import Callable

from ingress.http1 import CHUNK, BadMessage, Gather, Reader, chunks, parse_head, parse_request_line, tokens
from ingress.match import match
from ingress.routes import Backend, RoutingTable

# Headers about one connection, not the request: never passed on (RFC 9110 7.6.1).
HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authenticate", b"proxy-authorization",
              b"te", b"trailer", b"upgrade", b"expect"}
FORWARDED = {b"x-forwarded-for", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-port", b"x-real-ip"}
FRAMING = {b"content-length", b"transfer-encoding"}   # the proxy sets its own (see Request smuggling)
NOT_TO_POD = HOP_BY_HOP | FORWARDED | FRAMING
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
# A request with one of these may be sent again if a pod dropped it
# (RFC 9110 9.2.2); a POST or PATCH may have been applied: never re-sent.
IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"}
MAX_IDLE_PER_ENDPOINT = 32


class UpstreamFailed(Exception):
    """No endpoint took the request: (status, reason) for the client."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


class PodStalled(Exception):
    """The pod took no more of the request body within --upstream-timeout."""


class ClientGone(Exception):
    """The client's body ended early, stalled, was malformed or too large."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason, self.status = f"the request body: {reason}", status


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


class Request:
    """What the forward needs of a client's request head, read once."""
    __slots__ = ("method", "target", "version", "fields", "index", "host", "length", "keep_alive", "options",
                 "expects_continue")

    def __init__(self, head: bytes):
        start, self.fields, self.index = parse_head(head)
        self.method, target, self.version = parse_request_line(start)
        self.target = "/" + target.lstrip("/") if target.startswith("//") else target   # as http.server did
        hosts = self.index.get(b"host", ())
        self.host = hosts[0].decode("latin-1") if len(hosts) == 1 else ""
        self.options = tokens(self.index, b"connection")
        if self.version == b"HTTP/1.1":
            self.keep_alive = b"close" not in self.options
        else:                                              # HTTP/1.0: closed after one, unless asked
            self.keep_alive = b"keep-alive" in self.options
        self.expects_continue = (self.version == b"HTTP/1.1" and b"expect" in self.index
                                 and any(v.lower() == b"100-continue" for v in self.index[b"expect"]))
        self.length = self.framing()

    def framing(self) -> int | str:
        """The body's length or "chunked"; BadMessage for any framing the pod
        could read otherwise than we do (module docstring: Request smuggling)."""
        for name in (b"host", b"content-length"):
            if len(self.index.get(name, ())) > 1:
                raise BadMessage(f"more than one {name.decode().title()} header")
        encodings = self.index.get(b"transfer-encoding")
        lengths = self.index.get(b"content-length")
        if not encodings:
            text = lengths[0].decode("latin-1") if lengths else "0"
            if not (text.isascii() and text.isdigit()):
                raise BadMessage(f"Content-Length {text!r} is not a number")
            return int(text)
        shown = ", ".join(e.decode("latin-1") for e in encodings)
        if lengths:
            raise BadMessage("Content-Length and Transfer-Encoding together (RFC 9112 section 6.3)")
        codings = [c.strip().lower() for value in encodings for c in value.split(b",") if c.strip()]
        if not codings or codings[-1] != b"chunked":
            raise BadMessage(f"Transfer-Encoding {shown!r}: chunked must be the last coding")
        if len(codings) > 1:
            raise BadMessage(f"Transfer-Encoding {shown!r}: only chunked is supported", 501)
        return "chunked"

    @property
    def has_body(self) -> bool:
        return self.length != 0


class Response:
    """The pod's answer head: the status line after the version, the fields,
    and how its body ends: a length, "chunked", or None (at the close)."""
    __slots__ = ("status", "status_line", "fields", "options", "length", "will_close")

    def __init__(self, head: bytes, method: str):
        start, self.fields, index = parse_head(head)
        if len(start) < 2 or start[0] not in (b"HTTP/1.1", b"HTTP/1.0") or not (
                len(start[1]) == 3 and start[1].isdigit()):
            raise BadMessage(f"not an HTTP/1.x status line: {b' '.join(start)[:60]!r}")
        self.status = int(start[1])
        self.status_line = start[1] + b" " + (start[2] if len(start) > 2 else b"")   # the reason may be empty
        self.options = options = tokens(index, b"connection")
        self.will_close = b"close" in options or (start[0] == b"HTTP/1.0" and b"keep-alive" not in options)
        encodings = index.get(b"transfer-encoding")
        lengths = set(index.get(b"content-length", ()))
        if method == "HEAD" or self.status in (204, 304) or self.status < 200:
            self.length = 0                                # no body, whatever the head says (RFC 9112 6.3)
        elif encodings:
            chunked = b",".join(encodings).rsplit(b",", 1)[-1].strip().lower() == b"chunked"
            self.length = "chunked" if chunked else None
        elif lengths:
            if len(lengths) > 1 or not min(lengths).isdigit():
                raise BadMessage(f"a bad Content-Length {b', '.join(lengths)[:40]!r}")
            self.length = int(min(lengths))
        else:
            self.length = None
        # Until the close, or framed both ways (a pod that could be misread): not reused.
        self.will_close = self.will_close or self.length is None or bool(encodings and lengths)


class Upstream:
    """A connection to a pod, with what was read from it ahead. It sends
    each piece at once (no Nagle: see IngressHandler.setup).

    Two timeouts, as ingress-nginx has (proxy-connect-timeout 5 s): a short
    one to connect, so a pod that is gone without a word (its SYNs
    unanswered) costs a request a few seconds before the next pod is tried,
    and the long one for the answer, which a busy pod may need."""
    __slots__ = ("sock", "reader")

    def __init__(self, endpoint: tuple[str, int], connect_timeout: float, timeout: float):
        self.sock = socket.create_connection(endpoint, connect_timeout)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = Reader(self.sock)

    def closed_by_peer(self) -> bool:
        """An idle connection with something to read has been closed by the
        pod (an idle connection has nothing to say): do not send on it."""
        if self.reader.buffer:
            return True
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)

    def close(self) -> None:
        self.sock.close()


class Pool:
    """Idle keep-alive connections to endpoints, reused for the next request
    (a new TCP connection per request would cost the pod a thread each)."""

    def __init__(self, timeout: float, connect_timeout: float = 5.0):
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._idle: dict[tuple[str, int], list[Upstream]] = {}
        self._current: set[tuple[str, int]] | None = None   # the addresses of the latest table
        self._lock = threading.Lock()

    def get(self, endpoint: tuple[str, int]) -> Upstream | None:
        """An idle connection to the endpoint, or None: connect() a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(endpoint)
                conn = idle.pop() if idle else None
            if conn is None or not conn.closed_by_peer():
                return conn
            conn.close()

    def connect(self, endpoint: tuple[str, int]) -> Upstream:
        return Upstream(endpoint, self.connect_timeout, self.timeout)

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

    def put(self, endpoint: tuple[str, int], conn: Upstream) -> None:
        with self._lock:
            # A request in flight during a rebuild may end after it: not kept if its pod left meanwhile.
            wanted = self._current is None or endpoint in self._current
            idle = self._idle.setdefault(endpoint, []) if wanted else None
            if idle is not None and len(idle) < MAX_IDLE_PER_ENDPOINT:
                idle.append(conn)
                return
        conn.close()


class IngressServer(socketserver.ThreadingTCPServer):
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


class IngressHandler(socketserver.BaseRequestHandler):
    """One client connection: its requests one after the other (keep-alive)."""
    server: IngressServer

    def setup(self) -> None:
        sock = self.request
        sock.settimeout(self.server.client_timeout)        # a client that stalls is let go after this
        # Head and body may leave in separate writes: with Nagle's algorithm
        # the second would wait for the client's delayed ACK (40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client = Reader(sock)
        client_ip = self.client_address[0]
        # The same for every request of this connection: made once.
        self.client_ip = client_ip.encode()
        self.forwarded = (f"X-Forwarded-Proto: {self.server.scheme}\r\nX-Forwarded-Port: {sock.getsockname()[1]}\r\n"
                          f"X-Real-IP: {client_ip}\r\n\r\n").encode()

    def handle(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            try:
                self.request.do_handshake()
            except (OSError, ssl.SSLError):
                return
        while self.serve_one():
            pass

    def serve_one(self) -> bool:
        """Read one request and forward it; whether the connection stays open."""
        try:
            head = self.client.head()
        except BadMessage as bad:
            return self.answer(None, bad.status, bad.reason)
        except OSError:                                    # reset, or silent past --client-timeout
            return False
        if head is None:                                   # closed between two requests: the usual end
            return False
        try:
            request = Request(head)
        except BadMessage as bad:
            return self.answer(None, bad.status, bad.reason)   # where this request ends is unknown: closed
        if request.method not in METHODS:
            return self.answer(request, 501, f"unsupported method {request.method!r}")
        return self.proxy(request)

    # [START forward]
    def proxy(self, request: Request) -> bool:
        """Route one request: match, pick an endpoint, stream both ways.
        Whether the client's connection stays open for the next request."""
        if not request.host:
            return self.answer(request, 400, "a Host header is required")
        table = self.server.table()
        backend = self.server.match(table, request.host, request.target)
        if backend is None:
            return self.answer(request, 404, "default backend - 404: no rule matches this host and path")
        target = table.target(backend)
        if not target.endpoints:
            return self.answer(request, 503, f"no endpoint for {backend}: {target.problem}")
        limit = self.server.max_body_size
        if limit and request.length != "chunked" and request.length > limit:
            return self.answer(request, 413, f"the body ({request.length} bytes) is larger than the limit "
                                             f"({limit} bytes, --max-body-size)")
        try:
            upstream, response, endpoint = self.send_upstream(request, backend, target.endpoints)
        except UpstreamFailed as failed:
            return self.answer(request, failed.status, failed.reason)
        return self.relay(request, upstream, response, endpoint)
    # [END forward]

    # [START upstream-head]
    def upstream_head(self, request: Request) -> bytes:
        """The head the pod gets: the client's fields but those about its
        connection, its framing and any X-Forwarded-* it made up; ours after."""
        dropped = NOT_TO_POD | request.options if request.options else NOT_TO_POD   # and those Connection names
        lines = [f"{request.method} {request.target} HTTP/1.1".encode("latin-1")]
        lines += [name + b": " + value for lower, name, value in request.fields if lower not in dropped]
        if request.length == "chunked":
            lines.append(b"Transfer-Encoding: chunked")
        elif request.length or b"content-length" in request.index:
            lines.append(b"Content-Length: %d" % request.length)
        earlier = b", ".join(request.index.get(b"x-forwarded-for", ()))
        lines.append(b"X-Forwarded-For: " + (earlier + b", " + self.client_ip if earlier else self.client_ip))
        lines.append(b"X-Forwarded-Host: " + request.host.encode("latin-1"))
        return b"\r\n".join(lines) + b"\r\n" + self.forwarded
    # [END upstream-head]

    # [START send-upstream]
    def send_upstream(self, request: Request, backend: Backend, endpoints):
        """Send the request to the first endpoint in turn that takes it; the
        connection, the answer's head, and the endpoint.

        Another endpoint is tried when this one did not accept the connection
        (refused, or silent for --connect-timeout): it has seen nothing. Once
        the request went out, a pod that drops it may have acted on it, so it
        is sent again only if its method is idempotent (RFC 9110 9.2.2) and
        it had no body (a streamed body cannot be sent twice)."""
        head = self.upstream_head(request)
        again = request.method in IDEMPOTENT and not request.has_body
        last_error, timed_out = "no endpoint", False
        for endpoint in self.server.balancer.order(backend, endpoints):
            where = f"{endpoint[0]}:{endpoint[1]}"
            upstream = self.server.pool.get(endpoint)
            while True:
                reused = upstream is not None
                try:
                    upstream = upstream or self.server.pool.connect(endpoint)
                except OSError as error:                   # refused, unreachable, or no SYN-ACK in time
                    timed_out = isinstance(error, TimeoutError)
                    last_error = f"{where}: {'no connection within --connect-timeout' if timed_out else error}"
                    break
                try:
                    return upstream, self.exchange(request, upstream, head), endpoint
                except ClientGone as gone:
                    upstream.close()
                    raise UpstreamFailed(gone.status, gone.reason)
                except (TimeoutError, PodStalled):
                    upstream.close()
                    raise UpstreamFailed(504, f"{where} did not answer in time")
                except (OSError, BadMessage) as error:     # reset, closed, or not HTTP
                    upstream.close()
                    last_error, timed_out = f"{where}: {error!r}", False
                    if not again:                          # it may have acted on it: not twice
                        raise UpstreamFailed(502, f"no endpoint of {backend} took the request ({last_error})")
                    if not reused:
                        break                              # the next endpoint
                    upstream = None                        # a pooled connection the pod had closed: a new one
        if timed_out:
            raise UpstreamFailed(504, f"no endpoint of {backend} accepted a connection ({last_error})")
        raise UpstreamFailed(502, f"no endpoint of {backend} took the request ({last_error})")
    # [END send-upstream]

    def exchange(self, request: Request, upstream: Upstream, head: bytes) -> Response:
        """The request to the pod, its body streamed; the pod's answer head."""
        if request.length == 0:
            upstream.sock.sendall(head)
        elif request.length != "chunked" and len(self.client.buffer) >= request.length and not (
                request.expects_continue):
            upstream.sock.sendall(head + self.client.read1(request.length))   # all here: one send
        else:
            upstream.sock.sendall(head)
            if request.expects_continue:                  # the client waits for this before its body
                self.client.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.stream_body(request, self.sender(upstream.sock))
        while True:
            answer = upstream.reader.head()
            if answer is None:
                raise BadMessage("the connection closed with no answer")
            response = Response(answer, request.method)
            if response.status >= 200:
                return response
            if response.status == 101:                     # we pass no Upgrade: a pod should not switch
                raise BadMessage("101 Switching Protocols to a request that asked for none")
            # 100 Continue, 103 Early Hints: nothing the client needs; the answer follows.

    # [START stream-body]
    def stream_body(self, request: Request, send: Callable[[bytes], None]) -> None:
        """The request body, piece by piece, as it arrives: never held whole."""
        try:
            if request.length == "chunked":
                return self.pass_chunks(self.client, Gather(send), framed=True, trailer=True,
                                        limit=self.server.max_body_size)
            left = request.length
            while left > 0:
                piece = self.client.read1(min(CHUNK, left))
                if not piece:
                    raise ClientGone("the client closed the connection in the middle of its body")
                send(piece)
                left -= len(piece)
        except BadMessage as bad:                          # a chunk's framing
            raise ClientGone(bad.reason) from bad
        except TimeoutError as error:                      # the client's: the pod's are PodStalled
            raise ClientGone(str(error) or "timed out") from error
    # [END stream-body]

    @staticmethod
    def sender(pod: socket.socket) -> Callable[[bytes], None]:
        """pod.sendall, its timeout told apart from the client's."""
        def send(data: bytes) -> None:
            try:
                pod.sendall(data)
            except TimeoutError as error:
                raise PodStalled() from error
        return send

    @staticmethod
    def pass_chunks(source: Reader, out: Gather, framed: bool, trailer: bool, limit: int = 0) -> None:
        """A chunked body from source to out: framed as chunks again (framed)
        or as bare data, its trailer kept or dropped. What is gathered leaves
        whenever source would wait, so the chunks stream as they come."""
        total, first = 0, True
        source.on_wait = out.flush
        try:
            for size, piece in chunks(source):
                if size is None:                           # a piece of a chunk's data
                    total += len(piece)
                    if limit and total > limit:
                        raise ClientGone(f"the body is larger than the limit ({limit} bytes, --max-body-size)", 413)
                    out.add(piece)
                elif framed:                               # a chunk's start (after the previous one's CRLF), or the end
                    out.add((b"" if first else b"\r\n")
                            + (b"%x\r\n" % size if size else b"0\r\n" + (piece if trailer else b"") + b"\r\n"))
                    first = False
        finally:
            source.on_wait = None
        out.flush()

    # [START relay-response]
    def relay(self, request: Request, upstream: Upstream, response: Response, endpoint) -> bool:
        """The pod's answer to the client as it comes: head, then body; whether
        the client's connection stays open."""
        if self.server.log:                                # with -v: a line per request
            self.server.log.debug("request", host=request.host, path=request.target,
                                  endpoint=f"{endpoint[0]}:{endpoint[1]}", status=response.status)
        # No length known ahead (chunked, or "until close"): chunked to an
        # HTTP/1.1 client; an HTTP/1.0 one knows no chunked (RFC 9112 6.1),
        # so it gets the bytes as they come and the end of the connection.
        unframed = not isinstance(response.length, int)
        rechunk = unframed and request.version == b"HTTP/1.1"
        keep_alive = request.keep_alive and not (unframed and not rechunk)
        dropped = HOP_BY_HOP | response.options if response.options else HOP_BY_HOP
        if unframed:
            dropped = dropped | FRAMING
        lines = [b"HTTP/1.1 " + response.status_line]
        lines += [name + b": " + value for lower, name, value in response.fields if lower not in dropped]
        if rechunk:
            lines.append(b"Transfer-Encoding: chunked")
        if not keep_alive:
            lines.append(b"Connection: close")
        elif request.version == b"HTTP/1.0":
            lines.append(b"Connection: keep-alive")
        out = Gather(self.request.sendall, b"\r\n".join(lines) + b"\r\n\r\n")
        try:
            complete = self.relay_body(upstream.reader, response.length, out, rechunk)
        except (OSError, BadMessage):                      # the pod or the client went away midway
            complete = False
        if not complete:                                   # what came is sent, then the connection ends:
            upstream.close()                               # the client must see the answer is not whole
            try:
                out.flush()
            except OSError:
                pass
            return False
        if response.will_close:
            upstream.close()
        else:
            self.server.pool.put(endpoint, upstream)
        return keep_alive
    # [END relay-response]

    def relay_body(self, pod: Reader, length: int | str | None, out: Gather, rechunk: bool) -> bool:
        """The body after the head (in `out`); whether it was whole. What is
        gathered leaves whenever the pod's socket would be waited on, so a
        small answer leaves in one send with its head and a large one streams."""
        if length == "chunked":
            self.pass_chunks(pod, out, framed=rechunk, trailer=False)
            return True
        left = length or 0                                 # bytes still to come of a Content-Length
        pod.on_wait = out.flush
        try:
            if length is None:                             # until the pod closes the connection
                while piece := pod.read1(CHUNK):
                    out.add(b"%x\r\n%s\r\n" % (len(piece), piece) if rechunk else piece)
                out.add(b"0\r\n\r\n" if rechunk else b"")
            else:
                while left and (piece := pod.read1(min(CHUNK, left))):
                    left -= len(piece)
                    out.add(piece)
        finally:
            pod.on_wait = None
        out.flush()
        return left == 0                                   # a Content-Length not all there: cut short

    def answer(self, request: Request | None, status: int, text: str) -> bool:
        """An answer of the controller's own, as plain text; whether the
        connection stays open (not if the request's body was not read)."""
        body = (text + "\n").encode()
        keep_alive = request is not None and request.keep_alive and not request.has_body
        lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Server: groundup-ingress",
                 f"Date: {formatdate(usegmt=True)}", "Content-Type: text/plain; charset=utf-8",
                 f"Content-Length: {len(body)}"] + ([] if keep_alive else ["Connection: close"])
        head = "\r\n".join(lines) + "\r\n\r\n"
        try:
            self.request.sendall(head.encode() + (b"" if request and request.method == "HEAD" else body))
        except OSError:
            keep_alive = False
        if self.server.log and status >= 500:
            self.server.log.warning("request failed", status=status, host=request.host if request else "",
                                    path=request.target if request else "", reason=text)
        return keep_alive
