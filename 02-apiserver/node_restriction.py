"""NodeRestriction admission: a kubelet changes only its own Node, Lease and pods.

The Node authorizer lets every kubelet update nodes and pods/status, since
the request alone does not say whose they are: the object does. This
admission plugin looks at the object. For a user system:node:NAME:

- Node: only the Node named NAME may be created or changed;
- Lease (kube-node-lease): only the one named NAME;
- Pod: its status only if spec.nodeName is NAME; a new pod only if it is
  a mirror pod (annotation kubernetes.io/config.mirror) bound to NAME;
  deletion only of pods bound to NAME;
- a ServiceAccount token (serviceaccounts/NAME/token): only bound to a
  pod bound to NAME, so a token a node holds dies with its pod.

Messages are Kubernetes' (plugin/pkg/admission/noderestriction/admission.go),
after `<resource> "<name>" is forbidden: `.
"""
from __future__ import annotations

from flask import g

import api_errors
from node_authorizer import node_name

MIRROR = "kubernetes.io/config.mirror"


def _node_of_request() -> str:
    user = g.get("user")
    return node_name(user) if user is not None else ""


# [START node-restriction]
def admit(server, obj: dict, old: dict | None, info, operation: str) -> None:
    node = _node_of_request()
    if not node:
        return
    kind, name = info.resource.kind, obj["metadata"].get("name", "")
    if kind == "Node" and name != node:
        raise _forbidden(info, name, f'node "{node}" is not allowed to modify node "{name}"')
    if kind == "Lease" and info.resource.group == "coordination.k8s.io" and name != node:
        raise _forbidden(info, name, "can only access node lease with the same name as the requesting node")
    if kind == "Pod":
        bound_to = (obj.get("spec") or {}).get("nodeName")
        if operation == "UPDATE" and info.subresource == "status" and bound_to != node:
            raise _forbidden(info, name, f'node "{node}" can only update pod status for pods with '
                             "spec.nodeName set to itself")
        if operation == "CREATE" and MIRROR not in (obj["metadata"].get("annotations") or {}):
            raise _forbidden(info, name, f'pod does not have "{MIRROR}" annotation, node "{node}" can '
                             "only create mirror pods")
        if operation == "CREATE" and bound_to != node:
            raise _forbidden(info, name, f'node "{node}" can only create pods with spec.nodeName set to itself')


def admit_delete(server, obj: dict, resource) -> None:
    node = _node_of_request()
    if node and resource.kind == "Pod" and resource.group == "" \
            and (obj.get("spec") or {}).get("nodeName") != node:
        raise api_errors.APIError(403, "Forbidden", f'pods "{obj["metadata"]["name"]}" is forbidden: '
                                  f'node "{node}" can only delete pods with spec.nodeName set to itself')
# [END node-restriction]


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
