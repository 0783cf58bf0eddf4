"""The `kubernetes` Service: how a program in a pod finds the API server (chapter 05).

Every cluster has it, in the default namespace, at the first address of
the service range (10.96.0.1): port 443, sent on to the API server's
secure port. Kubernetes' API server makes it itself at start-up and keeps
its Endpoints pointing at every API server (each one's --advertise-address).
So does ours: the Service when it is missing, and its Endpoints when the
secure port is on, naming this server's address.
"""
from __future__ import annotations

import objects
import registry
from common.defaults import apply_defaults
from common.log import get_logger

log = get_logger("apiserver")
SERVICES = registry.for_kind("", "Service")
ENDPOINTS = registry.for_kind("", "Endpoints")
LABELS = {"component": "apiserver", "provider": "kubernetes"}


def ensure(store, allocator, advertise_address: str | None, secure_port: int | None) -> None:
    port = secure_port or 6443
    if store.get(SERVICES, "default", "kubernetes") is None:
        service = {"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "kubernetes", "namespace": "default", "labels": dict(LABELS)},
                   "spec": {"type": "ClusterIP", "sessionAffinity": "None", "clusterIP": allocator.api_server_ip,
                            "clusterIPs": [allocator.api_server_ip], "ipFamilies": ["IPv4"],
                            "ipFamilyPolicy": "SingleStack",
                            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}
        _create(store, SERVICES, "Service", service)
        log.info("service created", obj="default/kubernetes", clusterIP=allocator.api_server_ip)
    if advertise_address and secure_port:
        endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": "kubernetes", "namespace": "default", "labels": dict(LABELS)},
                     "subsets": [{"addresses": [{"ip": advertise_address}],
                                  "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
        current = store.get(ENDPOINTS, "default", "kubernetes")
        if current is None:
            _create(store, ENDPOINTS, "Endpoints", endpoints)
        elif current.get("subsets") != endpoints["subsets"]:
            store.update(ENDPOINTS, "default", "kubernetes",
                         lambda old: {**old, "subsets": endpoints["subsets"]})


def _create(store, resource, kind: str, obj: dict) -> None:
    objects.prepare_for_create(obj, resource)
    obj = apply_defaults("", kind, obj)
    objects.finish_create(obj, resource)
    store.create(resource, obj)
