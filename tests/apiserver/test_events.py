"""common/client/events.py: the EventRecorder against a real API server.

What `kubectl describe` shows at the bottom comes from here, so the tests
check what kubectl reads: the Event's fields, its namespace, repeats merged
into one object with a count, and that recording never blocks a component
when the API server is away. The correlator's rules themselves are
table-tested on a fake clock in tests/common/test_event_correlator.py.
"""
from __future__ import annotations

import threading

import pytest

from apiserver_harness import pod
from common.client.client import APIClient, APIConnectionError
from common.client.events import EventRecorder, reference
from common.client.kubeconfig import Connection


@pytest.fixture(scope="module")
def client(apiserver) -> APIClient:
    return APIClient(Connection(apiserver.url), timeout=10)


@pytest.fixture
def recorder(client):
    events = EventRecorder(client, "kubelet", host="node1").start()
    yield events
    events.stop()


def events_about(client, namespace, name):
    listed = client.list("v1", "events", namespace, field_selector=f"involvedObject.name={name}")
    return sorted(listed["items"], key=lambda e: e["metadata"]["creationTimestamp"])


def test_an_event_points_at_its_object_and_names_its_source(client, recorder, namespace):
    web = client.create("v1", "pods", pod("web"), namespace=namespace)
    recorder.event(web, "Normal", "Started", "Started container app", field_path="spec.containers{app}")
    assert recorder.flush()
    [event] = events_about(client, namespace, "web")
    assert event["metadata"]["namespace"] == namespace
    assert event["metadata"]["name"].startswith("web.")
    assert event["involvedObject"] == {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": "web",
                                       "uid": web["metadata"]["uid"],
                                       "resourceVersion": web["metadata"]["resourceVersion"],
                                       "fieldPath": "spec.containers{app}"}
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "Started", "Started container app")
    assert event["source"] == {"component": "kubelet", "host": "node1"}
    assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"]


def test_repeats_are_merged_into_one_event_with_a_count(client, recorder, namespace):
    web = client.create("v1", "pods", pod("crashy"), namespace=namespace)
    for _ in range(4):
        recorder.event(web, "Warning", "BackOff", "Back-off restarting failed container app")
    recorder.event(web, "Warning", "Unhealthy", "Liveness probe failed: connection refused")
    assert recorder.flush()
    events = {e["reason"]: e for e in events_about(client, namespace, "crashy")}
    assert set(events) == {"BackOff", "Unhealthy"}
    assert events["BackOff"]["count"] == 4 and events["Unhealthy"]["count"] == 1
    assert recorder.written == 5         # 2 creates + 3 count bumps, no extra objects


def test_a_deleted_event_is_written_whole_on_the_next_repeat_with_its_count(client, recorder, namespace):
    # Events expire; the recorder still remembers it. As client-go does, the
    # repeat's PATCH answers 404 and the Event is created again, its count
    # carried on.
    ref = {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": "gone", "uid": "u-1"}
    recorder.event(ref, "Normal", "Killing", "Stopping container app")
    assert recorder.flush()
    [event] = events_about(client, namespace, "gone")
    client.delete("v1", "events", namespace, event["metadata"]["name"])
    recorder.event(ref, "Normal", "Killing", "Stopping container app")
    assert recorder.flush()
    [again] = events_about(client, namespace, "gone")
    assert again["count"] == 2 and again["metadata"]["name"] == event["metadata"]["name"]
    assert again["firstTimestamp"] == event["firstTimestamp"]


def test_similar_events_are_combined_into_one_counted_event(client, recorder, namespace):
    ref = {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": "flaky", "uid": "u-2"}
    for number in range(12):
        recorder.event(ref, "Warning", "Unhealthy", f"Readiness probe failed: attempt {number}")
    assert recorder.flush()
    events = events_about(client, namespace, "flaky")
    combined = [e for e in events if e["message"].startswith("(combined from similar events): ")]
    assert len(events) == 10 and len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == "(combined from similar events): Readiness probe failed: attempt 11"


def test_events_about_cluster_scoped_objects_go_to_default(client, recorder):
    node = {"kind": "Node", "apiVersion": "v1", "name": "node-events-test", "uid": "node-events-test"}
    recorder.event(node, "Normal", "NodeReady", "Node node-events-test status is now: NodeReady")
    assert recorder.flush()
    assert [e["reason"] for e in events_about(client, "default", "node-events-test")] == ["NodeReady"]


class StuckAPIServer:
    """A client whose every create hangs until released, then fails as an
    unreachable server does."""

    def __init__(self):
        self.release = threading.Event()

    def create(self, *args, **kwargs):
        self.release.wait(10)
        raise APIConnectionError("cannot reach the API server")


def test_recording_never_blocks_when_the_api_server_is_away():
    stuck = StuckAPIServer()
    recorder = EventRecorder(stuck, "kubelet", host="node1", queue_size=3).start()
    # The writer is stuck on the first event: 50 more calls must all return
    # (queued or dropped) without waiting for it. (50 pods, one event each:
    # about one pod, the correlator would combine and filter them.)
    for number in range(50):
        ref = reference({"kind": "Pod", "apiVersion": "v1", "metadata": {"namespace": "default", "name": f"x{number}"}})
        recorder.event(ref, "Normal", "Pulled", f"message {number}")
    assert recorder.dropped >= 46          # queue of 3, one in the writer's hands
    stuck.release.set()
    assert recorder.flush(timeout=10)
    recorder.stop()
    assert recorder.written == 0 and recorder.dropped == 50


def test_without_a_client_recording_is_a_no_op():
    recorder = EventRecorder(None, "kubelet").start()
    recorder.event({"kind": "Pod", "name": "x"}, "Normal", "Pulled", "whatever")
    assert recorder.flush() and recorder.written == 0


def test_four_writers_write_a_burst_of_events_each_created_before_its_count(client, namespace):
    # The scheduler's burst: one Scheduled event per pod, several writers
    # at once; and repeats of one event, whose PATCHes must follow their
    # create (the same writer takes every write of one Event).
    recorder = EventRecorder(client, "default-scheduler", queue_size=1000, writers=4).start()
    try:
        for number in range(120):
            ref = {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": f"burst-{number}",
                   "uid": f"u-burst-{number}"}
            recorder.event(ref, "Normal", "Scheduled", f"Successfully assigned {namespace}/burst-{number} to n1")
        repeated = {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": "burst-again", "uid": "u-ba"}
        for _ in range(6):
            recorder.event(repeated, "Warning", "BackOff", "Back-off restarting failed container app")
        assert recorder.flush(timeout=30)
    finally:
        recorder.stop()
    listed = client.list("v1", "events", namespace)["items"]
    scheduled = [e for e in listed if e["reason"] == "Scheduled" and e["involvedObject"]["name"].startswith("burst-")]
    assert len(scheduled) == 120
    [backoff] = [e for e in listed if e["involvedObject"]["name"] == "burst-again"]
    assert backoff["count"] == 6
    assert (recorder.written, recorder.dropped, recorder.queued()) == (126, 0, 0)


class Log:
    def __init__(self):
        self.warnings = []

    def warning(self, event, **fields):
        self.warnings.append((event, fields))

    def debug(self, event, **fields):
        pass

    error = info = debug


def test_what_a_full_queue_drops_is_counted_and_said():
    stuck = StuckAPIServer()
    log = Log()
    recorder = EventRecorder(stuck, "default-scheduler", queue_size=2, writers=2, log=log).start()
    for number in range(150):
        ref = {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": f"d{number}", "uid": f"d{number}"}
        recorder.event(ref, "Normal", "Scheduled", f"Successfully assigned default/d{number} to n1")
    assert recorder.dropped >= 146         # a queue of one per writer, one in each writer's hands
    # Said in the log at the first drop and at each hundredth, not once per event.
    assert [fields["dropped"] for _, fields in log.warnings] == [1, 100]
    assert log.warnings[0][1]["reason"] == "the queue is full"
    stuck.release.set()
    recorder.stop(timeout=15)
    assert recorder.written == 0 and recorder.dropped == 150
