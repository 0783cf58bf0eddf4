"""A real apiserver.py process over a temporary data directory
(common/tooling/apiserver_process.py, which the chapters' benchmarks use too), the
stores to run it on, and a small client.

Tests talk to it over loopback HTTP, as kubectl does. The client returns
`requests` responses untouched, so a test can check codes, headers and
Status bodies.
"""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import requests

from common.tooling.apiserver_process import APISERVER, APIServer  # noqa: F401 (re-exported to the tests)

ROOT = Path(__file__).resolve().parents[2]


class Backend:
    """A store for the API servers a test starts: the JSON files in the
    data directory, or `etcd` (an etcd_cluster.EtcdCluster), each server
    under a key prefix of its own so that tests sharing one etcd never
    see each other's objects."""

    def __init__(self, name: str, etcd=None):
        self.name, self.etcd = name, etcd

    def flags(self) -> list[str]:
        if self.name == "json-files":
            return []
        return ["--storage-backend", "etcd3", "--etcd-servers", self.etcd.client_urls,
                "--etcd-prefix", f"/{unique('test')}"]

    def server(self, data_dir: Path, *extra: str, port: int | None = None) -> APIServer:
        return APIServer(data_dir, *self.flags(), *extra, port=port)

    def __repr__(self) -> str:
        return self.name


class Client:
    """requests.Session with the server's URL in front of every path."""

    def __init__(self, url: str):
        self.url = url
        self.session = requests.Session()

    def request(self, method: str, path: str, body=None, content_type: str = "application/json",
                **kwargs) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None:
            headers.setdefault("Content-Type", content_type)
        kwargs.setdefault("timeout", 30)
        if self.session.verify is not True:
            # Per request: requests lets REQUESTS_CA_BUNDLE override a session's CA file.
            kwargs.setdefault("verify", self.session.verify)
        return self.session.request(method, self.url + path, data=body, headers=headers, **kwargs)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, body, content_type="application/merge-patch+json", **kw):
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path, body=None, **kw):
        return self.request("DELETE", path, body, **kw)


def make_certs(out: Path, nodes: str = "node1") -> Path:
    """What `make certs` writes (certs.py: the CA, the server's certificate,
    tokens and kubeconfigs) into out, for a server on a test's own port:
    the kubeconfigs' address is a placeholder the tests do not use."""
    subprocess.run([sys.executable, str(ROOT / "02-apiserver" / "certs.py"), "--out", str(out),
                    "--nodes", nodes, "--apiserver", "https://127.0.0.1:1"], check=True, capture_output=True)
    return out


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pod(name: str, image: str = "busybox:1.35", labels: dict | None = None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "spec": {"containers": [{"name": "app", "image": image}], **spec}}


def deployment(name: str, replicas: int = 2) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}}}


def watch_lines(response: requests.Response):
    """Parsed events of a streaming watch response, as they arrive."""
    for line in response.iter_lines():
        if line:
            yield json.loads(line)
