"""Mirror pods: how static pods (from --manifests) show in the API server.

A static pod is run by its kubelet alone; the API server cannot change it.
So that `kubectl get pods` still lists it, the kubelet creates a *mirror
pod*: a copy of the static pod in the API, marked with the annotation
`kubernetes.io/config.mirror`, and owned by the Node. The kubelet writes the
static pod's status onto it. Deleting a mirror pod does not stop the static
pod (the kubelet makes a new mirror); removing the manifest does, and the
kubelet then deletes the mirror too.

In a cluster, Kubernetes names a static pod `<name>-<node name>`, so that
the same manifest on two nodes makes two pods; our FileSource does the same
when the kubelet joins an API server (in chapter 01, alone, it keeps the
file's name).
"""
from __future__ import annotations

import copy
import hashlib
import json

MIRROR = "kubernetes.io/config.mirror"
SOURCE = "kubernetes.io/config.source"
HASH = "kubernetes.io/config.hash"


def is_static(pod: dict) -> bool:
    return (pod["metadata"].get("annotations") or {}).get(SOURCE) == "file"


def is_mirror(pod: dict) -> bool:
    return MIRROR in (pod["metadata"].get("annotations") or {})


def config_hash(pod: dict) -> str:
    """Changes whenever the manifest's pod changes: a mirror with another
    hash is out of date, and is replaced."""
    text = json.dumps({"metadata": {k: pod["metadata"].get(k) for k in ("labels", "annotations")},
                       "spec": pod["spec"]}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mirror_hash(pod: dict) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(MIRROR)


# [START mirror-pod]
def mirror_of(static: dict, node: dict) -> dict:
    """The mirror pod to create for a static pod: its spec and labels, no
    uid or status (the API server gives it its own uid), owned by the Node."""
    meta = static["metadata"]
    digest = config_hash(static)
    annotations = {**(meta.get("annotations") or {}), MIRROR: digest, HASH: digest}
    mirror = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                           "labels": copy.deepcopy(meta.get("labels") or {}), "annotations": annotations},
              "spec": copy.deepcopy(static["spec"])}
    mirror["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "controller": True,
                                              "name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}]
    return mirror
# [END mirror-pod]
