"""The `kubernetes` Service: how a program in a pod finds the API server (chapter 05).

Every cluster has it, in the default namespace, at the first address of
the service range (10.96.0.1): port 443, sent on to the API server's
secure port. Kubernetes' API server makes it itself at start-up and keeps
its Endpoints pointing at every API server (each one's --advertise-address).
So does ours: the Service when it is missing, and its Endpoints when the
secure port is on, naming this server's address.
"""
from __future__ import annotations

import registry
from common.log import get_logger
from post_start import create_default

log = get_logger("apiserver")
SERVICES = registry.for_kind("", "Service")
ENDPOINTS = registry.for_kind("", "Endpoints")
LABELS = {"component": "apiserver", "provider": "kubernetes"}


def ensure(store, allocator, advertise_address: str | None, secure_port: int | None) -> None:
    port = secure_port or 6443
    _ensure_service(store, allocator.api_server_ip, port)
    if advertise_address and secure_port:
        _ensure_endpoints(store, advertise_address, port)


def _ensure_service(store, cluster_ip: str, port: int) -> None:
    if store.get(SERVICES, "default", "kubernetes") is not None:
        return
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "kubernetes", "namespace": "default", "labels": dict(LABELS)},
               "spec": {"type": "ClusterIP", "sessionAffinity": "None", "clusterIP": cluster_ip,
                        "clusterIPs": [cluster_ip], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}
    if create_default(store, SERVICES, service) is None:
        log.info("service created", obj="default/kubernetes", clusterIP=cluster_ip)


def _ensure_endpoints(store, address: str, port: int) -> None:
    """This server's address, created or written over what is there."""
    subsets = [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    current = store.get(ENDPOINTS, "default", "kubernetes")
    if current is None:
        endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": "kubernetes", "namespace": "default", "labels": dict(LABELS)},
                     "subsets": subsets}
        current = create_default(store, ENDPOINTS, endpoints)   # another server's, if it was first
    if current is not None and current.get("subsets") != subsets:
        # The store re-reads and runs this again if another server writes in between.
        store.update(ENDPOINTS, "default", "kubernetes", lambda old: {**old, "subsets": subsets})
