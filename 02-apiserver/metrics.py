"""GET /metrics: what the API server is doing, in Prometheus' text format.

    apiserver_request_total{verb="LIST",resource="pods",code="200",...} 42
    apiserver_request_duration_seconds_bucket{verb="LIST",resource="pods",le="0.025",...} 40
    apiserver_current_inflight_requests{request_kind="readOnly"} 1
    apiserver_longrunning_requests{verb="WATCH",resource="pods",...} 3
    apiserver_storage_objects{resource="pods"} 30

Kubernetes' names, labels and buckets, so a Prometheus dashboard made for a
real cluster reads ours. prometheus_client writes the text format.

Every request is counted by two hooks that run around all the others
(install): the first thing before a request, the last thing after it. A
watch's answer is still streaming when the handler returns, so a watch is
counted when its stream closes, and meanwhile shows in
apiserver_longrunning_requests. Stored objects are counted only when
/metrics is read, so requests pay nothing for them.

On the secure port /metrics is a path the policy must allow (Kubernetes
grants it to the group system:monitoring); on the insecure port it is open,
like everything there.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from flask import Blueprint, Response, current_app, g, request
from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector,
                               disable_created_metrics)
from prometheus_client.exposition import choose_encoder
from prometheus_client.core import GaugeMetricFamily

import api_errors
import registry
import request_info

bp = Blueprint("metrics", __name__)

COMPONENT = "apiserver"
# Kubernetes' buckets: fine below a second, where its latency targets are.
DURATION_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10,
                    15, 20, 30, 45, 60)
# Subresources Kubernetes reports as CONNECT: they stream, or hold a connection.
CONNECT_SUBRESOURCES = ("log", "exec", "attach", "portforward", "proxy")
APPLY_PATCH = "application/apply-patch+yaml"
MUTATING = ("POST", "PUT", "PATCH", "DELETE")
_REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")

# Kubernetes has no *_created series; prometheus_client adds one per counter
# unless told not to.
disable_created_metrics()


@dataclass(frozen=True)
class RequestLabels:
    """What Kubernetes labels a request with. For paths that name no object
    (/version, /openapi/v3/...), subresource holds the route that served it."""
    verb: str            # GET LIST WATCH POST PUT PATCH APPLY DELETE CONNECT
    dry_run: str
    group: str
    version: str
    resource: str
    subresource: str
    scope: str           # resource, namespace, cluster; "" for paths

    @property
    def long_running(self) -> bool:
        return self.verb in ("WATCH", "CONNECT")


class Metrics:
    def __init__(self, store):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apiserver_request_total", "Counter of apiserver requests broken out for each verb, dry run value, "
            "group, version, resource, scope, component, and HTTP response code.",
            (*_REQUEST_LABELS, "code"), registry=self.registry)
        self.durations = Histogram(
            "apiserver_request_duration_seconds", "Response latency distribution in seconds for each verb, "
            "dry run value, group, version, resource, subresource, scope and component.",
            _REQUEST_LABELS, buckets=DURATION_BUCKETS, registry=self.registry)
        self.inflight = Gauge(
            "apiserver_current_inflight_requests", "Number of requests being handled, per request kind "
            "(Kubernetes reports the largest number in the last second; this is the number now).",
            ("request_kind",), registry=self.registry)
        self.long_running = Gauge(
            "apiserver_longrunning_requests", "Gauge of all active long-running apiserver requests broken out "
            "by verb, group, version, resource, scope and component: open watches and log streams.",
            ("verb", "group", "version", "resource", "subresource", "scope", "component"),
            registry=self.registry)
        self.storage = Histogram(
            "etcd_request_duration_seconds", "Storage request latency in seconds for each operation and "
            "object type: Kubernetes' name, whichever store runs (the JSON files or etcd).",
            ("operation", "type"), buckets=DURATION_BUCKETS, registry=self.registry)
        self.registry.register(StoredObjects(store))
        ProcessCollector(registry=self.registry)          # process_cpu_seconds_total, memory, open fds
        # Looking a series up by its labels is most of the cost of counting a
        # request, so each series is looked up once and kept.
        self.inflight_of = {kind: self.inflight.labels(kind) for kind in ("readOnly", "mutating")}
        self._series: dict[tuple[RequestLabels, int], tuple] = {}

    def record(self, labels: RequestLabels, code: int, seconds: float) -> None:
        series = self._series.get((labels, code))
        if series is None:
            values = (labels.verb, labels.dry_run, labels.group, labels.version, labels.resource,
                      labels.subresource, labels.scope, COMPONENT)
            series = self._series.setdefault(
                (labels, code), (self.requests.labels(*values, str(code)), self.durations.labels(*values)))
        count, duration = series
        count.inc()
        duration.observe(seconds)

    def open_long_running(self, labels: RequestLabels):
        gauge = self.long_running.labels(labels.verb, labels.group, labels.version, labels.resource,
                                         labels.subresource, labels.scope, COMPONENT)
        gauge.inc()
        return gauge

    def close_long_running(self, gauge, labels: RequestLabels, code: int, started: float) -> None:
        gauge.dec()
        self.record(labels, code, time.perf_counter() - started)


class StoredObjects:
    """apiserver_storage_objects{resource="deployments.apps"}, counted when /metrics is read."""

    def __init__(self, store):
        self.store = store

    def describe(self):
        return [self._family()]

    def collect(self):
        family = self._family()
        for resource in registry.RESOURCES:
            if "list" in resource.verbs:        # the others are questions, never stored
                family.add_metric([str(resource)], len(self.store.list(resource)[0]))
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("apiserver_storage_objects",
                                 "Number of stored objects at the time of last check split by kind.",
                                 labels=["resource"])


@bp.get("/metrics")
def serve_metrics():
    # The classic text format, or OpenMetrics if the scraper asks for it.
    encode, content_type = choose_encoder(request.headers.get("Accept"))
    return Response(encode(current_app.extensions["metrics"].registry), content_type=content_type)


def install(app) -> None:
    """Count every request: call before any other hooks are installed, so
    `start` runs first and `finish` last, whatever the others refuse. The
    store the requests use is timed too."""
    server = app.extensions["apiserver"]
    app.extensions["metrics"] = metrics = Metrics(server.store)
    server.store = TimedStore(server.store, metrics.storage)
    app.before_request(start)
    app.after_request(finish)


class TimedStore:
    """The store, with each read and write timed (a write's time includes
    waiting for the disk, or for etcd's majority). Everything else passes
    through untouched."""
    TIMED = ("get", "list", "create", "update", "delete")

    def __init__(self, store, histogram: Histogram):
        self._store, self._histogram = store, histogram
        self._series: dict[tuple[str, str], object] = {}

    def __getattr__(self, name: str):
        found = getattr(self._store, name)
        if name not in self.TIMED:
            return found

        def timed(resource, *args, **kwargs):
            started = time.perf_counter()
            try:
                return found(resource, *args, **kwargs)
            finally:
                key = (name, str(resource))
                series = self._series.get(key) or self._series.setdefault(key, self._histogram.labels(*key))
                series.observe(time.perf_counter() - started)
        return timed


def start() -> None:
    kind = "mutating" if request.method in MUTATING else "readOnly"
    current_app.extensions["metrics"].inflight_of[kind].inc()
    g.metrics_started = (time.perf_counter(), kind)


def finish(response):
    metrics = current_app.extensions["metrics"]
    started, kind = g.pop("metrics_started", (None, None))
    if started is None:                 # already counted (finish runs again after an error in a hook)
        return response
    metrics.inflight_of[kind].dec()
    labels = request_labels()
    if not labels.long_running:
        metrics.record(labels, response.status_code, time.perf_counter() - started)
        return response
    # Still streaming: count it when the stream ends (or the client leaves).
    gauge = metrics.open_long_running(labels)
    response.call_on_close(partial(metrics.close_long_running, gauge, labels, response.status_code, started))
    return response


def request_labels() -> RequestLabels:
    info = g.get("info")            # rest.serve_resource parsed it
    if info is None and request_info.is_resource_path(request.path):
        try:                        # refused before the handler parsed it, or a review
            info = request_info.parse(request.method, request.path, request.args)
        except api_errors.APIError:
            info = None
    dry_run = _dry_run(request.args.getlist("dryRun"))
    if info is None:
        # The route that served it, not the path itself: a scanner's
        # made-up paths must not make a new series each.
        served = request.url_rule is not None and request.endpoint != "rest.serve_resource"
        route = request.url_rule.rule if served else ""
        return RequestLabels(_verb(None), dry_run, "", "", "", route, "")
    scope = ("resource" if info.name or info.verb == "create"
             else "namespace" if info.namespace else "cluster")
    resource = info.resource
    return RequestLabels(_verb(info), dry_run, resource.group, resource.version, resource.plural,
                         info.subresource, scope)


def _dry_run(values: list[str]) -> str:
    if not values:
        return ""
    # "All" is the one value there is; anything else is refused, and must
    # not make a series of its own.
    return "All" if set(values) == {"All"} else "invalid"


def _verb(info) -> str:
    """Kubernetes' reported verb: the HTTP method, except LIST, WATCH, APPLY and CONNECT."""
    method = request.method
    if info is not None:
        if info.subresource in CONNECT_SUBRESOURCES:
            return "CONNECT"
        if info.verb == "watch":
            return "WATCH"
        if info.verb == "list":
            return "LIST"
    if method == "HEAD":
        return "GET"
    if method == "PATCH" and (request.content_type or "").split(";")[0].strip() == APPLY_PATCH:
        return "APPLY"
    return method if method in ("GET", "POST", "PUT", "PATCH", "DELETE") else "other"
