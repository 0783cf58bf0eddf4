"""Pod defaults: Kubernetes' values, a new dict every time, never a crash."""

import copy

import pytest

from common.model.defaults import apply_pod_defaults, default_pull_policy
from common.model.validation import validate_pod


def minimal_pod():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}


def test_minimal_pod_gets_kubernetes_defaults():
    pod = apply_pod_defaults(minimal_pod())
    assert pod == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "containers": [{
                "name": "app", "image": "nginx:1.25",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "enableServiceLinks": True,
        },
    }
    assert validate_pod(pod) == []


def test_input_is_never_modified():
    original = minimal_pod()
    original["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    before = copy.deepcopy(original)
    result = apply_pod_defaults(original)
    assert original == before
    assert result["spec"]["containers"][0]["ports"][0] is not \
        original["spec"]["containers"][0]["ports"][0]


@pytest.mark.parametrize("image, policy", [
    pytest.param("nginx", "Always", id="no-tag"),
    pytest.param("nginx:latest", "Always", id="latest"),
    pytest.param("nginx:1.25", "IfNotPresent", id="tag"),
    pytest.param("localhost:5000/app", "Always", id="registry-port-no-tag"),
    pytest.param("localhost:5000/app:v2", "IfNotPresent", id="registry-port-and-tag"),
    pytest.param("registry.k8s.io/pause:3.9", "IfNotPresent", id="registry-path-tag"),
    pytest.param("busybox@sha256:" + "a" * 64, "IfNotPresent", id="digest"),
    pytest.param("busybox:latest@sha256:" + "a" * 64, "Always", id="latest-and-digest"),
])
def test_default_pull_policy(image, policy):
    assert default_pull_policy(image) == policy


# (id, changes to the first container or the spec, path -> expected value after defaults)
FIELD_DEFAULTS = [
    ("explicit-pull-policy-kept", {"c.imagePullPolicy": "Never"},
     {"c.imagePullPolicy": "Never"}),
    ("untagged-image-always", {"c.image": "nginx"}, {"c.imagePullPolicy": "Always"}),
    ("port-protocol", {"c.ports": [{"containerPort": 80}]}, {"c.ports.0.protocol": "TCP"}),
    ("port-protocol-kept", {"c.ports": [{"containerPort": 53, "protocol": "UDP"}]},
     {"c.ports.0.protocol": "UDP"}),
    ("hostNetwork-copies-port", {"s.hostNetwork": True, "c.ports": [{"containerPort": 80}]},
     {"c.ports.0.hostPort": 80}),
    ("probe-defaults", {"c.livenessProbe": {"httpGet": {"port": 80}}},
     {"c.livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                          "timeoutSeconds": 1, "periodSeconds": 10,
                          "successThreshold": 1, "failureThreshold": 3}}),
    ("probe-zero-means-unset", {"c.readinessProbe": {"tcpSocket": {"port": 80},
                                                     "periodSeconds": 0}},
     {"c.readinessProbe.periodSeconds": 10}),
    ("probe-values-kept", {"c.startupProbe": {"exec": {"command": ["true"]},
                                              "failureThreshold": 30}},
     {"c.startupProbe.failureThreshold": 30}),
    ("requests-from-limits", {"c.resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                              "requests": {"cpu": "500m"}}},
     {"c.resources.requests": {"cpu": "500m", "memory": "1Gi"}}),
    ("fieldRef-apiVersion", {"c.env": [{"name": "N", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}]},
     {"c.env.0.valueFrom.fieldRef.apiVersion": "v1"}),
    ("init-containers-too", {"s.initContainers": [{"name": "init", "image": "busybox"}]},
     {"s.initContainers.0.imagePullPolicy": "Always",
      "s.initContainers.0.terminationMessagePolicy": "File"}),
    ("emptyDir-stays", {"s.volumes": [{"name": "d", "emptyDir": {}}]},
     {"s.volumes.0": {"name": "d", "emptyDir": {}}}),
    ("no-source-is-emptyDir", {"s.volumes": [{"name": "d"}]},
     {"s.volumes.0": {"name": "d", "emptyDir": {}}}),
    ("hostPath-type", {"s.volumes": [{"name": "h", "hostPath": {"path": "/x"}}]},
     {"s.volumes.0.hostPath.type": ""}),
    ("configMap-mode", {"s.volumes": [{"name": "c", "configMap": {"name": "x"}}]},
     {"s.volumes.0.configMap.defaultMode": 0o644}),
    ("explicit-spec-values-kept", {"s.restartPolicy": "Never", "s.dnsPolicy": "Default",
                                   "s.terminationGracePeriodSeconds": 0},
     {"s.restartPolicy": "Never", "s.dnsPolicy": "Default",
      "s.terminationGracePeriodSeconds": 0}),
    ("empty-string-is-unset", {"s.restartPolicy": ""}, {"s.restartPolicy": "Always"}),
    ("namespace-kept", {"m.namespace": "shop"}, {"m.namespace": "shop"}),
    ("empty-namespace-defaulted", {"m.namespace": ""}, {"m.namespace": "default"}),
]

_ROOTS = {"c": ("spec", "containers", 0), "s": ("spec",), "m": ("metadata",)}


def _keys(path):
    root, *rest = path.split(".")
    return list(_ROOTS[root]) + [int(k) if k.isdigit() else k for k in rest]


def _at(obj, keys):
    for k in keys:
        obj = obj[k]
    return obj


@pytest.mark.parametrize("changes, expected",
                         [pytest.param(c, e, id=i) for i, c, e in FIELD_DEFAULTS])
def test_field_defaults(changes, expected):
    pod = minimal_pod()
    for path, value in changes.items():
        keys = _keys(path)
        _at(pod, keys[:-1])[keys[-1]] = value
    result = apply_pod_defaults(pod)
    for path, value in expected.items():
        assert _at(result, _keys(path)) == value
    assert validate_pod(result) == []


# Invalid input: defaults go only where the shape allows; the rest is kept
# exactly as it was, for validation to report.
@pytest.mark.parametrize("obj, expected", [
    pytest.param(None, None, id="null"),
    pytest.param([1, 2], [1, 2], id="list"),
    pytest.param("Pod", "Pod", id="string"),
    pytest.param({"metadata": [1], "spec": "x"}, {"metadata": [1], "spec": "x"},
                 id="wrong-types-kept"),
    pytest.param({"spec": {"containers": "web", "volumes": [None, 5]}},
                 {"metadata": {"namespace": "default"},
                  "spec": {"containers": "web", "volumes": [None, 5],
                           "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                           "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                           "securityContext": {}, "enableServiceLinks": True}},
                 id="containers-string"),
    pytest.param({"metadata": {"namespace": 5}, "spec": {"containers": [
        None, {"image": 5, "ports": "80", "livenessProbe": [], "resources": {"limits": 1}},
        {"image": "x", "ports": [80, {"containerPort": "http"}]}], "hostNetwork": True}},
        {"metadata": {"namespace": 5}, "spec": {"containers": [
            None,
            {"image": 5, "ports": "80", "livenessProbe": [], "resources": {"limits": 1},
             "terminationMessagePath": "/dev/termination-log",
             "terminationMessagePolicy": "File"},
            {"image": "x", "ports": [80, {"containerPort": "http", "protocol": "TCP"}],
             "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
             "terminationMessagePolicy": "File"}],
            "hostNetwork": True, "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler", "securityContext": {},
            "enableServiceLinks": True}},
        id="junk-in-containers"),
])
def test_invalid_input_is_tolerated(obj, expected):
    before = copy.deepcopy(obj)
    assert apply_pod_defaults(obj) == expected
    assert obj == before


def test_deep_nesting_is_copied_without_recursion():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    pod = minimal_pod()
    pod["spec"]["junk"] = deep
    result = apply_pod_defaults(pod)
    assert result["spec"]["junk"] is not deep
