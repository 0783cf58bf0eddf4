"""A pod's /etc/resolv.conf: how a pod finds cluster DNS (chapter 05).

With `--cluster-dns 10.96.0.10`, the kubelet gives every pod of dnsPolicy
ClusterFirst (the default) cluster DNS as its name server and a search
list that makes short names work, as Kubernetes does:

    nameserver 10.96.0.10
    search shop.svc.cluster.local svc.cluster.local cluster.local
    options ndots:5

so `web` from a pod in `shop` is tried as web.shop.svc.cluster.local
first. ndots:5 makes any name with fewer than five dots go through the
search list before it is tried as written. The other policies: Default
(the node's own resolver: Docker copies the node's resolv.conf),
ClusterFirstWithHostNet (ClusterFirst, even on the host's network, which
ClusterFirst itself is not), None (only what dnsConfig says). dnsConfig's
nameservers, searches and options are added to what the policy gives.
Docker writes the file into the pause container; the app containers
share it with the network namespace.
"""
from __future__ import annotations

from typing import NamedTuple


class DNSSettings(NamedTuple):
    servers: list[str]
    searches: list[str]
    options: list[str]


# [START pod-dns]
def pod_dns(pod: dict, cluster_dns: list[str], cluster_domain: str, node: DNSSettings) -> DNSSettings | None:
    """The pod's resolver settings; None: Docker's default (the node's own)."""
    spec = pod["spec"]
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    host_network = bool(spec.get("hostNetwork"))
    cluster_first = policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host_network)
    if cluster_first and cluster_dns:
        namespace = pod["metadata"]["namespace"]
        settings = DNSSettings(list(cluster_dns), [f"{namespace}.svc.{cluster_domain}", f"svc.{cluster_domain}",
                                                   cluster_domain, *node.searches], ["ndots:5"])
    elif policy == "None":
        settings = DNSSettings([], [], [])
    else:
        settings = None                     # Default, or ClusterFirst without cluster DNS to point at
    config = spec.get("dnsConfig") or {}
    if not config:
        return settings
    base = settings or node          # Default: the node's own resolver, to which dnsConfig adds
    options = {o["name"]: o for o in base_options(base.options) + list(config.get("options") or [])}
    return DNSSettings(base.servers + list(config.get("nameservers") or []),
                       base.searches + [s for s in config.get("searches") or [] if s not in base.searches],
                       [f"{n}:{o['value']}" if o.get("value") is not None else n for n, o in options.items()])
# [END pod-dns]


def base_options(options: list[str]) -> list[dict]:
    """"ndots:5" as dnsConfig writes it: {"name": "ndots", "value": "5"}."""
    parsed = []
    for option in options:
        name, _, value = option.partition(":")
        parsed.append({"name": name, "value": value or None})
    return parsed


def node_resolver(path: str = "/etc/resolv.conf") -> DNSSettings:
    """The node's own resolver: its servers and options (for Default pods
    with a dnsConfig) and its search domains (which cluster-first pods get too)."""
    servers, searches, options = [], [], []
    try:
        for line in open(path):
            words = line.split()
            if words[:1] == ["nameserver"] and len(words) > 1:
                servers.append(words[1])
            elif words[:1] == ["search"]:
                searches = words[1:]
            elif words[:1] == ["options"]:
                options += words[1:]
    except OSError:
        pass
    return DNSSettings(servers, searches, options)
