"""The demos run the learner's component in place of ours, and stop with
one line naming it when it exits: `make demo-01 KUBELET=...`, `make
demo-02 APISERVER=...`, `make demo-03 SCHEDULER=...`, `make demo-04
CONTROLLER=...`, `make demo DNS=...` (chapter 05's through
machine_cluster.Cluster, since its machines need root and a minute).

Each test hands the demo a stand-in for the learner's file that prints a
marker and its command line, then exits 1. A demo that ignored its flag
would run ours: it would never name the file nor show the marker. No demo
runs to the end here (the suite has no time for it): the make targets
with a solved starter show that by hand.

The demos' API server prefers port 8080 and their kubelets are always
demo-node1 and demo-node2, so this file is in tests/conftest.py's
THIS_COMPUTER group, never beside a lesson.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from common.tooling.polling import wait_for
from common.tooling.your_program import YourProgramExited
from machine_cluster import CLUSTER_DNS, Cluster

ROOT = Path(__file__).resolve().parents[2]
MARKER = "a stand-in for the learner's program"


def stand_in(tmp_path: Path, name: str) -> Path:
    """A learner's file that says it ran, with which flags, and exits 1."""
    path = tmp_path / name
    path.write_text(f"import sys\nprint({MARKER!r}, 'started with', sys.argv[1:])\nsys.exit(1)\n")
    return path


def test_demo_02_runs_your_apiserver_and_names_it_when_it_exits(tmp_path):
    mine = stand_in(tmp_path, "my_apiserver.py")
    demo = subprocess.run([sys.executable, "02-apiserver/demo.py", "--apiserver", str(mine)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    output = demo.stdout + demo.stderr
    assert demo.returncode != 0, output
    assert f"your API server ({mine}) exited with code 1; its last lines:" in demo.stderr, output
    assert MARKER in demo.stderr, output
    # Started with the starting file's command line, not ours.
    assert "'--data-dir'" in demo.stderr and "'--port'" in demo.stderr, output
    assert output.count(MARKER) == 1 and "Traceback" not in output, output


# demo, its flag, what the message calls yours, a flag of the starter's command line
ON_DOCKER = [("01-kubelet/demo.py", "--kubelet", "kubelet", "--manifests"),
             ("03-scheduler/demo.py", "--scheduler", "scheduler", "--apiserver"),
             ("04-controllers/demo.py", "--controller", "ReplicaSet controller", "--apiserver")]


@pytest.mark.parametrize("demo, flag, role, given", ON_DOCKER)
def test_demo_on_docker_runs_yours_and_names_it_when_it_exits(docker_client, tmp_path, demo, flag, role, given):
    mine = stand_in(tmp_path, "mine.py")
    run = subprocess.run([sys.executable, demo, flag, str(mine)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert f"your {role} ({mine}) exited with code 1; its last lines:" in run.stderr, output
    assert MARKER in run.stderr and f"'{given}'" in run.stderr, output
    # Once: in the message, not again in a dump of every log; and no traceback.
    assert output.count(MARKER) == 1 and "Traceback" not in output, output


class ThisComputer:
    """Stands in for machines.Machines (which needs root): runs a machine's
    program here, outside any namespace. Enough to see which cluster DNS a
    Cluster starts on a node, and what it does when that exits; the real
    machines are tests/network's and the lessons'."""

    def popen(self, name: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(argv, **kwargs)

    def run(self, name: str, *argv: str, **kwargs) -> None:
        """`ip addr replace ...` on the machine: nothing to do on this computer."""

    def address(self, name: str) -> str:
        return "127.0.0.1"


def test_demo_05_runs_your_cluster_dns_and_names_it_when_it_exits(tmp_path):
    mine = stand_in(tmp_path, "my_cluster_dns.py")
    cluster = Cluster(ThisComputer(), tmp_path, your_dns=mine)      # as demo.py --dns makes it
    try:
        cluster.start_dns("node1")
        with pytest.raises(YourProgramExited) as exited:
            wait_for(cluster.check_yours, 20, what="the stand-in to exit")
    finally:
        cluster.tear_down()
    message = str(exited.value)
    assert message.startswith(f"your cluster DNS ({mine}) exited with code 1; its last lines:"), message
    assert MARKER in message and f"'--address', '{CLUSTER_DNS}'" in message, message


def test_demo_05_refuses_your_cluster_dns_under_tmp_before_making_machines():
    """Each machine mounts a /tmp of its own: the nodes could not open a file there."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:     # whatever TMPDIR says
        mine = stand_in(Path(tmp), "my_cluster_dns.py")
        demo = subprocess.run([sys.executable, "05-proxy-dns/demo.py", "--dns", str(mine)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert demo.returncode != 0, demo.stdout + demo.stderr
    assert demo.stderr.startswith(f"your cluster DNS ({mine}) is under /tmp"), demo.stdout + demo.stderr
    assert "machines up" not in demo.stdout and MARKER not in demo.stdout + demo.stderr
