"""Unknown and duplicate fields, as fieldValidation=Strict reports them."""
from __future__ import annotations

import copy
import json

import pytest

from kubectl_compat import field_validation as fv

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default",
                 "labels": {"app": "web", "example.com/any-key": "ok"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {
        "containers": [{
            "name": "nginx", "image": "nginx:1.27",
            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                          "limits": {"cpu": 1, "memory": "128Mi", "example.com/gpu": 2}},
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            "livenessProbe": {"tcpSocket": {"port": 80}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "nodeSelector": {"disk": "ssd"},
        "restartPolicy": "Always",
    },
}

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
}

SERVICE = {
    "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"},
             "ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8080}]},
}


def edited(obj: dict, path: str, value) -> dict:
    """A copy of obj with value set at a dotted path; "containers.0" indexes a list."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return out


@pytest.mark.parametrize("kind, obj, expected", [
    # well-formed objects have no unknown fields
    (("", "v1", "Pod"), POD, []),
    (("apps", "v1", "Deployment"), DEPLOYMENT, []),
    (("", "v1", "Service"), SERVICE, []),
    # typos at several depths
    (("", "v1", "Pod"), edited(POD, "spek", {}), ["spek"]),
    (("", "v1", "Pod"), edited(POD, "metadata.labelz", {"a": "b"}), ["metadata.labelz"]),
    (("", "v1", "Pod"), edited(POD, "spec.containers.0.imagee", "x"), ["spec.containers[0].imagee"]),
    (("", "v1", "Pod"), edited(POD, "spec.containers.0.ports.0.containerPortt", 1),
     ["spec.containers[0].ports[0].containerPortt"]),
    (("", "v1", "Pod"), edited(POD, "spec.containers.0.readinessProbe.httpGet.paht", "/"),
     ["spec.containers[0].readinessProbe.httpGet.paht"]),
    (("", "v1", "Pod"), edited(POD, "spec.containers.0.resources.limitz", {}),
     ["spec.containers[0].resources.limitz"]),
    (("", "v1", "Pod"), edited(POD, "spec.volumes.0.emptyDir.sizeLimitt", "1Gi"),
     ["spec.volumes[0].emptyDir.sizeLimitt"]),
    (("apps", "v1", "Deployment"),
     edited(DEPLOYMENT, "spec.template.spec.containers.0.Image", "x"),    # case matters
     ["spec.template.spec.containers[0].Image"]),
    (("apps", "v1", "Deployment"), edited(DEPLOYMENT, "spec.template.metadata.labelz", {}),
     ["spec.template.metadata.labelz"]),
    # every unknown field, in document order; nothing inside an unknown one
    (("", "v1", "Pod"),
     edited(edited(POD, "metadata.x", {"y": 1}), "spec.containers.0.z", 1),
     ["metadata.x", "spec.containers[0].z"]),
    # maps take any key: labels, annotations, selectors, ConfigMap data
    (("", "v1", "Pod"), edited(POD, "metadata.labels", {"any.thing/at-all": "v"}), []),
    (("", "v1", "ConfigMap"), {"metadata": {"name": "c"}, "data": {"anything": "x"},
                               "binaryData": {"b": "AA=="}}, []),
    # int-or-string and quantities are leaves, whichever form they take
    (("", "v1", "Service"), edited(SERVICE, "spec.ports.0.targetPort", 8080), []),
    (("", "v1", "Pod"), edited(POD, "spec.containers.0.resources.limits", {"cpu": 0.5}), []),
    # opaque objects (managedFields' fieldsV1) accept any content
    (("", "v1", "Pod"), edited(POD, "metadata.managedFields",
                               [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:x": {}}}}]), []),
    # wrong types and nulls are not unknown fields (validation reports types)
    (("", "v1", "Pod"), edited(POD, "spec.containers", "not-a-list"), []),
    (("", "v1", "Pod"), edited(POD, "metadata.labels", None), []),
    # type meta is always allowed, even on an object that is only metadata
    (("", "v1", "Namespace"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}, []),
    # a kind Kubernetes publishes no schema for has no unknown fields
    (("example.com", "v1", "Widget"), {"spec": {"anything": {"goes": 1}}}, []),
])
def test_unknown_fields(kind, obj, expected):
    assert fv.unknown_fields(*kind, obj) == expected


def test_unknown_fields_does_not_change_the_object():
    obj = edited(POD, "spec.containers.0.imagee", "x")
    before = copy.deepcopy(obj)
    fv.unknown_fields("", "v1", "Pod", obj)
    assert obj == before


@pytest.mark.parametrize("body, expected", [
    (json.dumps(POD).encode(), []),
    (b'{"metadata": {"name": "a", "name": "b"}}', ["metadata.name"]),
    (b'{"kind": "Pod", "kind": "Pod"}', ["kind"]),
    (b'{"spec": {"containers": [{"name": "a"}, {"name": "b", "image": "x", "image": "y"}]}}',
     ["spec.containers[1].image"]),
    (b'{"a": 1, "a": 2, "a": 3}', ["a"]),                   # once per key
    (b'{"metadata": {"labels": {"x": "1", "x": "2"}}, "spec": {"s": 1, "s": 2}}',
     ["metadata.labels.x", "spec.s"]),
    ('{"é": 1, "é": 2}', ["é"]),                            # str works too
    (b'[{"a": 1, "a": 1}]', ["[0].a"]),
    (b'{"not json', []),                                    # the decoder reports that
    (b"", []),
])
def test_find_duplicate_fields(body, expected):
    assert fv.find_duplicate_fields(body) == expected


# The texts are the core's (decode.apply_field_validation); the fields come from here.
TYPO_TWICE = (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "name": "p"},'
              b' "spec": {"containers": [{"name": "a", "image": "busybox", "imagee": "x"}]}}')


def test_strict_names_every_problem_in_kubernetes_text(api, namespace):
    reply = api.post(f"/api/v1/namespaces/{namespace}/pods", TYPO_TWICE, params={"fieldValidation": "Strict"})
    assert reply.status_code == 400
    assert reply.json()["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                       'unknown field "spec.containers[0].imagee", duplicate field "metadata.name"')


def test_warn_sends_one_warning_per_problem(api, namespace):
    reply = api.post(f"/api/v1/namespaces/{namespace}/pods", TYPO_TWICE, params={"fieldValidation": "Warn"})
    assert reply.status_code == 201
    assert reply.headers["Warning"] == ('299 - "unknown field \\"spec.containers[0].imagee\\"", '
                                        '299 - "duplicate field \\"metadata.name\\""')


def test_every_served_kind_accepts_its_type_meta():
    import registry
    for r in registry.RESOURCES:
        obj = {"apiVersion": r.api_version, "kind": r.kind, "metadata": {"name": "x"}}
        assert fv.unknown_fields(r.group, r.version, r.kind, obj) == [], r.kind


def test_a_request_during_the_first_compile_sees_every_field(monkeypatch):
    """The API server compiles a kind's schema on the first request for it,
    while other request threads may already be asking about the same kind.
    Once, with ten threads creating pods, one of them was told that its
    spec.containers was an unknown field (dropped, then refused: 422
    "spec.containers: Required value"): it had walked PodSpec while the
    first thread was still filling it in.

    Here a second request runs, start to end, at that very moment: when the
    first compile reaches the Container definition, with PodSpec's fields
    filled as far as `affinity`. No timing is involved."""
    import threading
    from kubectl_compat import schemas

    monkeypatch.setattr(fv, "_by_definition", {})          # a cold cache, as in a new server
    monkeypatch.setattr(fv, "_roots", {})
    second_answer = []

    class Definitions(dict):
        def __getitem__(self, name):
            if name == "io.k8s.api.core.v1.Container" and not second_answer:
                second_answer.append(None)                 # the second request runs only once
                second = threading.Thread(target=lambda: second_answer.append(
                    fv.unknown_fields("", "v1", "Pod", POD)))
                second.start()
                second.join(timeout=30)
                assert not second.is_alive(), "the second request waited for the first one's compile"
            return super().__getitem__(name)

    definitions = Definitions(schemas.definitions())
    monkeypatch.setattr(schemas, "definitions", lambda: definitions)
    assert fv.unknown_fields("", "v1", "Pod", POD) == []   # the first request
    assert second_answer == [None, []]
    assert fv.unknown_fields("", "v1", "Pod", POD) == []   # and what both left in the cache
