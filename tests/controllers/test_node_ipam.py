"""The node IPAM controller: the CIDR set as tables, then end to end with a
real API server and controller_manager.py, including a SIGKILL restart."""
from __future__ import annotations

import ipaddress

import pytest

from controllers_harness import ControllerManager, unique, wait_for
from node_ipam import CIDRSet, RangeFull, pod_cidrs
from scheduler_harness import node_object


# ---------------------------------------------------------------- the CIDR set

def test_ranges_are_given_in_order_and_never_twice():
    cidrs = CIDRSet("10.244.0.0/16", 24)
    assert cidrs.count == 256
    assert [cidrs.allocate() for _ in range(3)] == ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"]
    cidrs.release("10.244.1.0/24")
    assert cidrs.allocate() == "10.244.1.0/24"          # freed: given again
    assert cidrs.allocate() == "10.244.3.0/24"


@pytest.mark.parametrize("occupied, first_free, why", [
    (["10.244.0.0/24"], "10.244.1.0/24", "one node's range"),
    (["10.244.0.0/23"], "10.244.2.0/24", "a /23 set by hand covers two ranges"),
    (["10.244.0.128/25"], "10.244.1.0/24", "part of a range takes the whole range"),
    (["192.168.0.0/24"], "10.244.0.0/24", "outside the cluster CIDR: ignored"),
    (["10.0.0.0/8"], None, "covers the whole cluster CIDR"),
    (["fd00::/64"], "10.244.0.0/24", "another IP family: ignored"),
])
def test_occupied_ranges(occupied, first_free, why):
    cidrs = CIDRSet("10.244.0.0/16", 24)
    for cidr in occupied:
        cidrs.occupy(cidr)
    if first_free is None:
        with pytest.raises(RangeFull):
            cidrs.allocate()
    else:
        assert cidrs.allocate() == first_free, why


def test_a_full_set_says_how_big_it_was():
    cidrs = CIDRSet("10.250.0.0/28", 30)
    assert [cidrs.allocate() for _ in range(4)][-1] == "10.250.0.12/30"
    with pytest.raises(RangeFull, match="all 4 /30 ranges of 10.250.0.0/28 are taken"):
        cidrs.allocate()


@pytest.mark.parametrize("cluster, mask", [("10.244.0.0/16", 15), ("10.244.0.0/16", 33)])
def test_a_mask_that_does_not_fit_is_refused(cluster, mask):
    with pytest.raises(ValueError, match="--node-cidr-mask-size"):
        CIDRSet(cluster, mask)


def test_ipv6_cluster_cidr():
    cidrs = CIDRSet("fd00:10:244::/56", 64)
    assert cidrs.allocate() == "fd00:10:244::/64"
    assert cidrs.allocate() == "fd00:10:244:1::/64"


@pytest.mark.parametrize("spec, cidrs", [
    ({}, []),
    ({"podCIDR": "10.244.3.0/24"}, ["10.244.3.0/24"]),
    ({"podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24"]}, ["10.244.3.0/24"]),
])
def test_a_nodes_ranges(spec, cidrs):
    assert pod_cidrs({"spec": spec}) == cidrs


# ---------------------------------------------------------------- end to end

def register(api, count):
    names = [unique("node") for _ in range(count)]
    for name in names:
        assert api.post("/api/v1/nodes", node_object(name)).status_code == 201
    return names


def assigned(api, names):
    """name -> podCIDR, once every one of names has one (else None)."""
    nodes = {n["metadata"]["name"]: n for n in api.get("/api/v1/nodes").json()["items"]}
    found = {name: nodes[name]["spec"].get("podCIDR") for name in names if name in nodes}
    return found if len(found) == len(names) and all(found.values()) else None


def test_every_node_gets_its_own_range_and_keeps_it_across_a_restart(api, apiserver, tmp_path):
    first = ControllerManager(apiserver.url, tmp_path, "--controllers", "nodeipam").start()
    names = register(api, 20)
    before = wait_for(lambda: assigned(api, names), timeout=30, what="a podCIDR on each of 20 nodes")
    assert len(set(before.values())) == 20, before
    cluster = ipaddress.ip_network("10.244.0.0/16")
    for name, cidr in before.items():
        network = ipaddress.ip_network(cidr)
        assert network.prefixlen == 24 and network.subnet_of(cluster), cidr
        assert api.get(f"/api/v1/nodes/{name}").json()["spec"]["podCIDRs"] == [cidr]

    # The API server keeps a node's range fixed once set, as Kubernetes does.
    node = api.get(f"/api/v1/nodes/{names[0]}").json()
    node["spec"]["podCIDR"] = node["spec"]["podCIDRs"][0] = "10.244.250.0/24"
    response = api.put(f"/api/v1/nodes/{names[0]}", node)
    assert response.status_code == 422 and "may not change podCIDR" in response.text, response.text

    # Killed; nodes join while it is down; a new process must not hand out
    # a range that is taken, though it remembers nothing.
    first.kill()
    late = register(api, 5)
    second = ControllerManager(apiserver.url, tmp_path, "--controllers", "nodeipam").start()
    try:
        after = wait_for(lambda: assigned(api, names + late), timeout=30, what="ranges for the 5 late nodes")
        assert {name: after[name] for name in names} == before
        assert len(set(after.values())) == 25, after
    finally:
        second.stop()


def test_a_deleted_nodes_range_goes_to_a_waiting_node(api, apiserver, tmp_path):
    # Room for 4 nodes only: 10.250.0.0/28 in /30s.
    manager = ControllerManager(apiserver.url, tmp_path, "--controllers", "nodeipam",
                                "--cluster-cidr", "10.250.0.0/28", "--node-cidr-mask-size", "30").start()
    try:
        four = register(api, 4)
        given = wait_for(lambda: assigned(api, four), timeout=30, what="ranges for 4 nodes")
        assert sorted(given.values()) == ["10.250.0.0/30", "10.250.0.12/30", "10.250.0.4/30", "10.250.0.8/30"]
        [fifth] = register(api, 1)
        wait_for(lambda: [e for e in api.get("/api/v1/namespaces/default/events").json()["items"]
                          if e["involvedObject"]["name"] == fifth and e["reason"] == "CIDRNotAvailable"],
                 timeout=30, what="a CIDRNotAvailable event for the fifth node")
        assert not api.get(f"/api/v1/nodes/{fifth}").json()["spec"].get("podCIDR")

        assert api.delete(f"/api/v1/nodes/{four[1]}").status_code == 200
        got = wait_for(lambda: assigned(api, [fifth]), timeout=30, what="the freed range for the fifth node")
        assert got[fifth] == given[four[1]]
    finally:
        manager.stop()
