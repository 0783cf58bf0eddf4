"""Every namespace's `default` ServiceAccount and kube-root-ca.crt ConfigMap.

A pod that names no ServiceAccount runs as `default` (the API server's
ServiceAccount admission plugin), and its token volume holds the cluster's
CA from the ConfigMap kube-root-ca.crt. Both must exist in every namespace,
including one created a second ago, and come back if someone deletes them.
Kubernetes gives that job to two controllers of its controller manager,
and so do we:

- serviceaccount: a namespace without `default` gets one
  (pkg/controller/serviceaccount/serviceaccounts_controller.go);
- root-ca-cert-publisher: a namespace without kube-root-ca.crt, or with
  an outdated one, gets the CA from --root-ca-file
  (pkg/controller/certificates/rootcacertpublisher/publisher.go).

Chapters 02-03 run no controller manager; there the API server does the
same itself (02-apiserver/service_accounts.py, with NoControllerManager).
"""
from __future__ import annotations

from common.client.client import AlreadyExists, NotFound
from controller import Controller

DEFAULT_ACCOUNT = "default"
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class _PerNamespace(Controller):
    """Reconciles a namespace (its name is the key) when it appears, and
    when the object this controller keeps in it (`watched`) is deleted."""

    watched = ("v1", "plural", "name")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.namespaces = self.informers.get("v1", "namespaces")
        self.namespaces.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))
        group_version, plural, name = self.watched
        self.objects = self.informers.get(group_version, plural)
        self.objects.add_handler(
            on_update=lambda old, new: self._namespace_of(new, name),
            on_delete=lambda obj: self._namespace_of(obj, name))

    def _namespace_of(self, obj: dict, name: str) -> None:
        if obj["metadata"]["name"] == name:
            self.queue.add(obj["metadata"]["namespace"])

    def live(self, namespace: str) -> bool:
        """Nothing new may be made in a namespace that is gone or going."""
        ns = self.namespaces.get(None, namespace)
        return ns is not None and not ns["metadata"].get("deletionTimestamp")


# [START serviceaccount-reconcile]
class ServiceAccountsController(_PerNamespace):
    name = "serviceaccount"
    watched = ("v1", "serviceaccounts", DEFAULT_ACCOUNT)

    def reconcile(self, namespace: str) -> None:
        if not self.live(namespace) or self.objects.get(namespace, DEFAULT_ACCOUNT) is not None:
            return
        try:
            self.client.create("v1", "serviceaccounts", {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}})
            self.log.info("created", controller=self.name, obj=f"{namespace}/{DEFAULT_ACCOUNT}")
        except AlreadyExists:
            pass                        # our cache was behind: it is there
# [END serviceaccount-reconcile]


class RootCACertPublisher(_PerNamespace):
    name = "root-ca-cert-publisher"
    watched = ("v1", "configmaps", ROOT_CA_CONFIG_MAP)

    def __init__(self, *args, root_ca_file: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.root_ca = open(root_ca_file).read() if root_ca_file else None
        if self.root_ca is None:
            self.log.info("no --root-ca-file: kube-root-ca.crt is not published", controller=self.name)

    def reconcile(self, namespace: str) -> None:
        if self.root_ca is None or not self.live(namespace):
            return
        current = self.objects.get(namespace, ROOT_CA_CONFIG_MAP)
        wanted = {ROOT_CA_KEY: self.root_ca}
        if current is None:
            try:
                self.client.create("v1", "configmaps", {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                                 "annotations": {"kubernetes.io/description": DESCRIPTION}},
                    "data": wanted})
            except AlreadyExists:
                pass
        elif current.get("data") != wanted:
            try:
                self.client.update("v1", "configmaps", {**current, "data": wanted})   # a Conflict is retried
            except NotFound:
                self.queue.add(namespace)
