"""What a configMap, secret, downwardAPI or projected volume holds, decided
without Docker or a server: paths, modes, the downward API's formats, and
the refusals, each naming the field."""
from __future__ import annotations

import os

import pytest

import pod_config as cfg
from api_volumes import atomic_writer
from api_volumes.api_objects import ObjectCache, ObjectNotFound
from api_volumes.atomic_writer import File, PayloadError
from api_volumes.volumes import MountError, Sources, format_map, volume_payload
from manifest_source import api_references


class FakeCache(ObjectCache):
    """The objects a test names, as the API server would answer."""

    def __init__(self, objects: dict):
        super().__init__(None)
        self.objects = objects

    def get(self, plural, namespace, name, fresh_since=None):
        if (plural, name) not in self.objects:
            raise ObjectNotFound(f'{plural[:-1]} "{name}" not found')
        return self.objects[(plural, name)]


POD = {"metadata": {"name": "web", "namespace": "default", "uid": "u1",
                    "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "a\nb"}},
       "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "500m"}}}]}}
CONFIG = {"data": {"a": "1", "b": "2"}}
SECRET = {"data": {"token": "c2VjcmV0"}}        # "secret"
SOURCES = Sources(FakeCache({("configmaps", "cfg"): CONFIG, ("secrets", "sec"): SECRET}), None,
                  {"cpu": "4", "memory": "8Gi"})


def payload(volume: dict) -> dict:
    return volume_payload(POD, 3, {"name": "v", **volume}, SOURCES)


@pytest.mark.parametrize("volume, expected", [
    ({"configMap": {"name": "cfg"}}, {"a": File(b"1", 0o644), "b": File(b"2", 0o644)}),
    ({"configMap": {"name": "cfg", "defaultMode": 0o400, "items": [{"key": "b", "path": "x/y"}]}},
     {"x/y": File(b"2", 0o400)}),
    ({"secret": {"secretName": "sec", "items": [{"key": "token", "path": "t", "mode": 0o600}]}},
     {"t": File(b"secret", 0o600)}),
    ({"configMap": {"name": "missing", "optional": True}}, {}),
    ({"configMap": {"name": "cfg", "optional": True, "items": [{"key": "zz", "path": "z"}, {"key": "a", "path": "a"}]}},
     {"a": File(b"1", 0o644)}),
    ({"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                {"path": "notes", "fieldRef": {"fieldPath": "metadata.annotations"}},
                                {"path": "cpu", "resourceFieldRef": {"containerName": "app", "resource": "limits.cpu",
                                                                     "divisor": "1m"}},
                                {"path": "mem", "resourceFieldRef": {"containerName": "app",
                                                                     "resource": "limits.memory", "divisor": "1Gi"}}]}},
     {"labels": File(b'app="web"\ntier="front"', 0o644), "notes": File(b'note="a\\nb"', 0o644),
      "cpu": File(b"500", 0o644), "mem": File(b"8", 0o644)}),
    ({"projected": {"defaultMode": 0o440, "sources": [
        {"configMap": {"name": "cfg", "items": [{"key": "a", "path": "conf/a"}]}},
        {"secret": {"name": "sec"}},
        {"downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
     {"conf/a": File(b"1", 0o440), "token": File(b"secret", 0o440), "name": File(b"web", 0o440)}),
])
def test_payloads(volume, expected):
    assert payload(volume) == expected


@pytest.mark.parametrize("volume, message", [
    ({"configMap": {"name": "nope"}}, 'configmap "nope" not found'),
    ({"configMap": {"name": "cfg", "items": [{"key": "zz", "path": "z"}]}},
     "configmap references non-existent config key: zz"),
    ({"secret": {"secretName": "sec", "items": [{"key": "zz", "path": "z"}]}},
     "references non-existent secret key: zz"),
    ({"configMap": {"name": "cfg", "items": [{"key": "a", "path": "/etc/passwd"}]}},
     "spec.volumes[3].configMap.items[0].path: invalid path: must be relative path: /etc/passwd"),
    ({"configMap": {"name": "cfg", "items": [{"key": "a", "path": "..data"}]}},
     "spec.volumes[3].configMap.items[0].path: invalid path: must not start with '..': ..data"),
    ({"secret": {"secretName": "sec", "items": [{"key": "token", "path": "a/../../b"}]}},
     "spec.volumes[3].secret.items[0].path: invalid path: must not contain '..': a/../../b"),
    ({"configMap": {"name": "cfg", "defaultMode": 0o1777}},
     "spec.volumes[3].configMap.defaultMode: Invalid value: 1023: must be a number between 0 and 0777 (octal), "
     "both inclusive"),
    ({"downwardAPI": {"items": [{"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}]}},
     "spec.volumes[3].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: 'status.podIP': supported "
     'values: "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations"'),
    ({"downwardAPI": {"items": [{"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}}]}},
     "spec.volumes[3].downwardAPI.items[0].resourceFieldRef.containerName: Required value"),
    ({"projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
     "failed to fetch token: this kubelet has no API server"),
    ({"projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}]}},
     "spec.volumes[3].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not "
     "specify a duration less than 10 minutes"),
    ({"projected": {"sources": [{"clusterTrustBundle": {"path": "ca.pem", "name": "x"}}]}},
     "spec.volumes[3].projected.sources[0].clusterTrustBundle: not supported by this kubelet: its API server "
     "does not serve trust bundles"),
])
def test_refusals_name_the_volume_and_the_field(volume, message):
    with pytest.raises(MountError) as refused:
        payload(volume)
    assert str(refused.value) == f'MountVolume.SetUp failed for volume "v" : {message}'


def test_labels_are_written_sorted_and_quoted_as_go_quotes_them():
    assert format_map({"b": 'say "hi"', "a": "tab\there"}) == 'a="tab\\there"\nb="say \\"hi\\""'
    assert format_map({}) == ""


def test_a_static_pod_names_every_field_that_reads_the_api():
    pod = {"spec": {"volumes": [{"name": "a", "configMap": {"name": "x"}}, {"name": "b", "downwardAPI": {}},
                                {"name": "c", "projected": {"sources": [{"downwardAPI": {}}, {"secret": {}}]}}],
                    "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "x"}}]}],
                    "containers": [{"name": "app", "env": [{"name": "A", "value": "1"},
                                                           {"name": "B", "valueFrom": {"secretKeyRef": {}}},
                                                           {"name": "C", "valueFrom": {"fieldRef": {}}}]}]}}
    assert api_references(pod) == ["spec.volumes[0].configMap", "spec.volumes[2].projected.sources[1].secret",
                                   "spec.initContainers[0].envFrom[0]", "spec.containers[0].env[1].valueFrom.secretKeyRef"]


@pytest.mark.parametrize("resource, divisor, expected", [
    ("limits.cpu", None, "1"), ("limits.cpu", "1m", "500"), ("requests.cpu", "1m", "0"),
    ("limits.memory", "1Mi", "8192"), ("requests.memory", None, "0")])
def test_resource_field_ref_values_round_up_and_default_to_the_nodes_allocatable(resource, divisor, expected):
    ref = {"resource": resource, **({"divisor": divisor} if divisor else {})}
    assert cfg.resource_value(POD, "app", ref, {"cpu": "4", "memory": "8Gi"}) == expected


def test_the_writer_leaves_no_trace_of_an_earlier_payload(tmp_path):
    target = str(tmp_path / "v")
    assert atomic_writer.write(target, {"a": File(b"1", 0o644), "dir/b": File(b"2", 0o600)})
    first = os.readlink(os.path.join(target, "..data"))
    assert not atomic_writer.write(target, {"a": File(b"1", 0o644), "dir/b": File(b"2", 0o600)})   # unchanged
    assert atomic_writer.write(target, {"c": File(b"3", 0o644)})
    assert sorted(os.listdir(target)) == sorted(["..data", os.readlink(os.path.join(target, "..data")), "c"])
    assert not os.path.exists(os.path.join(target, first))
    with pytest.raises(PayloadError, match="must not contain '..'"):
        atomic_writer.write(target, {"../out": File(b"x", 0o644)})
    assert not (tmp_path / "out").exists()
