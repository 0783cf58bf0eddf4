"""/healthz, /livez and /readyz: is this server up, and can it serve? And
/version: which Kubernetes it speaks.

Not kubectl's alone: load balancers, the test harness and `make ha` ask
the first three, kubelets and client libraries ask /version (as Kubernetes'
generic server answers it beside the health checks, not discovery), so the
core answers them with or without kubectl_compat.
"""
from __future__ import annotations

import platform
import sys

from flask import Blueprint, Response

from request_context import respond, server

bp = Blueprint("health", __name__)
KUBERNETES_MINOR = "32"     # the kubectl dispatcher picks its kubectl by this: keep 1.32


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


@bp.get("/version", strict_slashes=False)
def version():
    return respond({"major": "1", "minor": KUBERNETES_MINOR, "gitVersion": f"v1.{KUBERNETES_MINOR}.0-groundup",
                    "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z",
                    "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
                    "compiler": "cpython", "platform": f"linux/{platform.machine()}"})
