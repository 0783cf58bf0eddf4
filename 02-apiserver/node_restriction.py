"""NodeRestriction admission: a kubelet changes only its own Node, Lease and pods.

The Node authorizer lets every kubelet update nodes and pods/status, since
the request alone does not say whose they are: the object does. This
admission plugin looks at the object. For a user system:node:NAME:

- Node: only the Node named NAME may be created or changed, and not its
  taints, nor labels a kubelet has no business setting (below);
- Lease (kube-node-lease): only the one named NAME;
- Pod: its status only if spec.nodeName is NAME; a new pod only if it is
  a mirror pod (annotation kubernetes.io/config.mirror) bound to NAME
  that refers to no ServiceAccount, Secret, ConfigMap or
  PersistentVolumeClaim; deletion only of pods bound to NAME;
- a ServiceAccount token (serviceaccounts/NAME/token): only bound to a
  pod bound to NAME, so a token a node holds dies with its pod.

Why a mirror pod may refer to nothing: the Node authorizer lets a node read
whatever a pod bound to it refers to. A node that could create a pod naming
any Secret could then read any Secret in that namespace.

Why the labels and taints: the scheduler steers pods by them. Workloads
that must run only on trusted nodes select a node-restriction.kubernetes.io/
label, which only an administrator may set; a taint keeps pods off a node
until an administrator lifts it. A node that could set the one or lift the
other could draw those pods, and their Secrets, to itself. Of the
kubernetes.io and k8s.io labels it may set only those kubelets set about
themselves (hostname, os, arch, zone, region, instance type, and the
kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes); any other label
is its own business.

Not checked here, as in Kubernetes: a mirror pod's ownerReferences (which
Kubernetes requires to name the Node), PersistentVolumeClaim status, CSINode.

Messages are Kubernetes' (plugin/pkg/admission/noderestriction/admission.go),
after `<resource> "<name>" is forbidden: `.
"""
from __future__ import annotations

from flask import g

import api_errors
from common.model.lenient import as_dict, as_list
from node_authorizer import node_name, referenced

MIRROR = "kubernetes.io/config.mirror"
# The label prefix reserved for administrators (Kubernetes' LabelNamespaceNodeRestriction).
NODE_RESTRICTION_LABELS = "node-restriction.kubernetes.io"
# What a kubelet may say about itself (k8s.io/kubelet/pkg/apis/well_known_labels.go).
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"})
KUBELET_LABEL_PREFIXES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _node_of_request() -> str:
    user = g.get("user")
    return node_name(user) if user is not None else ""


# [START node-restriction]
def admit(server, obj: dict, old: dict | None, info, operation: str) -> None:
    node = _node_of_request()
    if not node:
        return
    kind, name = info.resource.kind, obj["metadata"].get("name", "")
    if kind == "Node":
        _admit_node(info, node, obj, old, operation)
    if kind == "Lease" and info.resource.group == "coordination.k8s.io" and name != node:
        raise _forbidden(info, name, "can only access node lease with the same name as the requesting node")
    if kind == "Pod":
        bound_to = (obj.get("spec") or {}).get("nodeName")
        if operation == "UPDATE" and info.subresource == "status" and bound_to != node:
            raise _forbidden(info, name, f'node "{node}" can only update pod status for pods with '
                             "spec.nodeName set to itself")
        if operation == "CREATE":
            _admit_mirror_pod(info, node, obj)


def admit_delete(server, obj: dict, resource) -> None:
    node = _node_of_request()
    if node and resource.kind == "Pod" and resource.group == "" \
            and (obj.get("spec") or {}).get("nodeName") != node:
        raise api_errors.APIError(403, "Forbidden", f'pods "{obj["metadata"]["name"]}" is forbidden: '
                                  f'node "{node}" can only delete pods with spec.nodeName set to itself')
# [END node-restriction]


# [START node-restriction-pods]
def _admit_mirror_pod(info, node: str, pod: dict) -> None:
    """A kubelet creates pods only to show its static pods: bound to itself,
    and naming no object the Node authorizer would then let it read."""
    name, spec = pod["metadata"].get("name", ""), as_dict(pod.get("spec"))
    if MIRROR not in (pod["metadata"].get("annotations") or {}):
        raise _forbidden(info, name, f'pod does not have "{MIRROR}" annotation, node "{node}" can '
                         "only create mirror pods")
    if spec.get("nodeName") != node:
        raise _forbidden(info, name, f'node "{node}" can only create pods with spec.nodeName set to itself')
    # serviceAccount is the old name of serviceAccountName; either names an account.
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        raise _forbidden(info, name, f'node "{node}" can not create pods that reference a service account')
    if referenced(pod, "secret"):
        raise _forbidden(info, name, f'node "{node}" can not create pods that reference secrets')
    if referenced(pod, "configMap"):
        raise _forbidden(info, name, f'node "{node}" can not create pods that reference configmaps')
    if any(as_dict(volume).get("persistentVolumeClaim") is not None for volume in as_list(spec.get("volumes"))):
        raise _forbidden(info, name, f'node "{node}" can not create pods that reference persistentvolumeclaims')
# [END node-restriction-pods]


# [START node-restriction-nodes]
def _admit_node(info, node: str, obj: dict, old: dict | None, operation: str) -> None:
    """Its own Node only; its taints are the administrator's, and so are the
    labels that steer workloads."""
    name = obj["metadata"].get("name", "")
    if name != node:
        raise _forbidden(info, name, f'node "{node}" is not allowed to modify node "{name}"')
    labels = _labels(obj)
    if operation == "CREATE":
        refused = forbidden_labels(set(labels))
        if refused:
            raise _forbidden(info, name, f'node "{node}" is not allowed to set the following labels: '
                             + ", ".join(refused))
    if operation == "UPDATE" and old is not None:
        if _taints(obj) != _taints(old):
            raise _forbidden(info, name, f'node "{node}" is not allowed to modify taints')
        old_labels = _labels(old)
        changed = {key for key in labels.keys() | old_labels.keys() if labels.get(key) != old_labels.get(key)}
        refused = forbidden_labels(changed)
        if refused:
            # Kubernetes' message names no node here.
            raise _forbidden(info, name, "is not allowed to modify labels: " + ", ".join(refused))


def forbidden_labels(keys: set[str]) -> list[str]:
    """The label keys a kubelet may not add, change or remove, sorted."""
    return sorted(key for key in keys if _is_node_restriction_label(key)
                  or (_is_kubernetes_label(key) and not _is_kubelet_label(key)))
# [END node-restriction-nodes]


def _prefix(key: str) -> str:
    """A label key's prefix: "kubernetes.io" for "kubernetes.io/os"; "" for "app"."""
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def _in_domain(prefix: str, domain: str) -> bool:
    return prefix == domain or prefix.endswith("." + domain)


def _is_node_restriction_label(key: str) -> bool:
    return _in_domain(_prefix(key), NODE_RESTRICTION_LABELS)


def _is_kubernetes_label(key: str) -> bool:
    return _in_domain(_prefix(key), "kubernetes.io") or _in_domain(_prefix(key), "k8s.io")


def _is_kubelet_label(key: str) -> bool:
    return key in KUBELET_LABELS or any(_in_domain(_prefix(key), p) for p in KUBELET_LABEL_PREFIXES)


def _labels(obj: dict) -> dict:
    return as_dict(obj["metadata"].get("labels"))


def _taints(obj: dict) -> list:
    """A Node's taints; none and an empty list are the same (Kubernetes' semantic equality)."""
    return as_dict(obj.get("spec")).get("taints") or []


def admit_token_request(info, ref, get_pod) -> None:
    """A kubelet's TokenRequest must be bound to a pod (by name and uid)
    that runs on its own node. get_pod(name) -> the pod, or None."""
    node = _node_of_request()
    if not node:
        return
    if not isinstance(ref, dict) or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
        raise _forbidden(info, info.name, "node requested token not bound to a pod")
    if not ref.get("uid"):
        raise _forbidden(info, info.name, "node requested token with a pod binding without a uid")
    pod = get_pod(ref["name"])
    if pod is None:
        raise api_errors.not_found("pods", ref["name"])
    if ref["uid"] != pod["metadata"]["uid"]:
        raise _forbidden(info, info.name, f"the UID in the bound object reference ({ref['uid']}) does not match "
                         "the UID in record. The object might have been deleted and then recreated")
    if (pod.get("spec") or {}).get("nodeName") != node:
        raise _forbidden(info, info.name, "node requested token bound to a pod scheduled on a different node")


def _forbidden(info, name: str, why: str) -> api_errors.APIError:
    return api_errors.APIError(403, "Forbidden", f'{info.resource} "{name}" is forbidden: {why}',
                               {"name": name, "kind": info.resource.plural})
