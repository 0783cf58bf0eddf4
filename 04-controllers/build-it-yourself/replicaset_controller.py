"""Your ReplicaSet controller: chapter 04's replication controller, written by you.

    python 04-controllers/build-it-yourself/replicaset_controller.py --apiserver http://127.0.0.1:8080

Written for you (the machinery, read it once): the command line, two
informers (ReplicaSets and pods, from common/), a work queue of
"namespace/name" keys and the worker that takes them off it, reconcile()
itself, creating and deleting pods, and a short memory of what it just
asked for. Yours to write, in the order the stages ask for it, are the
places marked TODO(stage N): the pod a ReplicaSet makes, the comparison,
which ReplicaSet a pod's event concerns, which pods go first, which count,
which are ours, and the status. Each TODO names the lesson section that
explains it.

Grade your work with `make stage-04` (every stage up to the first that
fails) or `make stage-04 STAGE=3` (one stage); with your own copy of this
file, add MINE=path/to/it.py. The stages talk to your controller only
through the API server, so change anything you like, as long as it keeps
this command line.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
import traceback

from common.client import kubeconfig
from common.client.client import APIClient, NotFound
from common.client.informer import Informer
from common.log import get_logger
from common.model.selectors import SelectorError, selector_from_label_selector
from common.client.workqueue import RateLimitingQueue

log = get_logger("replicaset-controller")
EXPECTATION_SECONDS = 30    # how long to wait for the watch to show our own creates and deletes


def selects(rs: dict, pod: dict) -> bool:
    """Does the ReplicaSet's spec.selector pick this pod's labels? An empty
    or broken selector picks nothing: a controller must never adopt everything."""
    try:
        selector = rs["spec"].get("selector")
        return bool(selector) and selector_from_label_selector(selector).matches(pod["metadata"].get("labels") or {})
    except SelectorError:
        return False


def controller_ref(pod: dict) -> dict | None:
    """The pod's owner reference marked controller: true, if any."""
    return next((ref for ref in pod["metadata"].get("ownerReferences") or [] if ref.get("controller")), None)


def is_controlled_by(pod: dict, rs: dict) -> bool:
    ref = controller_ref(pod)
    return ref is not None and ref.get("uid") == rs["metadata"]["uid"]


def is_ready(pod: dict) -> bool:
    """The kubelet says so: a Ready condition whose status is "True"."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def key(obj: dict) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


# ---------------------------------------------------------------- yours: what a ReplicaSet decides

def pod_from_template(rs: dict) -> dict:
    # TODO(stage 1): the pod to create, from rs["spec"]["template"]: its
    # metadata's labels (and annotations) and its spec, in the
    # ReplicaSet's namespace, named by the API server from
    # metadata.generateName "<rs name>-". And whose it is: one entry in
    # metadata.ownerReferences with the ReplicaSet's apiVersion, kind,
    # name and uid, controller: True and blockOwnerDeletion: True.
    # (The informer fills in rs["apiVersion"] and rs["kind"], which a list
    # leaves out. Its objects are its cache's own: copy what you take from
    # rs, never change rs itself.)
    # Lesson: "The ReplicaSet" (rule 1) in 04-controllers/build-it.md, and
    # "5. A ReplicaSet" in lesson-1-run-the-controllers.md to see one run.
    raise NotImplementedError("pod_from_template() is yours to write: see TODO(stage 1)")


def pods_to_delete(pods: list[dict], count: int) -> list[dict]:
    # TODO(stage 3): the `count` least useful pods, to delete when there
    # are too many: not scheduled (no spec.nodeName) before scheduled, not
    # ready (is_ready) before ready, then newer (metadata.creationTimestamp)
    # before older: the stage checks the ready pods stay; the rest is the
    # lesson's order. Lesson: "The ReplicaSet" in 04-controllers/build-it.md.
    return []


def is_active(pod: dict) -> bool:
    # TODO(stage 4): does the pod count towards replicas? Not once it has
    # finished (status.phase "Succeeded" or "Failed": an evicted pod is
    # replaced, not counted), nor while it is being deleted
    # (metadata.deletionTimestamp is set). Lesson: "The ReplicaSet" in build-it.md.
    return True


def status_of(rs: dict, active: list[dict]) -> dict:
    # TODO(stage 6): what the ReplicaSet's status says (kubectl get rs
    # prints it): replicas (active pods), readyReplicas and
    # availableReplicas (ready ones: with no minReadySeconds they are the
    # same) and observedGeneration (the metadata.generation this status
    # describes). Lesson: "The ReplicaSet" in build-it.md.
    return {}


class ReplicaSetController:
    def __init__(self, client: APIClient):
        self.client = client
        self.replicasets = Informer(client, "apps/v1", "replicasets")
        self.pods = Informer(client, "v1", "pods")
        self.queue = RateLimitingQueue()
        # What we asked for and the watch has not shown yet (noted before
        # asking: the watch may show it before the API call returns).
        self.creates: dict[str, tuple[int, float]] = {}    # ReplicaSet key -> (pods to see, since)
        self.deletes: dict[str, tuple[str, float]] = {}    # pod key -> (ReplicaSet key, since)
        self.lock = threading.Lock()             # the informers' threads and the workers share it

    def owner_key(self, pod: dict) -> str | None:
        # TODO(stage 2): the key ("namespace/name") of the ReplicaSet that
        # controls this pod (controller_ref(); its kind is "ReplicaSet"),
        # or None: the pod's events (a pod deleted by someone else) then
        # wake that ReplicaSet up. Lesson: "The ReplicaSet" (rule 2) in
    # 04-controllers/build-it.md.
        return None

    def manage_replicas(self, rs: dict, active: list[dict]) -> None:
        # TODO(stage 1): the comparison. Too few active pods for
        # spec.replicas (1 if unset): self.create_pods(rs, how_many). Too
        # many: self.delete_pods(rs, pods_to_delete(active, how_many)).
        # Lesson: "The ReplicaSet" (rule 1) in build-it.md.
        raise NotImplementedError("manage_replicas() is yours to write: see TODO(stage 1)")

    def claim_pods(self, rs: dict) -> list[dict]:
        # TODO(stage 5): the pods of rs's namespace that are ours, after
        # claiming. Ours and still selected: keep. Ours but no longer
        # selected (relabelled): release, self.set_owners(pod, the other
        # references). Selected, active and with no controller (an orphan):
        # adopt, self.set_owners(pod, its references + one to rs), and keep
        # what set_owners returns. Lesson: "The ReplicaSet" in build-it.md,
        # and "The idea" (owner references) in README.md.
        namespace = rs["metadata"]["namespace"]
        return [pod for pod in self.pods.list()
                if pod["metadata"]["namespace"] == namespace and is_controlled_by(pod, rs)]

    # ------------------------------------------------ reconcile (written for you)

    def reconcile(self, rs_key: str) -> None:
        """Compare what rs asks for with what there is, and close the gap."""
        namespace, name = rs_key.split("/", 1)
        rs = self.replicasets.get(namespace, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return                               # gone or going: the garbage collector takes its pods
        active = [pod for pod in self.claim_pods(rs) if is_active(pod)]
        if self.caught_up(rs_key):
            self.manage_replicas(rs, active)
        status = status_of(rs, active)
        if status and any((rs.get("status") or {}).get(k) != v for k, v in status.items()):
            self.client.update_status("apps/v1", "replicasets", {**rs, "status": {**(rs.get("status") or {}),
                                                                                   **status}})

    def caught_up(self, rs_key: str) -> bool:
        """Has the watch shown every pod we created and deleted for rs? Until
        it has, our cache is behind what we did, and counting it would
        create or delete too many. (Not seen for long: trust the cache.)"""
        now = time.monotonic()
        with self.lock:
            count, since = self.creates.get(rs_key, (0, 0.0))
            return (count <= 0 or now - since > EXPECTATION_SECONDS) and not any(
                owner == rs_key and now - asked < EXPECTATION_SECONDS for owner, asked in self.deletes.values())

    def create_pods(self, rs: dict, count: int) -> None:
        with self.lock:
            self.creates[key(rs)] = (count, time.monotonic())
        for _ in range(count):
            try:
                pod = self.client.create("v1", "pods", pod_from_template(rs))
            except Exception:
                with self.lock:                  # the rest will never be seen
                    self.creates[key(rs)] = (0, 0.0)
                raise
            log.info("created", replicaset=key(rs), pod=pod["metadata"]["name"])

    def delete_pods(self, rs: dict, victims: list[dict]) -> None:
        for pod in victims:
            with self.lock:
                self.deletes[key(pod)] = (key(rs), time.monotonic())
            try:
                self.client.delete("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            except NotFound:
                self.seen(pod, gone=True)        # gone already: our cache lagged
            log.info("deleted", replicaset=key(rs), pod=pod["metadata"]["name"])

    def seen(self, pod: dict, added: bool = False, gone: bool = False) -> None:
        """The watch shows a pod: count off a create of its ReplicaSet's, or
        a delete of ours once the pod is gone or marked for deletion."""
        ref = controller_ref(pod)
        with self.lock:
            if added and ref and ref.get("kind") == "ReplicaSet":
                rs_key = f"{pod['metadata']['namespace']}/{ref['name']}"
                count, since = self.creates.get(rs_key, (0, 0.0))
                self.creates[rs_key] = (count - 1, since)
            if gone or pod["metadata"].get("deletionTimestamp"):
                self.deletes.pop(key(pod), None)

    def set_owners(self, pod: dict, refs: list[dict]) -> dict:
        """PATCH the pod's ownerReferences; its resourceVersion makes this a
        compare-and-swap (a 409 Conflict if it changed since we read it)."""
        meta = pod["metadata"]
        return self.client.patch("v1", "pods", meta["namespace"], meta["name"], {"metadata": {
            "ownerReferences": refs or None, "resourceVersion": meta["resourceVersion"]}})

    # ------------------------------------------------ events become keys; workers reconcile them

    def on_pod(self, pod: dict) -> None:
        """A pod changed: look again at its ReplicaSet, or, for an orphan,
        at every ReplicaSet that selects it (one may adopt it)."""
        owner = self.owner_key(pod)
        if owner:
            self.queue.add(owner)
        elif controller_ref(pod) is None:
            for rs in self.replicasets.list():
                if rs["metadata"]["namespace"] == pod["metadata"]["namespace"] and selects(rs, pod):
                    self.queue.add(key(rs))

    def on_pod_added(self, pod: dict) -> None:
        self.seen(pod, added=True)
        self.on_pod(pod)

    def on_pod_update(self, old: dict, new: dict) -> None:
        self.seen(new)
        self.on_pod(old)                         # its old owner may have lost it
        self.on_pod(new)

    def on_pod_deleted(self, pod: dict) -> None:
        self.seen(pod, gone=True)
        self.on_pod(pod)

    def worker(self) -> None:
        while (rs_key := self.queue.get()) is not None:
            try:
                self.reconcile(rs_key)
                self.queue.forget(rs_key)
            except Exception as error:           # a Conflict, or a bug in a TODO: retry later
                where = traceback.extract_tb(error.__traceback__)[-1]
                log.error("reconcile failed", key=rs_key, error=f"{type(error).__name__}: {error}",
                          at=f"{where.name}() line {where.lineno}")
                self.queue.add_rate_limited(rs_key)
            finally:
                self.queue.done(rs_key)

    def run(self, workers: int = 2) -> None:
        on_rs = lambda rs: self.queue.add(key(rs))   # noqa: E731
        self.replicasets.add_handler(on_rs, lambda old, new: on_rs(new), on_rs)
        self.pods.add_handler(self.on_pod_added, self.on_pod_update, self.on_pod_deleted)
        self.replicasets.start()
        self.pods.start()
        self.replicasets.wait_for_sync()
        self.pods.wait_for_sync()               # acting on a half-filled cache would make pods that exist
        log.info("caches synced, reconciling")
        for number in range(workers):           # the queue never gives one key to two workers at once
            threading.Thread(target=self.worker, name=f"worker-{number}", daemon=True).start()
        threading.Event().wait()


def main() -> int:
    parser = argparse.ArgumentParser(description="Your ReplicaSet controller (chapter 04, build it yourself).")
    kubeconfig.add_flags(parser)
    args = parser.parse_args()
    client = APIClient(kubeconfig.from_args(args), user_agent="replicaset-controller")
    try:
        ReplicaSetController(client).run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
