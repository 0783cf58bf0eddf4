"""The event correlator (common/client/events.py): which events reach the API
server, as new Events, as counts on existing ones, or not at all.

Pure logic on a fake clock: each case is a list of (seconds, event) and
what the correlator makes of each, written as

    "new E1 x1 <message>"     create Event E1 (E1, E2... in order of creation)
    "patch E1 x3 <message>"   set E1's count to 3 (and its message)
    "dropped"                 over the spam filter's rate
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from common.client.events import (COMBINED, REMEMBERED, EventCorrelator, EventRecorder, EventWrite, Record,
                           TokenBucket)

WEB = {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "web", "uid": "u-web"}
DB = {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "db", "uid": "u-db"}
MINUTE = 60.0


def ev(message: str, reason: str = "BackOff", about: dict = WEB, field_path: str | None = None) -> Record:
    involved = {**about, "fieldPath": field_path} if field_path else about
    return Record(involved, "Warning", reason, message, at="2026-11-22T10:00:00Z")


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Case:
    name: str
    steps: list[tuple[float, Record]]
    expected: list[str]
    remembered: int = REMEMBERED


def different(count: int, reason: str = "BackOff", at: float = 0.0, about: dict = WEB) -> list:
    """count similar events: same reason, messages m0, m1, ..."""
    return [(at, ev(f"m{i}", reason, about)) for i in range(count)]


def reasons(count: int, at: float = 0.0, about: dict = WEB) -> list:
    """count events that are neither repeats nor similar: each its own reason."""
    return [(at, ev("x", f"Reason{i}", about)) for i in range(count)]


CASES = [
    Case("an exact repeat bumps the count of the Event it repeats",
         [(0, ev("crashed")), (10, ev("crashed")), (20, ev("crashed"))],
         ["new E1 x1 crashed", "patch E1 x2 crashed", "patch E1 x3 crashed"]),
    Case("another message, reason, container or object is another Event",
         [(0, ev("a")), (0, ev("b")), (0, ev("a", "Failed")), (0, ev("a", field_path="spec.containers{app}")),
          (0, ev("a", about=DB))],
         ["new E1 x1 a", "new E2 x1 b", "new E3 x1 a", "new E4 x1 a", "new E5 x1 a"]),
    Case("from the tenth different message on, similar events count on one combined Event",
         different(12) + [(0, ev("m0"))],
         [f"new E{i + 1} x1 m{i}" for i in range(9)]
         + [f"new E10 x1 {COMBINED}m9", f"patch E10 x2 {COMBINED}m10", f"patch E10 x3 {COMBINED}m11",
            f"patch E10 x4 {COMBINED}m0"]),
    Case("similar events about another object are counted apart",
         different(9) + different(1, about=DB),
         [f"new E{i + 1} x1 m{i}" for i in range(9)] + ["new E10 x1 m0"]),
    Case("ten quiet minutes and similar events count from zero again",
         different(10) + [(10 * MINUTE + 1, ev("late"))],
         [f"new E{i + 1} x1 m{i}" for i in range(9)] + [f"new E10 x1 {COMBINED}m9", "new E11 x1 late"]),
    Case("the ten minutes run from the last similar event, not the first",
         [(i * 9 * MINUTE, ev(f"m{i}")) for i in range(10)],
         [f"new E{i + 1} x1 m{i}" for i in range(9)] + [f"new E10 x1 {COMBINED}m9"]),
    Case("25 events about one object at once, then the spam filter drops them",
         reasons(26),
         [f"new E{i + 1} x1 x" for i in range(25)] + ["dropped"]),
    Case("the bucket earns one event per five minutes",
         reasons(25) + [(5 * MINUTE, ev("y", "Late")), (5 * MINUTE + 1, ev("z", "Later"))],
         [f"new E{i + 1} x1 x" for i in range(25)] + ["new E26 x1 y", "dropped"]),
    Case("a dropped repeat still counts: the next one written carries the total",
         [(0, ev("crashed"))] * 25 + [(1, ev("crashed")), (5 * MINUTE, ev("crashed"))],
         ["new E1 x1 crashed"] + [f"patch E1 x{n} crashed" for n in range(2, 26)]
         + ["dropped", "patch E1 x27 crashed"]),
    Case("the spam filter counts per object",
         reasons(25) + [(0, ev("x", "Reason0")), (0, ev("x", "Reason0", about=DB))],
         [f"new E{i + 1} x1 x" for i in range(25)] + ["dropped", "new E26 x1 x"]),
    Case("an idle bucket fills up to 25, no further",
         reasons(25) + reasons(26, at=24 * 60 * MINUTE),
         [f"new E{i + 1} x1 x" for i in range(25)] + [f"patch E{i + 1} x2 x" for i in range(25)] + ["dropped"]),
    Case("only the most recently used Events are remembered",
         [(0, ev("a")), (0, ev("b", "Other")), (0, ev("a")), (0, ev("c", "Third")), (0, ev("b", "Other"))],
         ["new E1 x1 a", "new E2 x1 b", "patch E1 x2 a", "new E3 x1 c", "new E4 x1 b"],
         remembered=2),
]


def outcome(write: EventWrite | None, names: dict[str, str]) -> str:
    if write is None:
        return "dropped"
    name = names.setdefault(write.event["metadata"]["name"], f"E{len(names) + 1}")
    return f"{'new' if write.new else 'patch'} {name} x{write.event['count']} {write.event['message']}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_correlator(case):
    clock = FakeClock()
    correlator = EventCorrelator("kubelet", "node1", clock=clock, remembered=case.remembered)
    names: dict[str, str] = {}
    seen = []
    for at, record in case.steps:
        clock.now = at
        seen.append(outcome(correlator.correlate(record), names))
    assert seen == case.expected


def test_a_new_event_names_its_object_source_and_times():
    write = EventCorrelator("kubelet", "node1", clock=FakeClock()).correlate(
        ev("Started container app", "Started", field_path="spec.containers{app}"))
    event = write.event
    assert write.new and event["metadata"]["name"].startswith("web.")
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"] == {**WEB, "fieldPath": "spec.containers{app}"}
    assert event["source"] == {"component": "kubelet", "host": "node1"}
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-11-22T10:00:00Z"


def test_a_repeat_keeps_its_first_timestamp_and_moves_its_last():
    correlator = EventCorrelator("kubelet", "node1", clock=FakeClock())
    correlator.correlate(ev("crashed"))
    later = Record(WEB, "Warning", "BackOff", "crashed", at="2026-11-22T10:05:00Z")
    event = correlator.correlate(later).event
    assert (event["firstTimestamp"], event["lastTimestamp"]) == ("2026-11-22T10:00:00Z", "2026-11-22T10:05:00Z")


# (burst, seconds between refills, moments of take()) -> what each take() answered
BUCKETS = [
    (2, 10.0, [0, 0, 0], [True, True, False]),
    (2, 10.0, [0, 0, 5, 10], [True, True, False, True]),         # half a token at 5 s is not one
    (2, 10.0, [0, 0, 1000, 1000, 1000], [True, True, True, True, False]),   # never more than burst
    (1, 300.0, [0, 299], [True, False]),                         # 299 s earn 0.997 of a token: not one
    (1, 300.0, [0, 150, 300], [True, False, True]),             # a refused take keeps what was earned
    (1, 300.0, [0, 300, 600], [True, True, True]),
]


@pytest.mark.parametrize("burst, refill, moments, answers", BUCKETS)
def test_token_bucket(burst, refill, moments, answers):
    bucket = TokenBucket(burst, refill, at=0.0)
    assert [bucket.take(at) for at in moments] == answers


class RecordingLog:
    def __init__(self):
        self.lines = []

    def info(self, event, obj=None, **fields):
        self.lines.append((event, obj, fields))

    debug = error = warning = info


class AcceptingAPIServer:
    def __init__(self):
        self.creates, self.patches = [], []

    def create(self, group_version, plural, body, namespace):
        self.creates.append(body)
        return body

    def patch(self, group_version, plural, namespace, name, body, strategy):
        self.patches.append((name, body))
        return body


def test_the_recorder_counts_and_logs_what_the_spam_filter_drops():
    server, log = AcceptingAPIServer(), RecordingLog()
    recorder = EventRecorder(server, "kubelet", host="node1", log=log, clock=FakeClock()).start()
    for number in range(30):
        recorder.event({**WEB}, "Normal", f"Reason{number}", "something")
    assert recorder.flush()
    recorder.stop()
    assert (len(server.creates), recorder.written, recorder.filtered, recorder.dropped) == (25, 25, 5, 0)
    assert [(obj, fields["filtered"]) for _, obj, fields in log.lines] == [("default/web", n) for n in range(1, 6)]
