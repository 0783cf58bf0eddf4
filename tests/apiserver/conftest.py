"""Fixtures for chapter 02: one real API server process per test session,
and a fresh namespace per test so tests never see each other's objects.
Tests that kill or restart a server start their own (apiserver_harness.APIServer).

The real kubectl is a test client too (test_kubectl.py). Without it those
tests skip with one line saying why, unless GROUNDUP_REQUIRE_KUBECTL=1 (CI),
where a missing kubectl is a failure: CI must never pass by skipping."""
from __future__ import annotations

import os
import shutil

import pytest

from apiserver_harness import APIServer, Client, unique


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory):
    server = APIServer(tmp_path_factory.mktemp("apiserver") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def api(apiserver) -> Client:
    return Client(apiserver.url)


@pytest.fixture
def namespace(api) -> str:
    name = unique("ns")
    response = api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert response.status_code == 201, response.text
    return name


@pytest.fixture(scope="session")
def kubectl() -> str:
    """The path of the kubectl binary, found on PATH."""
    path = shutil.which("kubectl")
    if path is None:
        reason = "kubectl is not on PATH: install kubectl 1.32 to run the kubectl tests"
        if os.environ.get("GROUNDUP_REQUIRE_KUBECTL") == "1":
            pytest.fail(f"GROUNDUP_REQUIRE_KUBECTL=1 but {reason}")
        pytest.skip(reason)
    return path
