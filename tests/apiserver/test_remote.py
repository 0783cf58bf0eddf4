"""Another machine: a network namespace the test makes, joined to this one
by a veth pair on a test subnet (10.213.77.0/30). From there the secure
port answers the generated kubeconfig; the insecure port, bound to
127.0.0.1, cannot even be connected to."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from apiserver_harness import ROOT, APIServer
from polling import free_port

HOST_IP, REMOTE_IP = "10.213.77.1", "10.213.77.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def remote_machine():
    """A network namespace reachable at REMOTE_IP; this machine is HOST_IP there."""
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
        _ip("addr", "add", f"{HOST_IP}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        for args in (("addr", "add", f"{REMOTE_IP}/30", "dev", remote_end), ("link", "set", remote_end, "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", namespace, "ip", *args)
        route = subprocess.run(["ip", "route", "get", REMOTE_IP], capture_output=True, text=True).stdout
        assert f"dev {host_end}" in route, f"the test subnet is routed elsewhere on this machine: {route}"
        yield namespace
    finally:
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def test_a_remote_machine_reaches_the_secure_port_and_not_the_insecure_one(remote_machine, kubectl, tmp_path):
    certs = tmp_path / "certs"
    secure_port = free_port()
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs),
                    "--master-ip", HOST_IP, "--apiserver", f"https://{HOST_IP}:{secure_port}"],
                   check=True, capture_output=True)
    server = APIServer(tmp_path / "data", "--secure-port", str(secure_port),
                       "--tls-cert-file", str(certs / "apiserver.crt"),
                       "--tls-private-key-file", str(certs / "apiserver.key"),
                       "--token-auth-file", str(certs / "tokens.csv"),
                       "--authorization-policy-file", str(ROOT / "02-apiserver" / "policy.jsonl")).start()
    try:
        def on_remote(*command: str) -> subprocess.CompletedProcess:
            return subprocess.run(["ip", "netns", "exec", remote_machine, *command],
                                  capture_output=True, text=True, timeout=60)
        listed = on_remote(kubectl, "--kubeconfig", str(certs / "admin.kubeconfig"),
                           "--cache-dir", str(tmp_path / "cache"), "get", "namespaces", "-o", "name")
        assert listed.returncode == 0, listed.stderr
        assert "namespace/kube-system" in listed.stdout.split()
        insecure = on_remote(sys.executable, "-c", f"import socket; socket.create_connection(('{HOST_IP}', "
                                                   f"{server.port}), timeout=5)")
        assert insecure.returncode != 0 and "ConnectionRefusedError" in insecure.stderr
    finally:
        server.stop()


def test_opening_the_insecure_port_to_the_network_says_so(remote_machine, tmp_path):
    server = APIServer(tmp_path / "data", "--insecure-bind-address", HOST_IP, "--secure-port", "0")
    server.url = f"http://{HOST_IP}:{server.port}"
    server.start()
    try:
        assert "WARNING: the insecure port has no authentication" in server.log()
    finally:
        server.stop()
