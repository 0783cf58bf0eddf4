""".ci/doctor.py's decisions, without machines (tests/network/test_three_vm_path.py
runs it on machines made of namespaces, prepared and broken)."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from argparse import Namespace
from email.utils import formatdate
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("doctor", ROOT / ".ci" / "doctor.py")
doctor = sys.modules["doctor"] = importlib.util.module_from_spec(spec)      # dataclasses look it up
spec.loader.exec_module(doctor)


def test_it_imports_only_the_standard_library():
    # It must run where the virtualenv is missing: that is one of the things it reports.
    tree = ast.parse((ROOT / ".ci" / "doctor.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported - sys.stdlib_module_names - {"__future__"} == set()


ROUTES = [{"dst": "default", "gateway": "10.0.2.2", "dev": "eth0"},
          {"dst": "10.244.1.0/24", "gateway": "10.0.0.12", "dev": "eth1", "protocol": "213"},   # the route agent's
          {"dst": "10.244.0.0/24", "dev": "cbr0", "protocol": "kernel"},                       # the kubenet bridge
          {"dst": "172.17.0.0/16", "dev": "docker0", "protocol": "kernel"}]


@pytest.mark.parametrize("extra, cidr, expected", [
    ([], "10.244.0.0/16", []),
    ([{"dst": "10.0.0.0/8", "dev": "tun0"}], "10.244.0.0/16", ["10.0.0.0/8 dev tun0"]),                 # wider: a VPN
    ([{"dst": "10.244.7.0/24", "dev": "eth1"}], "10.244.0.0/16", ["10.244.7.0/24 dev eth1"]),           # narrower
    ([{"dst": "10.100.0.5", "dev": "eth0"}], "10.96.0.0/12", ["10.100.0.5 dev eth0"]),                  # one host
    ([{"dst": "10.112.0.0/16", "dev": "eth0"}], "10.96.0.0/12", []),                                    # just beyond
])
def test_a_range_is_taken_by_any_route_overlapping_it_but_the_clusters_own(extra, cidr, expected):
    assert doctor.covering(cidr, ROUTES + extra) == expected


@pytest.mark.parametrize("ahead", [0.0, 3.0, -42.0, 600.0])
def test_clock_skew_from_a_date_header(ahead):
    now = 1_800_000_000.25
    date = formatdate(now - ahead, usegmt=True)            # whole seconds, as servers write it
    assert abs(doctor.skew(now, now + 0.01, date) - ahead) <= 0.8


@pytest.mark.parametrize("version, mark", [
    ("v1.32.4-dispatcher", doctor.OK), ("v1.27.16", doctor.OK), ("v1.33.1", doctor.OK),
    ("v1.26.15", doctor.WRONG), ("v1.34.0", doctor.WRONG), ("", doctor.WRONG)])
def test_kubectl_must_be_one_of_the_versions_the_lessons_are_checked_with(monkeypatch, version, mark):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: "/usr/bin/" + name)
    answer = f'{{"clientVersion": {{"gitVersion": "{version}"}}}}' if version else ""
    monkeypatch.setattr(doctor, "run", lambda *argv, **kw: subprocess.CompletedProcess(argv, 0, answer, ""))
    found = doctor.kubectl_version(doctor.Machine("master"))
    assert found.mark == mark, found
    assert (found.fix == "") == (mark == doctor.OK)


@pytest.mark.parametrize("hostname, role, node, expected", [
    ("vm-1234", "node", "node1", doctor.Machine("node", node="node1")),
    ("vm-1234", "", "node1", doctor.Machine("node", node="node1")),         # NODE says it is a node
    ("node2", "", "", doctor.Machine("node", node="node2")),                # its hostname is a node's name
    ("master", "", "", doctor.Machine("master", nodes=("node1", "node2"))),
    ("vm-1234", "master", "", doctor.Machine("master", nodes=("node1", "node2"))),
    ("vm-1234", "node", "", "which node is this? make doctor ROLE=node NODE=node1"),
    ("vm-1234", "", "", doctor.Machine("one")),                             # a computer on its own
    ("vm-1234", "one", "", doctor.Machine("one")),
])
def test_the_role_comes_from_the_arguments_or_the_hostname(monkeypatch, hostname, role, node, expected):
    monkeypatch.setattr(doctor.socket, "gethostname", lambda: hostname)
    args = Namespace(role=role or None, node=node, master="", nodes="node1,node2")
    assert doctor.which_machine(args) == expected


def test_a_failed_check_skips_what_depends_on_it(monkeypatch):
    monkeypatch.setattr(doctor, "CHECKS", {"node": (doctor.docker_engine, doctor.images)})
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)       # no docker command at all
    found = doctor.examine(doctor.Machine("node", node="node1"))
    assert [(f.mark, f.item) for f in found] == [(doctor.WRONG, "Docker engine"), (doctor.SKIPPED, "images")]
