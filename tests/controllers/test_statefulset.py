"""The StatefulSet controller: its decisions as tables (stateful_pods.py,
controller_history.py), then against a real API server and controller
manager, with pods' status written by the test as a kubelet would."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading

import dns.message
import dns.query
import pytest
import requests

from controller_history import find_equal, new_revision, revision_hash, same_template, template_in, to_forget
from common.tooling.ports import free_port
from controllers_harness import ROOT, FakeKubelet, mark_ready, unique, wait_for
from stateful_pods import (POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL, RetentionPolicy, Revisions,
                           claim_owners, new_claim, new_pod, ordinal_of, plan, with_owners)

NOW = 1_000_000.0
TEMPLATE = {"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "busybox:1.35",
                                     "volumeMounts": [{"name": "www", "mountPath": "/www"}]}],
                     "restartPolicy": "Always"}}
CLAIM_TEMPLATE = {"metadata": {"name": "www"},
                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def a_set(**spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "set-uid"},
            "spec": {"serviceName": "nginx", "replicas": 3, "selector": {"matchLabels": {"app": "nginx"}},
                     "template": copy.deepcopy(TEMPLATE), "volumeClaimTemplates": [copy.deepcopy(CLAIM_TEMPLATE)],
                     **spec}}


# ---------------------------------------------------------------- identity

def test_a_pod_gets_its_name_dns_name_labels_and_claim():
    pod = new_pod(a_set(), TEMPLATE, 1, "web-abc")
    assert pod["metadata"]["name"] == "web-1"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "nginx")
    assert pod["metadata"]["labels"] == {"app": "nginx", POD_NAME_LABEL: "web-1", POD_INDEX_LABEL: "1",
                                         REVISION_LABEL: "web-abc"}
    assert pod["spec"]["volumes"] == [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}}]
    ref = pod["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("StatefulSet", "web", True)


def test_a_claim_template_replaces_a_template_volume_of_the_same_name():
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["volumes"] = [{"name": "www", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]
    volumes = new_pod(a_set(), template, 0, "r")["spec"]["volumes"]
    assert volumes == [{"name": "tmp", "emptyDir": {}},
                       {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}}]


def test_a_claim_is_named_for_template_set_and_ordinal_and_carries_the_selector_labels():
    claim = new_claim(a_set(), CLAIM_TEMPLATE, 2)
    assert claim["metadata"]["name"] == "www-web-2"
    assert claim["metadata"]["labels"] == {"app": "nginx"}
    assert claim["spec"] == CLAIM_TEMPLATE["spec"]


@pytest.mark.parametrize("name, expected", [
    ("web-0", 0), ("web-12", 12), ("web-", None), ("web-x", None), ("webby-1", None), ("my-web-1", None),
])
def test_ordinals_come_from_the_name(name, expected):
    assert ordinal_of("web", name) == expected


# ---------------------------------------------------------------- the plan

def pod(ordinal: int, state: str = "ready", revision: str = "v1") -> dict:
    """state: ready, pending (not yet Running), terminating, failed."""
    status = {"phase": "Pending"}
    if state in ("ready", "terminating"):
        status = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "1970-01-01T00:00:00Z"}]}
    elif state == "failed":
        status = {"phase": "Failed"}
    meta = {"name": f"web-{ordinal}", "labels": {REVISION_LABEL: revision}}
    if state == "terminating":
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    return {"metadata": meta, "status": status}


def pods(*states: str, revision: str = "v1") -> dict[int, dict]:
    return {i: pod(i, state, revision) for i, state in enumerate(states) if state != "-"}


V1 = Revisions(current="v1", update="v1")
V2 = Revisions(current="v1", update="v2")


def steps(existing, replicas, revisions=V1, ordered=True):
    result = plan(existing, 0, replicas, revisions, ordered=ordered, now=NOW)
    return ([o for o, _ in result.create], [p["metadata"]["name"] for p in result.delete], result.waiting_for)


@pytest.mark.parametrize("existing, replicas, expected, why", [
    ({}, 3, ([0], [], "pod 0 to be created"), "start with web-0 alone"),
    (pods("pending"), 3, ([], [], "web-0 to be Running and Ready"), "web-1 waits for web-0"),
    (pods("ready"), 3, ([1], [], "pod 1 to be created"), "web-0 ready: web-1 next"),
    (pods("ready", "ready", "ready"), 3, ([], [], ""), "all there: nothing to do"),
    (pods("ready", "-", "ready"), 3, ([1], [], "pod 1 to be created"), "a deleted pod comes back by its name"),
    (pods("ready", "failed", "ready"), 3, ([], ["web-1"], "web-1 to be replaced"), "a failed pod is deleted"),
    (pods("ready", "ready", "ready"), 1, ([], ["web-2"], "web-2 to be terminated"), "scale down: highest first"),
    (pods("ready", "ready", "terminating"), 1, ([], [], "web-2 to be terminated"),
     "one at a time: web-1 waits for web-2 to be gone"),
    (pods("ready", "pending", "ready"), 1, ([], ["web-2"], "web-2 to be terminated"),
     "an unwell pod that is going anyway blocks nothing"),
    (pods("terminating"), 3, ([], [], "web-0 to be terminated"),
     "web-0 is being deleted, though still Ready: web-1 waits until web-0 is back"),
])
def test_ordered_ready_one_step_at_a_time(existing, replicas, expected, why):
    assert steps(existing, replicas) == expected, why


def test_ordered_scale_down_waits_for_every_kept_pod_to_be_ready():
    assert steps(pods("pending", "ready", "ready"), 2) == ([], [], "web-0 to be Running and Ready")


@pytest.mark.parametrize("existing, replicas, expected, why", [
    ({}, 3, ([0, 1, 2], [], ""), "every pod at once"),
    (pods("pending"), 3, ([1, 2], [], ""), "no waiting for readiness"),
    (pods("ready", "ready", "ready", "ready"), 1, ([], ["web-3", "web-2", "web-1"], ""), "every extra pod at once"),
])
def test_parallel_does_not_wait(existing, replicas, expected, why):
    assert steps(existing, replicas, ordered=False) == expected, why


@pytest.mark.parametrize("existing, revisions, expected, why", [
    (pods("ready", "ready", "ready"), V2, ([], ["web-2"], "web-2 to be updated"), "highest ordinal first"),
    ({**pods("ready", "ready"), 2: pod(2, "pending", "v2")}, V2, ([], [], "web-2 to be Running and Ready"),
     "the next waits until the updated one is ready"),
    ({**pods("ready", "ready"), 2: pod(2, "ready", "v2")}, V2, ([], ["web-1"], "web-1 to be updated"), "then down"),
    ({**pods("ready", "ready"), 2: pod(2, "ready", "v2")}, Revisions("v1", "v2", partition=2),
     ([], [], ""), "partition 2: web-0 and web-1 keep v1"),
    (pods("ready", "ready", "ready"), Revisions("v1", "v2", rolling=False), ([], [], ""),
     "OnDelete: pods change only when someone deletes them"),
    (pods("ready", "ready", "terminating"), V2, ([], [], "web-2 to be terminated"),
     "web-2, deleted for the update, may still be Ready while it goes: web-1 waits for it to be gone"),
])
def test_rolling_update_in_reverse_order_down_to_the_partition(existing, revisions, expected, why):
    assert steps(existing, 3, revisions) == expected, why


def test_a_pod_made_again_gets_the_revision_its_ordinal_should_have():
    partitioned = Revisions("v1", "v2", partition=2)
    assert plan(pods("-"), 0, 3, partitioned, ordered=True, now=NOW).create == [(0, "v1")]
    assert plan(pods("ready", "ready"), 0, 3, partitioned, ordered=True, now=NOW).create == [(2, "v2")]


def test_ordinals_may_start_elsewhere():
    result = plan({}, 5, 2, V1, ordered=False, now=NOW)
    assert result.create == [(5, "v1"), (6, "v1")]


# ---------------------------------------------------------------- retention

SET = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "uid": "set-uid"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-2", "uid": "pod-uid"}}


@pytest.mark.parametrize("deleted, scaled, condemned, owners", [
    ("Retain", "Retain", False, []),
    ("Retain", "Retain", True, []),
    ("Delete", "Retain", False, ["set-uid"]),
    ("Delete", "Retain", True, ["set-uid"]),
    ("Retain", "Delete", False, []),
    ("Retain", "Delete", True, ["pod-uid"]),
    ("Delete", "Delete", True, ["pod-uid"]),     # the set's ref would keep it from the garbage collector
])
def test_claim_owners_follow_the_retention_policy(deleted, scaled, condemned, owners):
    refs = claim_owners(RetentionPolicy(deleted, scaled), SET, POD, condemned)
    assert [r["uid"] for r in refs] == owners
    assert not any(r.get("controller") for r in refs)


def test_owner_changes_leave_other_owners_alone():
    claim = {"metadata": {"ownerReferences": [{"uid": "someone"}, {"uid": "set-uid"}]}}
    assert with_owners(claim, [{"uid": "set-uid"}], {"set-uid", "pod-uid"}) is None
    assert with_owners(claim, [], {"set-uid"}) == [{"uid": "someone"}]


# ---------------------------------------------------------------- history

def test_a_revision_holds_the_template_as_a_replacing_patch_and_is_labelled_like_the_pods():
    sts = a_set()
    revision = new_revision(sts, 1)
    assert revision["metadata"]["name"] == f"web-{revision_hash(TEMPLATE)}"
    assert revision["data"]["spec"]["template"]["$patch"] == "replace"
    assert revision["metadata"]["labels"]["app"] == "nginx"
    assert template_in(revision) == TEMPLATE
    assert revision_hash(TEMPLATE, 1) != revision_hash(TEMPLATE)


def test_a_template_with_go_s_empty_values_is_the_same_template():
    with_empties = copy.deepcopy(TEMPLATE)
    with_empties["metadata"]["creationTimestamp"] = None
    with_empties["spec"]["containers"][0]["resources"] = {}
    assert same_template(with_empties, TEMPLATE)
    revisions = [new_revision(a_set(), 1), new_revision(a_set(template=with_empties), 3)]
    assert find_equal(revisions, TEMPLATE)["revision"] == 3


def test_old_revisions_beyond_the_limit_are_forgotten_unless_live():
    revisions = [{"metadata": {"name": f"r{n}"}, "revision": n} for n in range(1, 6)]
    assert [r["revision"] for r in to_forget(revisions, {"r5", "r1"}, 2)] == [2]
    assert to_forget(revisions, {"r5"}, 10) == []


# ---------------------------------------------------------------- a real controller manager

@pytest.fixture
def ns(api) -> str:
    name = unique("ns")
    assert api.post("/api/v1/namespaces", {"metadata": {"name": name}}).status_code == 201
    return name


def create_set(api, ns: str, **spec) -> dict:
    body = a_set(**spec)
    del body["metadata"]["namespace"], body["metadata"]["uid"]
    response = api.post(f"/apis/apps/v1/namespaces/{ns}/statefulsets", body)
    assert response.status_code == 201, response.text
    return response.json()


def the_set(api, ns: str) -> dict:
    return api.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web").json()


def pod_names(api, ns: str) -> list[str]:
    items = api.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]
    return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))


def claim_names(api, ns: str) -> list[str]:
    items = api.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims").json()["items"]
    return sorted(c["metadata"]["name"] for c in items if not c["metadata"].get("deletionTimestamp"))


def get_pod(api, ns: str, name: str) -> dict | None:
    response = api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return response.json() if response.status_code == 200 else None


def settled(api, ns: str, replicas: int) -> bool:
    """The controller has written the status for `replicas` pods: until then
    a DELETE may meet its status write and be refused with 409 (ask again)."""
    sts = the_set(api, ns)
    status = sts.get("status") or {}
    return status.get("observedGeneration") == sts["metadata"]["generation"] and status.get("replicas") == replicas


def rolled_out(api, ns: str, replicas: int) -> bool:
    sts = the_set(api, ns)
    status = sts.get("status") or {}
    return (status.get("observedGeneration") == sts["metadata"]["generation"]
            and status.get("readyReplicas") == replicas == status.get("updatedReplicas")
            and status.get("currentRevision") == status.get("updateRevision"))


def test_pods_come_one_after_another_each_with_its_claim(api, manager, ns):
    create_set(api, ns)
    for ordinal in range(3):
        name = f"web-{ordinal}"
        wait_for(lambda: get_pod(api, ns, name) is not None, what=f"{name} to be created")
        # The claim is made before the pod, and the next pod waits for this one.
        assert f"www-{name}" in claim_names(api, ns)
        assert pod_names(api, ns) == [f"web-{i}" for i in range(ordinal + 1)]
        pod = get_pod(api, ns, name)
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "nginx")
        assert pod["metadata"]["labels"][POD_NAME_LABEL] == name
        assert pod["metadata"]["labels"][POD_INDEX_LABEL] == str(ordinal)
        assert {"name": "www", "persistentVolumeClaim": {"claimName": f"www-{name}"}} in pod["spec"]["volumes"]
        mark_ready(api, pod)
    wait_for(lambda: rolled_out(api, ns, 3), what="the set to report 3 ready pods")
    status = the_set(api, ns)["status"]
    assert status["replicas"] == status["currentReplicas"] == status["availableReplicas"] == 3
    revisions = api.get(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions").json()["items"]
    assert [r["metadata"]["name"] for r in revisions] == [status["currentRevision"]]
    assert {p["metadata"]["labels"][REVISION_LABEL] for p in
            api.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]} == {status["currentRevision"]}


def test_a_deleted_pod_comes_back_with_its_name_and_claim(api, manager, ns):
    create_set(api, ns, replicas=2, podManagementPolicy="Parallel")
    wait_for(lambda: pod_names(api, ns) == ["web-0", "web-1"], what="both pods at once")
    old_uid = get_pod(api, ns, "web-0")["metadata"]["uid"]
    assert api.delete(f"/api/v1/namespaces/{ns}/pods/web-0").status_code == 200
    wait_for(lambda: (get_pod(api, ns, "web-0") or {"metadata": {"uid": old_uid}})["metadata"]["uid"] != old_uid,
             what="web-0 to come back")
    assert get_pod(api, ns, "web-0")["spec"]["volumes"][-1]["persistentVolumeClaim"]["claimName"] == "www-web-0"
    assert claim_names(api, ns) == ["www-web-0", "www-web-1"]


def test_scale_down_goes_highest_first_and_keeps_the_claims(api, manager, ns):
    create_set(api, ns, replicas=3, podManagementPolicy="Parallel")
    wait_for(lambda: pod_names(api, ns) == ["web-0", "web-1", "web-2"], what="three pods")
    # OrderedReady from here: each removal waits for the pods that stay to be ready.
    for name in pod_names(api, ns):
        mark_ready(api, get_pod(api, ns, name))
    seen = []
    watch_thread = PodDeletions(api, ns, seen).start()
    response = api.patch(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web/scale", {"spec": {"replicas": 1}})
    assert response.status_code == 200, response.text
    wait_for(lambda: pod_names(api, ns) == ["web-0"], what="web-1 and web-2 to go")
    watch_thread.stop()
    assert seen == ["web-2", "web-1"]
    assert claim_names(api, ns) == ["www-web-0", "www-web-1", "www-web-2"]     # Retain: the data stays


class PodDeletions:
    """Records the names of deleted pods, in the order the watch tells them."""

    def __init__(self, api, ns: str, seen: list):
        self.api, self.ns, self.seen = api, ns, seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "PodDeletions":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        try:
            self._follow()
        except requests.RequestException:      # the server stopped at the end of the test
            pass

    def _follow(self) -> None:
        version = self.api.get(f"/api/v1/namespaces/{self.ns}/pods").json()["metadata"]["resourceVersion"]
        response = self.api.get(f"/api/v1/namespaces/{self.ns}/pods",
                                params={"watch": "1", "resourceVersion": version, "timeoutSeconds": "60"}, stream=True)
        for line in response.iter_lines():
            if self._stop.is_set():
                break
            event = json.loads(line)
            if event["type"] == "DELETED":
                self.seen.append(event["object"]["metadata"]["name"])


def run_kubectl(kubectl, apiserver, ns, tmp_path, *args) -> str:
    result = subprocess.run([kubectl, "-s", apiserver.url, "-n", ns, "--cache-dir", str(tmp_path / "cache"), *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"kubectl {' '.join(args)}:\n{result.stderr}{result.stdout}"
    return result.stdout


def images(api, ns: str) -> dict[str, str]:
    items = api.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in items
            if not p["metadata"].get("deletionTimestamp")}


def test_rolling_update_then_kubectl_rollout_status_history_and_undo(api, apiserver, manager, ns, kubectl, tmp_path):
    def k(*args):
        return run_kubectl(kubectl, apiserver, ns, tmp_path, *args)
    with FakeKubelet(api, ns):
        create_set(api, ns)
        # kubectl says "partitioned" whenever the strategy has a partition, 0 included (as with Kubernetes).
        out = k("rollout", "status", "sts/web", "--timeout=60s")
        assert out.splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
        deleted: list[str] = []
        watch = PodDeletions(api, ns, deleted).start()
        assert k("set", "image", "sts/web", "nginx=busybox:1.36").strip() == "statefulset.apps/web image updated"
        out = k("rollout", "status", "sts/web", "--timeout=60s")
        watch.stop()
        assert out.splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
        assert deleted == ["web-2", "web-1", "web-0"]          # highest ordinal first
        assert set(images(api, ns).values()) == {"busybox:1.36"}
        history = k("rollout", "history", "sts/web").split()
        assert history[:3] == ["statefulset.apps/web", "REVISION", "CHANGE-CAUSE"]
        assert history[3:] == ["1", "<none>", "2", "<none>"]

        assert k("rollout", "undo", "sts/web").strip() == "statefulset.apps/web rolled back"
        wait_for(lambda: set(images(api, ns).values()) == {"busybox:1.35"} and rolled_out(api, ns, 3),
                 timeout=60, what="the undo to roll out")
        revisions = api.get(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions").json()["items"]
        # No new revision: the first one is found again and becomes number 3.
        assert sorted(r["revision"] for r in revisions) == [2, 3]
        first = next(r for r in revisions if r["revision"] == 3)
        assert the_set(api, ns)["status"]["updateRevision"] == first["metadata"]["name"]


def test_a_partition_keeps_the_lower_pods_on_the_old_template(api, apiserver, manager, ns, kubectl, tmp_path):
    with FakeKubelet(api, ns):
        create_set(api, ns, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
        wait_for(lambda: rolled_out(api, ns, 3), what="three ready pods")
        run_kubectl(kubectl, apiserver, ns, tmp_path, "set", "image", "sts/web", "nginx=busybox:1.36")
        out = run_kubectl(kubectl, apiserver, ns, tmp_path, "rollout", "status", "sts/web", "--timeout=60s")
        assert "partitioned roll out complete: 1 new pods have been updated..." in out
        assert images(api, ns) == {"web-0": "busybox:1.35", "web-1": "busybox:1.35", "web-2": "busybox:1.36"}
        # A pod below the partition that is deleted comes back on the old template.
        assert api.delete(f"/api/v1/namespaces/{ns}/pods/web-0").status_code == 200
        wait_for(lambda: images(api, ns).get("web-0") == "busybox:1.35" and len(images(api, ns)) == 3,
                 what="web-0 back")
        # The status counts web-0 at the reconcile after the one that made it
        # (that one counted the pods it had): wait for it, do not read once.
        def counts() -> tuple:
            status = the_set(api, ns).get("status") or {}
            return status.get("currentReplicas"), status.get("updatedReplicas")
        wait_for(lambda: counts() == (2, 1), timeout=10, what="currentReplicas 2 and updatedReplicas 1")
        status = the_set(api, ns)["status"]
        assert status["currentRevision"] != status["updateRevision"]


def test_retention_policy_delete_removes_claims_with_their_pods_and_their_set(api, manager, ns):
    create_set(api, ns, replicas=2, podManagementPolicy="Parallel",
               persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"})
    wait_for(lambda: claim_names(api, ns) == ["www-web-0", "www-web-1"], what="two claims")
    assert api.patch(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web/scale",
                     {"spec": {"replicas": 1}}).status_code == 200
    wait_for(lambda: claim_names(api, ns) == ["www-web-0"] and settled(api, ns, 1), what="www-web-1 to go with web-1")
    response = api.delete(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web")
    assert response.status_code == 200, response.text
    wait_for(lambda: claim_names(api, ns) == [] and pod_names(api, ns) == [], what="the rest to go with the set")


def test_retain_keeps_claims_after_the_set_is_deleted(api, manager, ns):
    create_set(api, ns, replicas=1)
    wait_for(lambda: pod_names(api, ns) == ["web-0"] and settled(api, ns, 1), what="web-0")
    response = api.delete(f"/apis/apps/v1/namespaces/{ns}/statefulsets/web")
    assert response.status_code == 200, response.text
    wait_for(lambda: pod_names(api, ns) == [], what="the pods to go with the set")
    assert claim_names(api, ns) == ["www-web-0"]


def start_pod(api, ns: str, name: str, ip: str) -> None:
    """What a kubelet reports: an address, Running and Ready."""
    now = "2026-01-01T00:00:00Z"
    status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
              "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    response = api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status})
    assert response.status_code == 200, response.text


def test_each_pod_is_named_in_chapter_05_s_dns(api, apiserver, manager, ns, tmp_path):
    """web-0.nginx.NS.svc.cluster.local: the set gives the pod its hostname and
    subdomain, the endpoints controller copies the hostname into the headless
    Service's Endpoints, and the cluster DNS answers from there."""
    service = {"metadata": {"name": "nginx"},
               "spec": {"clusterIP": "None", "selector": {"app": "nginx"}, "ports": [{"port": 80, "name": "web"}]}}
    assert api.post(f"/api/v1/namespaces/{ns}/services", service).status_code == 201
    create_set(api, ns, replicas=2, podManagementPolicy="Parallel")
    wait_for(lambda: pod_names(api, ns) == ["web-0", "web-1"], what="two pods")
    start_pod(api, ns, "web-0", "10.244.1.10")
    start_pod(api, ns, "web-1", "10.244.2.11")
    port = free_port()
    log_path = tmp_path / "dns.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, str(ROOT / "05-proxy-dns" / "cluster_dns.py"), "--apiserver",
                                    apiserver.url, "--address", "127.0.0.1", "--port", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        wait_for(lambda: "serving" in log_path.read_text(), what="the DNS server serving")

        def lookup(name: str) -> list[str]:
            response = dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=5)
            return sorted(r.to_text() for rrset in response.answer for r in rrset)
        for pod_name, ip in (("web-0", "10.244.1.10"), ("web-1", "10.244.2.11")):
            wait_for(lambda: lookup(f"{pod_name}.nginx.{ns}.svc.cluster.local.") == [ip],
                     what=f"{pod_name}.nginx to resolve")
        assert lookup(f"nginx.{ns}.svc.cluster.local.") == ["10.244.1.10", "10.244.2.11"]
    finally:
        process.terminate()
        process.wait(10)
