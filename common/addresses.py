"""This machine's address as other machines see it (the kubelet's InternalIP,
the API server's advertised address)."""
from __future__ import annotations

import socket


def source_address(host: str, port: int) -> str:
    """The local address a connection to host would leave from. connect()
    on a UDP socket only picks the route and the source address; no packet
    is sent."""
    address = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0][4]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(address)
        return probe.getsockname()[0]


def this_machines_address() -> str:
    """Its name's first non-loopback address, else the address of the
    interface that the default route leaves by (Debian maps the hostname
    to 127.0.1.1), else 127.0.0.1."""
    try:
        for *_, address in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            if not address[0].startswith("127."):
                return address[0]
    except OSError:
        pass
    try:
        return source_address("8.8.8.8", 53)      # any address beyond this machine
    except OSError:
        return "127.0.0.1"
