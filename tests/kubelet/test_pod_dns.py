"""A pod's resolver settings (01-kubelet/service_discovery/pod_dns.py), table-driven, as Kubernetes' kubelet makes them."""
from __future__ import annotations

import pytest

from service_discovery.pod_dns import DNSSettings, node_resolver, pod_dns

NODE = DNSSettings(["192.0.2.53"], ["lan"], ["edns0"])
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
    assert pod_dns(pod(**spec), ["10.96.0.10"], "cluster.local", NODE) == expected


def test_without_cluster_dns_cluster_first_falls_back_to_the_node():
    assert pod_dns(pod(), [], "cluster.local", NODE) is None


def test_default_with_a_dns_config_keeps_the_nodes_servers():
    config = {"nameservers": ["1.2.3.4"], "searches": ["a.example"]}
    assert pod_dns(pod(dnsPolicy="Default", dnsConfig=config), ["10.96.0.10"], "cluster.local", NODE) == \
        DNSSettings(["192.0.2.53", "1.2.3.4"], ["lan", "a.example"], ["edns0"])


def test_the_nodes_resolver_is_read_from_its_resolv_conf(tmp_path):
    path = tmp_path / "resolv.conf"
    path.write_text("# a comment\nnameserver 192.0.2.53\nsearch lan corp\noptions edns0 timeout:2\n")
    assert node_resolver(str(path)) == DNSSettings(["192.0.2.53"], ["lan", "corp"], ["edns0", "timeout:2"])
