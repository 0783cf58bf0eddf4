"""Chapter 02's certificate and kubeconfig generator (02-apiserver/certs.py).

Everything is generated into a temporary directory and then checked the way
its users will use it: the chain verifies for the names clients dial, the
kubeconfigs carry the right server, CA and token, secrets are private, a
second run changes nothing, and a real TLS client trusts a server that
presents the certificate and receives the token.
"""
from __future__ import annotations

import base64
import csv
import http.server
import ipaddress
import json
import shutil
import ssl
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import certifi
import pytest
import requests
import yaml
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

import certs

ROOT = Path(__file__).resolve().parents[2]
USERS = ["admin", "scheduler", "controller-manager", "viewer", "system:node:node1", "system:node:node2"]
FILES = {"admin": "admin.kubeconfig", "scheduler": "scheduler.kubeconfig",
         "controller-manager": "controller-manager.kubeconfig", "viewer": "viewer.kubeconfig",
         "system:node:node1": "node1.kubeconfig", "system:node:node2": "node2.kubeconfig"}


def run_certs(out: Path, *args: str) -> str:
    """The command as a learner types it."""
    result = subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(out), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def out(tmp_path) -> Path:
    d = tmp_path / "pki"
    run_certs(d, "--master-ip", "10.240.0.10", "--master-name", "master.example", "--nodes", "node1,node2")
    return d


def load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def tokens(d: Path) -> dict[str, list[str]]:
    return {row[1]: row for row in csv.reader((d / "tokens.csv").open()) if row}


def snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_every_file_is_there(out):
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "tokens.csv", "kubelet-client.token", "sa.key", "sa.pub",
         "master-addresses", *FILES.values()])


@pytest.mark.parametrize("dialled", [
    x509.DNSName("localhost"), x509.DNSName("master.example"), x509.DNSName("kubernetes.default.svc"),
    x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1")),
    x509.IPAddress(ipaddress.ip_address("10.240.0.10")),
])
def test_chain_verifies_for_every_address_a_client_dials(out, dialled):
    store = Store([load_cert(out / "ca.crt")])
    verifier = PolicyBuilder().store(store).build_server_verifier(dialled)
    chain = verifier.verify(load_cert(out / "apiserver.crt"), [])
    assert chain[-1] == load_cert(out / "ca.crt")


def test_chain_refuses_an_address_not_asked_for(out):
    verifier = PolicyBuilder().store(Store([load_cert(out / "ca.crt")])).build_server_verifier(
        x509.DNSName("elsewhere.example"))
    with pytest.raises(x509.verification.VerificationError):
        verifier.verify(load_cert(out / "apiserver.crt"), [])


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl binary")
def test_openssl_agrees(out):
    result = subprocess.run(["openssl", "verify", "-CAfile", str(out / "ca.crt"), str(out / "apiserver.crt")],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr


def test_server_certificate_is_for_serving_only(out):
    cert = load_cert(out / "apiserver.crt")
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    # The machine that runs `make certs` is the master: its hostname is in.
    assert set(san.get_values_for_type(x509.DNSName)) == {
        "localhost", "master.example", socket.gethostname().lower(), *certs.SERVICE_NAMES}
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address(ip) for ip in ("127.0.0.1", "::1", "10.240.0.10", certs.KUBERNETES_SERVICE_IP)}
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 365 <= lifetime.days <= 366
    ca = load_cert(out / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert (ca.not_valid_after_utc - ca.not_valid_before_utc).days >= 3650


def test_kubeconfigs_carry_server_ca_and_the_token_from_tokens_csv(out):
    table = tokens(out)
    assert sorted(table) == sorted(USERS)
    ca_pem = (out / "ca.crt").read_bytes()
    for user, file_name in FILES.items():
        config = yaml.safe_load((out / file_name).read_text())
        assert config["current-context"] == "groundup"
        (context,) = config["contexts"]
        (cluster,) = config["clusters"]
        (auth,) = config["users"]
        assert context["name"] == "groundup" and context["context"]["user"] == user == auth["name"]
        assert context["context"]["cluster"] == cluster["name"]
        assert cluster["cluster"]["server"] == "https://10.240.0.10:6443"
        assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == ca_pem
        assert auth["user"]["token"] == table[user][0]


def test_tokens_csv_rows_and_groups(out):
    table = tokens(out)
    assert table["admin"][3:] == ["system:masters"]
    assert table["system:node:node1"][3:] == ["system:nodes"]
    assert table["scheduler"][3:] == []   # no groups, no empty group
    assert len({row[0] for row in table.values()}) == len(table)   # every token different
    assert all(len(row[0]) >= 32 for row in table.values())


def test_the_kubelet_client_token_is_one_line_and_no_users_token(out):
    """The API server's credential for the kubelets' port: a token of its
    own, so that no user's kubeconfig opens the kubelets, and none of the
    kubelets' copies opens the API server."""
    from common.client.token_file import read_token_file
    token = read_token_file(str(out / "kubelet-client.token"))
    assert len(token) >= 32 and (out / "kubelet-client.token").read_text() == token + "\n"
    assert token not in {row[0] for row in tokens(out).values()}


def test_secrets_are_readable_by_the_owner_only(out):
    for name in ["ca.key", "apiserver.key", "tokens.csv", "kubelet-client.token", *FILES.values()]:
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE((out / "ca.crt").stat().st_mode) == 0o644


def test_running_again_changes_nothing(out):
    before = snapshot(out)
    printed = run_certs(out, "--master-ip", "10.240.0.10", "--master-name", "master.example",
                        "--nodes", "node1,node2")
    assert snapshot(out) == before
    assert "created" not in printed and "updated" not in printed


def test_new_address_replaces_only_the_server_certificate(out):
    before, old_tokens = snapshot(out), tokens(out)
    printed = run_certs(out, "--master-ip", "10.240.0.10", "--master-ip", "10.240.0.11",
                        "--master-name", "master.example", "--nodes", "node1,node2,node3")
    after = snapshot(out)
    assert after["ca.crt"] == before["ca.crt"] and after["ca.key"] == before["ca.key"]
    assert after["apiserver.crt"] != before["apiserver.crt"]
    assert "(addresses changed)" in printed
    assert after["node1.kubeconfig"] == before["node1.kubeconfig"]   # nodes need no new copy
    new_tokens = tokens(out)
    assert {u: r for u, r in new_tokens.items() if u in old_tokens} == old_tokens
    assert new_tokens["system:node:node3"][3] == "system:nodes"
    san = load_cert(out / "apiserver.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert ipaddress.ip_address("10.240.0.11") in san.value.get_values_for_type(x509.IPAddress)


def test_a_run_without_addresses_keeps_the_masters_addresses_of_the_last_run(out):
    before = snapshot(out)
    printed = run_certs(out, "--nodes", "node1,node2")
    assert snapshot(out) == before                     # not re-issued for loopback only
    assert "Server URL in the kubeconfigs: https://10.240.0.10:6443" in printed
    assert "those of the last run that gave some" in printed
    # Given again, they replace what was remembered, and say so.
    printed = run_certs(out, "--master-ip", "127.0.0.1", "--nodes", "node1,node2")
    assert "Server URL in the kubeconfigs: https://127.0.0.1:6443" in printed and "(addresses changed)" in printed
    assert "Server URL in the kubeconfigs: https://127.0.0.1:6443" in run_certs(out, "--nodes", "node1,node2")


def test_force_replaces_ca_and_tokens(out):
    before, old_tokens = snapshot(out), tokens(out)
    run_certs(out, "--master-ip", "10.240.0.10", "--nodes", "node1,node2", "--force")
    after, new_tokens = snapshot(out), tokens(out)
    assert after["ca.crt"] != before["ca.crt"] and after["ca.key"] != before["ca.key"]
    assert all(new_tokens[u][0] != old_tokens[u][0] for u in USERS)
    assert after["kubelet-client.token"] != before["kubelet-client.token"]
    load_cert(out / "apiserver.crt").verify_directly_issued_by(load_cert(out / "ca.crt"))


def test_a_new_ca_by_hand_gets_a_new_server_certificate(out):
    """Someone deletes the CA to start over but forgets the server files."""
    (out / "ca.crt").unlink()
    printed = run_certs(out, "--master-ip", "10.240.0.10", "--master-name", "master.example",
                        "--nodes", "node1,node2")
    assert "(signed by another CA)" in printed
    load_cert(out / "apiserver.crt").verify_directly_issued_by(load_cert(out / "ca.crt"))


@pytest.mark.parametrize("args, complaint", [
    (["--master-ip", "master"], "not an IP address"),
    (["--nodes", "Node_1"], "not a valid node name"),
    (["--nodes", "admin"], "share a kubeconfig"),
    (["--apiserver", "http://10.0.0.1:8080"], "https://"),
])
def test_bad_flags_are_one_line_errors(tmp_path, args, complaint):
    result = subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(tmp_path), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and complaint in result.stderr


def test_ipv6_master_is_bracketed_in_the_url(tmp_path):
    run_certs(tmp_path, "--master-ip", "fd00::10")
    config = yaml.safe_load((tmp_path / "admin.kubeconfig").read_text())
    assert config["clusters"][0]["cluster"]["server"] == "https://[fd00::10]:6443"


class VersionHandler(http.server.BaseHTTPRequestHandler):
    """Answers /version to the one token it was given, 401 to anything else."""
    token = ""

    def do_GET(self):
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"major": "1", "minor": "32", "gitVersion": "v1.32.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def https_server(out):
    """A throwaway HTTPS server on loopback presenting the generated certificate."""
    handler = type("Handler", (VersionHandler,), {"token": tokens(out)["admin"][0]})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(out / "apiserver.crt", out / "apiserver.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_https_round_trip_trusts_the_ca_and_carries_the_token(out, https_server):
    config = yaml.safe_load((out / "admin.kubeconfig").read_text())
    token = config["users"][0]["user"]["token"]
    for host in ("127.0.0.1", "localhost"):
        url = f"https://{host}:{https_server}/version"
        answer = requests.get(url, headers={"Authorization": f"Bearer {token}"}, verify=out / "ca.crt", timeout=10)
        assert answer.status_code == 200 and answer.json()["minor"] == "32"
    refused = requests.get(f"https://127.0.0.1:{https_server}/version", verify=out / "ca.crt", timeout=10)
    assert refused.status_code == 401
    with pytest.raises(requests.exceptions.SSLError):   # the system's CAs do not know ours
        requests.get(f"https://127.0.0.1:{https_server}/version", timeout=10)


def test_kubectl_trusts_the_ca_and_sends_the_token(out, https_server, kubectl, tmp_path):
    """The real kubectl sends a token only over HTTPS; this is the proof it does with our files."""
    config = yaml.safe_load((out / "admin.kubeconfig").read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{https_server}"
    kubeconfig = tmp_path / "admin-here.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                             "get", "--raw", "/version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["gitVersion"] == "v1.32.0"


def test_the_shared_client_trusts_the_kubeconfigs_ca_whatever_the_environment_says(out, https_server, tmp_path,
                                                                                  monkeypatch):
    """requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set on many machines)
    override a session's CA; every component's client must still use the
    kubeconfig's."""
    from common.client.client import APIClient
    from common.client.kubeconfig import load
    config = yaml.safe_load((out / "admin.kubeconfig").read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{https_server}"
    kubeconfig = tmp_path / "admin-here.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.setenv(variable, certifi.where())
    client = APIClient(load(kubeconfig), timeout=10, read_retries=0)
    assert client.request("GET", "/version")["minor"] == "32"


def test_a_token_never_starts_with_a_dash():
    # `--token -abc...` is read as a flag: such tokens broke one CI run in 64.
    from certs import new_token
    assert not any(new_token().startswith("-") for _ in range(2000))
