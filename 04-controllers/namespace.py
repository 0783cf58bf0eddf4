"""The namespace controller: a deleted namespace is emptied, then it goes.

`kubectl delete namespace shop` does not delete anything at once. The API
server marks the namespace (deletionTimestamp, phase Terminating) and lets
nothing new be created in it; the namespace keeps the `kubernetes`
finalizer in spec.finalizers, put there when it was created. This
controller does the rest, as Kubernetes' does:

    1. delete every object in the namespace, of every kind the server
       serves (found through discovery, so a kind added later is included);
    2. look again until nothing is left: pods on nodes go only once their
       kubelets have stopped them, objects with finalizers once those clear;
    3. remove `kubernetes` through PUT namespaces/NAME/finalize; with no
       finalizer left, the API server deletes the namespace.

Why a controller and not the API server's DELETE handler: emptying a
namespace of 1,000 pods takes as long as their kubelets take, and must
carry on after a restart of either process. A controller that looks at
"what is left" again and again does both for free.
"""
from __future__ import annotations

from api_resources import APIResources
from common.client.client import NotFound
from controller import Controller

FINALIZER = "kubernetes"
RECHECK_SECONDS = 2.0         # how soon to look again when we know of nothing that will tell us


class NamespaceController(Controller):
    name = "namespace"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.resources = APIResources(self.client)
        self.namespaces = self.informers.get("v1", "namespaces")
        self.namespaces.add_handler(on_add=self.enqueue_if_terminating,
                                    on_update=lambda old, new: self.enqueue_if_terminating(new))

    def enqueue_if_terminating(self, namespace: dict) -> None:
        if namespace["metadata"].get("deletionTimestamp"):
            self.enqueue(namespace)

    # [START namespace-reconcile]
    def reconcile(self, name: str) -> None:
        namespace = self.namespaces.get(None, name)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        if FINALIZER not in (namespace.get("spec") or {}).get("finalizers") or []:
            return                                     # our part is done
        remaining = self.delete_content(name)
        if remaining:
            # Pods wait for their kubelets, others for their finalizers: look
            # again when the longest grace period is likely over.
            self.log.info("waiting for content", controller=self.name, namespace=name, remaining=len(remaining))
            self.queue.add_after(name, max([RECHECK_SECONDS] + [grace_period(obj) for obj in remaining]))
            return
        self.finalize(namespace)
    # [END namespace-reconcile]

    def delete_content(self, namespace: str) -> list[dict]:
        """Delete what is in the namespace; return what is still there.
        Background, whatever a kind's default: the namespace must empty
        without waiting for anyone's orphan finalizer."""
        kinds = [r for r in self.resources.all() if r.namespaced and {"list", "delete"} <= set(r.verbs)]
        for resource in kinds:
            for item in self._items(resource, namespace):
                if item["metadata"].get("deletionTimestamp"):
                    continue                           # already on its way
                try:
                    self.client.delete(resource.group_version, resource.plural, namespace,
                                       item["metadata"]["name"], propagation_policy="Background",
                                       preconditions={"uid": item["metadata"]["uid"]})
                except NotFound:
                    pass
        return [item for resource in kinds for item in self._items(resource, namespace)]

    def _items(self, resource, namespace: str) -> list[dict]:
        """From the server, not a cache: "empty" must be the truth."""
        return self.client.list(resource.group_version, resource.plural, namespace).get("items") or []

    def finalize(self, namespace: dict) -> None:
        """Remove our finalizer; the server deletes the namespace when none is left."""
        spec = dict(namespace.get("spec") or {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER]
        body = {"apiVersion": "v1", "kind": "Namespace", "spec": spec,
                "metadata": {"name": namespace["metadata"]["name"],
                             "resourceVersion": namespace["metadata"]["resourceVersion"]}}
        try:
            self.client.request("PUT", self.client.path("v1", "namespaces", None, namespace["metadata"]["name"],
                                                        "finalize"), body=body)
        except NotFound:
            return
        self.log.info("finalized", controller=self.name, namespace=namespace["metadata"]["name"])


def grace_period(obj: dict) -> float:
    """Seconds a marked pod's kubelet was given to stop it (0 for anything else)."""
    return float(obj["metadata"].get("deletionGracePeriodSeconds") or 0)
