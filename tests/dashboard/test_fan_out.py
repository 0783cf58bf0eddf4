"""One set of watches per dashboard, however many tabs: the tabs share it
(dashboard/cluster_view.py). Read from the API server's own metrics, with
real event streams read the way a browser's EventSource reads them."""
from __future__ import annotations

import json
import re

import requests

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
            if event == "change" and data.get("object", {}).get("key") == key:
                return data

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
