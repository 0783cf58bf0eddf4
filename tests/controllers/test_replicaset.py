"""The ReplicaSet controller against a real API server, as a real process."""
from __future__ import annotations

from controllers_harness import make_namespace, mark_ready, pods_of, replicaset, unique, wait_for


def test_keeps_the_number_of_pods(api, manager):
    ns = make_namespace(api)
    rs = api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 3)).json()
    wait_for(lambda: len(pods_of(api, ns, "web")) == 3, timeout=20, what="3 pods")
    pods = pods_of(api, ns, "web")
    for pod in pods:
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("ReplicaSet", "web",
                                                                            rs["metadata"]["uid"], True)
        assert pod["metadata"]["name"].startswith("web-")
    # A pod that goes away is replaced...
    victim = pods[0]["metadata"]["name"]
    api.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    wait_for(lambda: len(pods_of(api, ns, "web")) == 3 and victim not in
             {p["metadata"]["name"] for p in pods_of(api, ns, "web")}, timeout=20, what="a replacement")
    # ...and status says what there is.
    for pod in pods_of(api, ns, "web"):
        mark_ready(api, pod)
    wait_for(lambda: (api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/web").json().get("status") or {})
             .get("readyReplicas") == 3, timeout=20, what="readyReplicas 3")
    status = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/web").json()["status"]
    assert status["replicas"] == 3 and status["availableReplicas"] == 3 and status["observedGeneration"] == 1


def test_scaling_down_deletes_the_least_useful_pods(api, manager):
    ns = make_namespace(api)
    api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 4))
    wait_for(lambda: len(pods_of(api, ns, "web")) == 4, timeout=20, what="4 pods")
    pods = pods_of(api, ns, "web")
    ready = {p["metadata"]["name"] for p in pods[:2]}
    for pod in pods[:2]:
        mark_ready(api, pod)
    response = api.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/web/scale", {"spec": {"replicas": 2}})
    assert response.status_code == 200, response.text
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="2 pods")
    assert {p["metadata"]["name"] for p in pods_of(api, ns, "web")} == ready


def test_adopts_orphans_and_releases_relabelled_pods(api, manager):
    ns = make_namespace(api)
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan", "labels": {"app": "web"}},
              "spec": {"containers": [{"name": "main", "image": "busybox:1.35"}]}}
    assert api.post(f"/api/v1/namespaces/{ns}/pods", orphan).status_code == 201
    api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 2))
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="2 pods")
    adopted = api.get(f"/api/v1/namespaces/{ns}/pods/orphan").json()
    assert adopted["metadata"]["ownerReferences"][0]["name"] == "web"      # adopted, so only one created
    # Relabelled for debugging: released, and replaced.
    api.patch(f"/api/v1/namespaces/{ns}/pods/orphan", {"metadata": {"labels": {"app": "debug"}}})
    wait_for(lambda: not api.get(f"/api/v1/namespaces/{ns}/pods/orphan").json()["metadata"].get("ownerReferences"),
             timeout=20, what="the relabelled pod released")
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="a replacement for the released pod")


def test_killed_mid_burst_and_restarted_makes_no_extra_pods(api, apiserver, tmp_path):
    from controllers_harness import ControllerManager
    ns = make_namespace(api)
    first = ControllerManager(apiserver.url, tmp_path).start()
    api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 40))
    wait_for(lambda: len(pods_of(api, ns, "web")) >= 5, timeout=20, what="the burst to begin")
    first.kill()
    second = ControllerManager(apiserver.url, tmp_path).start()
    try:
        wait_for(lambda: len(pods_of(api, ns, "web")) == 40, timeout=30, what="40 pods")
        # Settled: a few more reconciles must not add any.
        api.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/web", {"metadata": {"labels": {"poke": "1"}}})
        wait_for(lambda: (api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/web").json().get("status") or {})
                 .get("replicas") == 40, timeout=20, what="status replicas 40")
        assert len(pods_of(api, ns, "web")) == 40
    finally:
        second.stop()


def test_a_pod_still_stopping_does_not_hold_the_replicaset_back(api, manager):
    # Pods on a node whose kubelet never confirms: a delete only marks them
    # (deletionTimestamp). That mark is the delete the controller waited
    # for; had it waited for the pod to vanish, scaling up again would
    # stall until its expectations expired (5 minutes).
    ns = make_namespace(api)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": unique("ghost")},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert api.post("/api/v1/nodes", node).status_code == 201
    rs = replicaset("web", 2)
    rs["spec"]["template"]["spec"]["nodeName"] = node["metadata"]["name"]
    api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", rs)
    wait_for(lambda: len(pods_of(api, ns, "web")) == 2, timeout=20, what="2 pods")
    api.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/web/scale", {"spec": {"replicas": 1}})
    wait_for(lambda: len(pods_of(api, ns, "web")) == 1, timeout=20, what="one pod marked for deletion")
    api.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/web/scale", {"spec": {"replicas": 3}})
    wait_for(lambda: len(pods_of(api, ns, "web")) == 3, timeout=30, what="3 live pods beside the stopping one")
