"""05-proxy-dns/machines.py: machines that are what they claim, and leave nothing behind."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from machines import MachineError, Machines, missing_requirements
from network_harness import free_subnet, require


def leftovers(made: Machines) -> list[str]:
    """Everything of these machines' that could outlive them."""
    found = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"netns {line.split()[0]}" for line in netns.splitlines() if line.startswith(made.prefix + "-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
              if line.split(":")[1].strip().startswith(made.prefix + "-")]
    rules = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout
    found += [f"rule {line}" for line in rules.splitlines() if f"groundup machines {made.prefix}" in line]
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [f"mount {line.split()[4]}" for line in mounts.splitlines() if str(made.state) in line.split()[4]]
    found += [f"directory {path}" for path in (made.state, made.data) if path.exists()]
    engines = subprocess.run(["pgrep", "-af", f"dockerd --data-root {made.data}"], capture_output=True, text=True)
    found += [f"process {line}" for line in engines.stdout.splitlines()]
    return found


@pytest.fixture
def small(docker_client):
    problem = missing_requirements()
    require(problem is None, f"the machines are network namespaces: {problem}")
    made = Machines(prefix=f"gs{os.getpid() % 10000:04d}", subnet=free_subnet(), names=("master", "node1"))
    yield made
    made.down()


def test_a_machine_has_its_own_address_hostname_hosts_tmp_and_docker_engine(small, monkeypatch, tmp_path):
    # A checkout under /tmp (CI clones into a temporary directory) must stay
    # visible on the machines, though their /tmp is their own.
    import machines
    checkout = Path(tempfile.mkdtemp(prefix="groundup-checkout-", dir="/tmp"))
    (checkout / "Makefile").write_text("# a checkout\n")
    monkeypatch.setattr(machines, "REPOSITORY", checkout)
    small.up()
    assert small.run("node1", "cat", str(checkout / "Makefile")).stdout == "# a checkout\n"
    assert small.run("node1", "ls", "/tmp").stdout.split() == [checkout.name]
    shutil.rmtree(checkout)
    assert small.run("node1", "hostname").stdout.strip() == "node1"
    assert small.run("node1", "getent", "hosts", "master").stdout.split()[0] == small.address("master")
    assert f"inet {small.address('node1')}/" in small.run("node1", "ip", "-o", "addr", "show", "eth0").stdout
    assert "default" not in small.run("node1", "ip", "route").stdout      # no way out of the host
    small.run("node1", "sh", "-c", "echo mine > /tmp/groundup-private")
    assert not Path("/tmp/groundup-private").exists()
    engine = small.run("node1", "docker", "info", "-f", "{{.Name}} {{.DockerRootDir}}").stdout.split()
    assert engine == ["node1", str(small.data / "node1" / "docker")]
    assert "busybox" in small.run("node1", "docker", "image", "ls").stdout


def test_down_removes_everything_and_is_safe_to_run_twice(small):
    small.up()
    small.run("node1", "docker", "run", "-d", "busybox:1.35", "sleep", "3600")
    sleeper = small.popen("node1", ["sleep", "3600"])       # what a lesson leaves running
    assert leftovers(small)
    small.down()
    assert leftovers(small) == []
    assert sleeper.wait(timeout=10) is not None
    small.down()
    assert leftovers(small) == []


def test_up_refuses_a_subnet_the_host_already_routes(small):
    routed = subprocess.run(["ip", "-json", "route", "show"], capture_output=True, text=True).stdout
    # A route wide enough to hold machines (Docker's own bridge, at least): a
    # /30 that another test's namespaces left for a moment would be refused
    # for its size before its route was looked at.
    taken = next(r["dst"] for r in json.loads(routed)
                 if r["dst"] != "default" and "/" in r["dst"] and int(r["dst"].split("/")[1]) <= 24)
    with pytest.raises(MachineError, match="already routed on this host"):
        Machines(prefix=small.prefix, subnet=taken, names=("master",)).up()
    assert leftovers(small) == []


@pytest.mark.parametrize("args, complaint", [
    (["--subnet", "foo", "list"], "--subnet 'foo': 'foo' does not appear to be an IPv4 or IPv6 network"),
    (["--subnet", "10.213.0.0/30", "list"], "room for 3 machines"),
    (["--names", "node1,node1", "list"], "distinct hostnames"),
    (["--names", "Master,node1", "list"], "lowercase"),
    (["--hostnames", "vm-a,vm-b", "list"], "--hostnames vm-a,vm-b: one distinct hostname per machine (master,node1,node2)"),
    (["--hostnames", "vm-a,vm-a,vm-c", "list"], "one distinct hostname per machine"),
    (["--prefix", "much-too-long", "list"], "too long for Linux interface names"),
    (["on", "node9", "--", "true"], "no machine 'node9': the machines are master, node1, node2"),
])
def test_bad_arguments_are_one_line_errors(args, complaint, capsys):
    from machines import main
    assert main(args) == 1
    error = capsys.readouterr().err
    assert complaint in error and error.count("\n") == 1, error
