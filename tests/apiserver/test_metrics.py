"""GET /metrics: Kubernetes' metric names and labels, counted for every request,
open on the insecure port and guarded by the policy on the secure one."""
from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from apiserver_harness import ROOT, APIServer, Client, unique
from polling import wait_for
from test_gauntlet import SecureServer, as_user


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server of this module's own, so counts are not other tests' requests."""
    started = APIServer(tmp_path_factory.mktemp("metrics") / "data").start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server.url)


def scrape(client: Client) -> list:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return [sample for family in text_string_to_metric_families(response.text) for sample in family.samples]


def value(samples: list, name: str, **labels: str) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 if none)."""
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def test_requests_are_counted_by_verb_resource_and_code(client):
    namespace = unique("ns")
    assert client.post("/api/v1/namespaces", {"metadata": {"name": namespace}}).status_code == 201
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    before = scrape(client)
    assert client.post(path, {"metadata": {"name": "one"}}).status_code == 201
    assert client.post(path, {"metadata": {"name": "one"}}).status_code == 409
    assert client.get(f"{path}/one").status_code == 200
    assert client.get(f"{path}/nope").status_code == 404
    assert client.get(path).status_code == 200
    assert client.patch(f"{path}/one", {"data": {"a": "b"}}).status_code == 200
    after = scrape(client)

    def counted(**labels) -> float:
        labels = {"resource": "configmaps", "group": "", "version": "v1", "component": "apiserver", **labels}
        return value(after, "apiserver_request_total", **labels) - value(before, "apiserver_request_total", **labels)
    assert counted(verb="POST", code="201", scope="resource") == 1
    assert counted(verb="POST", code="409") == 1
    assert counted(verb="GET", code="200", scope="resource") == 1
    assert counted(verb="GET", code="404") == 1
    assert counted(verb="LIST", code="200", scope="namespace") == 1
    assert counted(verb="PATCH", code="200") == 1


def test_every_request_has_a_duration(client):
    before = scrape(client)
    client.get("/version")
    client.get("/api/v1/nodes")
    after = scrape(client)
    for labels in ({"verb": "GET", "subresource": "/version"}, {"verb": "LIST", "resource": "nodes", "scope": "cluster"}):
        counts = [value(s, "apiserver_request_duration_seconds_count", **labels) for s in (before, after)]
        assert counts[1] - counts[0] == 1, labels
        # the +Inf bucket holds every observation
        assert value(after, "apiserver_request_duration_seconds_bucket", le="+Inf", **labels) == counts[1]
    assert {s.labels["le"] for s in after if s.name == "apiserver_request_duration_seconds_bucket"} >= {
        "0.005", "0.025", "1.0", "60.0", "+Inf"}      # Kubernetes' buckets


def test_store_calls_are_timed_per_operation_and_kind(client):
    """etcd_request_duration_seconds{operation, type}: what the store costs a
    request, apart from the rest of the request's time."""
    namespace = unique("ns")
    assert client.post("/api/v1/namespaces", {"metadata": {"name": namespace}}).status_code == 201
    path = f"/api/v1/namespaces/{namespace}/secrets"
    before = scrape(client)
    assert client.post(path, {"metadata": {"name": "s"}}).status_code == 201
    assert client.patch(f"{path}/s", {"data": {"a": "Yg=="}}).status_code == 200
    assert client.delete(f"{path}/s").status_code == 200
    after = scrape(client)

    def timed(operation: str) -> float:
        labels = {"operation": operation, "type": "secrets"}
        return (value(after, "etcd_request_duration_seconds_count", **labels)
                - value(before, "etcd_request_duration_seconds_count", **labels))
    assert timed("create") == 1 and timed("update") == 1 and timed("delete") == 1
    assert value(after, "etcd_request_duration_seconds_sum", operation="create", type="secrets") > 0


def test_made_up_paths_share_one_series(client):
    for path in ("/nothing/here", "/nor/here", "/api/v1/nosuchkind"):
        assert client.get(path).status_code == 404
    samples = scrape(client)
    assert not any("here" in s.labels.get("subresource", "") or "nosuchkind" in s.labels.get("resource", "")
                   for s in samples)
    assert value(samples, "apiserver_request_total", code="404", resource="", subresource="") >= 3


def test_the_scrape_itself_is_in_flight(client):
    samples = scrape(client)
    assert value(samples, "apiserver_current_inflight_requests", request_kind="readOnly") >= 1
    assert [s for s in samples if s.name == "apiserver_current_inflight_requests"
            and s.labels == {"request_kind": "mutating"}]


def test_stored_objects_are_counted_per_kind(client):
    namespace = unique("ns")
    client.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    before = value(scrape(client), "apiserver_storage_objects", resource="configmaps")
    for name in ("a", "b", "c"):
        client.post(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": name}})
    samples = scrape(client)
    assert value(samples, "apiserver_storage_objects", resource="configmaps") == before + 3
    assert value(samples, "apiserver_storage_objects", resource="namespaces") >= 5    # the four system ones too
    assert any(s.labels == {"resource": "deployments.apps"} for s in samples
               if s.name == "apiserver_storage_objects")
    assert not any("selfsubject" in s.labels.get("resource", "") for s in samples
                   if s.name == "apiserver_storage_objects")


def test_an_open_watch_is_long_running_and_counted_when_it_ends(client, server):
    watching = {"name": "apiserver_longrunning_requests", "verb": "WATCH", "resource": "services",
                "scope": "cluster"}
    finished = {"verb": "WATCH", "resource": "services", "code": "200"}
    before = value(scrape(client), "apiserver_request_total", **finished)
    stream = requests.get(f"{server.url}/api/v1/services?watch=true&timeoutSeconds=60", stream=True, timeout=30)
    try:
        assert stream.status_code == 200
        wait_for(lambda: value(scrape(client), **watching) == 1, timeout=10, what="the watch in the gauge")
        assert value(scrape(client), "apiserver_request_total", **finished) == before   # not finished yet
    finally:
        stream.close()
    wait_for(lambda: value(scrape(client), **watching) == 0, timeout=30, what="the closed watch to leave the gauge")
    assert value(scrape(client), "apiserver_request_total", **finished) == before + 1


# ----- who may read them -----

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = tmp_path_factory.mktemp("certs")
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(out),
                    "--nodes", "node1", "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    started = SecureServer(tmp_path_factory.mktemp("secure") / "data", certs).start()
    yield started
    started.stop()


@pytest.mark.parametrize("user, code", [
    ("admin", 200), ("viewer", 200),                       # their policy lines allow every path
    ("system:node:node1", 403), ("scheduler", 403),        # discovery, yes; metrics, no
    (None, 403),                                           # system:anonymous: no policy line
])
def test_on_the_secure_port_the_policy_decides(secure, certs, user, code):
    response = as_user(secure, certs, user).get("/metrics")
    assert response.status_code == code, response.text
    if code == 403:
        assert response.json()["message"] == (f'forbidden: User "{user or "system:anonymous"}" cannot get path '
                                               '"/metrics": No policy matched.')


def test_refusals_are_counted_too(secure, certs):
    node = as_user(secure, certs, "system:node:node1")
    assert node.get("/apis/apps/v1/namespaces/default/deployments").status_code == 403
    samples = scrape(as_user(secure, certs, "admin"))
    assert value(samples, "apiserver_request_total", verb="LIST", resource="deployments", group="apps",
                 code="403") == 1


def test_kubectl_get_raw_metrics(secure, certs, kubectl, tmp_path):
    def run(user: str):
        config = tmp_path / f"{user}.kubeconfig"
        config.write_text((certs / f"{user}.kubeconfig").read_text().replace("https://127.0.0.1:1", secure.secure_url))
        return subprocess.run([kubectl, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"),
                               "get", "--raw", "/metrics"], capture_output=True, text=True, timeout=60)
    admin = run("admin")
    assert admin.returncode == 0 and "apiserver_request_total{" in admin.stdout, admin.stderr
    node = run("node1")
    assert node.returncode == 1
    assert node.stderr.strip() == ('Error from server (Forbidden): forbidden: User "system:node:node1" '
                                   'cannot get path "/metrics": No policy matched.')


def test_the_insecure_port_is_open(secure):
    assert Client(secure.url).get("/metrics").status_code == 200
