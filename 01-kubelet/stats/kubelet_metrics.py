"""The kubelet's Prometheus figures: GET /metrics and GET /metrics/resource.

    /metrics            how the kubelet itself is doing:
                        kubelet_sync_loops_total, kubelet_sync_loop_duration_seconds (ours),
                        kubelet_pod_start_duration_seconds, kubelet_running_pods,
                        kubelet_running_containers{container_state}, kubelet_desired_pods,
                        kubelet_events_total{result} (ours: written, filtered, dropped)
    /metrics/resource   what the pods use: container_cpu_usage_seconds_total,
                        container_memory_working_set_bytes, pod_..., node_... (from /stats/summary)

Kubernetes' names where Kubernetes has the figure, so a dashboard made for
a real kubelet reads ours. Kubernetes' kubelet has no sync-loop counter:
its loop is driven by events (PLEG, kubelet_pleg_relist_duration_seconds
is the nearest); ours syncs every second, and the tests wait for "a few
more syncs" by watching kubelet_sync_loops_total. Gauges are counted when
/metrics is read, from the kubelet's latest sync, so syncing pays nothing
for them. prometheus_client writes the text format.
"""
from __future__ import annotations

from datetime import datetime, timezone

from prometheus_client import CollectorRegistry, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest

import pod_config as cfg

disable_created_metrics()      # Kubernetes has no *_created series
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"     # the classic format, every scraper reads it

# Kubernetes' buckets for pod start: half a second to ten minutes.
POD_START_BUCKETS = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900)
SYNC_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class KubeletMetrics:
    def __init__(self, kubelet):
        self.registry = CollectorRegistry()
        self.sync_seconds = Histogram(
            "kubelet_sync_loop_duration_seconds", "Duration in seconds of one sync, failed ones included: list "
            "the containers, compare with the pods wanted, hand out the work (ours).", buckets=SYNC_BUCKETS,
            registry=self.registry)
        self.pod_start_seconds = Histogram(
            "kubelet_pod_start_duration_seconds", "Duration in seconds from kubelet seeing a pod for the first "
            "time to the pod starting to run", buckets=POD_START_BUCKETS, registry=self.registry)
        self.registry.register(PodCounts(kubelet))

    def timing_sync(self):
        """with metrics.timing_sync(): sync_once()"""
        return self.sync_seconds.time()

    def pod_started(self, seconds: float) -> None:
        self.pod_start_seconds.observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class PodCounts:
    """kubelet_sync_loops_total, kubelet_running_pods and friends, counted when /metrics is read."""

    def __init__(self, kubelet):
        self.kubelet = kubelet

    def collect(self):
        syncs = CounterMetricFamily("kubelet_sync_loops", "Number of completed syncs of the kubelet's loop (ours).")
        syncs.add_metric([], self.kubelet.syncs)
        yield syncs
        # What became of the events it recorded: no event is lost without a count here.
        events = CounterMetricFamily("kubelet_events", "Events the kubelet recorded, by what became of them: "
                                     "written to the API server, filtered (over the rate of events about one "
                                     "object) or dropped (queue full, API server away) (ours).", labels=["result"])
        for result in ("written", "filtered", "dropped"):
            events.add_metric([result], getattr(self.kubelet.events, result))
        yield events
        pods = self.kubelet.pods_and_containers()
        running = GaugeMetricFamily("kubelet_running_pods", "Number of pods that have a running pod sandbox")
        running.add_metric([], sum(1 for _, containers in pods
                                   if any(c.name == cfg.SANDBOX_NAME and c.running for c in containers)))
        states = GaugeMetricFamily("kubelet_running_containers", "Number of containers currently running",
                                   labels=["container_state"])
        counts = {"created": 0, "running": 0, "exited": 0, "unknown": 0}
        for _, containers in pods:
            for container in containers:
                if container.name != cfg.SANDBOX_NAME:
                    state = "running" if container.running else container.state
                    counts[state if state in counts else "unknown"] += 1
        for state, count in counts.items():
            states.add_metric([state], count)
        desired = GaugeMetricFamily("kubelet_desired_pods", "The number of pods the kubelet is being "
                                    "instructed to run.")
        desired.add_metric([], len(pods))
        yield from (running, states, desired)


# [START metrics-resource]
def resource_metrics(summary: dict) -> bytes:
    """/metrics/resource: the Summary's figures as Prometheus series, each
    with the time of its reading (what metrics-server 0.6+ reads instead of
    /stats/summary). CPU is the cumulative counter in seconds: whoever
    scrapes it takes the rate between two scrapes."""
    registry = CollectorRegistry()
    registry.register(_ResourceSeries(summary))
    return generate_latest(registry)


class _ResourceSeries:
    def __init__(self, summary: dict):
        self.summary = summary

    def collect(self):
        node = self.summary["node"]
        cpu = {"node": CounterMetricFamily("node_cpu_usage_seconds", "Cumulative cpu time consumed by the node "
                                           "in core-seconds"),
               "pod": CounterMetricFamily("pod_cpu_usage_seconds", "Cumulative cpu time consumed by the pod in "
                                          "core-seconds", labels=["namespace", "pod"]),
               "container": CounterMetricFamily("container_cpu_usage_seconds", "Cumulative cpu time consumed by "
                                                "the container in core-seconds",
                                                labels=["container", "namespace", "pod"])}
        memory = {"node": GaugeMetricFamily("node_memory_working_set_bytes", "Current working set of the node "
                                            "in bytes"),
                  "pod": GaugeMetricFamily("pod_memory_working_set_bytes", "Current working set of the pod in "
                                           "bytes", labels=["namespace", "pod"]),
                  "container": GaugeMetricFamily("container_memory_working_set_bytes", "Current working set of "
                                                 "the container in bytes", labels=["container", "namespace", "pod"])}
        _add(cpu["node"], memory["node"], [], node)
        for pod in self.summary["pods"]:
            ref = pod["podRef"]
            _add(cpu["pod"], memory["pod"], [ref["namespace"], ref["name"]], pod)
            for container in pod["containers"]:
                _add(cpu["container"], memory["container"], [container["name"], ref["namespace"], ref["name"]],
                     container)
        yield from cpu.values()
        yield from memory.values()
# [END metrics-resource]


def _add(cpu: CounterMetricFamily, memory: GaugeMetricFamily, labels: list[str], stats: dict) -> None:
    cpu.add_metric(labels, stats["cpu"]["usageCoreNanoSeconds"] / 1e9, timestamp=_seconds(stats["cpu"]["time"]))
    memory.add_metric(labels, stats["memory"]["workingSetBytes"], timestamp=_seconds(stats["memory"]["time"]))


def _seconds(moment: str) -> float:
    """A metav1.Time (2026-11-22T08:36:33Z) as seconds since the epoch."""
    return datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
