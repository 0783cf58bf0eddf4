"""Another machine: a network namespace the test makes, joined to this one
by a veth pair on a test subnet (10.213.77.0/30). From there the secure
port answers the generated kubeconfig; the insecure port, bound to
127.0.0.1, cannot even be connected to."""
from __future__ import annotations

import subprocess
import sys

import pytest

import netns
from apiserver_harness import ROOT, APIServer
from polling import free_port

HOST_IP, REMOTE_IP = "10.213.77.1", "10.213.77.2"


@pytest.fixture
def remote_machine():
    """A network namespace reachable at REMOTE_IP; this machine is HOST_IP there."""
    with netns.remote_machine(HOST_IP, REMOTE_IP) as namespace:
        yield namespace


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
            return netns.run_in(remote_machine, *command)
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
