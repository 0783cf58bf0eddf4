"""Fixtures for chapter 04: an API server per test (in a fresh directory)
and a controller manager process beside it."""
from __future__ import annotations

import pytest

from controllers_harness import APIServer, Client, ControllerManager


@pytest.fixture
def apiserver(tmp_path):
    server = APIServer(tmp_path / "data").start()
    yield server
    server.stop()


@pytest.fixture
def api(apiserver) -> Client:
    return Client(apiserver.url)


@pytest.fixture
def manager(apiserver, tmp_path):
    running = ControllerManager(apiserver.url, tmp_path).start()
    yield running
    running.stop()
