"""Watch across an API server restart: the event log (02-apiserver/event_log.py),
or etcd's own history (etcd_store.py) for the tests that take `backend`.

A watch from a version before the restart resumes with exactly the events
after it, whether the server stopped cleanly (SIGTERM) or was killed
(SIGKILL); only a version older than the kept window is 410 Gone. Every
watch here ends at a sentinel write made last: whatever a missing or
repeated event would be, it would show before the sentinel.
"""
from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from apiserver_harness import APIServer, Client, watch_lines
from common.client.client import APIClient
from common.client.informer import Informer
from common.client.kubeconfig import Connection
from polling import wait_for

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _rv(response: requests.Response) -> int:
    assert response.status_code in (200, 201), response.text
    return int(response.json()["metadata"]["resourceVersion"])


def _deleted(response: requests.Response) -> None:
    """A configmap's DELETE answers a Status, without the deletion's version."""
    assert response.status_code == 200, response.text
    return None


def _restart(server: APIServer, how: str) -> None:
    server.kill() if how == "SIGKILL" else server.stop()
    server.start()


def _watch_until(api: Client, since: int, last_name: str, timeout: float = 30) -> list[dict]:
    """Every event after `since`, up to and including the first one for `last_name`."""
    events = []
    params = {"watch": "true", "resourceVersion": str(since), "timeoutSeconds": str(int(timeout))}
    with api.get(CONFIGMAPS, params=params, stream=True, timeout=timeout) as response:
        assert response.status_code == 200, response.text
        for event in watch_lines(response):
            events.append(event)
            if event["type"] == "ERROR" or event["object"]["metadata"]["name"] == last_name:
                return events
    raise AssertionError(f"the watch ended before {last_name} showed; it saw {_summary(events)}")


def _summary(events: list[dict]) -> list[tuple]:
    """(type, name, resourceVersion) per event; (ERROR, code, reason) for an error."""
    return [("ERROR", e["object"].get("code"), e["object"].get("reason")) if e["type"] == "ERROR" else
            (e["type"], e["object"]["metadata"]["name"], int(e["object"]["metadata"]["resourceVersion"]))
            for e in events]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_watch_from_before_a_restart_gets_exactly_the_events_after_it(tmp_path, backend, how):
    server = backend.server(tmp_path / "data").start()
    try:
        api = Client(server.url)
        api.post(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"v": "1"}})
        api.post(CONFIGMAPS, {"metadata": {"name": "b"}, "data": {"v": "1"}})
        since = _rv(api.get(CONFIGMAPS))
        expected = [("ADDED", "c", _rv(api.post(CONFIGMAPS, {"metadata": {"name": "c"}}))),
                    ("MODIFIED", "a", _rv(api.patch(f"{CONFIGMAPS}/a", {"data": {"v": "2"}}))),
                    ("DELETED", "b", _deleted(api.delete(f"{CONFIGMAPS}/b")))]
        _restart(server, how)
        expected.append(("ADDED", "d", _rv(api.post(CONFIGMAPS, {"metadata": {"name": "d"}}))))
        events = _watch_until(api, since, "d")
        seen = _summary(events)
        assert [(kind, name) for kind, name, _ in seen] == [(kind, name) for kind, name, _ in expected]
        assert all(rv == known for (_, _, rv), (_, _, known) in zip(seen, expected) if known is not None)
        assert [rv for _, _, rv in seen] == sorted({rv for _, _, rv in seen}), "each change its own version"
        modified, deleted = events[1]["object"], events[2]["object"]
        assert modified["data"] == {"v": "2"}
        assert deleted["data"] == {"v": "1"}, "a deleted object replays with its last state"
        # From a version in the middle of the replayed history: the rest of it.
        assert _summary(_watch_until(api, expected[0][2], "d")) == seen[1:]
    finally:
        server.stop()


def test_only_a_version_older_than_the_kept_window_is_410_after_a_restart(tmp_path, backend):
    server = backend.server(tmp_path / "data", "--watch-cache-size", "10").start()
    try:
        api = Client(server.url)
        oldest = _rv(api.get(CONFIGMAPS))
        versions = [_rv(api.post(CONFIGMAPS, {"metadata": {"name": f"c{i}"}})) for i in range(30)]
        server.kill()
        server.start()
        assert _summary(_watch_until(api, oldest, "none")) == [("ERROR", 410, "Expired")]
        kept = _watch_until(api, versions[24], "c29")
        assert _summary(kept) == [("ADDED", f"c{i}", versions[i]) for i in range(25, 30)]
    finally:
        server.stop()


def test_the_event_log_is_compacted_to_whole_segments(tmp_path):
    """A window of 10 events is kept as segments of 100 (the smallest): after
    350 writes the log holds two or three segments, not 350 lines."""
    data = tmp_path / "data"
    server = APIServer(data, "--watch-cache-size", "10").start()
    try:
        api = Client(server.url)
        for i in range(350):
            api.post(CONFIGMAPS, {"metadata": {"name": f"c{i}"}})
        segments = sorted((data / "events").glob("*.log"))
        lines = sum(len(segment.read_bytes().splitlines()) for segment in segments)
        assert 2 <= len(segments) <= 3 and 10 <= lines <= 200, (segments, lines)
    finally:
        server.stop()


class _Changes:
    """What an informer's handlers were told, in order."""

    def __init__(self, informer: Informer):
        self.seen: list[tuple[str, str]] = []
        informer.add_handler(lambda obj: self.seen.append(("add", obj["metadata"]["name"])),
                             lambda old, new: self.seen.append(("update", new["metadata"]["name"])),
                             lambda obj: self.seen.append(("delete", obj["metadata"]["name"])))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_an_informer_does_not_list_again_across_a_restart(tmp_path, backend, how):
    server = backend.server(tmp_path / "data").start()
    client = APIClient(Connection(server.url), timeout=5)
    informer = Informer(client, "v1", "configmaps", "default", watch_timeout_seconds=60)
    changes = _Changes(informer)
    informer.start()
    try:
        assert informer.wait_for_sync(20)
        api = Client(server.url)
        api.post(CONFIGMAPS, {"metadata": {"name": "a"}})
        api.post(CONFIGMAPS, {"metadata": {"name": "b"}})
        wait_for(lambda: len(changes.seen) == 2, timeout=20, what="two adds")
        _restart(server, how)
        api.patch(f"{CONFIGMAPS}/a", {"data": {"v": "2"}})
        api.delete(f"{CONFIGMAPS}/b")
        api.post(CONFIGMAPS, {"metadata": {"name": "sentinel"}})
        wait_for(lambda: ("add", "sentinel") in changes.seen, timeout=30, what="the sentinel")
        assert changes.seen == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b"), ("add", "sentinel")]
        assert informer.lists == 1, "the informer resumed its watch, it did not list again"
    finally:
        informer.stop()
        server.stop()


def test_sigkill_under_concurrent_writes_then_a_watch_from_the_first_version_sees_each_write_once(tmp_path, backend):
    """Four clients create and delete while the server is killed three times.
    A watch from before it all must then carry every acknowledged write once,
    in order, and nothing the store does not have: replaying its events
    gives exactly the objects a list returns."""
    server = backend.server(tmp_path / "data").start()
    acknowledged: set[tuple[str, str]] = set()       # (ADDED or DELETED, name): each name is written once
    lock = threading.Lock()
    try:
        first = _rv(Client(server.url).get(CONFIGMAPS))
        for round_ in range(3):
            stop = threading.Event()

            def writer(worker: int):
                client = Client(server.url)
                i = 0
                while not stop.is_set():
                    name = f"r{round_}-w{worker}-{i}"
                    try:
                        created = client.post(CONFIGMAPS, {"metadata": {"name": name}}, timeout=5)
                        if created.status_code == 201:
                            with lock:
                                acknowledged.add(("ADDED", name))
                        if i % 3 == 2:        # every third write deletes the one made before it
                            gone = f"r{round_}-w{worker}-{i - 1}"
                            deleted = client.delete(f"{CONFIGMAPS}/{gone}", timeout=5)
                            if deleted.status_code == 200:
                                with lock:
                                    acknowledged.add(("DELETED", gone))
                    except requests.RequestException:
                        return                # the server died under us: not acknowledged
                    i += 1
            threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
            for thread in threads:
                thread.start()
            before = len(acknowledged)
            deadline = time.monotonic() + 10
            while len(acknowledged) < before + 100 and time.monotonic() < deadline:
                time.sleep(0.01)              # let writes pile up, then pull the plug mid-stream
            server.kill()
            stop.set()
            for thread in threads:
                thread.join(10)
            server.start()
        api = Client(server.url)
        api.post(CONFIGMAPS, {"metadata": {"name": "sentinel"}})
        events = _summary(_watch_until(api, first, "sentinel", timeout=60))[:-1]
        assert [rv for _, _, rv in events] == sorted({rv for _, _, rv in events}), "in order, none repeated"
        missing = acknowledged - {(kind, name) for kind, name, _ in events}
        assert not missing, f"acknowledged writes missing from the watch: {sorted(missing)[:10]}"
        alive: set[str] = set()
        for kind, name, _ in events:
            alive.add(name) if kind == "ADDED" else alive.remove(name)
        listed = {item["metadata"]["name"] for item in api.get(CONFIGMAPS).json()["items"]}
        assert alive == listed - {"sentinel"}
    finally:
        server.stop()


def test_start_up_finishes_a_logged_write_and_cuts_off_an_unfinished_one(tmp_path):
    """The crash came after the log's fsync but before the renames: the log
    has a change (and a deletion) that the object files do not, then half a
    line of a batch that never reached its fsync. Start-up finishes the
    first two and cuts off the half line, as if that write never happened."""
    data = tmp_path / "data"
    server = APIServer(data).start()
    try:
        api = Client(server.url)
        a = api.post(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"v": "1"}}).json()
        b = api.post(CONFIGMAPS, {"metadata": {"name": "b"}}).json()
        since = _rv(api.get(CONFIGMAPS))
        server.stop()
        changed = {**a, "data": {"v": "2"}, "metadata": {**a["metadata"], "resourceVersion": str(since + 1)}}
        gone = {**b, "metadata": {**b["metadata"], "resourceVersion": str(since + 2)}}
        where = {"group": "", "version": "v1", "plural": "configmaps", "namespace": "default"}
        lines = [{"rv": since + 1, "type": "MODIFIED", **where, "object": changed, "old": a},
                 {"rv": since + 2, "type": "DELETED", **where, "object": gone}]
        newest = sorted((data / "events").glob("*.log"))[-1]
        with open(newest, "a") as log:
            log.writelines(json.dumps(line) + "\n" for line in lines)
            log.write('{"rv": %d, "type": "ADDED", "gro' % (since + 3))
        server.start()
        assert api.get(f"{CONFIGMAPS}/a").json()["data"] == {"v": "2"}
        assert api.get(f"{CONFIGMAPS}/b").status_code == 404
        api.post(CONFIGMAPS, {"metadata": {"name": "sentinel"}})
        assert [(kind, name) for kind, name, _ in _summary(_watch_until(api, since, "sentinel"))] == \
            [("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "sentinel")]
        kept = newest.read_bytes()
        assert kept.endswith(b"\n") and all(json.loads(line) for line in kept.splitlines()), "the half line is gone"
    finally:
        server.stop()
