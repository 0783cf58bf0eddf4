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

from controller import Controller, key_for
from expectations import Expectations
from ownership import controller_of, selects


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
            self.queue.add(owner)
        elif controller_of(pod) is None:
            for adopter in self.adopters(pod):
                self.enqueue(adopter)

    def pod_updated(self, old: dict, new: dict) -> None:
        new_owner = self.owner_key(new)
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
