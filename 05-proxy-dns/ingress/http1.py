"""HTTP/1.1 framing for the forward (RFC 9112): read a message's head in
large buffered reads, parse it strictly, and read a body piece by piece.

Why not http.server and http.client: profiled under `make bench-05-ingress`
(BENCHMARKS.md), they were the largest part of the controller's Python time
per request. Both
read a head line by line and hand the header lines to the email package's
parser, which builds a Message object for each request and each answer; a
proxy needs five or six facts from a head (where it ends, the host, the
body's framing, the Connection options) and passes the rest on as it came.
Here a head is one `recv` (usually), one `split`, one pass over the lines.

Strict, because a proxy and the pod must never read a message's end
differently (request smuggling): lines end in CRLF, a header name is a
token with no space before its colon, a line that starts with a space
(obs-fold, RFC 9112 5.2) or a value with a control character is refused,
a chunk's size is hex digits only and its data is followed by CRLF.
"""
from __future__ import annotations

import re
import socket

CHUNK = 64 * 1024                # a recv's size: a whole head or a large piece of a body at once
MAX_HEAD = 64 * 1024             # request line and headers, as http.server allowed
MAX_FIELDS = 100
MAX_LINE = 4096                  # a chunk-size line or a trailer line
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
NOT_IN_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")        # control characters but HTAB
NOT_IN_TARGET = re.compile(rb"[\x00-\x20\x7f]")
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")      # hex digits only: no sign, no 0x, no _
VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")


class BadMessage(Exception):
    """A message we cannot read safely: (status, reason) for whoever sent it."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason, self.status = reason, status


class Reader:
    """A socket's bytes, received in large pieces and handed out by head,
    line or piece: what is read ahead stays in `buffer` for the next call.
    `on_wait`, if set, is called before each recv (that may wait): a relay
    sends what it has gathered then, so a small message leaves in one send
    and a large or slow one streams."""
    __slots__ = ("sock", "buffer", "on_wait")

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer, self.on_wait = sock, b"", None

    def recv(self, size: int) -> bytes:
        if self.on_wait:
            self.on_wait()
        return self.sock.recv(size)

    def head(self) -> bytes | None:
        """The bytes of the next head, up to its blank line (not included);
        None if the peer closed the connection before sending any."""
        buffer, searched = self.buffer, 0
        while True:
            if buffer.startswith(b"\r\n"):               # an empty line before a request is ignored (RFC 9112 2.2)
                buffer = buffer.lstrip(b"\r\n")
            end = buffer.find(b"\r\n\r\n", max(0, searched - 3))
            if end >= 0:
                self.buffer = buffer[end + 4:]
                return buffer[:end]
            if len(buffer) > MAX_HEAD:
                raise BadMessage(f"the head is larger than {MAX_HEAD} bytes", 431)
            searched = len(buffer)
            data = self.recv(CHUNK)
            if not data:
                if buffer:
                    raise BadMessage("the connection closed in the middle of a head")
                return None
            buffer += data

    def read1(self, size: int) -> bytes:
        """Up to `size` bytes: what is buffered, or one recv; b"" at the end."""
        if self.buffer:
            piece, self.buffer = self.buffer[:size], self.buffer[size:]
            return piece
        return self.recv(size)

    def line(self) -> bytes:
        """One line with its CRLF; BadMessage if it has none (a bare LF
        ends no line here) or the connection ends first."""
        while (end := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > MAX_LINE:
                raise BadMessage("a line longer than 4 KiB")
            data = self.recv(CHUNK)
            if not data:
                raise BadMessage("the connection closed in the middle of a body")
            self.buffer += data
        line, self.buffer = self.buffer[:end + 1], self.buffer[end + 1:]
        if not line.endswith(b"\r\n") or b"\r" in line[:-2]:
            raise BadMessage(f"a line that does not end in CRLF: {line[:40]!r}")
        return line


# [START parse-head]
def parse_head(head: bytes) -> tuple[list[bytes], list[tuple[bytes, bytes, bytes]], dict[bytes, list[bytes]]]:
    """A head's start line split at its spaces; its fields in order as
    (lowercased name, name, value), and their values by lowercased name;
    BadMessage for anything irregular."""
    lines = head.split(b"\r\n")
    start = lines[0].split(b" ", 2)
    fields, index = [], {}
    if len(lines) > MAX_FIELDS + 1:
        raise BadMessage(f"more than {MAX_FIELDS} header fields", 431)
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not TOKEN.fullmatch(name):
            if line[:1] in (b" ", b"\t"):
                raise BadMessage("a header line that starts with a space (obs-fold, RFC 9112 5.2)")
            raise BadMessage(f"a header line that is not name: value: {line[:60]!r}")
        value = value.strip(b" \t")
        if NOT_IN_VALUE.search(value):
            raise BadMessage(f"a control character in the value of {name.decode()}")
        lower = name.lower()
        fields.append((lower, name, value))
        if lower in index:
            index[lower].append(value)
        else:
            index[lower] = [value]
    return start, fields, index
# [END parse-head]


def parse_request_line(start: list[bytes]) -> tuple[str, str, bytes]:
    """(method, target, version) of `METHOD SP target SP HTTP/1.x`."""
    if len(start) != 3 or not TOKEN.fullmatch(start[0]) or not start[1] or NOT_IN_TARGET.search(start[1]):
        raise BadMessage(f"a bad request line: {b' '.join(start)[:100]!r}")
    method, target, version = start
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        if VERSION.fullmatch(version):
            raise BadMessage(f"{version.decode()} is not supported", 505)
        raise BadMessage(f"a bad HTTP version: {version[:20]!r}")
    return method.decode("ascii"), target.decode("latin-1"), version


class Gather:
    """Bytes on their way to a socket, sent at the latest when they reach
    CHUNK or when the reader they come from would wait (Reader.on_wait)."""
    __slots__ = ("send", "out")

    def __init__(self, send, out: bytes = b""):
        self.send, self.out = send, out

    def add(self, data: bytes) -> None:
        self.out += data
        if len(self.out) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.out:
            out, self.out = self.out, b""
            self.send(out)


def tokens(index: dict[bytes, list[bytes]], lower: bytes) -> set[bytes]:
    """A list-valued field's elements, lowercased: Connection's options."""
    if lower not in index:
        return set()
    return {t.strip().lower() for value in index[lower] for t in value.split(b",") if t.strip()}


def chunks(reader: Reader):
    """A chunked body as it comes (RFC 9112 7.1): (size, b"") at each
    chunk's start, then its data piece by piece as (None, piece), and
    (0, trailer lines as they came) at the end. BadMessage if the framing
    is wrong or the connection ends first."""
    while True:
        line = reader.line()
        size_text = line[:-2].split(b";", 1)[0].strip(b" \t")
        if not CHUNK_SIZE.fullmatch(size_text):      # int() alone would take "-1", "0x5", "1_0"
            raise BadMessage(f"bad chunk size {size_text!r}")
        size = int(size_text, 16)
        if size == 0:
            trailer = b""
            while (line := reader.line()) != b"\r\n":
                trailer += line
            yield 0, trailer
            return
        yield size, b""
        left = size
        while left:
            piece = reader.read1(min(CHUNK, left))
            if not piece:
                raise BadMessage("the connection closed in the middle of a chunk")
            left -= len(piece)
            yield None, piece
        if reader.line() != b"\r\n":
            raise BadMessage("a chunk's data is not followed by CRLF")
