"""common/client/client.py and common/client/informer.py against a real API server process.

The informer is what every later component stands on, so these tests check
its promises under the failures that happen in a cluster: watches that end,
servers that restart, histories that run out (410 Gone). Handlers must see
each change exactly once, in order. To check "exactly once" without waiting
for nothing to happen, each test ends with a sentinel change and waits for
that: whatever a duplicate would be, it would have arrived before it.
"""
from __future__ import annotations

import socket
import threading
import time

import pytest

from apiserver_harness import APIServer, pod, unique
from common.client.client import (APIClient, APIConnectionError, APIStatusError, AlreadyExists, Conflict, Invalid,
                           NotFound, WatchExpired)
from common.client.informer import Informer
from common.client.kubeconfig import Connection
from polling import free_port, wait_for


@pytest.fixture(scope="module")
def client(apiserver) -> APIClient:
    return APIClient(Connection(apiserver.url), timeout=10)


def configmap(name: str, labels: dict | None = None, **data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, **({"labels": labels} if labels else {})}, "data": data}


class Recorder:
    """Handlers that write down what they were told, and check the order."""

    def __init__(self, informer: Informer):
        self.events: list[tuple[str, str]] = []
        self.resyncs: list[str] = []
        self.versions: dict[str, int] = {}       # the newest version each handler call showed
        self.went_back: list[str] = []
        informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def _saw(self, obj):
        name, rv = obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"])
        if rv < self.versions.get(name, 0):
            self.went_back.append(f"{name}@{rv}")
        self.versions[name] = rv
        return name

    def on_add(self, obj):
        self.events.append(("add", self._saw(obj)))

    def on_update(self, old, new):
        if old is new:
            self.resyncs.append(new["metadata"]["name"])
            return
        self.events.append(("update", self._saw(new)))

    def on_delete(self, obj):
        self.events.append(("delete", obj["metadata"]["name"]))
        self.versions.pop(obj["metadata"]["name"], None)

    def settled(self, client: APIClient, namespace: str, labels: dict | None = None) -> list:
        """Make one more change and wait for it: everything before it has arrived."""
        name = unique("zz-sentinel")
        client.create("v1", "configmaps", configmap(name, labels), namespace)
        wait_for(lambda: ("add", name) in self.events, timeout=20, what=f"the sentinel {name}")
        assert not self.went_back, f"handlers saw older versions after newer: {self.went_back}"
        return [event for event in self.events if not event[1].startswith("zz-sentinel")]


def started(informer: Informer) -> Informer:
    informer.start()
    assert informer.wait_for_sync(20), "the informer never finished its first list"
    return informer


# ---------------------------------------------------------------- the client

@pytest.mark.parametrize("args, path", [
    (("v1", "pods"), "/api/v1/pods"),
    (("v1", "pods", "default"), "/api/v1/namespaces/default/pods"),
    (("v1", "pods", "default", "web", "status"), "/api/v1/namespaces/default/pods/web/status"),
    (("v1", "nodes", None, "node1"), "/api/v1/nodes/node1"),
    (("apps/v1", "deployments", "default", "web"), "/apis/apps/v1/namespaces/default/deployments/web"),
    (("apps/v1", "deployments"), "/apis/apps/v1/deployments"),
])
def test_paths(args, path):
    assert APIClient.path(*args) == path


def test_create_get_list_update_patch_delete(client, namespace):
    created = client.create("v1", "configmaps", configmap("c", a="1"), namespace)
    assert client.get("v1", "configmaps", namespace, "c")["data"] == {"a": "1"}
    listing = client.list("v1", "configmaps", namespace)
    assert [o["metadata"]["name"] for o in listing["items"]] == ["c"]
    assert int(listing["metadata"]["resourceVersion"]) >= int(created["metadata"]["resourceVersion"])
    created["data"]["a"] = "2"
    updated = client.update("v1", "configmaps", created)
    assert updated["data"] == {"a": "2"}
    assert client.patch("v1", "configmaps", namespace, "c", {"data": {"b": "3"}})["data"] == {"a": "2", "b": "3"}
    client.delete("v1", "configmaps", namespace, "c")
    with pytest.raises(NotFound):
        client.get("v1", "configmaps", namespace, "c")


def test_strategic_patch_merges_containers_by_name_and_status_goes_through_its_subresource(client, namespace):
    web = pod("web")
    web["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.35"})
    client.create("v1", "pods", web, namespace)
    patched = client.patch("v1", "pods", namespace, "web",
                           {"spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}}, strategy="strategic")
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("app", "busybox:1.36"), ("sidecar", "busybox:1.35")]
    patched["status"] = {"phase": "Running"}
    assert client.update_status("v1", "pods", patched)["status"]["phase"] == "Running"
    client.delete("v1", "pods", namespace, "web", grace_period_seconds=0)
    with pytest.raises(NotFound):
        client.get("v1", "pods", namespace, "web")


def test_deployments_live_under_apis(client, namespace):
    from apiserver_harness import deployment
    client.create("apps/v1", "deployments", deployment("web"), namespace)
    assert client.get("apps/v1", "deployments", namespace, "web")["spec"]["replicas"] == 2
    with pytest.raises(NotFound) as caught:
        client.get("apps/v1", "deployments", namespace, "nope")
    assert str(caught.value).startswith(f'deployments.apps "nope" in namespace "{namespace}": 404 NotFound: ')


@pytest.mark.parametrize("case", ["missing", "taken", "stale", "invalid"])
def test_errors_are_exceptions_that_name_the_object(client, namespace, case):
    client.create("v1", "configmaps", configmap("c"), namespace)
    stale = client.get("v1", "configmaps", namespace, "c")
    client.patch("v1", "configmaps", namespace, "c", {"data": {"v": "new"}})
    attempts = {
        "missing": (NotFound, 404, "NotFound", 'configmaps "nope"',
                    lambda: client.get("v1", "configmaps", namespace, "nope")),
        "taken": (AlreadyExists, 409, "AlreadyExists", 'configmaps "c"',
                  lambda: client.create("v1", "configmaps", configmap("c"), namespace)),
        "stale": (Conflict, 409, "Conflict", 'configmaps "c"',
                  lambda: client.update("v1", "configmaps", stale)),
        "invalid": (Invalid, 422, "Invalid", 'pods "bad"',
                    lambda: client.create("v1", "pods", pod("bad", image=""), namespace)),
    }
    cls, code, reason, what, attempt = attempts[case]
    with pytest.raises(cls) as caught:
        attempt()
    error = caught.value
    assert (error.code, error.reason) == (code, reason)
    assert str(error).startswith(f'{what} in namespace "{namespace}": {code} {reason}: ')
    assert error.message and error.status["kind"] == "Status"


class SilentServer:
    """Accepts connections, reads each request, and hangs up without a reply:
    the request arrived, the answer was lost."""

    def __init__(self):
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            with connection:
                self.requests.append(connection.recv(65536).split(b" ", 1)[0])


def test_reads_are_retried_and_writes_are_not_once_sent():
    silent = SilentServer()
    client = APIClient(Connection(silent.url, token="s3cret-token"), timeout=5, read_retries=2)
    with pytest.raises(APIConnectionError):
        client.get("v1", "pods", "default", "web")
    assert silent.requests == [b"GET"] * 3              # the first try and two retries
    silent.requests.clear()
    with pytest.raises(APIConnectionError) as caught:
        client.create("v1", "pods", pod("web"), "default")
    assert silent.requests == [b"POST"]                 # it may have happened: the caller decides
    assert "s3cret" not in str(caught.value) and "s3cret" not in repr(client)
    silent.sock.close()


def test_nothing_listening_gives_a_connection_error_after_bounded_retries():
    client = APIClient(Connection(f"http://127.0.0.1:{free_port()}"), timeout=2, read_retries=2)
    started_at = time.monotonic()
    with pytest.raises(APIConnectionError, match="cannot reach"):
        client.list("v1", "pods")
    assert time.monotonic() - started_at < 5


def test_watch_streams_changes_and_ends_at_timeout_seconds(client, namespace):
    start = client.list("v1", "configmaps", namespace)["metadata"]["resourceVersion"]
    client.create("v1", "configmaps", configmap("c"), namespace)
    client.delete("v1", "configmaps", namespace, "c")
    started_at = time.monotonic()
    events = [(kind, obj["metadata"].get("name")) for kind, obj in
              client.watch("v1", "configmaps", namespace, resource_version=start, timeout_seconds=1,
                           allow_bookmarks=False)]
    assert events == [("ADDED", "c"), ("DELETED", "c")]
    assert 0.9 < time.monotonic() - started_at < 5


def test_a_watch_from_an_expired_version_raises_watch_expired(tmp_path):
    server = APIServer(tmp_path / "data", "--watch-cache-size", "5").start()
    try:
        client = APIClient(Connection(server.url))
        start = client.list("v1", "configmaps", "default")["metadata"]["resourceVersion"]
        for i in range(10):
            client.create("v1", "configmaps", configmap(f"c{i}"), "default")
        with pytest.raises(WatchExpired) as caught:
            list(client.watch("v1", "configmaps", "default", resource_version=start, timeout_seconds=5))
        assert caught.value.code == 410
    finally:
        server.stop()


# ---------------------------------------------------------------- the informer

def _create(client, ns, name):
    client.create("v1", "configmaps", configmap(name, v="1"), ns)


def _change(client, ns, name):
    client.patch("v1", "configmaps", ns, name, {"data": {"v": unique("v")}})


def _same(client, ns, name):
    client.patch("v1", "configmaps", ns, name, {"data": {"v": "1"}})     # no change: no new version


def _delete(client, ns, name):
    client.delete("v1", "configmaps", ns, name)


SEQUENCES = {
    "lifecycle": ([(_create, "a"), (_change, "a"), (_change, "a"), (_delete, "a")],
                  [("add", "a"), ("update", "a"), ("update", "a"), ("delete", "a")]),
    "two objects interleaved": ([(_create, "a"), (_create, "b"), (_change, "b"), (_delete, "a"), (_change, "b")],
                                [("add", "a"), ("add", "b"), ("update", "b"), ("delete", "a"), ("update", "b")]),
    "a write that changes nothing": ([(_create, "a"), (_same, "a"), (_change, "a")],
                                     [("add", "a"), ("update", "a")]),
    "deleted and created again": ([(_create, "a"), (_delete, "a"), (_create, "a")],
                                  [("add", "a"), ("delete", "a"), ("add", "a")]),
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_handlers_see_each_change_exactly_once(client, namespace, name):
    steps, expected = SEQUENCES[name]
    _create(client, namespace, "before")                 # exists before the informer: an add at sync
    informer = started(Informer(client, "v1", "configmaps", namespace, watch_timeout_seconds=30))
    recorder = Recorder(informer)                         # added after sync: told about "before" first
    try:
        for step, object_name in steps:
            step(client, namespace, object_name)
        assert recorder.settled(client, namespace) == [("add", "before"), *expected]
        assert informer.lists == 1
        last_about_a = [kind for kind, name in expected if name == "a"][-1]
        assert (informer.get(namespace, "a") is None) == (last_about_a == "delete")
    finally:
        informer.stop()


def test_watches_that_end_are_resumed_without_a_list(client, namespace):
    informer = started(Informer(client, "v1", "configmaps", namespace, watch_timeout_seconds=1))
    recorder = Recorder(informer)
    try:
        for i in range(6):
            _create(client, namespace, f"c{i}")
            time.sleep(0.4)                               # spread over several one-second watches
        assert recorder.settled(client, namespace) == [("add", f"c{i}") for i in range(6)]
        assert informer.lists == 1
    finally:
        informer.stop()


def test_a_server_restarted_mid_watch_is_resumed_without_a_relist(tmp_path):
    server = APIServer(tmp_path / "data").start()
    client = APIClient(Connection(server.url), timeout=5)
    informer = started(Informer(client, "v1", "configmaps", "default", watch_timeout_seconds=60))
    recorder = Recorder(informer)
    try:
        _create(client, "default", "a")
        _create(client, "default", "b")
        wait_for(lambda: len(recorder.events) == 2, timeout=10, what="two adds")
        server.stop()
        server.start()                                    # same data directory, same port
        _change(client, "default", "a")
        _delete(client, "default", "b")
        _create(client, "default", "c")
        events = recorder.settled(client, "default")
        # A restarted server reads its history back from its event log, so
        # the informer's watch resumes from its version: no 410, no list.
        assert informer.lists == 1
        assert events == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b"), ("add", "c")]
    finally:
        informer.stop()
        server.stop()


def test_changes_made_while_disconnected_arrive_after_410_and_a_relist(tmp_path):
    """The informer's server goes down; meanwhile another server process on
    the same data directory changes things; then the first comes back. Its
    history keeps only the newest event (--watch-cache-size 1), so the
    informer's version is too old (410): it lists again and must turn the
    difference into handler calls."""
    data = tmp_path / "data"
    server = APIServer(data, "--watch-cache-size", "1").start()
    client = APIClient(Connection(server.url), timeout=5)
    for name in ("stays", "changes", "goes", "replaced"):
        _create(client, "default", name)
    informer = started(Informer(client, "v1", "configmaps", "default", watch_timeout_seconds=60))
    recorder = Recorder(informer)
    try:
        server.stop()
        other = APIServer(data, "--watch-cache-size", "1").start()   # another port: the informer cannot see it
        other_client = APIClient(Connection(other.url))
        _change(other_client, "default", "changes")
        _delete(other_client, "default", "goes")
        _delete(other_client, "default", "replaced")
        _create(other_client, "default", "replaced")
        _create(other_client, "default", "new")
        other.stop()
        server.start()
        wait_for(lambda: informer.lists == 2, timeout=20, what="a second list after 410 Gone")
        events = recorder.settled(client, "default")
        assert sorted(events[:4]) == [("add", n) for n in ("changes", "goes", "replaced", "stays")]
        assert sorted(events[4:]) == sorted([("update", "changes"), ("delete", "goes"),
                                             ("delete", "replaced"), ("add", "replaced"), ("add", "new")])
        after = events[4:]                                # the old "replaced" goes before the new one comes
        assert after.index(("delete", "replaced")) < after.index(("add", "replaced"))
        assert sorted(o["metadata"]["name"] for o in informer.list() if not o["metadata"]["name"].startswith("zz")) \
            == ["changes", "new", "replaced", "stays"]
    finally:
        informer.stop()
        server.stop()


def test_a_small_watch_cache_forces_410_and_the_relist_loses_nothing(tmp_path):
    """Writes the informer does not select still use up the server's short
    history; when its watch ends, the version it resumes from is gone."""
    server = APIServer(tmp_path / "data", "--watch-cache-size", "5").start()
    client = APIClient(Connection(server.url), timeout=5)
    watched = {"watched": "yes"}
    client.create("v1", "configmaps", configmap("w1", watched), "default")
    client.create("v1", "configmaps", configmap("w2", watched), "default")
    informer = started(Informer(client, "v1", "configmaps", "default", label_selector="watched=yes",
                                watch_timeout_seconds=1))
    recorder = Recorder(informer)
    try:
        for i in range(30):
            client.create("v1", "configmaps", configmap(f"filler{i}"), "default")
            if i == 10:
                client.delete("v1", "configmaps", "default", "w1")
            if i == 20:
                client.patch("v1", "configmaps", "default", "w2", {"data": {"v": "2"}})
                client.create("v1", "configmaps", configmap("w3", watched), "default")
        wait_for(lambda: informer.lists >= 2, timeout=20, what="a list after the history ran out")
        assert recorder.settled(client, "default", watched) == [
            ("add", "w1"), ("add", "w2"), ("delete", "w1"), ("update", "w2"), ("add", "w3")]
    finally:
        informer.stop()
        server.stop()


def test_resync_calls_update_with_the_same_object_for_every_cached_one(client, namespace):
    for name in ("a", "b"):
        _create(client, namespace, name)
    informer = started(Informer(client, "v1", "configmaps", namespace, resync_seconds=0.2))
    recorder = Recorder(informer)
    try:
        wait_for(lambda: recorder.resyncs.count("a") >= 2 and recorder.resyncs.count("b") >= 2,
                 timeout=10, what="two resyncs of a and b")
        assert recorder.events == [("add", "a"), ("add", "b")]      # a resync is not a change
    finally:
        informer.stop()


def test_a_field_selector_informer_sees_a_pod_when_it_is_bound(client, namespace):
    # A node name of this test's own: the informer watches every namespace,
    # and other tests on the shared server bind pods to node1.
    node = f"{namespace}-node"
    informer = started(Informer(client, "v1", "pods", field_selector=f"spec.nodeName={node}",
                                watch_timeout_seconds=30))
    recorder = Recorder(informer)
    try:
        client.create("v1", "pods", pod("elsewhere", nodeName=f"{namespace}-other-node"), namespace)
        client.create("v1", "pods", pod("web"), namespace)
        assert informer.get(namespace, "web") is None
        client.create_subresource("v1", "pods", namespace, "web", "binding",
                                  {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        wait_for(lambda: informer.get(namespace, "web"), timeout=10, what="the bound pod in the cache")
        assert informer.get(namespace, "web")["spec"]["nodeName"] == node
        client.delete("v1", "pods", namespace, "web", grace_period_seconds=0)
        client.create("v1", "pods", pod("zz-last", nodeName=node), namespace)
        wait_for(lambda: ("add", "zz-last") in recorder.events, timeout=10, what="the last pod")
        assert recorder.events == [("add", "web"), ("delete", "web"), ("add", "zz-last")]
        assert informer.get(namespace, "elsewhere") is None
    finally:
        informer.stop()


def test_a_failing_handler_does_not_stop_the_others_or_the_informer(client, namespace):
    informer = Informer(client, "v1", "configmaps", namespace, watch_timeout_seconds=30)
    informer.add_handler(on_add=lambda obj: 1 / 0)
    recorder = Recorder(informer)
    started(informer)
    try:
        _create(client, namespace, "a")
        assert recorder.settled(client, namespace) == [("add", "a")]
    finally:
        informer.stop()


def test_stop_is_prompt_even_in_a_long_watch(client, namespace):
    informer = started(Informer(client, "v1", "configmaps", namespace, watch_timeout_seconds=300))
    wait_for(lambda: informer._watch is not None, timeout=10, what="an open watch")
    started_at = time.monotonic()
    informer.stop()
    # far under the 300 s watch it interrupts, with room for a busy machine
    assert time.monotonic() - started_at < 10 and not informer._thread.is_alive()


def test_an_unreachable_server_is_retried_with_back_off_until_it_appears(tmp_path):
    port = free_port()
    client = APIClient(Connection(f"http://127.0.0.1:{port}"), timeout=2, read_retries=0)
    informer = Informer(client, "v1", "configmaps", "default").start()
    try:
        wait_for(lambda: informer.retry_delay >= 0.4, timeout=10, what="the back-off growing")
        assert not informer.has_synced()
        server = APIServer(tmp_path / "data", port=port).start()
        try:
            assert informer.wait_for_sync(20)
        finally:
            server.stop()
    finally:
        informer.stop()


def test_trouble_says_why_while_the_server_is_away_and_clears_when_it_is_back(tmp_path):
    """What a page or a health check shows (the dashboard's "reconnecting"):
    the informer's trouble, told to its trouble handlers as it changes."""
    port = free_port()
    client = APIClient(Connection(f"http://127.0.0.1:{port}"), timeout=2, read_retries=0)
    informer = Informer(client, "v1", "configmaps", "default")
    told: list[str | None] = []
    informer.add_trouble_handler(lambda i: told.append(type(i.trouble).__name__ if i.trouble else None))
    informer.start()
    try:
        wait_for(lambda: isinstance(informer.trouble, APIConnectionError), timeout=10, what="trouble reported")
        assert told[0] == "APIConnectionError"
        server = APIServer(tmp_path / "data", port=port).start()
        try:
            assert informer.wait_for_sync(20)
            wait_for(lambda: informer.trouble is None, timeout=10, what="the trouble cleared")
            assert told[-1] is None
            server.stop()                                  # away again, mid-watch: reported again
            wait_for(lambda: isinstance(informer.trouble, APIConnectionError), timeout=20, what="trouble again")
            server.start()
            wait_for(lambda: informer.trouble is None, timeout=30, what="the watch resumed")
            assert informer.lists == 1                     # resumed from its version, no list
        finally:
            server.stop()
    finally:
        informer.stop()


def test_a_refused_list_is_trouble_with_the_servers_status(client):
    informer = Informer(client, "v1", "nosuchkinds", "default").start()
    try:
        wait_for(lambda: isinstance(informer.trouble, APIStatusError), timeout=10, what="a refusal")
        assert informer.trouble.code == 404 and not informer.has_synced()
    finally:
        informer.stop()


def test_watch_refusals_are_status_errors(client):
    with pytest.raises(APIStatusError) as caught:
        client.watch("v1", "configmaps", "default", resource_version="99999999999", timeout_seconds=1)
    assert caught.value.code == 504 and "Too large resource version" in caught.value.message
