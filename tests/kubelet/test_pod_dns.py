"""A pod's resolver settings (01-kubelet/pod_dns.py), table-driven, as Kubernetes' kubelet makes them."""
from __future__ import annotations

import pytest

from pod_dns import DNSSettings, pod_dns

CLUSTER = DNSSettings(["10.96.0.10"], ["shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"],
                      ["ndots:5"])


def pod(**spec) -> dict:
    return {"metadata": {"name": "web", "namespace": "shop"}, "spec": spec}


@pytest.mark.parametrize("spec, expected", [
    ({}, CLUSTER),                                                     # ClusterFirst is the default
    ({"dnsPolicy": "ClusterFirst"}, CLUSTER),
    ({"dnsPolicy": "ClusterFirst", "hostNetwork": True}, None),        # on the host's network: the node's
    ({"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True}, CLUSTER),
    ({"dnsPolicy": "Default"}, None),
    ({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.2.3.4"], "searches": ["a.example"],
                                          "options": [{"name": "ndots", "value": "2"}]}},
     DNSSettings(["1.2.3.4"], ["a.example"], ["ndots:2"])),
    ({"dnsConfig": {"nameservers": ["1.2.3.4"], "searches": ["a.example"],
                    "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}},
     DNSSettings(["10.96.0.10", "1.2.3.4"], [*CLUSTER.searches, "a.example"], ["ndots:2", "edns0"])),
])
def test_resolver_settings_per_dns_policy(spec, expected):
    assert pod_dns(pod(**spec), ["10.96.0.10"], "cluster.local", ["lan"]) == expected


def test_without_cluster_dns_cluster_first_falls_back_to_the_node():
    assert pod_dns(pod(), [], "cluster.local", ["lan"]) is None
