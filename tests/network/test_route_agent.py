"""The route agent's decision, table-driven: which routes the Nodes call for."""
from __future__ import annotations

import pytest

from route_agent import desired_routes


def node(name: str, cidr: str | None = None, ip: str | None = None, deleting: bool = False) -> dict:
    meta = {"name": name, **({"deletionTimestamp": "2026-11-26T00:00:00Z"} if deleting else {})}
    return {"metadata": meta, "spec": {"podCIDR": cidr} if cidr else {},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}] if ip else []}}


ME = node("node1", "10.244.0.0/24", "10.213.0.11")


@pytest.mark.parametrize("others, routes, problems", [
    ([node("node2", "10.244.1.0/24", "10.213.0.12")], {"10.244.1.0/24": "10.213.0.12"}, []),
    ([node("node2", None, "10.213.0.12")], {}, []),                       # no range yet: nothing to route
    ([node("node2", "10.244.1.0/24", None)], {}, []),                     # no address yet
    ([node("node2", "10.244.1.0/24", "10.213.0.12", deleting=True)], {}, []),
    ([node("node2", "banana", "10.213.0.12")], {}, ["node node2: podCIDR 'banana' is not a network"]),
    ([node("node2", "10.244.1.0/24", "node2.example")], {}, ["node node2: InternalIP 'node2.example' is not"]),
    ([node("node2", "10.244.0.0/23", "10.213.0.12")], {}, ["node node2: podCIDR 10.244.0.0/23 overlaps 10.244.0.0/24"]),
    ([node("node2", "0.0.0.0/0", "10.213.0.12")], {}, ["node node2: podCIDR 0.0.0.0/0 is outside the cluster's"]),
    ([node("node2", "10.244.1.0/24", "10.213.0.12"), node("node3", "10.244.1.0/24", "10.213.0.13")],
     {"10.244.1.0/24": "10.213.0.12"}, ["node node3: podCIDR 10.244.1.0/24 overlaps 10.244.1.0/24"]),
    ([node("node2", "10.244.1.0/24", "10.213.0.12"), node("node3", "10.244.2.0/24", "10.213.0.13")],
     {"10.244.1.0/24": "10.213.0.12", "10.244.2.0/24": "10.213.0.13"}, []),
])
def test_routes_for_every_other_node_with_a_range_and_an_address(others, routes, problems):
    got, told = desired_routes([ME, *others], "node1", "10.244.0.0/16")
    assert got == routes
    assert len(told) == len(problems) and all(t.startswith(p) for t, p in zip(told, problems)), told


def test_the_master_routes_to_every_node():
    nodes = [node("node1", "10.244.0.0/24", "10.213.0.11"), node("node2", "10.244.1.0/24", "10.213.0.12")]
    assert desired_routes(nodes, "master", "10.244.0.0/16")[0] == {"10.244.0.0/24": "10.213.0.11", "10.244.1.0/24": "10.213.0.12"}
