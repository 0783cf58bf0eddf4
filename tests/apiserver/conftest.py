"""Fixtures for chapter 02: one real API server process per test session,
and a fresh namespace per test so tests never see each other's objects.
Tests that kill or restart a server start their own (apiserver_harness.APIServer).

The real kubectl is a test client too (test_kubectl.py); its `kubectl`
fixture lives in tests/conftest.py, beside `docker_client`, since chapter
01's cluster tests use it as well."""
from __future__ import annotations

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
