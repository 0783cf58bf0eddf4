"""The official Python client (`kubernetes`) against our API server.

It is the other client learners meet, and a stricter reader than kubectl in
places: it deserialises every answer into typed models (a null `items` or a
missing field it requires is an exception), and it sends create bodies
without a Content-Type header.
"""
from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from apiserver_harness import deployment, pod
from polling import wait_for


@pytest.fixture(scope="module")
def api_client(apiserver):
    config = client.Configuration()
    config.host = apiserver.url          # the insecure port: no credentials
    with client.ApiClient(config) as api_client:
        yield api_client


@pytest.fixture
def core(api_client) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


def test_create_list_read_and_delete_a_pod(core, namespace):
    created = core.create_namespaced_pod(namespace, pod("web", labels={"app": "web"}))
    assert isinstance(created, client.V1Pod)
    assert created.metadata.uid and created.metadata.namespace == namespace
    assert created.spec.containers[0].image == "busybox:1.35"

    listed = core.list_namespaced_pod(namespace)
    assert [p.metadata.name for p in listed.items] == ["web"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)
    assert core.list_namespaced_pod(namespace, label_selector="app=other").items == []
    assert any(p.metadata.namespace == namespace for p in core.list_pod_for_all_namespaces().items)

    status = core.read_namespaced_pod_status("web", namespace)
    assert status.status.phase == "Pending"

    deleted = core.delete_namespaced_pod("web", namespace)
    assert deleted.metadata.name == "web"
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("web", namespace)
    assert caught.value.status == 404


def test_typed_models_go_in_too(core, namespace):
    body = client.V1Pod(metadata=client.V1ObjectMeta(name="typed"),
                        spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="nginx:1.25")]))
    created = core.create_namespaced_pod(namespace, body)
    assert created.kind == "Pod" and created.api_version == "v1"      # filled from the URL


def test_patch_strategic_and_merge(core, namespace):
    core.create_namespaced_pod(namespace, pod("web", labels={"app": "web"}))
    # The client sends a dict patch as strategic merge: containers merge by name.
    patched = core.patch_namespaced_pod("web", namespace, {
        "metadata": {"labels": {"tier": "front"}},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}})
    assert patched.metadata.labels == {"app": "web", "tier": "front"}
    assert [(c.name, c.image) for c in patched.spec.containers] == [("app", "busybox:1.36")]

    merged = core.patch_namespaced_pod("web", namespace, {"metadata": {"labels": {"app": None, "owner": "ops"}}},
                                       _content_type="application/merge-patch+json")
    assert merged.metadata.labels == {"tier": "front", "owner": "ops"}


def test_a_deployment_and_its_scale(apps, namespace):
    created = apps.create_namespaced_deployment(namespace, deployment("web", replicas=2))
    assert isinstance(created, client.V1Deployment) and created.spec.replicas == 2

    scale = apps.read_namespaced_deployment_scale("web", namespace)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 4

    status = apps.read_namespaced_deployment_status("web", namespace)
    assert status.metadata.name == "web"

    patched = apps.patch_namespaced_deployment("web", namespace, {"metadata": {"labels": {"team": "a"}}})
    assert patched.metadata.labels == {"team": "a"} and patched.metadata.generation == 2   # the scale bumped it, a label does not

    deleted = apps.delete_namespaced_deployment("web", namespace)
    assert deleted["status"] == "Success" and deleted["details"]["uid"] == created.metadata.uid
    assert apps.list_namespaced_deployment(namespace).items == []


def test_conflict_is_an_api_exception_409(core, namespace):
    created = core.create_namespaced_pod(namespace, pod("web"))
    with pytest.raises(ApiException) as already:
        core.create_namespaced_pod(namespace, pod("web"))
    assert already.value.status == 409 and '"reason":"AlreadyExists"' in already.value.body

    core.patch_namespaced_pod("web", namespace, {"metadata": {"labels": {"moved": "on"}}})
    stale = created
    stale.metadata.labels = {"stale": "yes"}
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_pod("web", namespace, stale)
    assert conflict.value.status == 409 and "the object has been modified" in conflict.value.body


def test_watch_sees_added_modified_deleted(core, namespace):
    seen: list[tuple[str, str]] = []
    started = threading.Event()

    def watch_pods():
        stream = watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=20)
        started.set()
        for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if event["type"] == "DELETED":
                return

    watcher = threading.Thread(target=watch_pods, daemon=True)
    watcher.start()
    started.wait(10)
    core.create_namespaced_pod(namespace, pod("web"))
    # The watch may start after the create: the first list sends it as ADDED either way.
    wait_for(lambda: ("ADDED", "web") in seen, timeout=20, what="ADDED from the watch")
    core.patch_namespaced_pod("web", namespace, {"metadata": {"labels": {"step": "two"}}})
    wait_for(lambda: ("MODIFIED", "web") in seen, timeout=20, what="MODIFIED from the watch")
    core.delete_namespaced_pod("web", namespace)
    watcher.join(20)
    assert not watcher.is_alive(), f"the watch never saw DELETED: {seen}"
    assert [t for t, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]


def test_watch_ends_at_timeout_seconds(core, namespace):
    events = list(watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=1))
    assert events == []


def test_discovery_through_the_client(api_client):
    """The client asks for /api/, /api/v1/, /apis/ and /apis/apps/v1/ with a
    trailing slash, which Kubernetes serves like the paths without."""
    assert client.VersionApi(api_client).get_code().minor == "32"
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
    core_resources = {r.name: r for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert core_resources["pods"].short_names == ["po"] and "pods/log" in core_resources
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"apps", "batch"} <= groups
    assert client.AppsApi(api_client).get_api_group().preferred_version.group_version == "apps/v1"
    apps_resources = {r.name for r in client.AppsV1Api(api_client).get_api_resources().resources}
    assert {"deployments", "deployments/scale", "replicasets"} <= apps_resources


def test_pages_and_field_selectors(core, namespace):
    for name in ("a", "b", "c"):
        core.create_namespaced_pod(namespace, pod(name, nodeName="node-x") if name == "b" else pod(name))
    first = core.list_namespaced_pod(namespace, limit=2)
    assert [p.metadata.name for p in first.items] == ["a", "b"]
    assert first.metadata.remaining_item_count == 1
    rest = core.list_namespaced_pod(namespace, limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["c"] and not rest.metadata._continue
    placed = core.list_namespaced_pod(namespace, field_selector="spec.nodeName=node-x")
    assert [p.metadata.name for p in placed.items] == ["b"]


def test_server_side_apply_through_the_client(core, namespace):
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    applied = core.patch_namespaced_config_map("settings", namespace, manifest, field_manager="my-tool",
                                               _content_type="application/apply-patch+yaml")
    assert applied.data == {"mode": "fast"}
    assert [m.manager for m in applied.metadata.managed_fields] == ["my-tool"]
    manifest["data"]["mode"] = "slow"
    with pytest.raises(ApiException) as conflict:
        core.patch_namespaced_config_map("settings", namespace, manifest, field_manager="other-tool",
                                         _content_type="application/apply-patch+yaml")
    assert conflict.value.status == 409 and "my-tool" in conflict.value.body
    forced = core.patch_namespaced_config_map("settings", namespace, manifest, field_manager="other-tool",
                                              force=True, _content_type="application/apply-patch+yaml")
    assert forced.data == {"mode": "slow"}


def test_binding_answers_a_status_as_kubernetes_does(core, namespace):
    """Kubernetes answers a binding with a Status, not a Binding, so the
    client's typed return value cannot be built (a known client issue); the
    usual way round it is to read the raw answer."""
    core.create_namespaced_pod(namespace, pod("web"))
    binding = client.V1Binding(metadata=client.V1ObjectMeta(name="web"),
                               target=client.V1ObjectReference(kind="Node", name="node-1"))
    raw = core.create_namespaced_pod_binding("web", namespace, binding, _preload_content=False)
    assert raw.status == 201 and json.loads(raw.data)["status"] == "Success"
    assert core.read_namespaced_pod("web", namespace).spec.node_name == "node-1"
