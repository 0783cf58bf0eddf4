"""Optimistic concurrency under contention, and SIGKILL during heavy writes,
on each store (the JSON files, etcd)."""
from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from apiserver_harness import Client



@pytest.fixture(scope="session")
def api(api_on_each_backend):
    """Every test here runs against the JSON files and against etcd."""
    return api_on_each_backend

def test_twenty_read_modify_write_loops_lose_no_update(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "counter"}, "data": {"n": "0"}})
    successes, conflicts = [], []

    def increment_five_times():
        client = Client(api.url)
        done = 0
        while done < 5:
            current = client.get(f"{path}/counter").json()
            current["data"]["n"] = str(int(current["data"]["n"]) + 1)
            response = client.put(f"{path}/counter", current)
            if response.status_code == 409:
                conflicts.append(1)        # someone wrote in between: read again, retry
                continue
            assert response.status_code == 200, response.text
            successes.append(1)
            done += 1
    threads = [threading.Thread(target=increment_five_times) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    final = int(api.get(f"{path}/counter").json()["data"]["n"])
    assert final == len(successes) == 100
    assert conflicts, "20 writers on one object should have collided at least once"


def test_sigkill_during_heavy_writes_loses_no_acknowledged_write(tmp_path, backend):
    """Kill the server five times while eight clients write; after each
    restart every acknowledged object is there, intact, and versions only grow."""
    data = tmp_path / "data"
    server = backend.server(data).start()
    acknowledged: dict[str, int] = {}
    highest_seen = 0
    try:
        for round_ in range(5):
            stop = threading.Event()
            lock = threading.Lock()

            def writer(worker: int):
                client = Client(server.url)
                i = 0
                while not stop.is_set():
                    name = f"r{round_}-w{worker}-{i}"
                    try:
                        response = client.post("/api/v1/namespaces/default/configmaps",
                                               {"metadata": {"name": name}, "data": {"i": str(i)}}, timeout=5)
                    except requests.RequestException:
                        return                    # the server died under us: this write was not acknowledged
                    if response.status_code == 201:
                        with lock:
                            acknowledged[name] = int(response.json()["metadata"]["resourceVersion"])
                    i += 1
            threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
            for thread in threads:
                thread.start()
            before = len(acknowledged)
            deadline = time.monotonic() + 10
            while len(acknowledged) < before + 100 and time.monotonic() < deadline:
                time.sleep(0.01)                  # let writes pile up, then pull the plug mid-stream
            server.kill()
            stop.set()
            for thread in threads:
                thread.join(10)
            server.start()
            client = Client(server.url)
            listed = client.get("/api/v1/namespaces/default/configmaps").json()
            stored = {o["metadata"]["name"]: o for o in listed["items"]}
            missing = set(acknowledged) - set(stored)
            assert not missing, f"round {round_}: acknowledged but lost: {sorted(missing)[:5]}"
            for name, version in acknowledged.items():
                assert int(stored[name]["metadata"]["resourceVersion"]) == version
            new = client.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"after-{round_}"}})
            version = int(new.json()["metadata"]["resourceVersion"])
            assert version > max(acknowledged.values(), default=0) and version > highest_seen
            highest_seen = version
        for path in data.rglob("*.json"):
            json.loads(path.read_text())          # no file is half-written
        assert len(acknowledged) >= 500
    finally:
        server.stop()
