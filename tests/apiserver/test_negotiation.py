"""`Accept` as Kubernetes negotiates it: JSON, YAML, or 406 NotAcceptable (issue 35).

What kubectl, client-go, the Python client and browsers send must keep
getting JSON; `application/yaml` gets YAML; a type we cannot write is a
406 naming the types we can."""
from __future__ import annotations

import json

import pytest
import yaml

KUBECTL_GET = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
               "application/json")
NOT_ACCEPTABLE = ("only the following media types are accepted: "
                  "application/json, application/yaml, application/vnd.kubernetes.protobuf")

ACCEPTS = [
    # name, Accept, the answer's Content-Type (None: 406)
    ("no Accept", None, "application/json"),
    ("anything", "*/*", "application/json"),
    ("a browser", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json"),
    ("kubectl get", KUBECTL_GET, "application/json"),
    ("the Python client", "application/json", "application/json"),
    ("client-go, protobuf first", "application/vnd.kubernetes.protobuf,application/json", "application/json"),
    ("protobuf tables", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io," + KUBECTL_GET,
     "application/json"),
    ("protobuf alone", "application/vnd.kubernetes.protobuf", "application/json"),
    ("any application type", "application/*", "application/json"),
    ("YAML", "application/yaml", "application/yaml"),
    ("YAML preferred by weight", "application/json;q=0.5, application/yaml", "application/yaml"),
    ("YAML refused by weight", "application/yaml;q=0, application/json", "application/json"),
    ("an image", "image/png", None),
    ("only HTML", "text/html", None),
    ("YAML refused, nothing else", "application/yaml;q=0", None),
]


@pytest.fixture
def configmap(api, namespace) -> str:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(path, {"metadata": {"name": "settings"}, "data": {"mode": "fast", "note": "é"}}).status_code == 201
    return path


@pytest.mark.parametrize("accept, content_type", [case[1:] for case in ACCEPTS], ids=[case[0] for case in ACCEPTS])
@pytest.mark.parametrize("what", ["get", "list"])
def test_accept_chooses_the_format_or_406(api, configmap, what, accept, content_type):
    path = configmap + ("/settings" if what == "get" else "")
    answer = api.get(path, headers={"Accept": accept} if accept else {})
    accept = accept or ""
    if content_type is None:
        assert (answer.status_code, answer.headers["Content-Type"]) == (406, "application/json"), answer.text
        assert answer.json()["reason"] == "NotAcceptable"
        assert answer.json()["message"] == NOT_ACCEPTABLE
        return
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"] == content_type
    document = yaml.safe_load(answer.text) if content_type == "application/yaml" else answer.json()
    if "as=Table" in accept:
        assert document["kind"] == "Table"           # kubectl's printing (printers.py)
        return
    assert document == api.get(path).json()
    assert (document["items"][0] if what == "list" else document)["data"] == {"mode": "fast", "note": "é"}


def test_yaml_errors_are_yaml_too(api, configmap):
    answer = api.get(configmap + "/nope", headers={"Accept": "application/yaml"})
    assert (answer.status_code, answer.headers["Content-Type"]) == (404, "application/yaml")
    assert yaml.safe_load(answer.text)["reason"] == "NotFound"


def test_a_watch_cannot_stream_yaml(api, configmap):
    answer = api.get(configmap, params={"watch": "true", "timeoutSeconds": 1}, headers={"Accept": "application/yaml"})
    assert answer.status_code == 406, answer.text
    assert answer.json()["message"] == ("only the following media types are accepted: "
                                        "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
    with api.get(configmap, params={"watch": "true", "timeoutSeconds": 1}, stream=True,
                 headers={"Accept": "application/yaml, application/json;stream=watch"}) as answer:
        assert json.loads(next(answer.iter_lines()))["type"] == "ADDED"
