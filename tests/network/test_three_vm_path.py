"""The three-VM path, on machines made of namespaces whose hostnames are not
their node names (vm-a, vm-b, vm-c play master, node1 and node2), as VMs'
often are not.

Chapter 05's part 1 is started as the lesson types it (its own command
lines, read from the README, with the certificates `make certs` makes for
the master's address), and its nodes must register as node1 and node2.
On that cluster `make doctor` passes on the master and on a node, and
names each thing broken on purpose on a line of its own, with the fix.

Needs root (namespaces) and Docker: without them it skips with one line,
unless GROUNDUP_REQUIRE_DOCKER=1 (CI), where it fails.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from machines import Machines
from network_harness import PY, ROOT, Cluster, own_machines, ready
from polling import wait_for

LESSON = ROOT / "05-proxy-dns" / "lesson-1-the-pod-network.md"
HOSTNAMES = ("vm-a", "vm-b", "vm-c")
DOCTOR = str(ROOT / ".ci" / "doctor.py")


def lesson_commands(machine: str) -> list[str]:
    """The programs the lesson's part 1 starts on a machine, in its order
    (each once: a program started again later in the part is the same)."""
    prompt = f"{machine}$ python "
    commands = {}
    for line in LESSON.read_text().splitlines():
        if line.startswith(prompt):
            command = line[len(prompt):]
            commands.setdefault(command.split()[0], command)
    return list(commands.values())


@pytest.fixture(scope="module")
def machines(docker_client):
    with own_machines("gv", ("master", "node1", "node2"), HOSTNAMES) as made:
        yield made


@pytest.fixture(scope="module")
def cluster(machines):
    """Part 1 as typed: the API server and the controller manager on master,
    a kubelet and a route agent on each node; .certs/ and the data directory
    are the test's own."""
    workdir = Path(tempfile.mkdtemp(prefix="groundup-three-vms-", dir="/var/tmp"))   # every machine sees it
    certs = workdir / "certs"
    subprocess.run([PY, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(certs),
                    "--master-ip", machines.address("master"), "--master-name", "master", "--nodes", "node1,node2"],
                   check=True, capture_output=True)
    made = Cluster(machines, workdir)
    try:
        for machine in ("master", "node1", "node2"):
            for command in lesson_commands(machine):
                command = command.replace(".certs/", f"{certs}/").replace("/tmp/groundup-data", str(workdir / "data"))
                program, *flags = shlex.split(command)
                made.start(f"{Path(program).stem}-{machine}", machine, program, *flags)
            if machine == "master":
                wait_for(lambda: on(machines, "master", "curl", "-sf", "127.0.0.1:8080/healthz") == "ok", 30,
                         what="the lesson's API server on master")
        yield made
    finally:
        made.tear_down()
        shutil.rmtree(workdir, ignore_errors=True)


def on(machines: Machines, machine: str, *command: str) -> str:
    return machines.run(machine, *command, check=False).stdout.strip()


def nodes(machines: Machines) -> dict[str, dict]:
    listed = json.loads(on(machines, "master", "curl", "-sf", "127.0.0.1:8080/api/v1/nodes") or '{"items": []}')
    return {node["metadata"]["name"]: node for node in listed["items"]}


def test_the_lessons_node_commands_register_node1_and_node2_whatever_the_hostnames(machines, cluster, joined):
    assert on(machines, "node1", "hostname") == "vm-b"
    registered = nodes(machines)
    assert sorted(registered) == ["node1", "node2"], cluster.logs()
    # Each route agent knew which Node was its own: a route to the other's range only.
    node2_range = registered["node2"]["spec"]["podCIDR"]
    wait_for(lambda: on(machines, "node1", "ip", "route", "show", "proto", "213").startswith(
        f"{node2_range} via {machines.address('node2')}"), 30, what="node1's route to node2's pods")
    assert registered["node1"]["spec"]["podCIDR"] not in on(machines, "node1", "ip", "route", "show", "proto", "213")


# --- make doctor -----------------------------------------------------------------

def doctor(machines: Machines, machine: str, *args: str) -> subprocess.CompletedProcess:
    """doctor.py on a machine with the system's python3, as `make doctor` runs it."""
    return machines.run(machine, "python3", DOCTOR, *args, check=False)


def on_node1(machines: Machines) -> subprocess.CompletedProcess:
    return doctor(machines, "node1", "--role", "node", "--node", "node1", "--master", "master")


def on_master(machines: Machines) -> subprocess.CompletedProcess:
    return doctor(machines, "master", "--role", "master", "--nodes", "node1,node2")


def marked(done: subprocess.CompletedProcess, mark: str) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith(mark + " ")]


@pytest.fixture
def joined(machines, cluster):
    """The nodes registered and Ready: what a prepared cluster looks like."""
    try:
        wait_for(lambda: all(ready(n) for n in nodes(machines).values()) and len(nodes(machines)) == 2, 90,
                 what="two Ready nodes with their pod ranges")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(nodes(machines), indent=1)[:3000]}\n{cluster.logs()}") from None


def test_doctor_passes_on_a_prepared_node_and_says_what_its_hostname_means(machines, joined):
    done = on_node1(machines)
    assert done.returncode == 0 and done.stdout.endswith("doctor: ready\n"), done.stdout + done.stderr
    assert not marked(done, "✗") and not marked(done, "-"), done.stdout
    for item in ("virtualenv", "Docker engine", "images", "iptables", "pod range", "service range",
                 "master's API server", "clock"):
        assert any(line[2:].startswith(item) for line in marked(done, "✓")), (item, done.stdout)
    [note] = marked(done, "!")
    assert note.startswith("! hostname") and "vm-b, not node1" in note and "--node-name node1" in note, note


def test_doctor_passes_on_a_prepared_master(machines, joined, kubectl):
    done = on_master(machines)
    assert done.returncode == 0 and done.stdout.endswith("doctor: ready\n"), done.stdout + done.stderr
    lines = marked(done, "✓")
    assert len(lines) == 6 and not marked(done, "✗"), done.stdout
    assert any(f"node1's kubelet ports {machines.address('node1')}: 10255 answers, 10256 refused" in " ".join(line.split())
               for line in lines), done.stdout


def wrong_once(done: subprocess.CompletedProcess) -> str:
    """The one line a broken case must have: what is wrong and the fix."""
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = marked(done, "✗")
    assert done.stdout.endswith("doctor: 1 to fix, then run this again\n"), done.stdout
    return " ".join(line.split())


def test_doctor_names_an_image_missing_from_a_nodes_engine(machines, joined):
    machines.run("node1", "docker", "rmi", "busybox:1.35")
    try:
        line = wrong_once(on_node1(machines))
    finally:
        machines.load_image("busybox:1.35", ("node1",))
    assert line == "✗ images busybox:1.35 missing from this machine's engine; fix: make images"


def test_doctor_names_a_master_where_nothing_listens_on_6443(machines, cluster, joined):
    apiserver = cluster.processes["apiserver-master"].args
    cluster.stop("apiserver-master")
    try:
        done = on_node1(machines)
    finally:
        cluster.start("apiserver-master", "master", *apiserver[apiserver.index(PY) + 1:])
        wait_for(lambda: on(machines, "master", "curl", "-sf", "127.0.0.1:8080/healthz") == "ok", 30,
                 what="the API server back on master")
    line = wrong_once(done)
    assert line == (f"✗ master's API server (port 6443) nothing listens on {machines.address('master')}:6443; "
                    "fix: start the API server on the master (chapter 02 part 5, step 1), then run this again")
    [skipped] = marked(done, "-")
    assert skipped.startswith("- clock") and "not checked" in skipped


def test_doctor_names_a_route_over_the_pod_range(machines, joined):
    machines.run("node1", "ip", "route", "add", "10.244.128.0/17", "dev", "eth0")
    try:
        line = wrong_once(on_node1(machines))
    finally:
        machines.run("node1", "ip", "route", "del", "10.244.128.0/17", "dev", "eth0")
    assert line.startswith("✗ pod range 10.244.0.0/16 this machine already routes 10.244.128.0/17 dev eth0; "
                           "fix: ip route del 10.244.128.0/17 if it is a leftover"), line


def test_doctor_on_the_master_names_a_node_whose_firewall_drops_a_kubelet_port(machines, joined, kubectl):
    rule = ["INPUT", "-p", "tcp", "--dport", "10256", "-j", "DROP"]
    machines.run("node2", "iptables", "-w", "-I", *rule)
    try:
        line = wrong_once(on_master(machines))
    finally:
        machines.run("node2", "iptables", "-w", "-D", *rule)
    assert line == (f"✗ node2's kubelet ports {machines.address('node2')}: 10255 answers, 10256 silent; "
                    "fix: let the master in on node2: iptables -I INPUT -p tcp --dport 10256 -j ACCEPT "
                    "(or the cloud's firewall); the machines must share one network")
