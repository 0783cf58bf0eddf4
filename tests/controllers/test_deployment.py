"""The Deployment controller against a real API server, as a real process,
with the ReplicaSet controller beside it and a fake kubelet that makes every
pod Running and Ready at once. Rollouts are checked on a watch, event by
event: the bounds must hold at every moment, not only at the end."""
from __future__ import annotations

import json
import threading

import pytest
import requests

from controllers_harness import ControllerManager, FakeKubelet, unique, wait_for

IMAGE_1, IMAGE_2 = "busybox:1.35", "busybox:1.36"


def deployment(name: str, replicas: int, image: str = IMAGE_1, **spec) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": image}]}}, **spec}}


@pytest.fixture
def ns(api) -> str:
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def rolled_out(api, ns: str, name: str, replicas: int) -> bool:
    d = api.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}").json()
    status = d.get("status") or {}
    return (status.get("observedGeneration") == d["metadata"]["generation"]
            and status.get("updatedReplicas") == replicas == status.get("availableReplicas")
            and status.get("replicas") == replicas)


def set_image(api, ns: str, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}
    response = api.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", patch,
                         content_type="application/strategic-merge-patch+json")
    assert response.status_code == 200, response.text


class PodWatch:
    """Follows every pod of a namespace on a watch and records, after each
    event, how many exist and how many are ready."""

    def __init__(self, url: str, ns: str, since: str):
        self.pods: dict[str, dict] = {}
        self.most, self.fewest_ready = 0, None
        self.images_seen_together = False
        self.stopped = False
        # The server ends the watch after timeoutSeconds; stop() does not
        # wait for that (closing a response another thread reads blocks).
        self._response = requests.get(f"{url}/api/v1/namespaces/{ns}/pods",
                                      params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "120"},
                                      stream=True, timeout=130)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, pods: list[dict]) -> "PodWatch":
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for line in self._response.iter_lines(chunk_size=None):
                if self.stopped:
                    return
                event = json.loads(line)
                pod = event["object"]
                if event["type"] == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                    self.pods.pop(pod["metadata"]["name"], None)
                else:
                    self.pods[pod["metadata"]["name"]] = pod
                ready = sum(1 for p in self.pods.values() for c in (p.get("status") or {}).get("conditions") or []
                            if c["type"] == "Ready" and c["status"] == "True")
                self.most = max(self.most, len(self.pods))
                self.fewest_ready = ready if self.fewest_ready is None else min(self.fewest_ready, ready)
                images = {p["spec"]["containers"][0]["image"] for p in self.pods.values()}
                self.images_seen_together |= len(images) > 1
        except (requests.RequestException, ValueError):
            return

    def stop(self) -> None:
        self.stopped = True


def settled(api, ns: str) -> tuple[list[dict], str]:
    listed = api.get(f"/api/v1/namespaces/{ns}/pods").json()
    return listed["items"], listed["metadata"]["resourceVersion"]


def test_a_rolling_update_stays_within_surge_and_unavailability(api, apiserver, manager, ns):
    # 10 replicas, Kubernetes' defaults: maxSurge 25% -> 3 (up), maxUnavailable 25% -> 2 (down).
    with FakeKubelet(api, ns):
        api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", 10))
        wait_for(lambda: rolled_out(api, ns, "web", 10), timeout=30, what="the first rollout")
        watch = PodWatch(apiserver.url, ns, settled(api, ns)[1]).start(settled(api, ns)[0])
        set_image(api, ns, "web", IMAGE_2)
        wait_for(lambda: rolled_out(api, ns, "web", 10), timeout=60, what="the rollout to busybox:1.36")
        watch.stop()
    assert watch.most <= 13, f"{watch.most} pods at once: more than replicas + maxSurge"
    assert watch.fewest_ready >= 8, f"only {watch.fewest_ready} ready: fewer than replicas - maxUnavailable"
    pods = [p for p in settled(api, ns)[0] if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {IMAGE_2} and len(pods) == 10
    replicasets = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"]
    assert sorted((rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], rs["spec"]["replicas"])
                  for rs in replicasets) == [("1", 0), ("2", 10)]


def test_recreate_stops_every_old_pod_before_a_new_one_starts(api, apiserver, manager, ns):
    with FakeKubelet(api, ns):
        api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("db", 3, strategy={"type": "Recreate"}))
        wait_for(lambda: rolled_out(api, ns, "db", 3), timeout=30, what="the first rollout")
        watch = PodWatch(apiserver.url, ns, settled(api, ns)[1]).start(settled(api, ns)[0])
        set_image(api, ns, "db", IMAGE_2)
        wait_for(lambda: rolled_out(api, ns, "db", 3), timeout=60, what="the recreate rollout")
        watch.stop()
    assert not watch.images_seen_together, "old and new pods ran at the same time"


def test_rollout_undo_with_kubectl_reuses_the_old_replicaset(api, apiserver, manager, ns, kubectl, tmp_path):
    import subprocess

    def k(*args):
        result = subprocess.run([kubectl, "-s", apiserver.url, "-n", ns, "--cache-dir", str(tmp_path / "cache"), *args],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr + result.stdout
        return result.stdout

    with FakeKubelet(api, ns):
        api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", 3))
        assert 'deployment "web" successfully rolled out' in k("rollout", "status", "deployment/web", "--timeout=30s")
        k("set", "image", "deployment/web", f"main={IMAGE_2}")
        assert 'successfully rolled out' in k("rollout", "status", "deployment/web", "--timeout=30s")
        assert "rolled back" in k("rollout", "undo", "deployment/web")
        assert 'successfully rolled out' in k("rollout", "status", "deployment/web", "--timeout=30s")
    replicasets = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"]
    assert len(replicasets) == 2, "undo must bring back the first ReplicaSet, not make a third"
    live = {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in replicasets}
    assert live[IMAGE_1]["spec"]["replicas"] == 3 and live[IMAGE_2]["spec"]["replicas"] == 0
    assert live[IMAGE_1]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    history = k("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]


def test_killed_mid_rollout_the_next_manager_finishes_it_with_no_extra_pods(api, apiserver, ns, tmp_path):
    first = ControllerManager(apiserver.url, tmp_path).start()
    second = None
    try:
        with FakeKubelet(api, ns):
            api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", 10))
            wait_for(lambda: rolled_out(api, ns, "web", 10), timeout=30, what="the first rollout")
            set_image(api, ns, "web", IMAGE_2)
            wait_for(lambda: any(p["spec"]["containers"][0]["image"] == IMAGE_2 for p in settled(api, ns)[0]),
                     timeout=20, what="the rollout to begin")
            first.kill()
            second = ControllerManager(apiserver.url, tmp_path).start()
            wait_for(lambda: rolled_out(api, ns, "web", 10), timeout=60, what="the rollout to finish")
        replicasets = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"]
        assert sum(rs["spec"]["replicas"] for rs in replicasets) == 10 and len(replicasets) == 2
        assert len([p for p in settled(api, ns)[0] if not p["metadata"].get("deletionTimestamp")]) == 10
    finally:
        first.stop()
        if second:
            second.stop()


def test_an_orphaned_replicaset_of_the_same_template_is_adopted_not_duplicated(api, manager, ns):
    # What `kubectl delete deployment --cascade=orphan` leaves behind: a
    # ReplicaSet with the Deployment's labels and template but no owner. A
    # Deployment created again takes it back instead of making another.
    spec = deployment("web", 2)["spec"]
    orphan = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": "web-left-behind", "labels": {"app": "web"}},
              "spec": {"replicas": 2, "selector": spec["selector"], "template": spec["template"]}}
    with FakeKubelet(api, ns):
        assert api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", orphan).status_code == 201
        created = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", 2)).json()
        wait_for(lambda: (api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/web-left-behind").json()
                          ["metadata"].get("ownerReferences") or [{}])[0].get("uid") == created["metadata"]["uid"],
                 timeout=30, what="the orphan adopted by the Deployment")
        wait_for(lambda: rolled_out(api, ns, "web", 2), timeout=30, what="the rollout on the adopted ReplicaSet")
    names = [rs["metadata"]["name"] for rs in api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"]]
    assert names == ["web-left-behind"]
