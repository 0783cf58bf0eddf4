"""The kubelet's read-only HTTP port (10255), as the real kubelet had it.

    GET /healthz                                   "ok"
    GET /pods                                      a PodList, with status
    GET /metrics                                   counters, in Prometheus' text format
    GET /containerLogs/{namespace}/{pod}/{container}?tailLines=N&follow=true&previous=true&timestamps=true

No authentication: bind it to an address only trusted machines reach.
"""
from __future__ import annotations

import logging
import threading

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from werkzeug.serving import make_server

import pod_config as cfg
from common.log import EventLogger
from pod_status import latest_two

bp = Blueprint("kubelet", __name__)


def create_app(kubelet) -> Flask:
    app = Flask("kubelet")
    app.config["KUBELET"] = kubelet
    app.register_blueprint(bp)
    return app


def status_error(code: int, reason: str, message: str):
    """Errors in Kubernetes' Status shape, so clients read them alike."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    return jsonify(body), code


@bp.get("/healthz")
def healthz():
    return "ok\n", 200, {"Content-Type": "text/plain"}


@bp.get("/pods")
def pods():
    return jsonify(current_app.config["KUBELET"].pod_list())


@bp.get("/metrics")
def metrics():
    """A start on the real kubelet's /metrics: how many syncs have run (a
    test waits for "a few more syncs" by watching it) and how many pods."""
    kubelet = current_app.config["KUBELET"]
    body = ("# TYPE kubelet_sync_loops_total counter\n"
            f"kubelet_sync_loops_total {kubelet.syncs}\n"
            "# TYPE kubelet_desired_pods gauge\n"
            f"kubelet_desired_pods {len(kubelet.pods)}\n")
    return body, 200, {"Content-Type": "text/plain; version=0.0.4"}


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


def serve(kubelet, address: str, port: int, log: EventLogger):
    """Serve in a background thread; returns the server (its .port is real
    even when port 0 asked for any free one)."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = make_server(address, port, create_app(kubelet), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True, name="read-only-port").start()
    log.info("read-only port listening", obj=f"{address}:{server.port}")
    return server
