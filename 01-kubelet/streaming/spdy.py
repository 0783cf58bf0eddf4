"""SPDY/3 framing: what `kubectl port-forward` multiplexes its streams with.

Kubernetes' port-forward (and, before kubectl 1.30, exec) runs over SPDY,
Google's forerunner of HTTP/2, in the dialect Docker's spdystream library
speaks (github.com/moby/spdystream, "SPDY/3" in its framer, named
"SPDY/3.1" in the Upgrade header). No maintained Python library speaks it,
so this is a small one: frames to bytes and back, nothing else.

Every frame starts with 8 bytes. A control frame has the top bit set:

    |1| version (3) | type (16 bits) | flags (8) | length (24) | payload
    |0| stream id (31 bits)          | flags (8) | length (24) | data      (a DATA frame)

Header blocks (in SYN_STREAM, SYN_REPLY, HEADERS) are zlib-compressed with
one compression context per direction for the whole connection, primed
with the fixed dictionary from the SPDY/3 draft (section 2.6.10.1), and
flushed (Z_SYNC_FLUSH) after each block. Inside: a 32-bit count, then for
each header a 32-bit length and a lower-case name, a 32-bit length and a
value (several values are joined by NUL).

SPDY/3.1 added flow control for the whole session; spdystream neither
sends nor honours WINDOW_UPDATE, so neither do we: we parse it and drop it.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_DATA = (1 << 24) - 1
# A header block decompresses to at most this: kubectl's are a few hundred
# bytes, and a small compressed block must not expand into gigabytes.
MAX_HEADER_BYTES = 64 * 1024
# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL, INTERNAL_ERROR = 1, 2, 3, 5, 6


def _dictionary() -> bytes:
    """The SPDY/3 header dictionary: common header names, each with a 32-bit
    length in front, then common values run together. Both ends must use
    these exact bytes: zlib checks the dictionary's Adler-32 sum."""
    names = ("options head post put delete trace accept accept-charset accept-encoding accept-language "
             "accept-ranges age allow authorization cache-control connection content-base content-encoding "
             "content-language content-length content-location content-md5 content-range content-type date "
             "etag expect expires from host if-match if-modified-since if-none-match if-range "
             "if-unmodified-since last-modified location max-forwards pragma proxy-authenticate "
             "proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
             "user-agent vary via warning www-authenticate method get status").split()
    names += ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    values = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
              "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
              "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
              "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
              "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
              "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
              "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
    return b"".join(struct.pack(">I", len(n)) + n.encode() for n in names) + values.encode()


DICTIONARY = _dictionary()


class ProtocolError(ValueError):
    """The peer sent something that is not SPDY/3."""


# ----- frames -----

@dataclass
class SynStream:
    stream_id: int
    headers: dict[str, str] = field(default_factory=dict)
    fin: bool = False
    associated_to: int = 0
    priority: int = 0


@dataclass
class SynReply:
    stream_id: int
    headers: dict[str, str] = field(default_factory=dict)
    fin: bool = False


@dataclass
class Headers:
    stream_id: int
    headers: dict[str, str] = field(default_factory=dict)
    fin: bool = False


@dataclass
class RstStream:
    stream_id: int
    status: int


@dataclass
class Settings:
    values: dict[int, int] = field(default_factory=dict)     # id -> value (flags dropped)


@dataclass
class Ping:
    id: int


@dataclass
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass
class Data:
    stream_id: int
    data: bytes = b""
    fin: bool = False


Frame = SynStream | SynReply | Headers | RstStream | Settings | Ping | GoAway | WindowUpdate | Data


# ----- header blocks -----

def _header_block(headers: dict[str, str]) -> bytes:
    out = [struct.pack(">I", len(headers))]
    for name, value in headers.items():
        name_bytes, value_bytes = name.lower().encode(), value.encode()
        out += [struct.pack(">I", len(name_bytes)), name_bytes, struct.pack(">I", len(value_bytes)), value_bytes]
    return b"".join(out)


def _parse_header_block(block: bytes) -> dict[str, str]:
    def take(at: int, size: int) -> tuple[bytes, int]:
        if at + size > len(block):
            raise ProtocolError("a header block is shorter than its lengths say")
        return block[at:at + size], at + size
    raw, at = take(0, 4)
    headers = {}
    for _ in range(struct.unpack(">I", raw)[0]):
        raw, at = take(at, 4)
        name, at = take(at, struct.unpack(">I", raw)[0])
        raw, at = take(at, 4)
        value, at = take(at, struct.unpack(">I", raw)[0])
        headers[name.decode().lower()] = value.decode().split("\0")[0]   # the first of several values
    return headers


# ----- the framer -----

class Framer:
    """One end of one connection: encodes what it sends, decodes what it
    receives. It holds the two zlib contexts, so use one per connection."""

    def __init__(self):
        self._compress = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
        self._decompress = zlib.decompressobj(zdict=DICTIONARY)
        self._buffer = bytearray()

    # sending
    def encode(self, frame: Frame) -> bytes:
        return b"".join(self.encode_parts(frame))

    def encode_parts(self, frame: Frame) -> list[bytes]:
        """The frame as pieces to write one after the other: a DATA frame's
        bytes are not copied behind its header (port-forward's megabytes)."""
        if isinstance(frame, Data):
            if len(frame.data) > MAX_DATA:
                raise ValueError(f"a DATA frame holds at most {MAX_DATA} bytes")
            return [struct.pack(">II", frame.stream_id & 0x7FFFFFFF,
                                (FLAG_FIN if frame.fin else 0) << 24 | len(frame.data)), frame.data]
        return [self._encode_control(frame)]

    def _encode_control(self, frame: Frame) -> bytes:
        flags = FLAG_FIN if getattr(frame, "fin", False) else 0
        if isinstance(frame, SynStream):
            kind, body = SYN_STREAM, struct.pack(">IIBB", frame.stream_id, frame.associated_to,
                                                 frame.priority << 5, 0) + self._headers(frame.headers)
        elif isinstance(frame, (SynReply, Headers)):
            kind = SYN_REPLY if isinstance(frame, SynReply) else HEADERS
            body = struct.pack(">I", frame.stream_id) + self._headers(frame.headers)
        elif isinstance(frame, RstStream):
            kind, body = RST_STREAM, struct.pack(">II", frame.stream_id, frame.status)
        elif isinstance(frame, Settings):
            kind, body = SETTINGS, struct.pack(">I", len(frame.values)) + b"".join(
                struct.pack(">II", key & 0xFFFFFF, value) for key, value in frame.values.items())
        elif isinstance(frame, Ping):
            kind, body = PING, struct.pack(">I", frame.id)
        elif isinstance(frame, GoAway):
            kind, body = GOAWAY, struct.pack(">II", frame.last_good_stream_id, frame.status)
        elif isinstance(frame, WindowUpdate):
            kind, body = WINDOW_UPDATE, struct.pack(">II", frame.stream_id, frame.delta)
        else:
            raise TypeError(f"not a SPDY frame: {frame!r}")
        return struct.pack(">HHI", 0x8000 | VERSION, kind, flags << 24 | len(body)) + body

    def _headers(self, headers: dict[str, str]) -> bytes:
        return self._compress.compress(_header_block(headers)) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    # receiving
    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by `data` (a frame may arrive in pieces)."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            first, second = struct.unpack_from(">II", self._buffer)
            length = second & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = second >> 24
            if first & 0x80000000:
                frame = self._control(first >> 16 & 0x7FFF, first & 0xFFFF, flags, payload)
                if frame is not None:
                    frames.append(frame)
            else:
                frames.append(Data(first, payload, bool(flags & FLAG_FIN)))
        return frames

    def _control(self, version: int, kind: int, flags: int, payload: bytes) -> Frame | None:
        if version != VERSION:
            raise ProtocolError(f"SPDY version {version}, not {VERSION}")
        fin = bool(flags & FLAG_FIN)
        try:
            if kind == SYN_STREAM:
                stream_id, associated, priority, _slot = struct.unpack_from(">IIBB", payload)
                return SynStream(stream_id & 0x7FFFFFFF, self._read_headers(payload[10:]), fin,
                                 associated & 0x7FFFFFFF, priority >> 5)
            if kind in (SYN_REPLY, HEADERS):
                stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
                kind_class = SynReply if kind == SYN_REPLY else Headers
                return kind_class(stream_id, self._read_headers(payload[4:]), fin)
            if kind == RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if kind == SETTINGS:
                count = struct.unpack_from(">I", payload)[0]
                pairs = [struct.unpack_from(">II", payload, 4 + 8 * i) for i in range(count)]
                return Settings({key & 0xFFFFFF: value for key, value in pairs})
            if kind == PING:
                return Ping(struct.unpack_from(">I", payload)[0])
            if kind == GOAWAY:
                last_good, *status = struct.unpack_from(">I" + ("I" if len(payload) >= 8 else ""), payload)
                return GoAway(last_good & 0x7FFFFFFF, status[0] if status else 0)
            if kind == WINDOW_UPDATE:
                stream_id, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error:
            raise ProtocolError(f"control frame of type {kind} is too short ({len(payload)} bytes)") from None
        return None      # an unknown control frame is ignored, as the draft says

    def _read_headers(self, compressed: bytes) -> dict[str, str]:
        try:
            block = self._decompress.decompress(compressed, MAX_HEADER_BYTES)
            if self._decompress.unconsumed_tail:
                raise ProtocolError(f"a header block larger than {MAX_HEADER_BYTES} bytes")
            return _parse_header_block(block)
        except zlib.error as error:
            raise ProtocolError(f"cannot decompress a header block: {error}") from None
        except UnicodeDecodeError:
            raise ProtocolError("a header name or value is not UTF-8") from None
