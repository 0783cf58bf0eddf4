"""A WebSocket on a socket the HTTP server has handed over: the handshake's
answer, then messages both ways. The framing (masks, fragments, control
frames, close codes) is the wsproto library's; this module only moves its
bytes over the socket.

Werkzeug's development server, which serves the kubelet's port, lets a
route declared with websocket=True read the request and then use the raw
connection (environ["werkzeug.socket"]). What the client sent after its
request is already in the server's read buffer, environ["wsgi.input"],
so we read through that.
"""
from __future__ import annotations

import base64
import hashlib
import socket
import struct
import threading

from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"      # RFC 6455, section 1.3


def accept_key(client_key: str) -> str:
    return base64.b64encode(hashlib.sha1((client_key + GUID).encode()).digest()).decode()


def protocols_offered(environ) -> list[str]:
    return [p.strip() for p in environ.get("HTTP_SEC_WEBSOCKET_PROTOCOL", "").split(",") if p.strip()]


# The largest message we hold (kubectl sends stdin and port-forward data in
# pieces of 32 KB at most): a peer announcing more is closed with 1009.
MAX_MESSAGE = 16 * 1024 * 1024


class WebSocket:
    """Binary messages over one accepted connection. send() may be called
    from several threads; receive() from one."""

    def __init__(self, sock: socket.socket, reader):
        self.sock = sock
        self.reader = reader                  # the server's buffered reader over sock
        self.connection = Connection(ConnectionType.SERVER)
        self._send_lock = threading.Lock()
        self._partial = bytearray()

    @classmethod
    def accept(cls, environ, protocol: str) -> "WebSocket":
        """Answer the handshake (101) choosing `protocol`, and take the socket."""
        sock = environ["werkzeug.socket"]
        head = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept_key(environ.get('HTTP_SEC_WEBSOCKET_KEY', ''))}\r\n"
                f"Sec-WebSocket-Protocol: {protocol}\r\n\r\n")
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)     # a keystroke goes out at once
        sock.sendall(head.encode("latin-1"))
        return cls(sock, environ["wsgi.input"])

    def send(self, *parts: bytes) -> None:
        """One binary message, made of these bytes one after the other. A
        server's frames are not masked: the frame is a short header and the
        bytes as they are, so we write the header ourselves and hand it all
        to the kernel without copying the payload (wsproto's send() joins
        them into a new buffer: at port-forward's rates that copy was a
        quarter of the kubelet's time)."""
        with self._send_lock:
            if self.connection.state is ConnectionState.OPEN:
                send_all(self.sock, [_binary_frame_header(sum(map(len, parts))), *parts])

    def receive(self) -> bytes | None:
        """The next whole message's bytes; None once the peer has closed."""
        while True:
            for event in self.connection.events():
                if isinstance(event, (BytesMessage, TextMessage)):
                    data = event.data if isinstance(event, BytesMessage) else event.data.encode()
                    self._partial += data
                    if len(self._partial) > MAX_MESSAGE:    # kubectl's are a few KB: refuse to hoard
                        self.close(1009)                    # "message too big"
                        return None
                    if event.message_finished:
                        message, self._partial = bytes(self._partial), bytearray()
                        return message
                elif isinstance(event, Ping):
                    with self._send_lock:
                        self.sock.sendall(self.connection.send(event.response()))
                elif isinstance(event, CloseConnection):
                    with self._send_lock:
                        if self.connection.state is ConnectionState.REMOTE_CLOSING:
                            self.sock.sendall(self.connection.send(event.response()))
                    return None
            try:
                data = self.reader.read1(256 * 1024)
            except OSError:
                data = b""
            if not data:
                return None
            self.connection.receive_data(data)

    def close(self, code: int = 1000) -> None:
        """Say goodbye (a close frame) and end the TCP connection."""
        with self._send_lock:
            try:
                if self.connection.state is ConnectionState.OPEN:
                    self.sock.sendall(self.connection.send(CloseConnection(code=code)))
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _binary_frame_header(length: int) -> bytes:
    """RFC 6455 section 5.2: FIN and opcode 2 (binary), no mask, the length in 7, 16 or 64 bits."""
    if length < 126:
        return struct.pack(">BB", 0x82, length)
    if length < 1 << 16:
        return struct.pack(">BBH", 0x82, 126, length)
    return struct.pack(">BBQ", 0x82, 127, length)


def send_all(sock: socket.socket, parts: list[bytes]) -> None:
    """sendall() for several buffers: sendmsg() may send only part of them."""
    views = [memoryview(part) for part in parts if part]
    while views:
        sent = sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if views and sent:
            views[0] = views[0][sent:]
