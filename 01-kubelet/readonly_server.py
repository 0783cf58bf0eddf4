"""The kubelet's HTTP port (10255), after the real kubelet's read-only port.

    GET /healthz                                   "ok", to anyone
    GET /pods                                      a PodList, with status
    GET /containerLogs/{namespace}/{pod}/{container}?tailLines=N&follow=true&previous=true&timestamps=true

Later chapters' routes register here (kubelet.py passes their blueprints):

    GET /metrics, /stats/summary, /metrics/resource   usage and the kubelet's figures (stats/routes.py)
    GET /exec/..., /attach/..., /portForward/...      kubectl exec, attach, port-forward (streaming/server.py)

Everything but /healthz tells about every pod on the node, logs included
(and exec runs commands in them),
so with --authentication-token-file only two clients may read it: the API
server (for `kubectl logs`), presenting that token, and this machine itself
(loopback). Without the flag anyone who reaches the port may, as on
Kubernetes' read-only port: fine for chapter 01's kubelet alone on your
machine, not for a node in a cluster. Kubernetes' read-only port serves
/pods, /healthz, stats and metrics but never logs (those, and exec, are on
the authenticated port 10250: pkg/kubelet/server/server.go), and is off
for a kubelet that reads a configuration file (readOnlyPort defaults to 0).
"""
from __future__ import annotations

import ipaddress
import logging
import threading

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from werkzeug.serving import make_server

import pod_config as cfg
from common.log import EventLogger
from common.client.token_file import same_token
from pod_status import latest_two

bp = Blueprint("kubelet", __name__)
# Into the pods: exec, attach and port-forward (streaming/, chapter 02),
# which only the API server may ask for.
API_SERVER_ONLY = ("/exec/", "/attach/", "/portForward/")


def create_app(kubelet, client_token: str | None = None, blueprints: tuple[Blueprint, ...] = ()) -> Flask:
    """client_token: the API server's token (--authentication-token-file);
    None leaves the port open to anyone who reaches it. blueprints: what
    later chapters serve on this port, under the same token check."""
    app = Flask("kubelet")
    app.config["KUBELET"] = kubelet
    app.config["CLIENT_TOKEN"] = client_token
    app.register_blueprint(bp)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    return app


def status_error(code: int, reason: str, message: str):
    """Errors in Kubernetes' Status shape, so clients read them alike."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    return jsonify(body), code


# [START kubelet-port-auth]
@bp.before_app_request
def only_the_api_server_or_this_machine():
    """Who may read this port. Kubernetes' kubelet serves its API over HTTPS
    (port 10250) and asks two questions: who is this (a client certificate
    signed by --client-ca-file, or a bearer token it has the API server
    check with a TokenReview) and may they (a SubjectAccessReview to the
    API server, with --authorization-mode Webhook). The client that needs
    it is the API server, with a certificate of its own
    (--kubelet-client-certificate). We keep the idea and drop the
    machinery: one token, which the API server presents and every kubelet
    checks, plus loopback, so that a node's own tools and chapter 01's curl
    work without one. Everything else, a pod on this node included (it
    comes from its own address on the Docker bridge), gets a 401. Exec,
    attach and port-forward are the API server's alone, loopback or not."""
    expected = current_app.config["CLIENT_TOKEN"]
    into_pods = request.path.startswith(API_SERVER_ONLY)
    if into_pods and expected is None:      # no token to check: nobody may, rather than everybody
        return status_error(401, "Unauthorized", "exec, attach and port-forward are the API server's alone: "
                                                 "start the kubelet with --authentication-token-file")
    local = from_this_machine(request.remote_addr) and not into_pods
    if expected is None or request.path == "/healthz" or local:
        return None
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and same_token(presented.strip(), expected):
        return None
    return status_error(401, "Unauthorized", "Unauthorized")


def from_this_machine(address: str | None) -> bool:
    """A loopback peer: a process on this machine, or a hostNetwork pod,
    which shares the machine's network (a privileged setting, which
    Kubernetes' baseline Pod Security level forbids). An address we cannot
    read is not loopback: deny by default."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    ip = getattr(ip, "ipv4_mapped", None) or ip    # ::ffff:127.0.0.1 on a dual-stack socket
    return ip.is_loopback
# [END kubelet-port-auth]


@bp.get("/healthz")
def healthz():
    return "ok\n", 200, {"Content-Type": "text/plain"}


@bp.get("/pods")
def pods():
    return jsonify(current_app.config["KUBELET"].pod_list())


@bp.get("/containerLogs/<namespace>/<pod_name>/<container_name>")
def container_logs(namespace: str, pod_name: str, container_name: str):
    kubelet = current_app.config["KUBELET"]
    pod, containers = kubelet.find_pod(namespace, pod_name)
    if pod is None:
        return status_error(404, "NotFound", f'pods "{pod_name}" not found in namespace "{namespace}"')
    if container_name not in [c["name"] for c in pod["spec"]["containers"]]:
        return status_error(400, "BadRequest", f"container {container_name} is not valid for pod {pod_name}")
    try:
        tail = int(request.args["tailLines"]) if "tailLines" in request.args else None
        if tail is not None and tail < 0:
            raise ValueError
    except ValueError:
        return status_error(400, "BadRequest", "tailLines must be a non-negative integer")
    follow = request.args.get("follow") in ("true", "1")
    previous = request.args.get("previous") in ("true", "1")
    timestamps = request.args.get("timestamps") in ("true", "1")
    current, before = latest_two([c for c in containers if c.name != cfg.SANDBOX_NAME], container_name)
    chosen = before if previous else current
    if chosen is None:
        what = "previous terminated container" if previous else "container"
        return status_error(400, "BadRequest",
                            f'{what} "{container_name}" in pod "{pod_name}" not found')
    output = kubelet.runtime.logs(chosen.id, tail, follow and not previous, timestamps)
    if isinstance(output, bytes):
        return Response(output, mimetype="text/plain")
    return Response(output, mimetype="text/plain", direct_passthrough=True)


def serve(kubelet, address: str, port: int, log: EventLogger, client_token: str | None = None,
          blueprints: tuple[Blueprint, ...] = ()):
    """Serve in a background thread; returns the server (its .port is real
    even when port 0 asked for any free one)."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = make_server(address, port, create_app(kubelet, client_token, blueprints), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True, name="read-only-port").start()
    log.info("read-only port listening", obj=f"{address}:{server.port}",
             authentication="token" if client_token else None)
    return server
