"""common.client.kubeconfig inside a pod: where the server is from the environment,
who we are from the projected token, and a renewed token used once the
kubelet writes it. Real files in a temporary folder, a real requests.Request.
Outside a pod, with no flags, every client component says so and exits."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from common.client import kubeconfig
from common.client.kubeconfig import NOT_IN_CLUSTER, Connection, KubeconfigError, TokenFileAuth, in_cluster

ROOT = Path(__file__).resolve().parents[2]

ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def projected(tmp_path, token="first", namespace="shop"):
    (tmp_path / "token").write_text(token)
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "namespace").write_text(namespace)
    return tmp_path


def sent_token(connection: Connection) -> str:
    session = connection.session()
    prepared = session.prepare_request(requests.Request("GET", connection.server + "/api"))
    return prepared.headers["Authorization"]


def test_a_pod_finds_the_server_its_token_ca_and_namespace(tmp_path):
    connection = in_cluster(projected(tmp_path), ENV)
    assert connection.server == "https://10.96.0.1:443"
    assert connection.ca_file == str(tmp_path / "ca.crt")
    assert connection.namespace == "shop"
    assert connection.token is None and connection.token_file == str(tmp_path / "token")
    assert sent_token(connection) == "Bearer first"


def test_outside_a_pod_there_is_no_in_cluster_connection(tmp_path):
    assert in_cluster(projected(tmp_path), {}) is None                 # no Service address
    assert in_cluster(tmp_path / "absent", ENV) is None                # no token projected


def test_an_ipv6_service_address_is_bracketed(tmp_path):
    connection = in_cluster(projected(tmp_path), {"KUBERNETES_SERVICE_HOST": "fd00::1",
                                                  "KUBERNETES_SERVICE_PORT": "443"})
    assert connection.server == "https://[fd00::1]:443"


def test_a_renewed_token_is_sent_after_the_reread_period(tmp_path, monkeypatch):
    connection = in_cluster(projected(tmp_path), ENV)
    session = connection.session()
    auth: TokenFileAuth = session.auth
    request = requests.Request("GET", "https://10.96.0.1/api")
    assert session.prepare_request(request).headers["Authorization"] == "Bearer first"
    (tmp_path / "token").write_text("second\n")
    assert session.prepare_request(request).headers["Authorization"] == "Bearer first"   # within the minute
    auth._read_at -= TokenFileAuth.PERIOD                                               # a minute later
    assert session.prepare_request(request).headers["Authorization"] == "Bearer second"
    (tmp_path / "token").unlink()                                 # mid-renewal: keep the last good one
    auth._read_at -= TokenFileAuth.PERIOD
    assert session.prepare_request(request).headers["Authorization"] == "Bearer second"


def test_flags_win_over_the_pod(tmp_path, monkeypatch):
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT", projected(tmp_path))
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    parser = argparse.ArgumentParser()
    kubeconfig.add_flags(parser)
    inside = kubeconfig.from_args(parser.parse_args([]))
    assert inside.server == "https://10.96.0.1:443" and inside.token_file
    told = kubeconfig.from_args(parser.parse_args(["--apiserver", "http://127.0.0.1:8080"]))
    assert told.server == "http://127.0.0.1:8080" and told.token_file is None
    with_token = kubeconfig.from_args(parser.parse_args(["--token", "mine"]))
    assert with_token.token == "mine" and with_token.token_file is None
    assert sent_token(with_token) == "Bearer mine"


def test_no_flags_outside_a_pod_is_client_gos_error_not_a_guessed_server(tmp_path, monkeypatch):
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT", tmp_path / "absent")
    parser = argparse.ArgumentParser()
    kubeconfig.add_flags(parser)
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(KubeconfigError) as outside:
        kubeconfig.from_args(parser.parse_args([]))
    assert str(outside.value) == NOT_IN_CLUSTER
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)             # a pod whose token was not mounted
    with pytest.raises(KubeconfigError, match="absent/token: no such file or directory"):
        kubeconfig.from_args(parser.parse_args([]))


# Every program that finds the API server through common.client.kubeconfig (the
# kubelet only with --apiserver or --kubeconfig: alone, it runs its manifests).
CLIENTS = ["03-scheduler/scheduler.py", "04-controllers/controller_manager.py", "04-controllers/website_controller.py",
           "05-proxy-dns/proxy.py", "05-proxy-dns/cluster_dns.py", "05-proxy-dns/route_agent.py"]


@pytest.mark.parametrize("component", CLIENTS)
def test_a_component_with_no_api_server_configured_says_so_and_exits(component):
    """Not a retry loop against 127.0.0.1:8080 that logs nothing (issue 35)."""
    outside_a_pod = {k: v for k, v in os.environ.items() if k not in ENV}
    done = subprocess.run([sys.executable, component], cwd=ROOT, env=outside_a_pod,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and NOT_IN_CLUSTER in done.stdout + done.stderr, done.stdout + done.stderr
