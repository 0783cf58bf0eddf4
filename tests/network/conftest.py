"""Chapter 05's fixtures (network_harness.py says what they make)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from network_harness import Cluster, own_machines


@pytest.fixture(scope="module")
def machines(docker_client):
    with own_machines("gt", ("master", "node1", "node2", "node3")) as made:
        yield made


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


