"""What every controller that owns pods does with pod events.

A ReplicaSet, a DaemonSet and a Job each create pods and own them (an
owner reference with controller: true). Their controllers react to pod
events the same way, so that code lives here once:

- a pod with an owner of our kind: reconcile that owner, and count the
  event off its expectations (a create or delete it was waiting to see);
- a pod with no controller whose labels one of our objects selects:
  reconcile that object, which may adopt it;
- a pod that changed owner or labels: both the old and the new owner.
"""
from __future__ import annotations

from common.client.client import NotFound
from controller import Controller, key_for
from expectations import Expectations
from ownership import controller_of, selects

# Kubernetes creates at most this many pods per reconcile, in batches of
# 1, 2, 4, ... ("slow start"): a template the server refuses fails once, not 500 times.
BURST_PODS = 500


class PodOwnerController(Controller):
    owner_kind = ""                # "ReplicaSet", "DaemonSet", "Job"

    def watch_owners_and_pods(self, owners) -> None:
        """Call from __init__ with the informer of the owning kind."""
        self.owners = owners
        self.expectations = Expectations()
        self.pods = self.informers.get("v1", "pods")
        owners.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new), on_delete=self.enqueue)
        self.pods.add_handler(on_add=self.pod_added, on_update=self.pod_updated, on_delete=self.pod_deleted)

    def owner_key(self, pod: dict) -> str | None:
        """The key of the object of our kind that controls this pod, if any."""
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != self.owner_kind:
            return None
        return f"{pod['metadata']['namespace']}/{ref['name']}"

    def adopters(self, pod: dict) -> list[dict]:
        """Our objects whose selector picks this pod: one may adopt it."""
        return [owner for owner in self.owners.list()
                if owner["metadata"]["namespace"] == pod["metadata"]["namespace"]
                and selects(owner["spec"].get("selector"), pod["metadata"].get("labels"))]

    def pod_added(self, pod: dict) -> None:
        owner = self.owner_key(pod)
        if owner:
            self.expectations.created(owner)
            if pod["metadata"].get("deletionTimestamp"):     # seen already on its way out
                self.expectations.deleted(owner, key_for(pod))
            self.queue.add(owner)
        elif controller_of(pod) is None:
            for adopter in self.adopters(pod):
                self.enqueue(adopter)

    def pod_updated(self, old: dict, new: dict) -> None:
        new_owner = self.owner_key(new)
        if new_owner and new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            # A graceful delete shows first as a deletionTimestamp; the pod itself
            # goes only when its kubelet has stopped it (30 s, or never on a dead
            # node). The delete we asked for has happened: count it now.
            self.expectations.deleted(new_owner, key_for(new))
        for owner in {self.owner_key(old), new_owner} - {None}:
            self.queue.add(owner)
        if new_owner is None and controller_of(new) is None and \
                old["metadata"].get("labels") != new["metadata"].get("labels"):
            for adopter in self.adopters(new):
                self.enqueue(adopter)

    def pod_deleted(self, pod: dict) -> None:
        owner = self.owner_key(pod)
        if owner:
            self.expectations.deleted(owner, key_for(pod))
            self.queue.add(owner)

    # [START create-and-delete-pods]
    def create_owned_pods(self, owner: dict, key: str, pods: list[dict]) -> None:
        """Create pods in batches of 1, 2, 4, ...: at the first refusal stop,
        and count off every create that will now never be seen."""
        pods = pods[:BURST_PODS]
        self.expectations.expect_creates(key, len(pods))
        batch, sent = 1, 0
        while sent < len(pods):
            for pod in pods[sent:sent + batch]:
                try:
                    created = self.client.create("v1", "pods", pod)
                except Exception as error:
                    for _ in range(len(pods) - sent):
                        self.expectations.created(key)
                    self.events.event(owner, "Warning", "FailedCreate", f"Error creating: {error}")
                    raise
                sent += 1
                self.events.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
            batch *= 2

    def delete_pods(self, owner: dict, key: str, victims: list[dict]) -> None:
        """Delete every victim. One already gone is done (our cache lagged);
        any other failure is counted off, the rest still tried, and the
        first error raised at the end so the key is retried."""
        self.expectations.expect_deletes(key, [key_for(pod) for pod in victims])
        first_error = None
        for pod in victims:
            try:
                self.client.delete("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            except NotFound:
                self.expectations.deleted(key, key_for(pod))
                continue
            except Exception as error:
                self.expectations.deleted(key, key_for(pod))
                self.events.event(owner, "Warning", "FailedDelete", f"Error deleting: {error}")
                first_error = first_error or error
                continue
            self.events.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        if first_error is not None:
            raise first_error
    # [END create-and-delete-pods]
