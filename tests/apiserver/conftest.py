"""Fixtures for chapter 02: one real API server process per test session,
and a fresh namespace per test so tests never see each other's objects.
Tests that kill or restart a server start their own (apiserver_harness.APIServer).

The store-level tests and a good part of the REST, watch and crash tests run
against both stores: they take `backend` (or `api_on_each_backend`), which
is "json-files" and then "etcd3" (a real etcd, the `etcd` fixture; those
rows are `exhaustive`: make test's, not make test-02's).

The real kubectl is a test client too (test_kubectl.py); its `kubectl`
fixture lives in tests/conftest.py, beside `docker_client`, since chapter
01's cluster tests use it as well."""
from __future__ import annotations

import pytest

from apiserver_harness import APIServer, Backend, Client, unique

# The etcd rows of this store-by-test table are marked exhaustive: make test
# runs every test on both stores, a chapter's checkpoint (make test-02) on
# the JSON files only, and etcd's own tests (test_etcd_store.py, test_ha.py)
# either way.
BACKENDS = ("json-files", pytest.param("etcd3", marks=pytest.mark.exhaustive))


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


@pytest.fixture(params=BACKENDS)
def backend(request) -> Backend:
    """How to start an API server on each store: `backend.server(data_dir, *flags)`."""
    return Backend(request.param, request.getfixturevalue("etcd") if request.param == "etcd3" else None)


@pytest.fixture(scope="session", params=BACKENDS)
def apiserver_on_each_backend(request, tmp_path_factory):
    etcd = request.getfixturevalue("etcd") if request.param == "etcd3" else None
    server = Backend(request.param, etcd).server(tmp_path_factory.mktemp(f"apiserver-{request.param}") / "data")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def api_on_each_backend(apiserver_on_each_backend) -> Client:
    """A module that overrides `api` with this runs every test on both stores."""
    return Client(apiserver_on_each_backend.url)
