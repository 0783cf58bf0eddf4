"""Joining a cluster: register this node with the API server, then keep it Ready.

Runs in its own thread beside the sync loop, so a slow or absent API server
never holds up the pods: the kubelet keeps running them, and registers (or
renews its heartbeat) as soon as the server answers again.

A node has two heartbeats, as in Kubernetes: the Ready condition in the
Node's status (a big object: capacity, addresses, node info) and a
small Lease named after the node in the kube-node-lease namespace, whose
spec.renewTime moves on every round. Renewing the Lease is one small write;
`kubectl describe node` shows it, and a node controller may read either.
"""
from __future__ import annotations

import copy
import threading
from typing import Callable

from apiserver_join import node_status
from common.client.client import AlreadyExists, APIClient, APIConnectionError, APIStatusError, Conflict, NotFound
from common.times import micro_time

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40       # Kubernetes' default --node-lease-duration-seconds
COORDINATION = "coordination.k8s.io/v1"


class NodeRegistration:
    def __init__(self, client: APIClient, node: dict, interval: float, log,
                 not_ready: Callable[[], str | None] | None = None):
        self.client = client
        self.not_ready = not_ready or (lambda: None)   # why the node is not Ready (its pod network), or None
        self.node = node                  # node_status.node_object(...)
        self.name = node["metadata"]["name"]
        self.interval = interval
        self.log = log
        self.registered = False
        self.lease = NodeLease(client, self.name, log)
        self._stop = threading.Event()

    # [START node-heartbeat]
    def run(self) -> None:
        """Register once, then renew the Ready heartbeat and the Lease every `interval` seconds."""
        while not self._stop.is_set():
            try:
                if not self.registered:
                    self._register()
                else:
                    self._heartbeat()
                self.lease.renew()
            except (APIConnectionError, APIStatusError) as error:
                # Keep going: the pods run without the API server, and the
                # next round tries again.
                self.log.warning("cannot reach the API server", obj=self.name, error=str(error))
            self._stop.wait(self.interval)
    # [END node-heartbeat]

    def _register(self) -> None:
        self.node["status"] = node_status.heartbeat(self.node, self.not_ready())
        try:
            self.client.create("v1", "nodes", self.node)
            self.log.info("node registered", obj=self.name)
        except AlreadyExists:
            # Registered before (a restarted kubelet): bring its status up to date.
            self.client.patch("v1", "nodes", None, self.name, {"status": self.node["status"]},
                              strategy="merge", subresource="status")
            self.log.info("node already registered; status refreshed", obj=self.name)
        self.registered = True

    def _heartbeat(self) -> None:
        current = self.client.get("v1", "nodes", None, self.name)
        self.client.patch("v1", "nodes", None, self.name, {"status": node_status.heartbeat(current, self.not_ready())},
                          strategy="merge", subresource="status")

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True, name="node-registration")
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


class NodeLease:
    """The node's Lease: created once (owned by the Node, so it goes when the
    Node goes), then renewed by moving spec.renewTime on.

    The lease as last written is kept, so a renewal is a single PUT with no
    read before it: nobody but this kubelet writes its lease. If somebody
    did, the PUT fails with 409 Conflict; the kubelet forgets its copy and
    reads the lease afresh next round. Nothing here ever waits on a pod or
    makes a pod wait.
    """

    def __init__(self, client: APIClient, node_name: str, log):
        self.client = client
        self.node_name = node_name
        self.log = log
        self.key = f"{LEASE_NAMESPACE}/{node_name}"
        self.latest: dict | None = None

    def renew(self) -> None:
        """One round. Raises APIConnectionError only: the caller's loop
        retries; every answer the server gives is dealt with here."""
        try:
            if self.latest is None:
                self.latest = self._read_or_create()
            else:
                self.latest = self.client.update(COORDINATION, "leases", self._renewed(self.latest))
        except Conflict:
            self.latest = None
            self.log.info("node lease changed elsewhere; reading it afresh next round", obj=self.key)
        except APIStatusError as error:
            # Refused (403, 422) or gone (404, the lease deleted): start over next round.
            self.latest = None
            self.log.warning("node lease not renewed", obj=self.key, error=str(error))

    def _read_or_create(self) -> dict:
        try:
            lease = self.client.get(COORDINATION, "leases", LEASE_NAMESPACE, self.node_name)
        except NotFound:
            # The owner reference needs the Node's uid, which only the server knows.
            node = self.client.get("v1", "nodes", None, self.node_name)
            created = self.client.create(COORDINATION, "leases", self._new(node))
            self.log.info("node lease created", obj=self.key)
            return created
        return self.client.update(COORDINATION, "leases", self._renewed(lease))

    def _new(self, node: dict) -> dict:
        return {
            "apiVersion": COORDINATION, "kind": "Lease",
            "metadata": {"name": self.node_name, "namespace": LEASE_NAMESPACE,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                                              "uid": node["metadata"]["uid"]}]},
            "spec": {"holderIdentity": self.node_name, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                     "renewTime": micro_time()},
        }

    @staticmethod
    def _renewed(lease: dict) -> dict:
        renewed = copy.deepcopy(lease)
        renewed["spec"] = {**(renewed.get("spec") or {}), "renewTime": micro_time()}
        return renewed
