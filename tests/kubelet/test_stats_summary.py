"""/stats/summary's arithmetic, with counters the test hands in: CPU rates
from two readings, the cache, and what a pod's figures add up to. (The
real counters, on real Docker, are read in tests/apiserver/test_top.py.)"""
from __future__ import annotations

import pytest

import pod_config as cfg
from docker_runtime import ContainerInfo
from stats.resource_usage import Usage, UsageUnreadable
from stats.stats_summary import CpuRates, Reading, StatsSummary, nano_cores

SECOND = 1_000_000_000


@pytest.mark.parametrize("earlier, later, expected", [
    pytest.param(Reading(100.0, 0), Reading(110.0, 10 * SECOND), SECOND, id="one core busy"),
    pytest.param(Reading(100.0, 0), Reading(110.0, 2 * SECOND + 500_000_000), 250_000_000, id="a quarter: 250m"),
    pytest.param(Reading(100.0, 5 * SECOND), Reading(100.5, 6 * SECOND), 2 * SECOND, id="two cores, half a second"),
    pytest.param(Reading(100.0, 7), Reading(104.0, 7), 0, id="idle"),
    pytest.param(Reading(100.0, 5 * SECOND), Reading(110.0, SECOND), 0, id="counter reset: no rate"),
    pytest.param(Reading(100.0, 0), Reading(100.0, SECOND), 0, id="no time passed: no rate"),
    pytest.param(Reading(110.0, 0), Reading(100.0, SECOND), 0, id="clock went back: no rate"),
])
def test_nano_cores_is_cpu_time_over_wall_time(earlier, later, expected):
    assert nano_cores(earlier, later) == expected


def test_the_first_rate_of_a_counter_runs_from_its_start_then_from_its_previous_reading():
    rates = CpuRates()
    assert rates.rate("c1", Reading(110.0, 5 * SECOND), started_at=100.0) == SECOND // 2
    assert rates.rate("c1", Reading(120.0, 15 * SECOND), started_at=100.0) == SECOND     # busy since 110
    rates.keep_only(set())
    assert rates.rate("c1", Reading(130.0, 15 * SECOND), started_at=100.0) == SECOND // 2  # forgotten: from start


# --- the Summary, from counters the test controls ------------------------------------

def container(name: str, pid: int, pod: str = "web", state: str = "running", started_at: float = 100.0):
    return ContainerInfo(id=f"{pod}-{name}", name=name, pod_uid=f"uid-{pod}", pod_namespace="default",
                         pod_name=pod, hash="", restart_count=0, sandbox_id="", grace_period=30, state=state,
                         exit_code=0, oom_killed=False, error="", started_at=started_at, finished_at=None,
                         created=started_at, image="busybox:1.35", image_id="", ip="", pid=pid)


class Counters:
    """CPU nanoseconds and memory per pid, and the time; a test moves them."""

    def __init__(self):
        self.now = 110.0
        self.cpu = {}
        self.reads = 0

    def container(self, pid: int) -> Usage:
        self.reads += 1
        if pid not in self.cpu:
            raise UsageUnreadable(f"process {pid}: gone")
        return Usage(self.now, self.cpu[pid], memory_bytes=pid * 1000, working_set_bytes=pid * 100, rss_bytes=pid)

    def machine(self) -> Usage:
        return Usage(self.now, int(self.now * SECOND), 8 << 30, 4 << 30)


def pod(name: str = "web") -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}


@pytest.fixture
def counters():
    return Counters()


def summary_of(counters, pods, resolution=10.0) -> StatsSummary:
    return StatsSummary("node1", lambda: pods, read_container=counters.container, read_machine=counters.machine,
                        clock=lambda: counters.now, resolution=resolution)


def test_a_pod_is_its_containers_the_pause_container_counted_in_the_pod_only(counters):
    containers = [container(cfg.SANDBOX_NAME, 1), container("app", 2), container("side", 3)]
    counters.cpu = {1: 0, 2: 10 * SECOND, 3: SECOND}
    stats = summary_of(counters, [(pod(), containers)]).summary()
    (web,) = stats["pods"]
    assert web["podRef"] == {"name": "web", "namespace": "default", "uid": "uid-web"}
    assert [c["name"] for c in web["containers"]] == ["app", "side"]
    app = web["containers"][0]
    assert app["cpu"] == {"time": "1970-01-01T00:01:50Z", "usageNanoCores": SECOND, "usageCoreNanoSeconds": 10 * SECOND}
    assert app["memory"] == {"time": "1970-01-01T00:01:50Z", "usageBytes": 2000, "workingSetBytes": 200, "rssBytes": 2}
    assert web["cpu"]["usageNanoCores"] == SECOND + SECOND // 10
    assert web["memory"]["workingSetBytes"] == 100 + 200 + 300
    assert stats["node"]["nodeName"] == "node1" and stats["node"]["memory"]["workingSetBytes"] == 4 << 30


def test_an_answer_is_served_again_within_the_resolution_then_read_afresh(counters):
    counters.cpu = {2: 10 * SECOND}
    stats = summary_of(counters, [(pod(), [container("app", 2)])])
    first = stats.summary()
    counters.now, counters.cpu[2] = 115.0, 10 * SECOND
    assert stats.summary() is first and counters.reads == 1
    counters.now = 120.0                                      # 10 s after the first reading, idle since
    assert stats.summary()["pods"][0]["containers"][0]["cpu"]["usageNanoCores"] == 0
    assert counters.reads == 2


def test_pods_without_running_app_containers_and_containers_that_vanished_are_left_out(counters):
    counters.cpu = {2: SECOND}
    pods = [(pod("web"), [container("app", 2, "web"), container("gone", 9, "web")]),
            (pod("done"), [container("app", 0, "done", state="exited")]),
            (pod("paused"), [container(cfg.SANDBOX_NAME, 2, "paused")])]
    stats = summary_of(counters, pods).summary()
    assert [(p["podRef"]["name"], [c["name"] for c in p["containers"]]) for p in stats["pods"]] == [("web", ["app"])]
