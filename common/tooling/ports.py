"""A free TCP port on loopback, for demos, benchmarks and tests."""
from __future__ import annotations

import socket


def free_port(preferred: int = 0) -> int:
    """preferred if nothing listens there, else a port the kernel picks.
    (Another process may take it before it is used: fine for demos and tests.)"""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
