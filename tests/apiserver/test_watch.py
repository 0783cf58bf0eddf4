"""Watch over real HTTP: streaming, resuming, selectors, expiry, timeouts,
on each store (the JSON files, etcd)."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import requests

from apiserver_harness import Client, pod, watch_lines
from polling import wait_for



@pytest.fixture(scope="session")
def api(api_on_each_backend):
    """Every test here runs against the JSON files and against etcd."""
    return api_on_each_backend

def _rv(response) -> str:
    return response.json()["metadata"]["resourceVersion"]


def _collect(api, path, params, count, timeout=20):
    """Open a watch and return the first `count` events (the watch is closed after)."""
    events = []
    with api.get(path, params={"watch": "true", **params}, stream=True, timeout=timeout) as response:
        assert response.status_code == 200
        for event in watch_lines(response):
            events.append(event)
            if len(events) == count:
                break
    return events


def test_watch_streams_changes_from_a_resource_version(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    start = _rv(api.get(path))
    api.post(path, {"metadata": {"name": "c"}, "data": {"v": "1"}})
    api.patch(f"{path}/c", {"data": {"v": "2"}})
    api.delete(f"{path}/c")
    events = _collect(api, path, {"resourceVersion": start}, 3)
    assert [(e["type"], e["object"]["data"]["v"]) for e in events] == [
        ("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)


def test_watch_without_a_version_starts_with_the_current_objects(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "old"}})
    events = _collect(api, path, {}, 1)
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "old"


def test_headers_arrive_before_any_event(api, namespace):
    """kubectl waits for the headers: a quiet watch must not look dead."""
    response = api.get(f"/api/v1/namespaces/{namespace}/pods", stream=True, timeout=5,
                       params={"watch": "true", "resourceVersion": _rv(api.get("/api/v1/namespaces"))})
    # No event ever comes on this watch: had the server held the headers back
    # until one, the 5 s read timeout above would have failed the test.
    assert response.status_code == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    response.close()


def test_reconnecting_from_the_last_version_misses_nothing_and_repeats_nothing(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    last = _rv(api.get(path))
    writer_done = threading.Event()

    def writer():
        for i in range(60):
            api.post(path, {"metadata": {"name": f"c{i}"}})
        writer_done.set()
    threading.Thread(target=writer).start()
    seen = []
    deadline = time.monotonic() + 60      # 60 writes; far more than they take, but never a hang
    while len(seen) < 60:
        assert time.monotonic() < deadline, f"the watches stopped delivering: {len(seen)} of 60 events seen"
        # short watches that end on their own: each one resumes where the last stopped
        for event in _collect(api, path, {"resourceVersion": last, "timeoutSeconds": 1}, 7):
            seen.append(event["object"]["metadata"]["name"])
            last = event["object"]["metadata"]["resourceVersion"]
    assert writer_done.wait(10)
    assert seen == [f"c{i}" for i in range(60)]


def test_selectors_filter_and_moves_in_and_out_look_like_add_and_delete(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    start = _rv(api.get(path))
    api.post(path, pod("other"))
    api.post(path, pod("mine"))
    api.post(f"{path}/mine/binding", {"target": {"kind": "Node", "name": "node1"}})   # moves into the selection
    api.delete(f"{path}/mine")
    events = _collect(api, path, {"resourceVersion": start, "fieldSelector": "spec.nodeName=node1"}, 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "mine"), ("DELETED", "mine")]


def test_a_version_older_than_the_history_is_410_gone(tmp_path, backend):
    server = backend.server(tmp_path / "data", "--watch-cache-size", "10").start()
    try:
        api = Client(server.url)
        start = _rv(api.get("/api/v1/namespaces/default/configmaps"))
        for i in range(15):
            api.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"c{i}"}})
        event = _collect(api, "/api/v1/namespaces/default/configmaps", {"resourceVersion": start}, 1)[0]
        assert event["type"] == "ERROR"
        assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
    finally:
        server.stop()


def test_watch_ends_at_timeout_seconds(api, namespace):
    started = time.monotonic()
    with api.get(f"/api/v1/namespaces/{namespace}/pods", stream=True,
                 params={"watch": "1", "timeoutSeconds": "1", "resourceVersion": _rv(api.get("/api/v1/pods"))}) as r:
        assert list(watch_lines(r)) == []
    assert 0.9 < time.monotonic() - started < 5


def test_bookmarks_carry_the_current_version(tmp_path, backend):
    server = backend.server(tmp_path / "data", "--watch-bookmark-seconds", "0.5").start()
    try:
        api = Client(server.url)
        events = _collect(api, "/api/v1/pods", {"allowWatchBookmarks": "true", "resourceVersion": "1",
                                                "timeoutSeconds": "30"}, 1, timeout=40)
        assert events[0]["type"] == "BOOKMARK" and events[0]["object"]["kind"] == "Pod"
    finally:
        server.stop()


def test_abandoned_watches_are_released(tmp_path, backend):
    """Clients that vanish mid-watch do not hold watch slots forever."""
    server = backend.server(tmp_path / "data", "--max-watches", "3").start()
    try:
        api = Client(server.url)
        for _ in range(3):                                  # open three watches, then drop the sockets
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.sendall(b"GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.recv(100)
            sock.close()

        def slot_free():
            response = api.get("/api/v1/pods", params={"watch": "true", "timeoutSeconds": "1"}, timeout=10)
            return response.status_code == 200
        wait_for(slot_free, timeout=15, what="a watch slot freed after clients left")
        held = [api.get("/api/v1/pods", params={"watch": "true"}, stream=True) for _ in range(3)]
        refused = api.get("/api/v1/pods", params={"watch": "true"})
        assert refused.status_code == 429 and "too many open watches" in refused.json()["message"]
        for response in held:
            response.close()
    finally:
        server.stop()


def test_watch_as_table_sends_one_row_tables(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    start = _rv(api.get(path))
    api.post(path, pod("web"))
    with api.get(path, params={"watch": "true", "resourceVersion": start}, stream=True,
                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as response:
        event = json.loads(next(response.iter_lines()))
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "web"


def test_python_requests_see_a_valid_http_stream(api):
    """A plain requests.get of a watch with a short timeout returns cleanly."""
    response = requests.get(api.url + "/api/v1/namespaces?watch=true&timeoutSeconds=1", timeout=10)
    assert response.status_code == 200
    kinds = {json.loads(line)["type"] for line in response.text.splitlines() if line}
    assert kinds == {"ADDED"}
