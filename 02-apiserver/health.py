"""/healthz, /livez and /readyz: is this server up, and can it serve?

Not kubectl's: load balancers, the test harness and `make ha` ask them,
so the core answers them with or without kubectl_compat.
"""
from __future__ import annotations

from flask import Blueprint, Response

from request_context import server

bp = Blueprint("health", __name__)


@bp.get("/healthz")
@bp.get("/livez")
def healthz():
    return Response("ok", mimetype="text/plain")


@bp.get("/readyz")
def readyz():
    """Ready to serve: its store answers. A load balancer (part 8's HAProxy)
    sends clients elsewhere while this server cannot reach etcd."""
    problem = server().store.problem()
    if problem:
        return Response(f"[-]etcd failed: {problem}\nreadyz check failed\n", status=500, mimetype="text/plain")
    return Response("ok", mimetype="text/plain")
