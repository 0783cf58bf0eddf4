"""One set of watches per dashboard, however many tabs: the tabs share it
(dashboard/cluster_view.py). Read from the API server's own metrics, with
real event streams read the way a browser's EventSource reads them."""
from __future__ import annotations

import json
import queue
import re
import threading

import requests

import cluster_view
from cluster_view import ClusterView
from common.tooling.polling import wait_for
from dashboard_harness import create_pod, register_node

KINDS = 6                   # nodes, pods, services, endpointslices, events, namespaces
TABS = 5


def open_watches(api: str) -> int:
    """Watches open on the API server now (apiserver_longrunning_requests, verb WATCH)."""
    metrics = requests.get(f"{api}/metrics", timeout=10).text
    return int(sum(float(value) for value in
                   re.findall(r'^apiserver_longrunning_requests\{[^}]*verb="WATCH"[^}]*\} (\S+)$', metrics, re.M)))


class Tab:
    """An /events stream, read as EventSource reads it: "event:" and "data:"
    lines, a blank line ending each message."""

    def __init__(self, url: str):
        self.response = requests.get(url + "events", stream=True, timeout=(5, 30))
        assert self.response.headers["Content-Type"].startswith("text/event-stream")
        self.lines = self.response.iter_lines(decode_unicode=True)

    def next_message(self) -> tuple[str, dict]:
        event, data = "message", None
        for line in self.lines:
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: "):])
            elif line == "" and data is not None:
                return event, data
        raise AssertionError("the stream ended")

    def wait_for_change(self, key: str) -> dict:
        while True:
            event, data = self.next_message()
            for change in data if event == "changes" else ():
                if change.get("object", {}).get("key") == key:
                    return change

    def close(self) -> None:
        self.response.close()


def test_many_tabs_share_one_set_of_watches(apiserver, dashboard):
    register_node(apiserver.url, "node1")
    wait_for(lambda: open_watches(apiserver.url) == KINDS, timeout=20, what=f"the dashboard's {KINDS} watches")
    tabs = [Tab(dashboard.url) for _ in range(TABS)]
    try:
        for tab in tabs:
            event, snapshot = tab.next_message()
            assert event == "snapshot"
            assert [n["key"] for n in snapshot["objects"]["nodes"]] == ["node1"]
        create_pod(apiserver.url, "web", node="node1")
        for tab in tabs:                                  # every tab hears of it...
            assert tab.wait_for_change("default/web")["object"]["node"] == "node1"
        assert open_watches(apiserver.url) == KINDS       # ...through the same six watches
    finally:
        for tab in tabs:
            tab.close()
    # Closed tabs are forgotten: the dashboard notices when a write to them
    # fails (TCP may take the first write after a close, so news keeps coming).
    news = iter(range(1, 100))

    def tabs_after_news() -> bool:
        create_pod(apiserver.url, f"news-{next(news)}", node="node1")
        return dashboard.state()["tabs"] == 0

    wait_for(tabs_after_news, timeout=20, interval=0.5, what="the closed tabs to be dropped")


def test_the_state_is_one_json_document_too(apiserver, dashboard):
    register_node(apiserver.url, "node1")
    wait_for(lambda: all(dashboard.state()["synced"].values()), timeout=20, what="every kind listed")
    state = dashboard.state()
    assert set(state["objects"]) == {"nodes", "pods", "services", "endpointslices", "events", "namespaces"}
    assert [n["status"] for n in state["objects"]["nodes"]] == ["Ready"]
    assert state["troubles"] == dict.fromkeys(state["objects"])
    page = requests.get(dashboard.url, timeout=5)
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


# ---------------------------------------------------------------- batches (no API server: the view is fed by hand)

def pod_object(name: str, phase: str = "Pending") -> dict:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"nodeName": "node1"},
            "status": {"phase": phase}}


def queued(subscription) -> list[tuple[str, object]]:
    """The messages waiting in a tab's queue now, decoded."""
    found = []
    while True:
        try:
            message = subscription.messages.get_nowait()
        except queue.Empty:
            return found
        event, data = message.split("\n")[:2]
        found.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))


def test_a_burst_of_changes_reaches_each_tab_as_one_batch_each_object_once(monkeypatch):
    monkeypatch.setattr(cluster_view, "BATCH_SECONDS", 60)   # after the first batch, the next waits: this test
    view = ClusterView(client=None)                         # informers made, never started
    threading.Thread(target=view._send_batches, daemon=True).start()
    first = view.subscribe()
    assert [event for event, _ in queued(first)] == ["snapshot"]

    # The first change after a quiet spell goes out at once...
    view._upsert("pods", pod_object("a"))
    found = []
    wait_for(lambda: found.extend(queued(first)) or found, timeout=10, what="the first change")
    assert found == [("changes", [{"kind": "pods", "op": "upsert", "object": view.snapshot()["objects"]["pods"][0]}])]

    # ...the next ones wait for the batch: twenty pods, one of them changed
    # again, one deleted.
    for i in range(20):
        view._upsert("pods", pod_object(f"p{i}"))
    view._upsert("pods", pod_object("p0", phase="Running"))
    view._delete("pods", pod_object("p1"))
    assert queued(first) == []

    # A tab that joins now gets them in its snapshot; the tab already there
    # gets them as one message, each object once, as it is now.
    second = view.subscribe()
    [(event, changes)] = queued(first)
    assert event == "changes"
    assert [c.get("key") or c["object"]["key"] for c in changes] == \
        [f"default/p{i}" for i in range(2, 20)] + ["default/p0", "default/p1"]
    assert changes[-2]["object"]["status"] == "Running"
    assert changes[-1] == {"kind": "pods", "op": "delete", "key": "default/p1"}
    [(event, snapshot)] = queued(second)
    assert event == "snapshot"
    assert sorted(p["key"] for p in snapshot["objects"]["pods"]) == \
        sorted(["default/a"] + [f"default/p{i}" for i in range(20) if i != 1])

    view.stop()                                             # ends both streams
    assert first.messages.get_nowait() is None and second.messages.get_nowait() is None
