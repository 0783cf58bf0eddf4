"""The kubelet's streaming endpoints, on its HTTP port, where Kubernetes'
kubelet has them (pkg/kubelet/server/server.go):

    GET  /exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&error=1&tty=1   (WebSocket)
    GET  /attach/{namespace}/{pod}/{container}?input=1&output=1&error=1&tty=1             (WebSocket)
    GET  /portForward/{namespace}/{pod}     WebSocket carrying SPDY (SPDY/3.1+portforward.k8s.io)
    POST /portForward/{namespace}/{pod}     plain SPDY (Upgrade: SPDY/3.1), kubectl's fallback

Only the API server calls them: readonly_server.py's token check runs
before every request on this port, and kubelet.py registers these routes
there only when the kubelet has the API server's token to check
(--authentication-token-file); without it, readonly_server.py refuses
these paths to everyone. A request that is not an upgrade, or
names a pod or container this kubelet does not run, gets a Status and no
upgrade, and the API server passes that on to kubectl.

After the 101 the request's thread carries the stream until it ends; then
the response must not be written (the socket is no longer HTTP), so the
view returns a Response that raises ConnectionError when Werkzeug calls
it, which its server takes as "the client went away" and closes the socket.
"""
from __future__ import annotations

import socket

from flask import Blueprint, Response, current_app, jsonify, request

import pod_config as cfg
from streaming import port_forward, remote_command
from streaming.websocket import WebSocket, protocols_offered, send_all

bp = Blueprint("streaming", __name__)
PORT_FORWARD_WEBSOCKET = "SPDY/3.1+portforward.k8s.io"
PORT_FORWARD_SPDY = "portforward.k8s.io"


class StreamEnded(Response):
    """What a view returns once it has used the connection itself."""

    def __call__(self, environ, start_response):
        try:      # so that Werkzeug reads no further "request" from what is left on the socket
            environ["werkzeug.socket"].shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise ConnectionError("the connection was upgraded and has been closed")


def status_error(code: int, reason: str, message: str):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    return jsonify(body), code


def _running_container(namespace: str, pod_name: str, container_name: str):
    """(pod, container) or the error Kubernetes' kubelet gives."""
    pod, containers = current_app.config["KUBELET"].find_pod(namespace, pod_name)
    if pod is None:
        return None, status_error(404, "NotFound", f'pod "{pod_name}" not found in namespace "{namespace}" '
                                                   "on this node")
    # An init container too: a sidecar runs all along (a finished one is not running, below).
    named = pod["spec"]["containers"] + (pod["spec"].get("initContainers") or [])
    if container_name not in [c["name"] for c in named]:
        return None, status_error(400, "BadRequest", f'container not found ("{container_name}")')
    running = next((c for c in containers if c.name == container_name and c.running), None)
    if running is None:
        return None, status_error(400, "BadRequest", f'container not running ("{container_name}")')
    return running, None


def _websocket_protocol(choices) -> str | None:
    offered = protocols_offered(request.environ)
    return next((p for p in choices if p in offered), None)


# [START kubelet-exec]
@bp.get("/exec/<namespace>/<pod_name>/<container_name>", websocket=True)
def exec_in_container(namespace: str, pod_name: str, container_name: str):
    container, error = _running_container(namespace, pod_name, container_name)
    if error:
        return error
    options = remote_command.options_from(request.args)
    if not options.command:
        return status_error(400, "BadRequest", "you must specify at least 1 command")
    protocol = _websocket_protocol(remote_command.PROTOCOLS)
    if protocol is None:
        return status_error(400, "BadRequest", f"the WebSocket subprotocol must be one of "
                                               f"{', '.join(remote_command.PROTOCOLS)}")
    ws = WebSocket.accept(request.environ, protocol)           # 101 Switching Protocols
    runtime = current_app.config["KUBELET"].runtime
    remote_command.Session(ws, runtime, container.id, options).run_exec()
    return StreamEnded()
# [END kubelet-exec]


@bp.get("/attach/<namespace>/<pod_name>/<container_name>", websocket=True)
def attach_to_container(namespace: str, pod_name: str, container_name: str):
    container, error = _running_container(namespace, pod_name, container_name)
    if error:
        return error
    protocol = _websocket_protocol(remote_command.PROTOCOLS)
    if protocol is None:
        return status_error(400, "BadRequest", f"the WebSocket subprotocol must be one of "
                                               f"{', '.join(remote_command.PROTOCOLS)}")
    ws = WebSocket.accept(request.environ, protocol)
    runtime = current_app.config["KUBELET"].runtime
    remote_command.Session(ws, runtime, container.id, remote_command.options_from(request.args)).run_attach()
    return StreamEnded()


@bp.route("/exec/<namespace>/<pod_name>/<container_name>", methods=["GET", "POST"])
@bp.route("/attach/<namespace>/<pod_name>/<container_name>", methods=["GET", "POST"])
def remote_command_without_websocket(namespace: str, pod_name: str, container_name: str):
    """kubectl falls back to SPDY when a WebSocket upgrade fails: say what
    failed (the pod, the container) or that we only speak WebSocket."""
    _, error = _running_container(namespace, pod_name, container_name)
    return error or status_error(400, "BadRequest", "exec and attach need a WebSocket upgrade "
                                                    f"({remote_command.PROTOCOLS[0]}): use kubectl 1.30 or later")


@bp.get("/portForward/<namespace>/<pod_name>", websocket=True)
def port_forward_websocket(namespace: str, pod_name: str):
    """kubectl 1.31+: SPDY frames inside WebSocket binary messages."""
    pod, pod_ip, error = _pod_to_forward_to(namespace, pod_name)
    if error:
        return error
    if _websocket_protocol([PORT_FORWARD_WEBSOCKET]) is None:
        return status_error(400, "BadRequest", f"the WebSocket subprotocol must be {PORT_FORWARD_WEBSOCKET}")
    ws = WebSocket.accept(request.environ, PORT_FORWARD_WEBSOCKET)
    _forward(pod, pod_ip, MessageStream(ws))
    ws.close()
    return StreamEnded()


@bp.route("/portForward/<namespace>/<pod_name>", methods=["GET", "POST"])
def port_forward_spdy(namespace: str, pod_name: str):
    """Older kubectl, or kubectl's fallback: an HTTP upgrade to SPDY itself."""
    pod, pod_ip, error = _pod_to_forward_to(namespace, pod_name)
    if error:
        return error
    if request.headers.get("Upgrade", "").lower() != "spdy/3.1":
        return status_error(400, "BadRequest", "port-forward needs an upgrade: "
                                               f"WebSocket ({PORT_FORWARD_WEBSOCKET}) or SPDY/3.1")
    sock = request.environ["werkzeug.socket"]
    sock.settimeout(None)
    sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                 b"X-Stream-Protocol-Version: " + PORT_FORWARD_SPDY.encode() + b"\r\n\r\n")
    _forward(pod, pod_ip, SocketStream(sock, request.environ["wsgi.input"]))
    return StreamEnded()


def _pod_to_forward_to(namespace: str, pod_name: str):
    pod, containers = current_app.config["KUBELET"].find_pod(namespace, pod_name)
    if pod is None:
        return None, "", status_error(404, "NotFound", f'pod "{pod_name}" not found in namespace "{namespace}" '
                                                   "on this node")
    kubelet = current_app.config["KUBELET"]
    if pod["spec"].get("hostNetwork"):
        return pod, kubelet.host_ip, None          # the node's own network: its address, as the pod's
    if not any(c.name == cfg.SANDBOX_NAME and c.running for c in containers):
        return None, "", status_error(400, "BadRequest", f"pod {pod_name} has no running sandbox to forward to")
    pod_ip = kubelet.pod_ips.get(pod["metadata"]["uid"], "")
    if not pod_ip:
        # Never a fallback to this node's 127.0.0.1: the API server's
        # insecure port and this port's loopback trust listen there.
        return None, "", status_error(400, "BadRequest", f"pod {pod_name} has no IP yet: try again in a moment")
    return pod, pod_ip, None


def _forward(pod: dict, pod_ip: str, transport) -> None:
    port_forward.Session(transport, pod_ip, f"{pod['metadata']['name']}_{pod['metadata']['namespace']}",
                         pod["metadata"]["uid"]).run()


class MessageStream:
    """A WebSocket as a byte stream: kubectl's tunnel puts SPDY bytes in
    binary messages, and message boundaries mean nothing."""

    def __init__(self, ws: WebSocket):
        self.ws = ws

    def recv(self) -> bytes:
        """The next bytes; b"" only at the end (kubectl sends empty messages too)."""
        while (message := self.ws.receive()) is not None:
            if message:
                return message
        return b""

    def send(self, *parts: bytes) -> None:
        self.ws.send(*parts)


class SocketStream:
    def __init__(self, sock: socket.socket, reader):
        self.sock, self.reader = sock, reader

    def recv(self) -> bytes:
        try:
            return self.reader.read1(256 * 1024)
        except OSError:
            return b""

    def send(self, *parts: bytes) -> None:
        send_all(self.sock, list(parts))
