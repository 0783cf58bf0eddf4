"""What only the etcd store does: Kubernetes' keys, etcd's revisions as
resourceVersions, transactions that compare, a watch cache fed from one
etcd watch, and several stores (API servers) on one etcd. In-process, on a
real etcd (the `etcd` fixture); test_store.py runs the shared contract."""
from __future__ import annotations

import json
import threading
import time

import pytest
import requests

import api_errors
import registry
from apiserver_harness import unique
from etcd_cluster import EtcdCluster
from etcd_client import EtcdClient, decode, encode
from etcd_store import EtcdStore
from watch_cache import Expired

PODS = registry.for_kind("", "Pod")
NODES = registry.for_kind("", "Node")
SERVICES = registry.for_kind("", "Service")
CRDS = registry.for_kind("apiextensions.k8s.io", "CustomResourceDefinition")
CLUSTER_ROLES = registry.for_kind("rbac.authorization.k8s.io", "ClusterRole")


def pod(name, namespace="default", **labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}


@pytest.fixture
def prefix():
    return f"/{unique('test')}"


@pytest.fixture
def client(etcd) -> EtcdClient:
    return EtcdClient([etcd.client_urls])


@pytest.fixture
def store(etcd, prefix):
    store = EtcdStore([etcd.client_urls], prefix=prefix, watch_cache_size=100)
    yield store
    store.close()


def stored(client: EtcdClient, key: str) -> tuple[dict, dict]:
    """(the value as JSON, the key-value) of one key, read from etcd directly."""
    kv = client.range(key)["kvs"][0]
    return json.loads(decode(kv["value"])), kv


@pytest.mark.parametrize("resource, namespace, name, key", [
    (PODS, "default", "web", "pods/default/web"),
    (NODES, "", "node1", "minions/node1"),                       # cluster-scoped, under its old name
    (SERVICES, "default", "db", "services/specs/default/db"),
    (CLUSTER_ROLES, "", "system:node", "clusterroles/system:node"),
    (CRDS, "", "crontabs.stable.example.com",
     "apiextensions.k8s.io/customresourcedefinitions/crontabs.stable.example.com"),
    (registry.Resource("stable.example.com", "v1", "CronTab", "crontabs", True), "default", "cron",
     "stable.example.com/crontabs/default/cron"),             # a custom resource: group/plural
])
def test_keys_are_laid_out_as_kubernetes_lays_them(store, prefix, resource, namespace, name, key):
    assert store.key(resource, namespace, name) == f"{prefix}/{key}"


def test_the_resource_version_is_the_keys_mod_revision_and_not_stored(store, client, prefix):
    created = store.create(PODS, pod("web"))
    value, kv = stored(client, f"{prefix}/pods/default/web")
    assert created["metadata"]["resourceVersion"] == kv["mod_revision"]
    assert "resourceVersion" not in value["metadata"]
    assert store.get(PODS, "default", "web") == created
    updated = store.update(PODS, "default", "web", lambda o: {**o, "spec": {**o["spec"], "nodeName": "n1"}})
    value, kv = stored(client, f"{prefix}/pods/default/web")
    assert updated["metadata"]["resourceVersion"] == kv["mod_revision"] != kv["create_revision"]


def test_a_write_through_etcd_behind_the_stores_back_is_a_409_for_a_stale_update(store, client, prefix):
    """The compare in the transaction is the whole of optimistic concurrency:
    anyone who writes the key in between (here etcdctl's equivalent) wins."""
    store.create(PODS, pod("web"))
    calls = []

    def change_under_it(current):
        calls.append(current["metadata"]["resourceVersion"])
        if len(calls) == 1:                   # another API server writes between our read and our write
            client.txn([], [{"request_put": {"key": encode(f"{prefix}/pods/default/web"),
                                             "value": EtcdStore._value({**current, "spec": {"by": "other"}})}}])
        return {**current, "metadata": {**current["metadata"], "labels": {"mine": "yes"}}}
    result = store.update(PODS, "default", "web", change_under_it)
    assert len(calls) == 2 and calls[0] != calls[1], "update_fn ran again on the newer object"
    assert result["spec"] == {"by": "other"} and result["metadata"]["labels"] == {"mine": "yes"}


def test_two_stores_on_one_etcd_are_two_api_servers(etcd, prefix):
    one = EtcdStore([etcd.client_urls], prefix=prefix)
    two = EtcdStore([etcd.client_urls], prefix=prefix)
    try:
        _two_api_servers(one, two)
    finally:
        one.close()
        two.close()


def _two_api_servers(one: EtcdStore, two: EtcdStore) -> None:
    start = two.resource_version
    created = one.create(PODS, pod("web"))
    assert two.get(PODS, "default", "web") == created
    events = two.watch_cache.events_after(start, deadline=time.monotonic() + 5, wakeup=0.05)
    first = next(e for e in events if e is not None)
    assert (first.type, first.obj) == ("ADDED", created)
    stale = dict(created)

    def from_a_stale_copy(current):
        return {**stale, "spec": {"changed": True}}
    two.update(PODS, "default", "web", lambda o: {**o, "spec": {"by": "two"}})
    with pytest.raises(api_errors.APIError) as caught:
        one.update(PODS, "default", "web", from_a_stale_copy)
    assert caught.value.code == 409 and "the object has been modified" in caught.value.message
    with pytest.raises(api_errors.APIError) as caught:
        two.create(PODS, pod("web"))
    assert (caught.value.code, caught.value.reason) == (409, "AlreadyExists")


def test_concurrent_increments_from_two_stores_lose_nothing(etcd, prefix):
    stores = [EtcdStore([etcd.client_urls], prefix=prefix) for _ in range(2)]
    stores[0].create(PODS, {**pod("counter"), "metadata": {**pod("counter")["metadata"], "annotations": {"n": "0"}}})

    def increment(current):
        current["metadata"]["annotations"]["n"] = str(int(current["metadata"]["annotations"]["n"]) + 1)
        return current
    threads = [threading.Thread(target=lambda s=s: [s.update(PODS, "default", "counter", increment) for _ in range(25)])
               for s in stores for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert stores[1].get(PODS, "default", "counter")["metadata"]["annotations"]["n"] == "200"
    for store in stores:
        store.close()


def test_a_list_is_one_revision_and_an_old_revision_is_still_readable(store):
    for name in "abc":
        store.create(PODS, pod(name))
    items, rv = store.list(PODS, "default")
    store.delete(PODS, "default", "a")
    store.create(PODS, pod("d"))
    assert [p["metadata"]["name"] for p in store.list(PODS, "default", resource_version=rv)[0]] == ["a", "b", "c"]
    assert [p["metadata"]["name"] for p in store.list(PODS, "default")[0]] == ["b", "c", "d"]


def test_a_compacted_revision_is_410_for_a_list_and_expired_for_a_new_history(etcd_binary, tmp_path, prefix):
    # An etcd of its own: compaction would cut the history the other tests replay.
    etcd = EtcdCluster(tmp_path / "etcd").start()
    try:
        _compacted(etcd, EtcdStore([etcd.client_urls], prefix=prefix, watch_cache_size=100),
                   EtcdClient([etcd.client_urls]))
    finally:
        etcd.stop()


def _compacted(etcd, store, client):
    before = store.resource_version
    store.create(PODS, pod("a"))
    _, old = store.list(PODS)
    store.update(PODS, "default", "a", lambda o: {**o, "spec": {"v": 2}})
    _, now = store.list(PODS)
    client.compact(now)
    with pytest.raises(api_errors.APIError) as caught:
        store.list(PODS, resource_version=old)
    assert (caught.value.code, caught.value.reason) == (410, "Expired")
    # A new API server on this etcd replays history only from the compaction on:
    # a watch from before it is 410, one from the compacted revision resumes.
    again = EtcdStore([etcd.client_urls], prefix=store.prefix, watch_cache_size=100)
    assert again.watch_cache.horizon == now - 1
    with pytest.raises(Expired):
        next(again.watch_cache.events_after(before, deadline=time.monotonic() + 1))
    resumed = next(e for e in again.watch_cache.events_after(now - 1, deadline=time.monotonic() + 5) if e)
    assert (resumed.type, resumed.resource_version) == ("MODIFIED", now)
    again.close()
    store.close()


def test_a_restarted_store_replays_etcds_history_into_its_watch_cache(etcd, store):
    since = store.resource_version
    store.create(PODS, pod("a"))
    store.update(PODS, "default", "a", lambda o: {**o, "spec": {"v": 2}})
    store.delete(PODS, "default", "a")
    store.close()
    again = EtcdStore([etcd.client_urls], prefix=store.prefix, watch_cache_size=100)
    events = again.watch_cache.events_after(since, deadline=time.monotonic() + 2, wakeup=0.05)
    seen = []
    for event in events:
        if event is not None:
            seen.append((event.type, event.obj["metadata"]["name"]))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    again.close()


def test_no_etcd_is_a_clear_error_at_start_and_a_503_later(etcd, prefix):
    from file_store import StoreError
    from polling import free_port
    nowhere = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError, match="cannot use etcd at"):
        EtcdStore([nowhere], prefix=prefix)
    # The first member is gone, the second answers: the client moves on.
    store = EtcdStore([nowhere, etcd.client_urls], prefix=prefix)
    assert store.create(PODS, pod("web"))["metadata"]["name"] == "web"
    store.client.endpoints = [nowhere]
    with pytest.raises(api_errors.APIError) as caught:
        store.get(PODS, "default", "web")
    assert (caught.value.code, caught.value.reason) == (503, "ServiceUnavailable")
    assert "etcd is unavailable" in caught.value.message
    assert store.problem() and "etcd is unavailable" in store.problem()
    store.close()


def test_a_write_is_in_the_watch_cache_when_it_returns(store):
    """A client that writes and then watches from the version it got must
    see everything after it: the write waits for its own event."""
    for i in range(20):
        rv = int(store.create(PODS, pod(f"p{i}"))["metadata"]["resourceVersion"])
        assert store.resource_version >= rv


def test_the_gateway_answers_json_with_base64_keys(etcd):
    """What etcd_client.py is built on, shown once (etcd-gateway.md)."""
    answer = requests.post(f"{etcd.members[0].client_url}/v3/kv/range", json={"key": "L25vbmU="}, timeout=5).json()
    assert isinstance(answer["header"]["revision"], str) and "kvs" not in answer
