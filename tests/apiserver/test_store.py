"""The stores and the watch history, in-process (no HTTP).

Every test that takes `store` runs on both backends: the JSON files and a
real etcd (EtcdStore, under a key prefix of its own). The tests that name
FileStore are about the files themselves."""
from __future__ import annotations

import json
import threading
import time

import pytest

import api_errors
import registry
from apiserver_harness import unique
from etcd_store import EtcdStore
from file_store import FileStore
from watch_cache import Expired

PODS = registry.for_kind("", "Pod")
NODES = registry.for_kind("", "Node")


def pod(name, namespace="default", **meta):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}


@pytest.fixture(params=["json-files", "etcd3"])
def store(request, tmp_path):
    if request.param == "json-files":
        yield FileStore(tmp_path / "data", watch_cache_size=5)
        return
    etcd = request.getfixturevalue("etcd")
    store = EtcdStore([etcd.client_urls], prefix=f"/{unique('test')}", watch_cache_size=5)
    yield store
    store.close()


def test_an_object_is_a_json_file_a_learner_can_read(tmp_path):
    store = FileStore(tmp_path / "data")
    created = store.create(PODS, pod("web"))
    path = tmp_path / "data" / "registry" / "core" / "pods" / "default" / "web.json"
    assert json.loads(path.read_text()) == created
    node = store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}})
    assert (tmp_path / "data" / "registry" / "core" / "nodes" / "node1.json").exists()
    assert int(node["metadata"]["resourceVersion"]) == int(created["metadata"]["resourceVersion"]) + 1


def test_one_counter_orders_every_write(store):
    versions = [int(store.create(PODS, pod(f"p{i}"))["metadata"]["resourceVersion"]) for i in range(3)]
    versions.append(int(store.update(PODS, "default", "p0", lambda o: {**o, "spec": {"x": 1}})["metadata"]["resourceVersion"]))
    versions.append(int(store.delete(PODS, "default", "p1")["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == 5


def test_create_twice_is_already_exists(store):
    store.create(PODS, pod("web"))
    with pytest.raises(api_errors.APIError) as caught:
        store.create(PODS, pod("web"))
    assert (caught.value.code, caught.value.reason) == (409, "AlreadyExists")
    assert caught.value.message == 'pods "web" already exists'


def test_stale_resource_version_is_a_conflict(store):
    first = store.create(PODS, pod("web"))
    store.update(PODS, "default", "web", lambda o: {**o, "spec": {"changed": True}})

    def stale_write(current):
        current["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
        return current
    with pytest.raises(api_errors.APIError) as caught:
        store.update(PODS, "default", "web", stale_write)
    assert caught.value.code == 409 and caught.value.reason == "Conflict"
    assert "the object has been modified" in caught.value.message


def test_an_update_may_read_and_write_the_store_without_a_deadlock(store):
    """update_fn runs admission, and admission may list objects or even write:
    it runs outside the store's lock (it used to hang the server). A write
    that lands meanwhile is not lost: update_fn runs again on top of it."""
    store.create(PODS, pod("web"))
    calls = []

    def admit_and_label(current):
        calls.append(current["metadata"]["resourceVersion"])
        store.list(PODS)                                  # an admission plugin reading
        if len(calls) == 1:                               # someone else writes meanwhile
            store.update(PODS, "default", "web", lambda o: {**o, "spec": {"by": "someone else"}})
        current["metadata"]["labels"] = {"admitted": "yes"}
        return current

    done = []
    worker = threading.Thread(target=lambda: done.append(store.update(PODS, "default", "web", admit_and_label)),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done, "store.update hung: update_fn ran under the store's lock"
    assert len(calls) == 2 and calls[0] != calls[1]        # ran again on the newer version
    assert done[0]["spec"] == {"by": "someone else"} and done[0]["metadata"]["labels"] == {"admitted": "yes"}


def test_an_update_that_changes_nothing_writes_nothing(store):
    created = store.create(PODS, pod("web"))
    again = store.update(PODS, "default", "web", lambda o: o)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".", "x\0y", "a" * 254, "", "50%"])
def test_no_name_can_reach_outside_the_data_directory(store, tmp_path, name):
    with pytest.raises(api_errors.APIError) as caught:
        store.create(PODS, pod(name))
    assert caught.value.code == 400
    assert not any(p.name.startswith("escape") for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("name, file_name", [("system:node", "system%3Anode.json"), ("Upper", "%55pper.json"),
                                             (".hidden", "%2Ehidden.json"), ("a.b", "a.b.json")])
def test_a_name_that_is_no_file_name_is_escaped(tmp_path, name, file_name):
    """RBAC's names (system:node) are not RFC 1123 names: kept under an
    escaped file name, inside the kind's folder, and found again on restart."""
    FileStore(tmp_path / "data").create(PODS, pod(name))
    assert [p.name for p in (tmp_path / "data").rglob("*.json") if "pods" in p.parts] == [file_name]
    assert FileStore(tmp_path / "data").get(PODS, "default", name)["metadata"]["name"] == name


def test_restart_reloads_everything_and_versions_never_go_back(tmp_path):
    first = FileStore(tmp_path / "data")
    first.create(PODS, pod("keep"))
    last = first.delete(PODS, "default", "keep")           # the newest version belongs to a deleted object
    again = FileStore(tmp_path / "data")
    assert again.get(PODS, "default", "keep") is None
    created = again.create(PODS, pod("after"))
    assert int(created["metadata"]["resourceVersion"]) > int(last["metadata"]["resourceVersion"])


def test_a_cut_off_write_leaves_the_old_file(tmp_path):
    store = FileStore(tmp_path / "data")
    store.create(PODS, pod("web"))
    directory = tmp_path / "data" / "registry" / "core" / "pods" / "default"
    (directory / ".tmp-0123abcd").write_text('{"half": ')   # killed between write and rename
    again = FileStore(tmp_path / "data")
    assert again.get(PODS, "default", "web")["metadata"]["name"] == "web"
    assert not (directory / ".tmp-0123abcd").exists()


def test_the_longest_names_fit_the_file_system(store):
    for name in ("a" * 253, "b" * 246, "a" * 252 + "b"):
        store.create(PODS, pod(name))
        assert store.get(PODS, "default", name)["metadata"]["name"] == name
    assert store.get(PODS, "default", "a" * 253) is not store.get(PODS, "default", "a" * 252 + "b")


@pytest.mark.parametrize("setup,words", [
    (lambda d: d.write_text("a file"), "must be a writable directory"),
    (lambda d: (d.mkdir(), (d / "registry").write_text("x")), "must be a writable directory"),
    (lambda d: (d.mkdir(), (d / "resource-version").write_text("garbage")), "should hold one number"),
])
def test_an_unusable_data_directory_is_a_clear_error(tmp_path, setup, words):
    from file_store import StoreError
    setup(tmp_path / "data")
    with pytest.raises(StoreError, match=words):
        FileStore(tmp_path / "data")


def test_a_deeply_nested_file_is_set_aside(tmp_path):
    store = FileStore(tmp_path / "data")
    store.create(PODS, pod("web"))
    path = tmp_path / "data" / "registry" / "core" / "pods" / "default" / "web.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert FileStore(tmp_path / "data").get(PODS, "default", "web") is None
    assert path.with_name("web.json.corrupt").exists()


def test_a_hand_broken_file_is_set_aside_not_served(tmp_path):
    store = FileStore(tmp_path / "data")
    store.create(PODS, pod("web"))
    path = tmp_path / "data" / "registry" / "core" / "pods" / "default" / "web.json"
    path.write_text("{not json")
    again = FileStore(tmp_path / "data")
    assert again.get(PODS, "default", "web") is None
    assert path.with_name("web.json.corrupt").read_text() == "{not json"


def test_watch_sees_every_change_after_a_version_in_order(store):
    start = store.resource_version
    store.create(PODS, pod("a"))
    store.update(PODS, "default", "a", lambda o: {**o, "spec": {"v": 2}})
    store.delete(PODS, "default", "a")
    events = store.watch_cache.events_after(start, deadline=time.monotonic() + 0.2, wakeup=0.05)
    seen = [(e.type, e.obj["metadata"]["name"]) for e in events if e is not None]
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_wakes_up_for_a_write_from_another_thread(store):
    start = store.resource_version
    threading.Timer(0.1, lambda: store.create(PODS, pod("late"))).start()
    events = store.watch_cache.events_after(start, deadline=time.monotonic() + 10)
    first = next(e for e in events if e is not None)
    assert first.obj["metadata"]["name"] == "late"


def test_a_version_older_than_the_history_is_expired(store):
    start = store.resource_version
    for i in range(6):                                       # the history keeps 5
        store.create(PODS, pod(f"p{i}"))
    with pytest.raises(Expired):
        next(store.watch_cache.events_after(start, deadline=time.monotonic() + 1))
    newest = store.watch_cache.events_after(start + 1, deadline=time.monotonic() + 0.1, wakeup=0.05)
    assert [e.obj["metadata"]["name"] for e in newest if e is not None] == ["p1", "p2", "p3", "p4", "p5"]


def test_many_writers_at_once_never_wedge_the_queue(store):
    """Writers race through the slow half of a write with no lock held;
    with a tiny thread switch interval the races happen, and every write
    must still be published, in order."""
    import sys
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda t=t: [store.create(PODS, pod(f"w{t}-{i}")) for i in range(20)])
                   for t in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(before)
    assert not any(thread.is_alive() for thread in threads)
    assert len(store.list(PODS)[0]) == 320 and store.resource_version == max(
        int(p["metadata"]["resourceVersion"]) for p in store.list(PODS)[0])


def test_a_write_that_changes_nothing_takes_no_version_even_without_one(store):
    created = store.create(PODS, pod("same"))

    def unconditional(current):
        current["metadata"].pop("resourceVersion")     # a PUT without a resourceVersion
        return current
    again = store.update(PODS, "default", "same", unconditional)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_watcher_that_falls_behind_while_waiting_is_expired_not_sent_overwritten_events():
    from watch_cache import Event, WatchCache
    cache = WatchCache(capacity=3, start_rv=0)
    cache.append(Event("ADDED", 1, None, "default", {"n": 1}))
    events = cache.events_after(1, deadline=time.monotonic() + 5, wakeup=5)

    def burst():
        # Five events while the watcher sleeps, two more than are kept, all
        # before it can wake (the cache's condition is held throughout).
        time.sleep(0.2)
        with cache._changed:
            for rv in range(2, 7):
                cache.append(Event("ADDED", rv, None, "default", {"n": rv}))
    waiting = threading.Thread(target=burst)
    waiting.start()
    with pytest.raises(Expired):
        for event in events:
            if event is not None:
                pytest.fail(f"sent event {event.obj} after falling behind the kept history")
    waiting.join()
