"""Static pods in a cluster: the kubelet runs them from --manifests and
shows each in the API server as a mirror pod (real API server, real kubelet,
real Docker). And the events it posts are what `kubectl describe` lists."""
from __future__ import annotations

import pytest

from apiserver_harness import APIServer, Client
from harness import make_kubelet  # noqa: F401 (a fixture)
from polling import wait_for

STATIC = """\
apiVersion: v1
kind: Pod
metadata: {name: static-web, labels: {app: static}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: busybox:1.35, command: [sleep, "3600"]}]
"""


@pytest.fixture
def cluster(tmp_path, make_kubelet):
    server = APIServer(tmp_path / "data").start()
    try:
        api = Client(server.url)
        kubelet = make_kubelet("--apiserver", server.url, "--node-status-update-frequency", "1")
        wait_for(lambda: api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, timeout=30,
                 what="the node to register")
        yield api, kubelet
    finally:
        server.stop()


def _pod(api: Client, name: str) -> dict | None:
    response = api.get(f"/api/v1/namespaces/default/pods/{name}")
    return response.json() if response.status_code == 200 else None


def _running(api: Client, name: str) -> dict | None:
    pod = _pod(api, name)
    return pod if pod and pod.get("status", {}).get("phase") == "Running" else None


def test_a_static_pod_shows_as_a_mirror_pod_that_follows_its_manifest(cluster):
    api, kubelet = cluster
    kubelet.write("static.yaml", STATIC)
    name = f"static-web-{kubelet.node_name}"               # <name>-<node>, as Kubernetes names it
    mirror = wait_for(lambda: _running(api, name), timeout=60, what="the mirror pod, Running")
    meta = mirror["metadata"]
    assert meta["annotations"]["kubernetes.io/config.source"] == "file"
    assert meta["annotations"]["kubernetes.io/config.mirror"] == meta["annotations"]["kubernetes.io/config.hash"]
    assert meta["ownerReferences"][0]["kind"] == "Node" and meta["ownerReferences"][0]["name"] == kubelet.node_name
    assert mirror["spec"]["nodeName"] == kubelet.node_name and mirror["status"]["podIP"]
    app = kubelet.container(name, "app").id

    # Deleting the mirror does not stop the static pod: a new mirror comes.
    assert api.delete(f"/api/v1/namespaces/default/pods/{name}").status_code == 200
    wait_for(lambda: (_running(api, name) or {}).get("metadata", {}).get("uid") not in (None, meta["uid"]),
             timeout=30, what="a new mirror pod")
    assert kubelet.container(name, "app").id == app               # the same container, never restarted

    # Removing the manifest stops the pod, and its mirror goes too.
    kubelet.remove("static.yaml")
    wait_for(lambda: _pod(api, name) is None, timeout=60, what="the mirror pod to go with its manifest")
    wait_for(lambda: kubelet.containers(name, all=False) == [], timeout=30, what="the static pod's containers to go")


def test_the_events_of_a_pod_read_as_kubectl_describe_shows_them(cluster):
    api, kubelet = cluster
    pod = {"metadata": {"name": "evented"},
           "spec": {"nodeName": kubelet.node_name, "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}]}}
    uid = api.post("/api/v1/namespaces/default/pods", pod).json()["metadata"]["uid"]
    wait_for(lambda: _running(api, "evented"), timeout=60, what="the pod Running")
    # kubectl describe asks exactly this: events whose involvedObject is the pod.
    selector = f"involvedObject.name=evented,involvedObject.namespace=default,involvedObject.uid={uid}"

    def reasons():
        items = api.get(f"/api/v1/namespaces/default/events?fieldSelector={selector}").json()["items"]
        return {e["reason"]: e for e in items}
    events = wait_for(lambda: (lambda r: r if {"Pulled", "Created", "Started"} <= set(r) else None)(reasons()),
                      timeout=20, what="Pulled, Created and Started events")
    assert events["Started"]["message"] == "Started container app"
    assert events["Started"]["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert events["Started"]["source"] == {"component": "kubelet", "host": kubelet.node_name}
    assert api.delete("/api/v1/namespaces/default/pods/evented").status_code == 200
    killing = wait_for(lambda: reasons().get("Killing"), timeout=30, what="a Killing event")
    assert killing["message"] == "Stopping container app"
