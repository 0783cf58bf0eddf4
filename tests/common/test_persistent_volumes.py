"""Which volume can serve which claim, on which node (common/model/persistent_volumes.py):
the rules the binder, the scheduler's volume filters and the kubelet share."""
from __future__ import annotations

import pytest

from common.model.persistent_volumes import (NodeView, best_volume, claim_names, default_class, matches,
                                             pinned_node, volume_allows_node)


def volume(name="pv", size="1Gi", modes=("ReadWriteOnce",), storage_class="fast", labels=None, node=None,
           phase="Available", **spec):
    body = {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": storage_class,
                     **spec},
            "status": {"phase": phase}}
    if node:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return body


def claim(size="1Gi", modes=("ReadWriteOnce",), storage_class="fast", selector=None, **spec):
    return {"metadata": {"name": "data", "namespace": "default", "uid": "u1"},
            "spec": {"resources": {"requests": {"storage": size}}, "accessModes": list(modes),
                     "storageClassName": storage_class, **({"selector": selector} if selector else {}), **spec}}


@pytest.mark.parametrize("pv, pvc, expected", [
    (volume(), claim(), True),
    (volume(size="1Gi"), claim(size="1025Mi"), False),                    # a byte too small is too small
    (volume(size="1G"), claim(size="1Gi"), False),                        # 10^9 < 2^30
    (volume(size="2Gi"), claim(size="2000Mi"), True),
    (volume(storage_class="slow"), claim(), False),
    (volume(storage_class=""), claim(storage_class=""), True),            # "no class" is a class of its own
    (volume(modes=("ReadWriteOnce",)), claim(modes=("ReadWriteMany",)), False),
    (volume(modes=("ReadWriteOnce", "ReadOnlyMany")), claim(modes=("ReadOnlyMany",)), True),
    (volume(volumeMode="Block"), claim(), False),                          # unset means Filesystem
    (volume(labels={"tier": "ssd"}), claim(selector={"matchLabels": {"tier": "ssd"}}), True),
    (volume(labels={"tier": "hdd"}), claim(selector={"matchLabels": {"tier": "ssd"}}), False),
    (volume(), claim(selector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]}), False),
])
def test_what_a_volume_must_offer_a_claim(pv, pvc, expected):
    assert matches(pv, pvc) is expected


def test_the_smallest_available_match_wins_and_a_reserved_volume_beats_all():
    volumes = [volume("big", "10Gi"), volume("small", "1Gi"), volume("medium", "2Gi"),
               volume("taken", "1Gi", claimRef={"namespace": "default", "name": "other", "uid": "u9"}),
               volume("released", "1Gi", phase="Released")]
    assert best_volume(claim("1Gi"), volumes)["metadata"]["name"] == "small"
    assert best_volume(claim("1500Mi"), volumes)["metadata"]["name"] == "medium"
    assert best_volume(claim("20Gi"), volumes) is None
    mine = volume("mine", "10Gi", claimRef={"namespace": "default", "name": "data", "uid": "u1"})
    assert best_volume(claim("1Gi"), volumes + [mine])["metadata"]["name"] == "mine"


def test_with_a_node_only_the_volumes_it_can_reach_count():
    volumes = [volume("on-1", "1Gi", node="node1"), volume("on-2", "2Gi", node="node2"), volume("anywhere", "5Gi")]
    node2 = NodeView("node2", {"kubernetes.io/hostname": "node2"})
    assert best_volume(claim(), volumes, node2)["metadata"]["name"] == "on-2"
    assert best_volume(claim(), volumes)["metadata"]["name"] == "on-1"
    assert volume_allows_node(volumes[2], node2)
    assert not volume_allows_node(volumes[0], node2)
    assert [pinned_node(v) for v in volumes] == ["node1", "node2", None]


def test_the_newest_default_class_is_the_default():
    classes = [{"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z",
                             "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}},
               {"metadata": {"name": "b", "creationTimestamp": "2026-02-01T00:00:00Z",
                             "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}},
               {"metadata": {"name": "c", "creationTimestamp": "2026-03-01T00:00:00Z"}}]
    assert default_class(classes)["metadata"]["name"] == "b"
    assert default_class(classes[2:]) is None


def test_the_claims_a_pod_mounts():
    pod = {"spec": {"volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                                {"name": "b", "emptyDir": {}},
                                {"name": "c", "persistentVolumeClaim": {"claimName": "logs", "readOnly": True}}]}}
    assert claim_names(pod) == ["data", "logs"]
