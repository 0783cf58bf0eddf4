"""What the kubelet's port tells about usage (chapter 02, part 6):

    GET /metrics             the kubelet's own figures, in Prometheus' text format (kubelet_metrics.py)
    GET /stats/summary       what the node and each pod use: the Summary API (stats_summary.py)
    GET /metrics/resource    the same, in Prometheus' text format

kubelet.py registers this blueprint on the read-only port
(readonly_server.py) whenever the port is on, as Kubernetes' kubelet
serves these on its ports; with --read-only-port 0 none of this loads.
The same port's token check covers these routes too.
"""
from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from stats.kubelet_metrics import PROMETHEUS_TEXT, KubeletMetrics, resource_metrics
from stats.stats_summary import StatsSummary

bp = Blueprint("stats", __name__)


def install(kubelet) -> Blueprint:
    """From now on the sync loop reports its figures to /metrics, and
    /stats/summary reads this kubelet's pods; returns the routes."""
    kubelet.metrics = KubeletMetrics(kubelet)
    kubelet.stats = StatsSummary(kubelet.node_name, kubelet.pods_and_containers, kubelet.log)
    return bp


@bp.get("/metrics")
def metrics():
    """How the kubelet is doing: syncs, pod starts, running pods."""
    return Response(current_app.config["KUBELET"].metrics.exposition(), content_type=PROMETHEUS_TEXT)


@bp.get("/stats/summary")
def stats_summary():
    """What the node and its pods use, read on request: what the API
    server reads for `kubectl top`."""
    return jsonify(current_app.config["KUBELET"].stats.summary())


@bp.get("/metrics/resource")
def metrics_resource():
    return Response(resource_metrics(current_app.config["KUBELET"].stats.summary()), content_type=PROMETHEUS_TEXT)
