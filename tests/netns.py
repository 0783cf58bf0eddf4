"""Another machine, for tests that need one: a network namespace joined to
this one by a veth pair on a /30 test subnet (10.213.x.0/30, each test
file its own x). This machine is host_ip there; the namespace is remote_ip.
A request from the namespace arrives from remote_ip, as one from another
machine does, and this machine's own host_ip is a non-loopback address to
reach local servers at."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid

import pytest


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def remote_machine(host_ip: str, remote_ip: str):
    """Yields the namespace's name; removes the namespace and the veth pair
    afterwards, also on failure. Skips without root (fails in CI)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        reason = "making a network namespace needs root and iproute2"
        if os.environ.get("GROUNDUP_REQUIRE_DOCKER") == "1":
            pytest.fail(f"in CI, but {reason}")
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:6]
    namespace, host_end, remote_end = f"gu-{tag}", f"guh{tag}", f"gur{tag}"
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", remote_end)
        _ip("link", "set", remote_end, "netns", namespace)
        _ip("addr", "add", f"{host_ip}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        for args in (("addr", "add", f"{remote_ip}/30", "dev", remote_end), ("link", "set", remote_end, "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", namespace, "ip", *args)
        route = subprocess.run(["ip", "route", "get", remote_ip], capture_output=True, text=True).stdout
        assert f"dev {host_end}" in route, f"the test subnet is routed elsewhere on this machine: {route}"
        yield namespace
    finally:
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def run_in(namespace: str, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a command on the other machine; its output as text."""
    return subprocess.run(["ip", "netns", "exec", namespace, *command],
                          capture_output=True, text=True, timeout=timeout)
