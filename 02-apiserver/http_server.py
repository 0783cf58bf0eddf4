"""The API server's HTTP server: HTTP/1.1 on Python's standard library.

One thread per connection, so a watch (a response that streams for half an
hour) costs one mostly sleeping thread and never waits for a free worker in
a pool. Everything slow happens in that connection's own thread, under a
deadline, so a client that stalls holds up only itself:

    what a client does                         what it gets
    connects and sends nothing (TLS or not)    dropped at the deadline (--request-timeout)
    half a TLS handshake, or headers a byte    the same: the deadline counts from the first
      at a time, or a short body                 byte, not from the last one
    stops reading what it asked for            the write times out; the connection is dropped
    a body over --max-request-bytes            413, in every transfer encoding, before the
                                                 app sees a byte of it
    a garbage request line, a huge URL or      400, 414, 431: a Status object, as from the app
      header, over 1 MiB of headers, a header
      name Go would refuse, an unknown transfer coding
    more than --max-connections at once        429 (watches and other streams do not count)

Connections are kept alive between requests, as Kubernetes' clients expect:
a client sending many requests pays for one connection and one thread.

The app is any WSGI app. The server reads the whole body (dechunked) before
calling it, so the app always sees a plain body with its Content-Length.
"""
from __future__ import annotations

import _thread
import http.server
import io
import json
import errno
import re
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

IDLE_SECONDS = 90           # a kept-alive connection quiet this long is closed (as Kubernetes does)
HANDSHAKE_SECONDS = 10       # a TLS client that has not finished its handshake by then is dropped
_DECIMAL = re.compile(r"[0-9]{1,19}")   # str.isdigit() also says yes to "²", which int() refuses
FULL_SECONDS = 1            # how long a connection over --max-connections may take to say what it wants
LINGER_SECONDS = 2          # after refusing a request, read what the client still sends, for this long
LINGER_BYTES = 64 * 1024 * 1024   # ...or this much, so that it reads our answer instead of a reset
MAX_CHUNK_LINE = 4096       # a chunk-size line, or a trailer line, is never longer
MAX_HEADER_BYTES = 1 << 20  # the request line and headers together: Go's net/http limit, and so Kubernetes'

MAX_TRAILERS = 100
CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,16}")
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")    # RFC 9110's token
REASONS = {400: "BadRequest", 408: "Timeout", 413: "RequestEntityTooLarge", 414: "RequestURITooLong",
           429: "TooManyRequests", 431: "RequestHeaderFieldsTooLarge", 500: "InternalError",
           501: "NotImplemented", 505: "HTTPVersionNotSupported"}


def header_problem(headers) -> str | None:
    """Why a request's headers cannot be trusted, or None.

    Go's server, and so Kubernetes, answers 400 to a header line it cannot
    parse. Python's parser instead stops at the first such line and takes
    it and every line after it for the body: `Transfer-Encoding : chunked`
    (a space before the colon) beside a Content-Length would be dropped
    without a word, while a proxy in front may read it as chunked, and
    the two would then disagree on where the request ends (smuggling)."""
    unparsed = headers.get_payload()
    line = unparsed.splitlines()[0] if unparsed else ""
    if unparsed and ":" not in line:
        return f"malformed header line (no colon): {line[:40]!r}"
    bad = [name for name in headers.keys() if not HEADER_NAME.fullmatch(name)]
    if unparsed or headers.defects or bad:
        name = line.split(":", 1)[0] if unparsed else (bad[0] if bad else "")
        return f"invalid header name {name[:40]!r}: a header name is a token, with no spaces before its colon"
    return None


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 3 * 1024 * 1024
    request_timeout: float = 60.0     # TLS handshake, head and body of a request; a whole non-streamed reply
    max_connections: int = 1000       # open at once, not counting those streaming a watch or a log


class ClientTimeout(TimeoutError):
    """The connection's deadline passed while the server waited for the client."""


class DeadlineReader(io.RawIOBase):
    """The socket as a raw stream whose reads fail once `deadline` has passed.

    A timeout per read would not do: a client that sends one byte every few
    seconds never lets a single read time out, and would hold its connection
    forever (slowloris). The deadline is for the whole head, or the whole body."""

    def __init__(self, sock):
        self.sock = sock
        self.deadline = time.monotonic()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ClientTimeout("the client did not send its request in time")
        self.sock.settimeout(remaining)
        try:
            return self.sock.recv_into(buffer)
        except socket.timeout:
            raise ClientTimeout("the client did not send its request in time") from None


class HeadTooLarge(Exception):
    """The request line and headers passed MAX_HEADER_BYTES."""


class HeadBudget:
    """Stands in for the connection's reader while the headers are read.

    The standard library allows 100 headers of 64 KiB each: 6.5 MB that a
    client without a token could make the server hold per connection. This
    counts the bytes as they arrive and stops at the budget, before the
    rest is read and long before authentication."""

    def __init__(self, rfile, budget: int):
        self.rfile, self.budget = rfile, budget

    def readline(self, limit: int = -1) -> bytes:
        allowed = self.budget + 1 if limit < 0 else min(limit, self.budget + 1)
        line = self.rfile.readline(allowed)
        self.budget -= len(line)
        if self.budget < 0:
            raise HeadTooLarge()
        return line


class RequestHandler(http.server.BaseHTTPRequestHandler):
    """One connection, in its own thread: TLS handshake, then requests until it closes."""

    protocol_version = "HTTP/1.1"      # keep-alive, and chunked responses for watches
    server: "APIHTTPServer"

    def setup(self) -> None:
        self.connection = self.request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # no 40 ms Nagle waits
        self.holds_slot = False
        self.linger = False             # the client may still be sending: read it before closing
        self.taken_over = False         # the app has the socket (an upgrade): write nothing more

    def _tls_handshake(self, sock):
        """The handshake here, in this connection's thread, and under the
        deadline: a client that opens a connection and says nothing (or half
        a ClientHello) must not hold up anyone else's."""
        tls = self.server.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        deadline = time.monotonic() + min(self.server.limits.request_timeout, HANDSHAKE_SECONDS)
        tls.setblocking(False)
        poller = select.poll()         # unlike a selector, costs no file descriptor per connection
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                poller.register(tls, select.POLLIN)
            except ssl.SSLWantWriteError:
                poller.register(tls, select.POLLOUT)
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                raise ClientTimeout("the client did not finish the TLS handshake in time")
            poller.unregister(tls)
        tls.setblocking(True)
        return tls

    def handle(self) -> None:
        self.close_connection = False
        self.first = True
        try:
            if self.server.ssl_context:
                self.connection = self._tls_handshake(self.connection)
            self.reader = DeadlineReader(self.connection)
            self.rfile = io.BufferedReader(self.reader, 64 * 1024)
            while not self.close_connection:
                self.handle_one_request()
                self.first = False
        except (ClientTimeout, ConnectionError, ssl.SSLError, socket.timeout):
            # Dropped or stalled: nobody to answer, or nobody reading.
            self.close_connection = True

    def handle_one_request(self) -> None:
        if not self._wait_for_request():
            self.close_connection = True
            return
        # A connection counts against --max-connections only while a request
        # is in progress: one that is silent, idle between requests or still
        # in its TLS handshake holds no slot, so unauthenticated sockets
        # cannot lock the port (Kubernetes likewise limits requests in flight).
        self.holds_slot = self.server.connection_slots.acquire(blocking=False)
        try:
            self._one_request()
        finally:
            self._release_slot()

    def _release_slot(self) -> None:
        if self.holds_slot:
            self.server.connection_slots.release()
            self.holds_slot = False

    def _one_request(self) -> None:
        self.reader.deadline = time.monotonic() + self._allowed_seconds()
        self.command, self.request_version, self.requestline = "", "HTTP/1.1", ""
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                return self.send_error(414, "the request URL is longer than 65,536 bytes")
            if not self.raw_requestline.strip():
                return self.send_error(400, "the request line is empty")
            if not self.parse_request():       # it has answered: 400, 431 or 505
                return
            if problem := header_problem(self.headers):
                return self.send_error(400, problem)
            if not self.holds_slot:
                return self.send_error(429, f"the server has {self.server.limits.max_connections} connections "
                                       "open (the --max-connections limit): try again in a moment")
            body = self._read_body()
        except ClientTimeout:
            self.send_error(408, "the request did not arrive in time")
            raise
        if body is not None:
            self.run_app(body)

    def parse_request(self) -> bool:
        """The standard library's, reading the headers within MAX_HEADER_BYTES."""
        rfile, self.rfile = self.rfile, HeadBudget(self.rfile, MAX_HEADER_BYTES - len(self.raw_requestline))
        try:
            return super().parse_request()
        except HeadTooLarge:
            self.send_error(431, f"the request's headers are larger than {MAX_HEADER_BYTES} bytes")
            return False
        finally:
            self.rfile = rfile

    def _allowed_seconds(self) -> float:
        """A connection over --max-connections only has time to hear its 429."""
        return self.server.limits.request_timeout if self.holds_slot else FULL_SECONDS

    def _wait_for_request(self) -> bool:
        """True when a request has begun; False when the client closed, or
        kept a connection idle for too long."""
        self.reader.deadline = time.monotonic() + (self.server.limits.request_timeout if self.first else IDLE_SECONDS)
        try:
            return bool(self.rfile.peek(1))
        except ClientTimeout:
            return False

    # ----- the request body -----

    def _read_body(self) -> bytes | None:
        """The whole body, or None after answering why not."""
        codings = [c.strip().lower() for v in self.headers.get_all("Transfer-Encoding", []) for c in v.split(",")]
        lengths = self.headers.get_all("Content-Length", [])
        if codings and lengths:
            # Which one ends the body? Proxies disagree: that is request smuggling.
            return self._refuse(400, "a request may have Content-Length or Transfer-Encoding, not both")
        if codings:
            if codings != ["chunked"]:
                return self._refuse(501, f"Transfer-Encoding {', '.join(codings)} is not supported: send chunked")
            return self._read_chunked()
        if not lengths:
            return b""
        if len(set(lengths)) > 1 or not _DECIMAL.fullmatch(lengths[0].strip()):
            return self._refuse(400, f"Content-Length must be one number, not {', '.join(lengths)!r}")
        length = int(lengths[0])
        if length > self.server.limits.max_body_bytes:
            return self._refuse(413, self._too_large())
        body = self.rfile.read(length)
        if len(body) < length:
            raise ConnectionError("the client closed the connection before sending its whole body")
        return body

    def _read_chunked(self) -> bytes | None:
        body = bytearray()
        while True:
            line = self.rfile.readline(MAX_CHUNK_LINE)
            if not line.endswith(b"\n"):
                if not line:
                    raise ConnectionError("the client closed the connection in the middle of a chunked body")
                return self._refuse(400, "a chunk-size line of the chunked body is too long")
            size_text = line.split(b";", 1)[0].strip()      # a chunk extension after ';' means nothing to us
            if not CHUNK_SIZE.fullmatch(size_text):
                return self._refuse(400, f"the chunked body has a bad chunk size {size_text[:40]!r}")
            size = int(size_text, 16)
            if size == 0:
                return bytes(body) if self._skip_trailers() else None
            if len(body) + size > self.server.limits.max_body_bytes:
                return self._refuse(413, self._too_large())
            chunk = self.rfile.read(size)
            if len(chunk) < size:
                raise ConnectionError("the client closed the connection in the middle of a chunk")
            body += chunk
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                return self._refuse(400, "a chunk of the chunked body is longer than its size says")

    def _skip_trailers(self) -> bool:
        for _ in range(MAX_TRAILERS):
            line = self.rfile.readline(MAX_CHUNK_LINE)
            if line in (b"\r\n", b"\n"):
                return True
            if not line.endswith(b"\n"):
                break
        self._refuse(400, "the chunked body's trailer is too long or cut off")
        return False

    def _too_large(self) -> str:
        return f"the request body is larger than the limit of {self.server.limits.max_body_bytes} bytes"

    def _refuse(self, code: int, message: str) -> None:
        self.send_error(code, message)
        return None

    def handle_expect_100(self) -> bool:
        """`Expect: 100-continue`: say no to a body over the limit before it is sent."""
        length = self.headers.get("Content-Length", "")
        if _DECIMAL.fullmatch(length.strip()) and int(length) > self.server.limits.max_body_bytes:
            self.send_error(413, self._too_large())
            return False
        self.connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    # ----- calling the app -----

    def make_environ(self, body: bytes) -> dict:
        url = urlsplit(self.path) if not self.path.startswith("/") else None   # GET http://host/path
        path, _, query = (url.path, "", url.query) if url else self.path.partition("?")
        host, port = self.server.server_address[:2]
        environ = {
            "wsgi.version": (1, 0), "wsgi.url_scheme": "https" if self.server.ssl_context else "http",
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "werkzeug.socket": self.connection,   # watch.py peeks at it to notice a client that left
            "groundup.take_over": self.take_over,
            "SERVER_SOFTWARE": self.version_string(), "SERVER_NAME": host, "SERVER_PORT": str(port),
            "SERVER_PROTOCOL": self.request_version, "REQUEST_METHOD": self.command, "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"), "QUERY_STRING": query,
            "REQUEST_URI": self.path, "REMOTE_ADDR": self.client_address[0],
            "REMOTE_PORT": self.client_address[1], "CONTENT_LENGTH": str(len(body)) if body else "",
        }
        for name, value in self.headers.items():
            if "_" in name:
                continue                     # X_Remote_User must not pass for X-Remote-User
            key = name.upper().replace("-", "_")
            if key in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
                continue                     # the body is read already: the app sees len(body)
            if key != "CONTENT_TYPE":
                key = "HTTP_" + key
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def take_over(self):
        """For the app that upgrades the connection (kubectl exec, attach,
        port-forward: connect.py): the socket, and what the client sent
        after its request that is already in our read buffer. From here
        the app owns the connection; its response is not written, and the
        connection closes when the app returns."""
        self.taken_over = self.close_connection = True
        self._release_slot()           # a stream, like a watch: no --max-connections slot
        self.reader.deadline = 0       # no more reads from the socket through the buffer...
        try:
            leftover = self.rfile.read1(1 << 20)     # ...only what it holds already
        except ClientTimeout:
            leftover = b""
        self.connection.settimeout(None)
        return self.connection, leftover

    def run_app(self, body: bytes) -> None:
        reply = Reply(self)
        result = self.server.app(self.make_environ(body), reply.start_response)
        try:
            for data in result:
                reply.write(data)
            reply.finish()
        except Exception as error:
            if isinstance(error, (ConnectionError, socket.timeout, ssl.SSLError)):
                raise
            if reply.status_sent:
                raise ConnectionError(f"the app failed in the middle of a response: {error!r}") from error
            self.send_error(500, f"an internal error occurred: {type(error).__name__}: {error}")
        finally:
            if hasattr(result, "close"):
                result.close()               # a watch gives back its --max-watches slot here

    # ----- answers the server writes itself -----

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error is a Kubernetes Status object, never an HTML page."""
        reason = REASONS.get(code, "BadRequest")
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": ": ".join(filter(None, (message, explain))) or reason, "reason": reason, "code": code}
        if code == 429:
            status["details"] = {"retryAfterSeconds": 1}
        body = json.dumps(status, separators=(",", ":")).encode()
        self.close_connection = True           # what was left unread is not a request
        self.linger = True
        head = (f"HTTP/1.1 {code} {http.HTTPStatus(code).phrase}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                + ("Retry-After: 1\r\n" if code == 429 else "")
                + f"Date: {self.date_time_string()}\r\nConnection: close\r\n\r\n").encode("latin-1")
        self.connection.settimeout(min(self.server.limits.request_timeout, LINGER_SECONDS))
        try:
            self.connection.sendall(head + (body if self.command != "HEAD" else b""))
        except OSError:
            return
        self.log_request(code, len(body))

    def log_request(self, code="-", size="-") -> None:
        if self.server.log_requests:
            super().log_request(code, size)

    def finish(self) -> None:
        """Close; after a refusal, first read (and drop) what the client is
        still sending, so that it sees our answer rather than a reset."""
        self._release_slot()
        if self.linger:
            try:
                self.connection.shutdown(socket.SHUT_WR)
                reader = DeadlineReader(self.connection)
                reader.deadline = time.monotonic() + LINGER_SECONDS
                drained, scratch = 0, bytearray(64 * 1024)
                while drained < LINGER_BYTES:
                    got = reader.readinto(scratch)
                    if not got:
                        break
                    drained += got
            except (OSError, ValueError):
                pass


class Reply:
    """One response: the status and headers go out with the first piece of
    the body (even an empty one: a watch's first yield sends its headers, so
    the client knows it is connected). Without a Content-Length it is a
    stream, sent chunked, and no longer counts against --max-connections."""

    def __init__(self, handler: RequestHandler):
        self.handler = handler
        self.status: str | None = None
        self.headers: list[tuple[str, str]] = []
        self.status_sent = False
        self.streamed = False
        self.chunked = False

    def start_response(self, status: str, headers, exc_info=None):
        if exc_info and self.status_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status, self.headers = status, headers
        return self.write

    def write(self, data: bytes) -> None:
        handler = self.handler
        if handler.taken_over:
            return
        out = b""
        if not self.status_sent:
            out = self._head()
            self.status_sent = True
        if data and handler.command != "HEAD":
            out += b"%x\r\n%b\r\n" % (len(data), data) if self.chunked else data
        if out:
            handler.connection.settimeout(handler.server.limits.request_timeout)
            handler.connection.sendall(out)

    def finish(self) -> None:
        if self.handler.taken_over:
            return
        if not self.status_sent:
            self.write(b"")
        if self.chunked:
            self.handler.connection.sendall(b"0\r\n\r\n")
        code, _, _ = self.status.partition(" ")
        self.handler.log_request(code, "-")

    def _head(self) -> bytes:
        handler = self.handler
        code = int(self.status.split(" ", 1)[0])
        names = {name.lower() for name, _ in self.headers}
        # Werkzeug writes the reason in capitals (403 FORBIDDEN); Go's server,
        # and so Kubernetes, the standard phrase, which clients print as is.
        try:
            status = f"{code} {http.HTTPStatus(code).phrase}"
        except ValueError:
            status = self.status
        lines = [f"HTTP/1.1 {status}"] + [f"{name}: {value}" for name, value in self.headers]
        lines.append(f"Date: {handler.date_time_string()}")
        if "content-length" not in names and handler.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.streamed = True
            if handler.holds_slot:
                handler.server.connection_slots.release()
                handler.holds_slot = False
            if handler.request_version == "HTTP/1.1":
                self.chunked = True
                lines.append("Transfer-Encoding: chunked")
            else:
                handler.close_connection = True      # HTTP/1.0: the end of the body is the end of the connection
        if handler.close_connection:
            lines.append("Connection: close")
        elif handler.request_version != "HTTP/1.1":
            lines.append("Connection: keep-alive")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class APIHTTPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """Accepts connections and gives each a thread of its own; nothing else
    happens in the accepting thread (not even the TLS handshake)."""

    allow_reuse_address = True
    daemon_threads = True               # open watches do not hold up a shutdown
    block_on_close = False
    request_queue_size = 1024           # a thousand watchers reconnecting at once are not dropped

    def __init__(self, address: tuple[str, int], app, limits: Limits = Limits(),
                 ssl_context: ssl.SSLContext | None = None, log_requests: bool = False):
        self.app = app
        self.limits = limits
        self.ssl_context = ssl_context
        self.log_requests = log_requests
        self.connection_slots = threading.BoundedSemaphore(limits.max_connections)
        super().__init__(address, RequestHandler)

    def get_request(self):
        """Accept; out of file descriptors, pause a moment first (as Go's
        net/http does), or the accept loop would spin at full CPU until
        some connection closes."""
        try:
            return super().get_request()
        except OSError as error:
            if error.errno in (errno.EMFILE, errno.ENFILE):
                time.sleep(0.05)
            raise

    def process_request(self, request, client_address) -> None:
        # Not threading.Thread.start(): it waits until the new thread has run,
        # and when a thousand watchers connect at once, that wait (for the GIL)
        # is paid again by every connection queued behind them.
        _thread.start_new_thread(self.process_request_thread, (request, client_address))

    @property
    def port(self) -> int:
        return self.server_address[1]

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, ssl.SSLError, OSError)):
            return                        # the client's doing: a dropped or stalled connection
        super().handle_error(request, client_address)


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["http/1.1"])     # kubectl offers h2 too: say which one we speak
    return context
