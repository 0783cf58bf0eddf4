"""Nothing the API server accepts for a Pod is silently ignored by the kubelet.

pod_fields.py classifies every field of PodSpec, Container and the two
security contexts; these tests walk the Pod schema the API server serves
(the published Kubernetes 1.32 definitions, kubectl_compat/schemas.py) and
fail when a field has no classification, or a classification names a field
the schema does not have. Which refused fields a pod sets is table-driven
here; that a refused pod really is refused, with the event, is in
test_security_context.py (a real kubelet, static and from the API server).
"""
from __future__ import annotations

import pytest

import pod_fields
from kubectl_compat.schemas import definitions, ref_name, resolve


def test_every_field_of_the_served_pod_schema_is_classified():
    missing = {name: sorted(set(definitions()[name]["properties"]) - set(table))
               for name, table in pod_fields.TABLES.items()}
    assert not any(missing.values()), f"fields with no classification in pod_fields.py: {missing}"


def test_the_table_names_no_field_the_schema_lacks():
    extra = {name: sorted(set(table) - set(definitions()[name]["properties"]))
             for name, table in pod_fields.TABLES.items()}
    assert not any(extra.values()), f"pod_fields.py classifies fields Kubernetes 1.32 does not have: {extra}"


def test_the_tables_are_the_pods_own_types():
    """The four tables are the types a Pod's spec reaches: PodSpec, and from
    it Container and PodSecurityContext, and from Container SecurityContext
    (so a renamed definition cannot leave a table checking nothing)."""
    pod_spec = resolve(definitions()["io.k8s.api.core.v1.Pod"]["properties"]["spec"])
    assert pod_spec is definitions()["io.k8s.api.core.v1.PodSpec"]
    containers = pod_spec["properties"]["containers"]["items"]
    assert ref_name(containers) == "io.k8s.api.core.v1.Container"
    assert ref_name(pod_spec["properties"]["securityContext"]) == "io.k8s.api.core.v1.PodSecurityContext"
    container = resolve(containers)
    assert ref_name(container["properties"]["securityContext"]) == "io.k8s.api.core.v1.SecurityContext"


def test_every_entry_says_how_and_why():
    for table in pod_fields.TABLES.values():
        for name, entry in table.items():
            assert entry.how in (pod_fields.HONOURED, pod_fields.REFUSED, pod_fields.IGNORED), name
            assert len(entry.why) > 10, f"{name}: say why"


def _pod(**spec) -> dict:
    containers = spec.pop("containers", [{"name": "app", "image": "busybox:1.35"}])
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": {"containers": containers, **spec}}


@pytest.mark.parametrize("spec,refused", [
    ({}, []),
    # defaults, as the API server fills them in, ask for nothing
    ({"hostIPC": False, "hostUsers": True, "os": {"name": "linux"}, "imagePullSecrets": [],
      "containers": [{"name": "app", "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File", "lifecycle": {}}]}, []),
    ({"hostUsers": False}, ["spec.hostUsers"]),
    ({"hostIPC": True}, ["spec.hostIPC"]),
    ({"os": {"name": "windows"}}, ["spec.os"]),
    ({"initContainers": [{"name": "init", "terminationMessagePolicy": "FallbackToLogsOnError"}]},
     ["spec.initContainers[0].terminationMessagePolicy"]),
    ({"imagePullSecrets": [{"name": "registry"}]}, ["spec.imagePullSecrets"]),
    ({"containers": [{"name": "a"}, {"name": "b", "volumeDevices": [{"name": "v", "devicePath": "/dev/x"}]}]},
     ["spec.containers[1].volumeDevices"]),
    ({"containers": [{"name": "a", "terminationMessagePolicy": "FallbackToLogsOnError"}]},
     ["spec.containers[0].terminationMessagePolicy"]),
    # ignored and honoured fields are not refused, whatever their value
    ({"nodeSelector": {"disk": "ssd"}, "hostPID": True, "priority": 1000}, []),
    ({"initContainers": [{"name": "init", "restartPolicy": "Always"}],
      "containers": [{"name": "a", "lifecycle": {"preStop": {"exec": {"command": ["x"]}}},
                      "startupProbe": {"exec": {"command": ["x"]}}, "envFrom": [{"configMapRef": {"name": "c"}}]}]},
     []),
], ids=["nothing", "defaults", "hostUsers", "hostIPC", "os", "an-init-containers-field", "imagePullSecrets",
        "volumeDevices", "terminationMessagePolicy", "ignored-and-honoured", "issue-19-honoured"])
def test_refused_lists_the_fields_a_pod_sets(spec, refused):
    assert pod_fields.refused(_pod(**spec)) == refused
