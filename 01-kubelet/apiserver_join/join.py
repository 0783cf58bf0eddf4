"""A kubelet joins a cluster: kubelet.py calls these two, in this order,
when it is given --apiserver or --kubeconfig (chapter 02, part 4).

First it registers the Node and keeps its heartbeat (node_registration.py),
and waits for its pod range when the pod network needs one (chapter 05);
then, once whatever its containers need from the cluster is set up, it
takes the API server as a second source of pods: those bound to this
node (api_source.py), beside the manifest directory.
"""
from __future__ import annotations

import threading

from apiserver_join.api_source import ApiSource
from apiserver_join.node_registration import NodeRegistration
from apiserver_join.node_status import node_object


def register_node(kubelet, client, node_ip: str, kubelet_port: int, reserved: tuple[dict, ...],
                  heartbeat_every: float, wait_for_pod_cidr: bool) -> None:
    """Register this node and keep its heartbeat, in a thread of its own."""
    network = kubelet.network
    node = node_object(kubelet.node_name, node_ip, kubelet_port, kubelet.runtime.version(), reserved)
    NodeRegistration(client, node, heartbeat_every, kubelet.log,
                     not_ready=network.not_ready if network else None).start()
    if network and wait_for_pod_cidr:
        threading.Thread(target=network.wait_for_pod_cidr, args=(client, kubelet.node_name, kubelet.stopping),
                         daemon=True, name="pod-network").start()


def pods_bound_here(kubelet, client) -> ApiSource:
    """The API server as a pod source: the pods bound to this node."""
    node_ref = {"kind": "Node", "apiVersion": "v1", "name": kubelet.node_name, "uid": kubelet.node_name}
    kubelet.events.event(node_ref, "Normal", "Starting", "Starting kubelet.")
    return ApiSource(client, kubelet.node_name, kubelet.log, on_change=kubelet.wake).start()
