"""A DELETE that meets a write still on its way to disk (deletion.py, in-process).

The file store shows a write to readers only once it is on disk, but the
next writer builds on it at once (file_store.py's _latest). A DELETE read
the object, decided, and found the store's latest version newer: it must
decide again on that version, not on a fresh read that cannot show it yet.
Deciding on fresh reads, a DELETE answered 409 while a controller's status
write was in its fsync (CI, 2026-12-07: a Deployment deleted just as the
Deployment controller wrote its status)."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

import deletion
import file_store
import registry

CONFIGMAPS = registry.for_kind("", "ConfigMap")


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"a": "1"}}


def wait_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("change, goes_now", [
    ({"labels": {"moved": "on"}}, True),                        # changes nothing about the decision
    ({"finalizers": ["example.com/keep"]}, False),             # changes it: only marked
], ids=["a label", "a finalizer"])
def test_a_delete_decides_on_a_write_still_in_its_fsync(tmp_path, monkeypatch, change, goes_now):
    store = file_store.FileStore(tmp_path / "data")
    server_state = SimpleNamespace(store=store, admission_plugins=())   # a controller manager runs
    store.create(CONFIGMAPS, configmap("web"))

    in_fsync, release = threading.Event(), threading.Event()
    real_write = file_store._write_temporary

    def held_write(path, data):
        if b'"moved"' in data or b"example.com/keep" in data:     # the racing write, not the DELETE's
            in_fsync.set()
            release.wait(10)
        return real_write(path, data)

    monkeypatch.setattr(file_store, "_write_temporary", held_write)

    def racing_write(obj):
        obj["metadata"].update(change)
        obj["metadata"].pop("resourceVersion")
        return obj

    writer = threading.Thread(target=store.update, args=(CONFIGMAPS, "default", "web", racing_write))
    writer.start()
    assert in_fsync.wait(10)
    assert store.get(CONFIGMAPS, "default", "web")["metadata"].get("labels") is None   # readers: not yet

    answer: dict = {}

    def delete():
        try:
            answer["result"] = deletion.delete_deciding_on_the_latest(server_state, CONFIGMAPS, "default", "web", {})
        except Exception as error:       # noqa: BLE001 (the 409 this test is about)
            answer["error"] = error

    deleter = threading.Thread(target=delete)
    deleter.start()
    # The DELETE queues its own write behind the held one (or, wrongly, gives up at once).
    wait_until(lambda: len(store._queue) == 2 or answer)
    release.set()
    writer.join(10)
    deleter.join(10)

    assert "error" not in answer, f"the DELETE failed: {answer.get('error')!r}"
    obj, gone = answer["result"]
    assert gone is goes_now
    assert all(obj["metadata"].get(key) == value for key, value in change.items()), "decided on the racing write"
    stored = store.get(CONFIGMAPS, "default", "web")
    if goes_now:
        assert stored is None
    else:
        assert stored["metadata"]["deletionTimestamp"] and stored["metadata"]["finalizers"] == ["example.com/keep"]
