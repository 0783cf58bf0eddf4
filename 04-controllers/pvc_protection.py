"""The pvc-protection controller: a claim in use is not deleted under its pod.

Deleting a claim releases its volume, and a `Delete` volume then goes with
its data: under a running database, that would be data lost by a typo. So,
as in Kubernetes, every claim carries the finalizer
`kubernetes.io/pvc-protection`. `kubectl delete pvc` then only marks the
claim (deletionTimestamp, status Terminating), and this controller removes
the finalizer, letting the deletion finish, once no pod that could still
run uses the claim.
"""
from __future__ import annotations

from common.model.lenient import as_dict, as_list
from common.model.persistent_volumes import claim_names
from controller import Controller, split_key

FINALIZER = "kubernetes.io/pvc-protection"


class PVCProtectionController(Controller):
    name = "pvc-protection"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.claims = self.informers.get("v1", "persistentvolumeclaims")
        self.pods = self.informers.get("v1", "pods")
        self.claims.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))
        self.pods.add_handler(on_add=self.pod_changed, on_update=lambda old, new: self.pod_changed(new),
                              on_delete=self.pod_changed)

    def pod_changed(self, pod: dict) -> None:
        """A pod that went (or finished) may have been the last user of its claims."""
        for name in claim_names(pod):
            self.queue.add(f"{pod['metadata']['namespace']}/{name}")

    # [START pvc-protection]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        claim = self.claims.get(namespace, name)
        if claim is None:
            return
        finalizers = as_list(claim["metadata"].get("finalizers"))
        version = claim["metadata"]["resourceVersion"]     # a precondition: never drop another's finalizer
        if not claim["metadata"].get("deletionTimestamp"):
            if FINALIZER not in finalizers:           # made before us, or past admission
                self.client.patch("v1", "persistentvolumeclaims", namespace, name,
                                  {"metadata": {"finalizers": finalizers + [FINALIZER], "resourceVersion": version}})
            return
        if FINALIZER in finalizers and not self.in_use(namespace, name):
            self.client.patch("v1", "persistentvolumeclaims", namespace, name,
                              {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER],
                                            "resourceVersion": version}})
            self.log.info("claim no longer in use: deletion may finish", obj=key)
    # [END pvc-protection]

    def in_use(self, namespace: str, name: str) -> bool:
        """Used by a pod of its namespace that has not finished (being deleted counts:
        its containers may still be writing)."""
        return any(pod["metadata"]["namespace"] == namespace and name in claim_names(pod)
                   and as_dict(pod.get("status")).get("phase") not in ("Succeeded", "Failed")
                   for pod in self.pods.list())


__all__ = ["FINALIZER", "PVCProtectionController"]
