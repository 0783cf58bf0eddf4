"""Fixtures for chapter 03. Every end-to-end test gets its own API server in
a fresh temporary directory: nodes are cluster-wide, so tests sharing one
server would see (and schedule onto) each other's nodes."""
from __future__ import annotations

import pytest

from scheduler_harness import APIServer, Cluster


@pytest.fixture
def cluster(tmp_path):
    server = APIServer(tmp_path / "data").start()
    cluster = Cluster(server, tmp_path)
    yield cluster
    cluster.stop()
