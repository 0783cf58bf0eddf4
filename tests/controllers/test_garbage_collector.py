"""The garbage collector: its decisions as tables, the API server's side of
propagationPolicy as a table, then cascading deletes against a real API
server and a real controller manager, with the real kubectl for
--cascade=foreground and --cascade=orphan."""
from __future__ import annotations

import subprocess

import pytest

import admission
import registry
from controllers_harness import APIServer, Client, ControllerManager, FakeKubelet, replicaset, unique, wait_for
from garbage_collector import DANGLING, SOLID, WAITING, Verdict, decide, owner_state
from test_deployment import deployment

JOBS = registry.for_kind("batch", "Job")
DEPLOYMENTS = registry.for_kind("apps", "Deployment")
# Every plugin but NoControllerManager: the server leaves deletion work to the controllers.
WITH_CONTROLLERS = "NamespaceLifecycle,LimitRanger,DenyPrivileged"


# ------------------------------------------------ the API server's side

def obj_with(*finalizers):
    return {"metadata": {"name": "x", "finalizers": list(finalizers)}}


@pytest.mark.parametrize("resource, obj, options, finalizers", [
    (DEPLOYMENTS, obj_with(), {}, []),                                       # apps/v1: Background
    (DEPLOYMENTS, obj_with(), {"propagationPolicy": "Foreground"}, ["foregroundDeletion"]),
    (DEPLOYMENTS, obj_with(), {"propagationPolicy": "Orphan"}, ["orphan"]),
    (DEPLOYMENTS, obj_with(), {"orphanDependents": True}, ["orphan"]),       # the deprecated spelling
    (JOBS, obj_with(), {}, ["orphan"]),                                      # batch/v1 keeps its pods
    (JOBS, obj_with(), {"propagationPolicy": "Background"}, []),             # what kubectl sends
    (DEPLOYMENTS, obj_with("example.com/hold"), {"propagationPolicy": "Orphan"}, ["example.com/hold", "orphan"]),
    # A second DELETE: what it asks replaces what the first asked...
    (DEPLOYMENTS, obj_with("foregroundDeletion"), {"propagationPolicy": "Orphan"}, ["orphan"]),
    (DEPLOYMENTS, obj_with("orphan"), {"propagationPolicy": "Background"}, []),
    # ...and one that asks nothing keeps it (a kubelet's final delete of a pod).
    (DEPLOYMENTS, obj_with("foregroundDeletion"), {"gracePeriodSeconds": 0}, ["foregroundDeletion"]),
])
def test_the_server_adds_the_finalizer_the_policy_asks_for(resource, obj, options, finalizers):
    assert admission.finalizers_for_delete(resource, obj, options) == finalizers


def test_with_no_garbage_collector_the_server_adds_none():
    assert admission.finalizers_for_delete(DEPLOYMENTS, obj_with(), {"propagationPolicy": "Orphan"},
                                           garbage_collector=False) == []


# ------------------------------------------------ the collector's decisions

def owner(uid="u1", deleting=False, *finalizers):
    meta = {"uid": uid, "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


@pytest.mark.parametrize("found, state", [
    (None, DANGLING),                                         # 404
    (owner("other"), DANGLING),                               # same name, a new object
    (owner("u1"), SOLID),
    (owner("u1", True), SOLID),                               # going, but not waiting for us
    (owner("u1", True, "orphan"), SOLID),                     # will let go of us, not delete us
    (owner("u1", True, "foregroundDeletion"), WAITING),
])
def test_owner_state(found, state):
    assert owner_state(found, {"uid": "u1"}) == state


@pytest.mark.parametrize("owners, has_dependents, finalizers, verdict", [
    ({"a": SOLID}, False, [], Verdict("keep")),
    ({"a": SOLID, "b": DANGLING}, False, [], Verdict("remove-owner-refs", ("b",))),
    ({"a": SOLID, "b": WAITING}, True, [], Verdict("remove-owner-refs", ("b",))),
    ({"a": DANGLING}, True, [], Verdict("delete", policy="Background")),
    ({"a": DANGLING, "b": DANGLING}, False, [], Verdict("delete", policy="Background")),
    ({"a": WAITING}, True, [], Verdict("delete", policy="Foreground")),   # its own dependents first
    ({"a": WAITING}, False, [], Verdict("delete", policy="Background")),
    ({"a": DANGLING}, False, ["orphan"], Verdict("delete", policy="Orphan")),  # an earlier DELETE's wish
])
def test_what_happens_to_a_dependent(owners, has_dependents, finalizers, verdict):
    assert decide(owners, has_dependents, finalizers) == verdict


# ------------------------------------------------ against a real server and controller manager

@pytest.fixture
def apiserver(tmp_path):
    server = APIServer(tmp_path / "data", "--enable-admission-plugins", WITH_CONTROLLERS).start()
    yield server
    server.stop()


@pytest.fixture
def ns(api) -> str:
    name = unique("gc")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def exists(api: Client, path: str) -> bool:
    return api.get(path).status_code == 200


def items(api: Client, path: str) -> list[dict]:
    return api.get(path).json()["items"]


def run_kubectl(kubectl, apiserver, ns, tmp_path, *args) -> str:
    result = subprocess.run([kubectl, "-s", apiserver.url, "-n", ns, "--cache-dir", str(tmp_path / "cache"), *args],
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout


def hold(api: Client, pod: dict) -> None:
    """A finalizer of the test's own: the pod cannot go until release()."""
    meta = pod["metadata"]
    response = api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                         {"metadata": {"finalizers": ["example.com/hold"]}})
    assert response.status_code == 200, response.text


def release(api: Client, pod: dict) -> None:
    meta = pod["metadata"]
    response = api.patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                         {"metadata": {"finalizers": None}})
    assert response.status_code == 200, response.text


def test_background_the_deployment_goes_at_once_then_its_replicasets_and_pods(api, manager, ns):
    deployments, rss, pods = (f"/apis/apps/v1/namespaces/{ns}/deployments", f"/apis/apps/v1/namespaces/{ns}/replicasets",
                              f"/api/v1/namespaces/{ns}/pods")
    assert api.post(deployments, deployment("web", 2)).status_code == 201
    wait_for(lambda: len(items(api, pods)) == 2, timeout=30, what="two pods")
    # Right after the pods appear the Deployment controller writes the
    # Deployment's status: the DELETE decides again on that version rather
    # than answer 409 (deletion.py's delete_deciding_on_the_latest).
    assert api.delete(f"{deployments}/web").status_code == 200   # no policy: apps/v1's Background
    assert not exists(api, f"{deployments}/web")
    wait_for(lambda: not items(api, rss) and not items(api, pods), timeout=30,
             what="the ReplicaSet and its pods collected")


def test_foreground_with_kubectl_deletes_dependents_before_the_owner(api, apiserver, manager, ns, kubectl, tmp_path):
    deployments, pods = f"/apis/apps/v1/namespaces/{ns}/deployments", f"/api/v1/namespaces/{ns}/pods"
    assert api.post(deployments, deployment("web", 2)).status_code == 201
    wait_for(lambda: len(items(api, pods)) == 2, timeout=30, what="two pods")
    held = items(api, pods)[0]
    hold(api, held)
    run_kubectl(kubectl, apiserver, ns, tmp_path, "delete", "deployment", "web", "--cascade=foreground", "--wait=false")

    # The held pod cannot go, so neither can its ReplicaSet, nor the Deployment.
    wait_for(lambda: api.get(f"{pods}/{held['metadata']['name']}").json()["metadata"].get("deletionTimestamp"),
             timeout=30, what="the held pod marked for deletion")
    wait_for(lambda: len(items(api, pods)) == 1, timeout=30, what="the other pod gone")
    web = api.get(f"{deployments}/web").json()
    assert web["metadata"]["finalizers"] == ["foregroundDeletion"] and web["metadata"]["deletionTimestamp"]
    [rs] = items(api, f"/apis/apps/v1/namespaces/{ns}/replicasets")
    assert rs["metadata"]["finalizers"] == ["foregroundDeletion"], "the ReplicaSet waits for its pods too"

    release(api, held)
    wait_for(lambda: not exists(api, f"{deployments}/web"), timeout=30, what="the Deployment gone last")
    assert not items(api, pods) and not items(api, f"/apis/apps/v1/namespaces/{ns}/replicasets")


def test_orphan_with_kubectl_leaves_the_pods_running_without_an_owner(api, apiserver, manager, ns, kubectl, tmp_path):
    pods = f"/api/v1/namespaces/{ns}/pods"
    with FakeKubelet(api, ns):
        assert api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", replicaset("web", 2)).status_code == 201
        wait_for(lambda: [p["status"].get("phase") for p in items(api, pods)] == ["Running", "Running"],
                 timeout=30, what="two running pods")
        before = {p["metadata"]["uid"] for p in items(api, pods)}
        # kubectl waits until the ReplicaSet is gone: the collector let go of the pods, then of the finalizer.
        run_kubectl(kubectl, apiserver, ns, tmp_path, "delete", "replicaset", "web", "--cascade=orphan")
    assert not exists(api, f"/apis/apps/v1/namespaces/{ns}/replicasets/web")
    left = items(api, pods)
    assert {p["metadata"]["uid"] for p in left} == before
    for pod in left:
        assert not pod["metadata"].get("ownerReferences") and not pod["metadata"].get("deletionTimestamp")
        assert pod["status"]["phase"] == "Running"


def test_a_dependent_whose_owner_does_not_exist_is_deleted_and_one_with_an_owner_is_kept(api, manager, ns):
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    real_owner = api.post(cms, {"metadata": {"name": "owner"}}).json()

    def owned_by(name, owner_name, uid):
        return {"metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": owner_name, "uid": uid}]}}
    assert api.post(cms, owned_by("kept", "owner", real_owner["metadata"]["uid"])).status_code == 201
    assert api.post(cms, owned_by("stray", "never-was", "6b1f1e8e-0000-4000-8000-000000000000")).status_code == 201
    # An owner of that name exists, but it is another object (another uid): still gone.
    assert api.post(cms, owned_by("impostor", "owner", "6b1f1e8e-0000-4000-8000-000000000001")).status_code == 201
    wait_for(lambda: {c["metadata"]["name"] for c in items(api, cms)} == {"owner", "kept"}, timeout=30,
             what="the strays collected")
    # And when the owner goes, so does what it owns.
    assert api.delete(f"{cms}/owner").status_code == 200
    wait_for(lambda: not items(api, cms), timeout=30, what="the owned ConfigMap collected")


def test_a_job_deleted_without_a_policy_keeps_its_pods(api, manager, ns):
    jobs, pods = f"/apis/batch/v1/namespaces/{ns}/jobs", f"/api/v1/namespaces/{ns}/pods"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "main", "image": "busybox:1.35"}]}}}}
    assert api.post(jobs, job).status_code == 201
    wait_for(lambda: len(items(api, pods)) == 1, timeout=30, what="the Job's pod")
    assert api.delete(f"{jobs}/pi").status_code == 200                  # batch/v1's default: Orphan
    wait_for(lambda: not exists(api, f"{jobs}/pi"), timeout=30, what="the Job gone")
    [pod] = items(api, pods)
    assert not pod["metadata"].get("ownerReferences") and not pod["metadata"].get("deletionTimestamp")
