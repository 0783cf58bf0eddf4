"""apply_defaults for every served kind: Kubernetes' values, a copy, idempotent."""

import copy

import pytest

from common.model.defaults import apply_defaults

POD_SPEC = {"containers": [{"name": "app", "image": "nginx:1.25"}]}
DEFAULTED_CONTAINER = {"name": "app", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                       "terminationMessagePath": "/dev/termination-log",
                       "terminationMessagePolicy": "File"}
POD_SPEC_DEFAULTS = {"terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                     "schedulerName": "default-scheduler", "securityContext": {},
                     "enableServiceLinks": True}


def template(**spec):
    return {"metadata": {"labels": {"app": "web"}}, "spec": dict(copy.deepcopy(POD_SPEC), **spec)}


def defaulted_template(restart_policy="Always"):
    spec = dict(POD_SPEC_DEFAULTS, containers=[dict(DEFAULTED_CONTAINER)])
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return {"metadata": {"labels": {"app": "web"}}, "spec": spec}


# (group, kind, input, the fields expected after defaulting: path -> value)
CASES = [
    ("", "Service", {"spec": {"ports": [{"port": 80}]}},
     {"spec.type": "ClusterIP", "spec.sessionAffinity": "None",
      "spec.internalTrafficPolicy": "Cluster", "spec.ipFamilyPolicy": "SingleStack",
      "spec.ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}),
    ("", "Service", {"spec": {"type": "NodePort", "sessionAffinity": "ClientIP",
                              "clusterIP": "10.96.0.10", "ports": [{"port": 80,
                                                                    "targetPort": "http"}]}},
     {"spec.externalTrafficPolicy": "Cluster", "spec.clusterIPs": ["10.96.0.10"],
      "spec.sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
      "spec.ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}]}),
    ("", "Service", {"spec": {"type": "ExternalName", "externalName": "db.example.com"}},
     {"spec.sessionAffinity": "None", "spec.ipFamilyPolicy": None,
      "spec.internalTrafficPolicy": None}),
    ("", "Secret", {"data": {"a": "YQ=="}}, {"type": "Opaque", "data": {"a": "YQ=="}}),
    ("", "Secret", {"type": "kubernetes.io/tls", "stringData": {"tls.key": "k"}},
     {"type": "kubernetes.io/tls", "data": {"tls.key": "aw=="}, "stringData": None}),
    ("", "Namespace", {"metadata": {"name": "shop", "labels": {"team": "a"}}},
     {"metadata.labels": {"team": "a", "kubernetes.io/metadata.name": "shop"},
      "status": {"phase": "Active"}}),
    ("", "Namespace", {"metadata": {"name": "shop", "labels": {
        "kubernetes.io/metadata.name": "other"}}},
     {"metadata.labels": {"kubernetes.io/metadata.name": "shop"}}),
    ("", "Node", {"status": {"capacity": {"cpu": "4"}}},
     {"status.allocatable": {"cpu": "4"}}),
    ("", "Node", {"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}},
     {"status.allocatable": {"cpu": "3"}}),
    ("", "Endpoints", {"subsets": [{"ports": [{"port": 80}]}]},
     {"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}),
    ("", "Pod", {"spec": copy.deepcopy(POD_SPEC)},
     {"spec": dict(POD_SPEC_DEFAULTS, restartPolicy="Always",
                   containers=[DEFAULTED_CONTAINER]), "metadata": None}),
    ("", "ConfigMap", {"data": {"a": "b"}}, {"data": {"a": "b"}}),
    ("apps", "ReplicaSet", {"spec": {"template": template()}},
     {"spec.replicas": 1, "spec.template": defaulted_template()}),
    ("apps", "ReplicaSet", {"spec": {"replicas": 0}}, {"spec.replicas": 0}),
    ("apps", "Deployment", {"spec": {"template": template()}},
     {"spec.replicas": 1, "spec.revisionHistoryLimit": 10, "spec.progressDeadlineSeconds": 600,
      "spec.strategy": {"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
      "spec.template": defaulted_template()}),
    ("apps", "Deployment", {"spec": {"strategy": {"type": "Recreate"}}},
     {"spec.strategy": {"type": "Recreate"}}),
    ("apps", "DaemonSet", {"spec": {"template": template()}},
     {"spec.updateStrategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
      "spec.revisionHistoryLimit": 10, "spec.template": defaulted_template()}),
    ("batch", "Job", {"spec": {"template": template()}},
     {"spec.parallelism": 1, "spec.completions": 1, "spec.backoffLimit": 6,
      "spec.completionMode": "NonIndexed", "spec.suspend": False,
      "spec.podReplacementPolicy": "TerminatingOrFailed",
      "metadata.labels": {"app": "web"},
      "spec.template": defaulted_template(restart_policy=None)}),
    ("batch", "Job", {"spec": {"parallelism": 4}},
     {"spec.parallelism": 4, "spec.completions": None}),
    ("batch", "Job", {"metadata": {"labels": {"mine": "x"}},
                      "spec": {"template": template(restartPolicy="Never")}},
     {"metadata.labels": {"mine": "x"}, "spec.template.spec.restartPolicy": "Never"}),
]


def _at(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


@pytest.mark.parametrize("group, kind, obj, expected",
                         [pytest.param(g, k, o, e, id=f"{k}-{i}")
                          for i, (g, k, o, e) in enumerate(CASES)])
def test_defaults(group, kind, obj, expected):
    before = copy.deepcopy(obj)
    result = apply_defaults(group, kind, obj)
    assert obj == before  # the input is never modified
    for path, value in expected.items():
        assert _at(result, path) == value, path
    assert apply_defaults(group, kind, result) == result  # idempotent


@pytest.mark.parametrize("obj", [None, [], "x", 5, {"spec": []}, {"spec": {"template": []}},
                                 {"spec": {"ports": "80"}}, {"stringData": {"a": 5}},
                                 {"metadata": [], "status": 3}])
@pytest.mark.parametrize("group, kind", sorted({(g, k) for g, k, _, _ in CASES}))
def test_wrong_shapes_are_left_for_validation(group, kind, obj):
    result = apply_defaults(group, kind, obj)
    assert apply_defaults(group, kind, result) == result


def test_unknown_kind_is_copied_unchanged():
    obj = {"spec": {"a": [1]}}
    result = apply_defaults("example.com", "Widget", obj)
    assert result == obj and result["spec"] is not obj["spec"]


# Kubernetes decodes labels into map[string]string, where a JSON null can only
# become "": that is what it stores, so we store it too, in every kind.
@pytest.mark.parametrize("group, kind", [("", "ConfigMap"), ("", "Pod"), ("apps", "Deployment"),
                                         ("example.com", "Widget")])
def test_null_label_and_annotation_values_become_empty(group, kind):
    obj = {"metadata": {"name": "a", "labels": {"tier": None, "app": "web"},
                        "annotations": {"note": None}},
           "spec": {"template": {"metadata": {"labels": {"app": "web", "track": None}}}}}
    result = apply_defaults(group, kind, obj)
    assert result["metadata"]["labels"] == {"tier": "", "app": "web"}
    assert result["metadata"]["annotations"] == {"note": ""}
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "web", "track": ""}
    assert obj["metadata"]["labels"]["tier"] is None  # the input is untouched


def test_null_labels_map_is_left_alone():
    # `labels: null` means "no labels"; only values inside a map are filled in.
    obj = {"metadata": {"name": "a", "labels": None, "annotations": []}}
    assert apply_defaults("", "ConfigMap", obj) == obj
