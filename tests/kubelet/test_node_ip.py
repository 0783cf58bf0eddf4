"""Which address a kubelet reports as its InternalIP (without --node-ip).

The case that matters is a VM whose default route is a NAT interface (the
usual Vagrant and VirtualBox layout): its hostname and its default route
both name the NAT address, which no other machine can reach. The address
the kubelet reaches the API server from is the one the master can reach
back, so it comes first."""
from __future__ import annotations

import socket

import pytest

import kubelet
from common import addresses

NAT, SHARED = "10.0.2.15", "192.168.56.11"


@pytest.fixture
def vagrant_vm(monkeypatch):
    """The hostname resolves to the NAT address; the route to the master
    leaves from the shared network."""
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == socket.gethostname():
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (NAT, 0))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def source_address(host, port):
        return SHARED if host == "192.168.56.10" else NAT

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(addresses, "source_address", source_address)


@pytest.mark.parametrize("apiserver, expected", [
    ("https://192.168.56.10:6443", SHARED),      # the master on the shared network: the address facing it
    ("https://127.0.0.1:6443", NAT),             # one machine: nothing to learn from loopback
    (None, NAT),                                 # no API server (chapter 01): the hostname's address
])
def test_the_internal_ip_is_the_address_that_reaches_the_api_server(vagrant_vm, apiserver, expected):
    assert kubelet.default_node_ip(apiserver) == expected

