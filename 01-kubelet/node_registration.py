"""Joining a cluster: register this node with the API server, then keep it Ready.

Runs in its own thread beside the sync loop, so a slow or absent API server
never holds up the pods: the kubelet keeps running them, and registers (or
renews its heartbeat) as soon as the server answers again.
"""
from __future__ import annotations

import threading

import node_status
from common.client import AlreadyExists, APIClient, APIConnectionError, APIStatusError


class NodeRegistration:
    def __init__(self, client: APIClient, node: dict, interval: float, log):
        self.client = client
        self.node = node                  # node_status.node_object(...)
        self.name = node["metadata"]["name"]
        self.interval = interval
        self.log = log
        self.registered = False
        self._stop = threading.Event()

    # [START node-heartbeat]
    def run(self) -> None:
        """Register once, then renew the Ready heartbeat every `interval` seconds."""
        while not self._stop.is_set():
            try:
                if not self.registered:
                    self._register()
                else:
                    self._heartbeat()
            except (APIConnectionError, APIStatusError) as error:
                # Keep going: the pods run without the API server, and the
                # next round tries again.
                self.log.warning("cannot reach the API server", obj=self.name, error=str(error))
            self._stop.wait(self.interval)
    # [END node-heartbeat]

    def _register(self) -> None:
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
        self.client.patch("v1", "nodes", None, self.name, {"status": node_status.heartbeat(current)},
                          strategy="merge", subresource="status")

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True, name="node-registration")
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
