"""port-forward: SPDY streams from kubectl to TCP connections into the pod.

kubectl opens one SPDY connection per `kubectl port-forward`, and for every
local connection it accepts, two SPDY streams with the same requestid:

    SYN_STREAM streamtype=error port=80 requestid=0    we write why it failed, if it did
    SYN_STREAM streamtype=data  port=80 requestid=0    the bytes, both ways

How we reach the port: by connecting to the pod's IP from the kubelet's
own network namespace. Pods on this node sit on a Docker bridge the host
is part of, so pod IP:port is reachable from here, and the pod sees an
ordinary connection from the bridge's gateway. Kubernetes' runtimes
(containerd, CRI-O) instead enter the pod's network namespace and dial
localhost:port there, which also reaches a server bound to 127.0.0.1 in
the pod; ours does not (that would take a helper process in the sandbox's
namespace, such as `nsenter` or an exec of `nc`, which busybox images have
but others do not). A hostNetwork pod is reached at the node's address,
since its network is the node's; a pod whose IP is not known yet is
refused (server.py), never sent to this node's 127.0.0.1.
"""
from __future__ import annotations

import queue
import socket
import threading

from streaming import spdy

CONNECT_SECONDS = 5
CHUNK = 1024 * 1024


class Forward:
    """One forwarded connection: a data stream, an error stream, a socket."""

    def __init__(self, session: "Session", port: int):
        self.session, self.port = session, port
        self.data_id = self.error_id = 0
        self.to_pod: queue.Queue[bytes | None] = queue.Queue()    # None: the client is done sending
        self.sock: socket.socket | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name=f"port-forward-{self.port}").start()

    def _run(self) -> None:
        try:
            self.sock = socket.create_connection((self.session.pod_ip, self.port), timeout=CONNECT_SECONDS)
        except OSError as error:
            # Kubernetes' kubelet's message; kubectl prints it after "an error occurred forwarding".
            self.session.send(spdy.Data(self.error_id, (
                f"error forwarding port {self.port} to pod {self.session.pod_name}, "
                f"uid {self.session.pod_uid}: {error}").encode()))
            self._close()
            return
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=self._client_to_pod, daemon=True, name="port-forward-in").start()
        try:
            while chunk := self.sock.recv(CHUNK):
                self.session.send(spdy.Data(self.data_id, chunk))
        except OSError:
            pass
        self._close()

    def _client_to_pod(self) -> None:
        while (data := self.to_pod.get()) is not None:
            try:
                self.sock.sendall(data)
            except OSError:
                return
        try:
            self.sock.shutdown(socket.SHUT_WR)      # the client closed its side: so do we, to the pod
        except OSError:
            pass

    def end(self) -> None:
        """The client is gone, or reset the stream: end the connection to the
        pod. shutdown() first: a close() alone neither wakes the thread
        blocked in recv() nor tells the pod (no FIN), so both would stay."""
        self.to_pod.put(None)
        if self.sock:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()

    def _close(self) -> None:
        """Half-close both streams (FIN), as Kubernetes' kubelet does when the pod's side ends."""
        self.session.send(spdy.Data(self.data_id, b"", fin=True))
        self.session.send(spdy.Data(self.error_id, b"", fin=True))
        self.to_pod.put(None)
        self.session.forget(self)
        if self.sock:
            self.sock.close()


class Session:
    """One SPDY connection. `transport` has recv() -> bytes (b"" at the
    end) and send(*parts): a raw socket, or a WebSocket carrying SPDY."""

    def __init__(self, transport, pod_ip: str, pod_name: str, pod_uid: str):
        self.transport, self.pod_ip, self.pod_name, self.pod_uid = transport, pod_ip, pod_name, pod_uid
        self.framer = spdy.Framer()
        self._send_lock = threading.Lock()
        self.pairs: dict[str, Forward] = {}          # requestid -> its forward
        self.by_stream: dict[int, Forward] = {}

    def send(self, frame) -> None:
        with self._send_lock:            # one frame at a time, and the header compressor is shared
            try:
                self.transport.send(*self.framer.encode_parts(frame))
            except OSError:
                pass

    def forget(self, forward: Forward) -> None:
        self.by_stream.pop(forward.data_id, None)
        self.by_stream.pop(forward.error_id, None)

    def run(self) -> None:
        """Read frames until the client hangs up."""
        try:
            while data := self.transport.recv():
                for frame in self.framer.feed(data):
                    self._handle(frame)
        except spdy.ProtocolError:
            self.send(spdy.GoAway(0, 1))
        finally:
            for forward in list(self.by_stream.values()):
                forward.end()

    def _handle(self, frame) -> None:
        if isinstance(frame, spdy.SynStream):
            self._new_stream(frame)
        elif isinstance(frame, spdy.Data):
            forward = self.by_stream.get(frame.stream_id)
            if forward and frame.stream_id == forward.data_id:
                if frame.data:
                    forward.to_pod.put(frame.data)
                if frame.fin:
                    forward.to_pod.put(None)
        elif isinstance(frame, spdy.RstStream):
            forward = self.by_stream.get(frame.stream_id)
            if forward:
                forward.end()
        elif isinstance(frame, spdy.Ping):
            self.send(frame)                      # answered with the same id
        # SETTINGS, WINDOW_UPDATE, HEADERS, GOAWAY: nothing to do (see spdy.py)

    # [START port-forward-pairs]
    def _new_stream(self, frame: spdy.SynStream) -> None:
        """Accept the stream (SYN_REPLY); once both streams of a request are here, connect."""
        self.send(spdy.SynReply(frame.stream_id))
        headers = frame.headers
        try:
            port = int(headers.get("port", ""))
            if not 0 < port < 65536:
                raise ValueError
        except ValueError:
            self.send(spdy.RstStream(frame.stream_id, spdy.PROTOCOL_ERROR))
            return
        request_id = headers.get("requestid", str(frame.stream_id))
        forward = self.pairs.setdefault(request_id, Forward(self, port))
        if headers.get("streamtype") == "error":
            forward.error_id = frame.stream_id
        elif headers.get("streamtype") == "data":
            forward.data_id = frame.stream_id
        else:
            self.send(spdy.RstStream(frame.stream_id, spdy.PROTOCOL_ERROR))
            return
        self.by_stream[frame.stream_id] = forward
        if forward.data_id and forward.error_id:
            del self.pairs[request_id]
            forward.start()
    # [END port-forward-pairs]
