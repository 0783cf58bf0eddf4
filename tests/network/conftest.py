"""Chapter 05's fixtures (network_harness.py says what they make)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from machines import Machines
from network_harness import Cluster, free_subnet, ready, require
from polling import wait_for


@pytest.fixture(scope="module")
def machines(docker_client):
    require(os.geteuid() == 0, "the machines are network namespaces: run the tests as root")
    require(all(shutil.which(t) for t in ("ip", "iptables", "nsenter", "unshare", "dockerd")),
             "the machines need ip, iptables, nsenter, unshare and dockerd (make setup)")
    made = Machines(prefix=f"gt{os.getpid() % 10000:04d}", subnet=free_subnet(),
                    names=("master", "node1", "node2", "node3"))
    try:
        made.up()
        yield made
    finally:
        made.down()


@pytest.fixture(scope="module")
def cluster(machines):
    workdir = Path(tempfile.mkdtemp(prefix="groundup-network-", dir="/var/tmp"))  # not /tmp: each machine has its own
    made = Cluster(machines, workdir)
    try:
        made.start_control_plane("--controllers", "nodeipam,endpoints")
        for node in ("node1", "node2"):
            made.join(node)
        wait_for(lambda: all(ready(made.node(n)) for n in ("node1", "node2")), 60,
                 what="node1 and node2 Ready with their podCIDRs")
        yield made
    finally:
        for key in list(made.processes):
            made.stop(key)
        shutil.rmtree(workdir, ignore_errors=True)


