"""GET /stats/summary: what the node and each pod's containers use, in the
shape of Kubernetes' Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1):

    {"node": {"nodeName": "node1", "cpu": {"time", "usageNanoCores", "usageCoreNanoSeconds"},
              "memory": {"time", "availableBytes", "usageBytes", "workingSetBytes"}, ...},
     "pods": [{"podRef": {"name", "namespace", "uid"}, "startTime", "cpu", "memory",
               "containers": [{"name", "startTime", "cpu", "memory"}]}]}

The API server reads it to answer `kubectl top` (02-apiserver/resource_metrics.py),
as metrics-server does in Kubernetes.

Nothing is read until someone asks: a request reads every running
container's counters (resource_usage.py, no Docker call: the containers
and their processes are those of the latest sync) and keeps the answer
for RESOLUTION seconds, so a dashboard polling every second costs one
reading per 10 s. The CPU figure is a rate, and a rate needs two readings:
each container's previous one, or, on the first request of its life, its
start (when its counter was 0). The window is therefore at least
RESOLUTION, longer when nobody asked for a while; Kubernetes' kubelet
(cAdvisor) reads every 10-15 s whether asked or not.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pod_config as cfg
from common.times import rfc3339
from stats.resource_usage import Usage, UsageUnreadable, boot_time, container_usage, machine_usage, meminfo

RESOLUTION = 10.0      # seconds an answer is served again (metrics-server scrapes every 15 s)


# [START cpu-rate]
@dataclass(frozen=True)
class Reading:
    """A CPU counter at a moment: cumulative core-nanoseconds, seconds since the epoch."""
    at: float
    cpu_ns: int


def nano_cores(earlier: Reading, later: Reading) -> int:
    """The average CPU use between two readings, in nanocores: 1e9 is one
    core busy all the time, 250_000_000 a quarter of one (kubectl prints 250m).
    A counter that went backwards was reset (a new container under the
    same key): no rate can be told, 0."""
    seconds = later.at - earlier.at
    used = later.cpu_ns - earlier.cpu_ns
    if seconds <= 0 or used < 0:
        return 0
    return round(used / seconds)


class CpuRates:
    """The previous reading of each counter, to divide the next one by."""

    def __init__(self):
        self._previous: dict[str, Reading] = {}

    def rate(self, key: str, now: Reading, started_at: float) -> int:
        """Nanocores since this key's previous reading; the first time,
        since it started, when its counter was 0."""
        earlier = self._previous.get(key) or Reading(started_at, 0)
        self._previous[key] = now
        return nano_cores(earlier, now)

    def keep_only(self, keys: set[str]) -> None:
        """Forget the counters of containers that are gone."""
        for key in self._previous.keys() - keys:
            del self._previous[key]
# [END cpu-rate]


def cpu_stats(usage: Usage, nano_cores_now: int) -> dict:
    return {"time": rfc3339(usage.at), "usageNanoCores": nano_cores_now, "usageCoreNanoSeconds": usage.cpu_ns}


def memory_stats(usage: Usage, limit: int | None = None) -> dict:
    """availableBytes is the limit minus the working set, and only where there is a limit."""
    stats = {"time": rfc3339(usage.at), "usageBytes": usage.memory_bytes, "workingSetBytes": usage.working_set_bytes}
    if usage.rss_bytes is not None:
        stats["rssBytes"] = usage.rss_bytes
    if limit:
        stats["availableBytes"] = max(0, limit - usage.working_set_bytes)
    return stats


class StatsSummary:
    """Builds the Summary on request, and serves it again for RESOLUTION seconds.

    pods_and_containers(): each pod the kubelet runs with its Docker
    containers (ContainerInfo), as of the latest sync. The readers are
    parameters so that tests can hand in counters of their own."""

    def __init__(self, node_name: str, pods_and_containers, log=None, *, read_container=container_usage,
                 read_machine=machine_usage, clock=time.time, resolution: float = RESOLUTION):
        self.node_name = node_name
        self.pods_and_containers = pods_and_containers
        self.log = log
        self.read_container, self.read_machine = read_container, read_machine
        self.clock, self.resolution = clock, resolution
        self.rates = CpuRates()
        self._answer: dict | None = None
        self._answered_at = float("-inf")
        self._lock = threading.Lock()      # one reading at a time; the others wait and share it
        self._unreadable: set[str] = set()
        # The machine's counter runs from boot: one reading now (no more until
        # asked) makes the first answer's rate run from the kubelet's start.
        usage = read_machine()
        self.rates.rate("node", Reading(usage.at, usage.cpu_ns), boot_time())

    def summary(self) -> dict:
        with self._lock:
            if self.clock() - self._answered_at >= self.resolution:
                self._answer = {"node": self._node(), "pods": self._pods()}
                self._answered_at = self.clock()
            return self._answer

    def _node(self) -> dict:
        usage = self.read_machine()
        total = meminfo()["MemTotal"]
        return {"nodeName": self.node_name, "startTime": rfc3339(boot_time()),
                "cpu": cpu_stats(usage, self.rates.rate("node", Reading(usage.at, usage.cpu_ns), boot_time())),
                "memory": memory_stats(usage, limit=total)}

    def _pods(self) -> list[dict]:
        pods, seen = [], {"node"}
        for pod, containers in self.pods_and_containers():
            running = [c for c in containers if c.running and c.pid]
            measured = [(c, usage) for c in running if (usage := self._read(c)) is not None]
            seen.update(c.id for c, _ in measured)
            apps = [(c, usage) for c, usage in measured if c.name != cfg.SANDBOX_NAME]
            if apps:
                pods.append(self._pod(pod, measured, apps))
        self.rates.keep_only(seen)
        return pods

    def _read(self, container) -> Usage | None:
        """A container's counters, or None (it stopped since the sync;
        or this machine cannot see them, said once per container)."""
        try:
            return self.read_container(container.pid)
        except UsageUnreadable as error:
            if self.log and container.id not in self._unreadable:
                self._unreadable.add(container.id)
                self.log.warning("cannot read a container's usage", obj=f"{container.pod_namespace}/"
                                 f"{container.pod_name}", container=container.name, error=str(error))
            return None

    def _pod(self, pod: dict, measured: list, apps: list) -> dict:
        """The pod's figures are its containers' together, the pause
        container included: Kubernetes reads the pod's own cgroup, which
        holds them all (ours are each in a cgroup of their own)."""
        rates = {c.id: self.rates.rate(c.id, Reading(u.at, u.cpu_ns), c.started_at or u.at) for c, u in measured}
        newest = max(u.at for _, u in measured)
        together = Usage(newest, sum(u.cpu_ns for _, u in measured), sum(u.memory_bytes for _, u in measured),
                         sum(u.working_set_bytes for _, u in measured), sum(u.rss_bytes or 0 for _, u in measured))
        meta = pod["metadata"]
        first = min(c.started_at or newest for c, _ in measured)
        return {"podRef": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
                "startTime": rfc3339(first),
                "containers": [{"name": c.name, "startTime": rfc3339(c.started_at or u.at),
                                "cpu": cpu_stats(u, rates[c.id]), "memory": memory_stats(u)}
                               for c, u in sorted(apps, key=lambda pair: pair[0].name)],
                "cpu": cpu_stats(together, sum(rates.values())), "memory": memory_stats(together)}
