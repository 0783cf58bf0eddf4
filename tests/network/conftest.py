"""Chapter 05's fixtures (network_harness.py says what they make)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from machines import Machines, missing_requirements
from network_harness import Cluster, free_subnet, require


@pytest.fixture(scope="module")
def machines(docker_client):
    problem = missing_requirements()
    require(problem is None, f"the machines are network namespaces: {problem}")
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
        made.bring_up("--controllers", "nodeipam,endpoints")
        yield made
    finally:
        made.tear_down()
        shutil.rmtree(workdir, ignore_errors=True)


