"""A free TCP port on loopback, for demos, benchmarks and tests."""
from __future__ import annotations

import random
import socket

# Below Linux's ephemeral range (32768-60999 by default): the kernel gives
# ports from that range to every outgoing connection, and one of them took
# a port a test had found free before its server bound it (CI, 2026-12-07:
# "Address already in use"). Ports from here are taken only by a listener;
# and none of the project's fixed ports (6443, 8080, 9090, 10250-10259,
# NodePorts from 30000) is among them.
QUIET_RANGE = (20000, 29999)


def free_port(preferred: int = 0) -> int:
    """preferred if nothing listens there, else a free port below the
    ephemeral range, else one the kernel picks. (Another process may still
    take it before it is used: rare, and fine for demos and tests.)"""
    candidates = [preferred] if preferred else []
    candidates += [random.randint(*QUIET_RANGE) for _ in range(20)]
    for port in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
