"""Pods from the API server: the kubelet's second pod source, beside --manifests.

The kubelet watches only the pods bound to its node (a field selector,
`spec.nodeName=<this node>`), through the shared informer (common/informer.py),
so the sync loop asks `pods()` exactly as it asks the manifest directory.
Two things go back the other way:

- status: after each sync, a pod's status is written through its /status
  subresource, and only when it changed (no status storms);
- deletion: a pod deleted in the API keeps its object, with a
  deletionTimestamp, until this kubelet has stopped its containers; then the
  kubelet deletes it for good (grace period 0).
"""
from __future__ import annotations

from common.client import APIClient, APIConnectionError, APIStatusError, NotFound
from common.informer import Informer


class ApiSource:
    def __init__(self, client: APIClient, node_name: str, log, on_change=None):
        self.client = client
        self.log = log
        self.informer = Informer(client, "v1", "pods", field_selector=f"spec.nodeName={node_name}")
        if on_change:                       # wake the sync loop at once, not at its next tick
            self.informer.add_handler(lambda obj: on_change(), lambda old, new: on_change(),
                                      lambda obj: on_change())
        self._reported: dict[str, dict] = {}       # uid -> the status last written

    def start(self) -> "ApiSource":
        self.informer.start()
        return self

    # [START api-source]
    def pods(self) -> dict[str, dict]:
        """uid -> pod for every pod bound here that is not being deleted."""
        return {pod["metadata"]["uid"]: pod for pod in self.informer.list()
                if not pod["metadata"].get("deletionTimestamp")}

    def report(self, pod: dict, status: dict) -> None:
        """Write the pod's status to the API server if it changed since last time."""
        uid = pod["metadata"]["uid"]
        if self._reported.get(uid) == status or uid not in {p["metadata"]["uid"] for p in self.informer.list()}:
            return
        try:
            self.client.patch("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"],
                              {"status": status}, strategy="merge", subresource="status")
            self._reported[uid] = status
        except (APIConnectionError, APIStatusError) as error:
            self.log.warning("cannot write pod status; will retry", obj=f"{pod['metadata']['namespace']}/"
                             f"{pod['metadata']['name']}", error=str(error))

    def finish_deletions(self, running_uids: set[str]) -> None:
        """Pods deleted in the API whose containers are gone: delete them for good."""
        for pod in self.informer.list():
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and meta["uid"] not in running_uids:
                try:
                    self.client.delete("v1", "pods", meta["namespace"], meta["name"], grace_period_seconds=0,
                                       preconditions={"uid": meta["uid"]})
                    self.log.info("pod deleted", obj=f"{meta['namespace']}/{meta['name']}")
                except NotFound:
                    pass
                except (APIConnectionError, APIStatusError) as error:
                    self.log.warning("cannot delete pod; will retry", obj=f"{meta['namespace']}/{meta['name']}",
                                     error=str(error))
                self._reported.pop(meta["uid"], None)
    # [END api-source]
