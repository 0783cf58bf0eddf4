"""The set-up `make demo`, `make test` and CI run first (.ci/setup-machine),
on machines made of fake commands: what it installs as root, and the one
line it prints for anyone else, who never gets a surprise sudo.

Each case runs the script with a PATH holding only the basic tools plus
fakes: `id` says who we are, `docker` answers or not, `apt-get` records
what it was asked to do. A command left out of the PATH is missing."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "setup-machine"
BASICS = ("sh", "cat", "sed", "tr", "grep", "head", "tail", "date", "mktemp", "rm", "ldd", "touch", "dirname")
EVERYTHING = ("docker", "dockerd", "iptables", "ip", "openssl", "make", "curl", "etcd", "etcdctl", "haproxy", "chromium",
              "python3")


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def machine(tmp_path: Path, *, root: bool, installed=EVERYTHING, docker_answers=True,
            docker_group=True, socket=True, apt=True, static_busybox=True) -> dict:
    """A fake machine; returns the environment to run the script in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in BASICS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    groups = "alice docker" if docker_group else "alice"
    fake(bin_dir, "id", f"""case "$*" in
  -u) echo {0 if root else 1000} ;;
  -un) echo {'root' if root else 'alice'} ;;
  *) echo {groups} ;;
esac""")
    for command in installed:
        if command == "docker":
            fake(bin_dir, "docker", f"exit {0 if docker_answers else 1}")
        elif command == "python3":
            fake(bin_dir, "python3", "exit 0")  # any check of its version passes
        else:
            fake(bin_dir, command, "exit 0")
    if apt:
        fake(bin_dir, "apt-get", f'echo "$*" >> {tmp_path}/apt.log')
        fake(bin_dir, "apt-cache", "echo 'Version: 3.11.2-1+b1'")
    busybox = tmp_path / "busybox"
    # ldd fails on a static binary; a shell script is "not a dynamic executable" as well.
    busybox.write_text("#!/bin/sh\n")
    busybox.chmod(0o755 if static_busybox else 0o644)
    sock = tmp_path / "docker.sock"
    if socket:
        import socket as sockets
        s = sockets.socket(sockets.AF_UNIX)
        s.bind(str(sock))
        s.close()
    return {"PATH": str(bin_dir), "BUSYBOX": str(busybox), "DOCKER_SOCKET": str(sock),
            "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}


def run(env: dict, *parts: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(SCRIPT), *parts], env=env, capture_output=True, text=True, timeout=60)


def apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("setting, message", [
    (dict(installed=(), static_busybox=False, docker_group=False, socket=False),
     "missing docker.io busybox-static iptables iproute2 openssl make curl etcd-server etcd-client haproxy chromium python3-venv, "
     "the Docker engine is not running, alice may not use Docker; run: sudo apt-get install -y docker.io busybox-static "
     "iptables iproute2 openssl make curl etcd-server etcd-client haproxy chromium python3-venv && sudo service docker start && sudo usermod -aG docker alice, "
     "then log out and in again (or run: newgrp docker); then try again"),
    (dict(docker_group=False, docker_answers=False),
     "alice may not use Docker; run: sudo usermod -aG docker alice, then log out and in again (or run: newgrp docker)"),
    (dict(docker_answers=False, socket=False),
     "the Docker engine is not running; run: sudo service docker start; then try again"),
    # A docker client alone (docker-ce-cli, a static binary) is not an engine.
    (dict(installed=tuple(c for c in EVERYTHING if c != "dockerd"), docker_answers=False, socket=False),
     "missing docker.io, the Docker engine is not running; run: sudo apt-get install -y docker.io && "
     "sudo service docker start; then try again"),
    (dict(installed=("docker", "dockerd", "make", "curl", "python3", "openssl", "etcd", "etcdctl", "haproxy",
                     "chromium")),
     "missing iptables iproute2; run: sudo apt-get install -y iptables iproute2; then try again"),
    (dict(apt=False, installed=("docker", "dockerd", "make", "curl", "python3"), static_busybox=False),
     "missing busybox-static iptables iproute2 openssl etcd-server etcd-client haproxy chromium (this set-up installs them on Debian and Ubuntu only)"),
])
def test_a_user_gets_one_line_and_no_sudo(tmp_path, setting, message):
    result = run(machine(tmp_path, root=False, **setting), "machine")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"setup: {message}"), result.stderr
    assert apt_calls(tmp_path) == []


def test_a_ready_machine_says_nothing(tmp_path):
    result = run(machine(tmp_path, root=False), "machine")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_root_installs_what_is_missing_in_one_go(tmp_path):
    result = run(machine(tmp_path, root=True, installed=("docker", "make", "curl", "python3", "haproxy", "chromium")),
                 "machine")
    assert result.returncode == 0, result.stderr
    assert apt_calls(tmp_path)[-1] == "-o DPkg::Lock::Timeout=300 install -y -q iptables iproute2 openssl " \
                                      "etcd-server etcd-client"
    assert "setup: installing iptables iproute2 openssl etcd-server etcd-client from" in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_root_installs_the_engine_beside_a_docker_client_alone(tmp_path):
    installed = tuple(c for c in EVERYTHING if c != "dockerd")
    env = machine(tmp_path, root=True, installed=installed, docker_answers=False, socket=False)
    # Installing the package starts its engine (as its init script does):
    # from then on, the client answers.
    engine = tmp_path / "engine-installed"
    fake(tmp_path / "bin", "apt-get", f'echo "$*" >> {tmp_path}/apt.log; touch {engine}')
    fake(tmp_path / "bin", "docker", f'[ -e {engine} ]')
    result = run(env, "machine")
    assert result.returncode == 0, result.stderr
    assert apt_calls(tmp_path)[-1] == "-o DPkg::Lock::Timeout=300 install -y -q docker.io"


@pytest.mark.parametrize("required, code, says", [
    ("", 0, "kubectl is not on the PATH: see \"Getting kubectl\" in README.md; the kubectl tests will skip"),
    ("1", 1, "GROUNDUP_REQUIRE_KUBECTL=1 makes the kubectl tests mandatory"),
])
def test_kubectl_is_named_never_installed(tmp_path, required, code, says):
    env = {**machine(tmp_path, root=True), "GROUNDUP_REQUIRE_KUBECTL": required}
    result = run(env, "kubectl")
    assert result.returncode == code
    assert says in result.stderr
    assert apt_calls(tmp_path) == []
