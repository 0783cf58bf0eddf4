"""pods/exec, pods/attach, pods/portforward: a connection kubectl opens
through the API server to the kubelet of the pod's node.

kubectl asks for an upgrade (a WebSocket, or SPDY on older clients):

    GET /api/v1/namespaces/default/pods/web/exec?command=sh&container=app&stdin=true&stdout=true&tty=true
    Connection: Upgrade
    Upgrade: websocket
    Sec-WebSocket-Protocol: v5.channel.k8s.io

The request is authenticated and authorized like any other, and once more
as a `create` (below). Then, as Kubernetes' UpgradeAwareHandler does, we
send the same upgrade request to the kubelet, with the API server's own
credentials instead of the user's, pass the kubelet's answer back, and
from the 101 on copy bytes both ways without reading them: the WebSocket
(or SPDY) session is between kubectl and the kubelet. Kubernetes 1.30+
translates instead: it ends kubectl's WebSocket in the API server and
speaks SPDY to the kubelet, whose CRI streaming server knows only SPDY;
our kubelet speaks WebSocket itself, so splicing is enough.
"""
from __future__ import annotations

import dataclasses
import select
import socket
from urllib.parse import urlencode, urlsplit

from flask import Response, g, request

import api_errors
import gauntlet
import registry
from request_context import existing, server
from subresources import kubelet_credentials, kubelet_url, refused_by_kubelet

NODES = registry.for_kind("", "Node")
CONNECT = ("exec", "attach", "portforward")
HEAD_LIMIT = 64 * 1024
# The client's headers that make the upgrade; the rest (its Authorization above all) stay here.
UPGRADE_HEADERS = ("Connection", "Upgrade", "Sec-WebSocket-Key", "Sec-WebSocket-Version",
                   "Sec-WebSocket-Protocol", "X-Stream-Protocol-Version")
# kubectl's query names -> the kubelet's (Kubernetes' kubelet reads input/output/error/tty).
KUBELET_PARAMS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}


# [START connect-authorize]
def authorize_create(info) -> None:
    """A WebSocket handshake is a GET, so `kubectl exec` arrives as verb
    "get" on pods/exec, which read-only roles grant. Until 1.35 that let
    a viewer run commands in pods; Kubernetes now also asks for "create"
    (feature gate AuthorizePodWebsocketUpgradeCreatePermission), what the
    older SPDY POST always needed. So do we."""
    if info.verb != "create":
        gauntlet.authorize(g.get("user"), dataclasses.replace(info, verb="create"))
# [END connect-authorize]


def kubelet_path(info, pod: dict) -> str:
    """Where on the kubelet, with the query in the kubelet's words."""
    ns, name = info.namespace, info.name
    if info.subresource == "portforward":
        return f"/portForward/{ns}/{name}"
    container = container_for(pod, request.args.get("container", ""))
    query = [(KUBELET_PARAMS[k], "1" if v in ("true", "1") else "0")
             for k, v in request.args.items() if k in KUBELET_PARAMS]
    query += [("command", c) for c in request.args.getlist("command")]
    kind = "exec" if info.subresource == "exec" else "attach"
    return f"/{kind}/{ns}/{name}/{container}?{urlencode(query)}"


def container_for(pod: dict, asked: str) -> str:
    """Kubernetes' messages: no name and several containers, or a name the pod lacks."""
    names = [c["name"] for c in pod["spec"].get("containers", [])]
    if not asked:
        if len(names) == 1:
            return names[0]
        raise api_errors.bad_request(f"a container name must be specified for pod {pod['metadata']['name']}, "
                                     f"choose one of: [{' '.join(names)}]")
    if asked not in names + [c["name"] for c in pod["spec"].get("initContainers") or []]:
        raise api_errors.bad_request(f"container {asked} is not valid for pod {pod['metadata']['name']}")
    return asked


def connect(info):
    authorize_create(info)
    pod = existing(info)
    node_name = pod["spec"].get("nodeName")
    if not node_name:
        raise api_errors.bad_request(f"pod {info.name} does not have a host assigned")
    node = server().store.get(NODES, "", node_name)
    if node is None:
        raise api_errors.not_found(NODES, node_name)
    take_over = request.environ.get("groundup.take_over")
    if take_over is None or "upgrade" not in request.headers.get("Connection", "").lower():
        raise api_errors.bad_request(f"pods/{info.subresource} needs a connection upgrade "
                                     "(WebSocket or SPDY/3.1), as kubectl sends")
    base = kubelet_url(node)
    kubelet, head, rest = open_upgrade(base, kubelet_path(info, pod), node_name)
    code = int(head.split(b" ", 2)[1])
    if code != 101:
        kubelet.close()
        if code in (401, 403):
            raise refused_by_kubelet(node_name, code)
        return Response(rest, code, mimetype="application/json")   # the kubelet's Status
    client, early = take_over()
    splice(client, kubelet, head + rest, early)
    return Response(status=101)       # not sent: the audit line's code


# [START connect-upgrade]
def open_upgrade(base: str, path: str, node_name: str) -> tuple[socket.socket, bytes, bytes]:
    """Send the client's upgrade request on to the kubelet; return the
    socket, the kubelet's response head, and whatever came after it."""
    address = urlsplit(base)
    try:
        kubelet = socket.create_connection((address.hostname, address.port), timeout=10)
    except OSError as error:
        raise api_errors.APIError(502, "ServiceUnavailable",
                                  f"cannot reach the kubelet of node {node_name} at {base}: {error}") from None
    headers = {name: request.headers[name] for name in UPGRADE_HEADERS if name in request.headers}
    headers.update(kubelet_credentials(), Host=address.netloc)
    lines = [f"{request.method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    received = b""
    try:
        kubelet.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        while b"\r\n\r\n" not in received and len(received) < HEAD_LIMIT:
            chunk = kubelet.recv(HEAD_LIMIT)
            if not chunk:
                break
            received += chunk
    except OSError as error:                    # a timeout too: a kubelet that took the call and went quiet
        kubelet.close()
        raise api_errors.APIError(504, "Timeout", f"the kubelet of node {node_name} did not answer: {error}") from None
    head, _, rest = received.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        kubelet.close()
        raise api_errors.APIError(502, "ServiceUnavailable", f"the kubelet of node {node_name} did not answer")
    if not head.startswith(b"HTTP/1.1 101"):     # an error: read its whole (small) body
        rest += _read_all(kubelet)
    kubelet.settimeout(None)
    return kubelet, head + b"\r\n\r\n", rest
# [END connect-upgrade]


def _read_all(sock: socket.socket) -> bytes:
    """The rest of a non-101 answer (Werkzeug closes the connection after it)."""
    data = b""
    try:
        while (chunk := sock.recv(HEAD_LIMIT)) and len(data) < HEAD_LIMIT:
            data += chunk
    except OSError:
        pass
    return data


# [START splice]
def splice(client, kubelet: socket.socket, to_client: bytes, to_kubelet: bytes) -> None:
    """Copy bytes both ways until both sides have finished. One thread and
    select(): the client's socket may be TLS, and a TLS socket must not be
    read and written from two threads at once. A side that ends its
    sending gets a half-close passed on, so `exec -i`'s EOF travels."""
    client.sendall(to_client)
    kubelet.sendall(to_kubelet)
    peer = {client: kubelet, kubelet: client}
    open_for_reading = [client, kubelet]
    while open_for_reading:
        # A TLS socket may hold decrypted bytes that select() cannot see.
        ready = [s for s in open_for_reading if getattr(s, "pending", lambda: 0)()]
        if not ready:
            # Once the kubelet has finished, the client has a moment to say goodbye.
            ready, _, _ = select.select(open_for_reading, [], [], None if kubelet in open_for_reading else 5)
            if not ready:
                break
        for sock in ready:
            try:
                data = sock.recv(1024 * 1024)
            except (OSError, ValueError):
                data = b""
            try:
                if data:
                    peer[sock].sendall(data)
                    continue
                open_for_reading.remove(sock)
                half_close(peer[sock])
            except OSError:          # the other side is gone: nothing more to deliver
                return _close(kubelet)
    _close(kubelet)
# [END splice]


def half_close(sock) -> None:
    """Tell the peer we will send no more (a plain socket's FIN; for TLS
    the whole connection ends, since Python cannot half-close TLS)."""
    try:
        if hasattr(sock, "pending"):
            sock.shutdown(socket.SHUT_RDWR)
        else:
            sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


HANDLERS = {(verb, sub): connect for verb in ("get", "create") for sub in CONNECT}
