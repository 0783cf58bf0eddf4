"""`--authorization-mode Node,RBAC`: a kubelet may read only what its pods need.

A kubelet signs in as system:node:NAME in the group system:nodes. It needs
some Secrets and ConfigMaps (its pods' volumes and environment), but RBAC
can only say "all Secrets" or "the Secrets with these names", and which
names a node needs changes with every pod scheduled to it. So Kubernetes
asks the cluster instead: a node may get a Secret or ConfigMap only if a
pod bound to it (spec.nodeName) refers to it; so with the
PersistentVolumeClaims its pods mount and the volumes those are bound to. Everything else a kubelet
does (watch pods, report node and pod status, write events) it may do as
Kubernetes' system:node role says, and its Lease only if the Lease bears
its name; which Node and which pods it may *change* is NodeRestriction's
question (node_restriction.py), since that needs the object.

Kubernetes keeps a graph of pods, nodes and what they refer to, updated by
informers (plugin/pkg/auth/authorizer/node); ours reads the node's pods
from the store on each question, which is simple and, for the few dozen
pods of a node, fast enough. Like RBAC it never denies: without a reason
to allow it has no opinion, and says why.
"""
from __future__ import annotations

import registry
import rbac
from abac import Attributes
from rbac import PolicyRule
from common.model.lenient import as_dict, as_list

NODE_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
PODS = registry.for_kind("", "Pod")
CLAIMS = registry.for_kind("", "PersistentVolumeClaim")
LEASE_NAMESPACE = "kube-node-lease"


def node_name(user) -> str:
    """NAME for system:node:NAME in system:nodes; "" for anyone else."""
    if NODE_GROUP in user.groups and user.name.startswith(NODE_PREFIX):
        return user.name[len(NODE_PREFIX):]
    return ""


# Volume sources whose secretRef (or secretName) names a Secret of the pod's
# namespace, as Kubernetes' VisitPodSecretNames (pkg/api/pod/util.go) lists them.
SECRET_VOLUME_REFS = {"azureFile": "secretName", "cephfs": "secretRef", "cinder": "secretRef",
                      "flexVolume": "secretRef", "iscsi": "secretRef", "rbd": "secretRef",
                      "scaleIO": "secretRef", "storageos": "secretRef", "csi": "nodePublishSecretRef"}
CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")


def referenced(pod: dict, kind: str) -> set[str]:
    """Names of the Secrets or ConfigMaps (kind "secret" / "configMap") a pod
    uses: Kubernetes' VisitPodSecretNames and VisitPodConfigmapNames."""
    spec = as_dict(pod.get("spec"))
    names = set()
    for volume in as_list(spec.get("volumes")):
        volume = as_dict(volume)
        names.add(as_dict(volume.get(kind)).get("secretName" if kind == "secret" else "name"))
        for source in as_list(as_dict(volume.get("projected")).get("sources")):
            names.add(as_dict(as_dict(source).get(kind)).get("name"))
        if kind == "secret":
            names.update(_secret_of_volume_plugin(volume))
    for field in CONTAINER_FIELDS:
        for container in as_list(spec.get(field)):
            container = as_dict(container)
            for env in as_list(container.get("env")):
                names.add(as_dict(as_dict(as_dict(env).get("valueFrom")).get(f"{kind}KeyRef")).get("name"))
            for source in as_list(container.get("envFrom")):
                names.add(as_dict(as_dict(source).get(f"{kind}Ref")).get("name"))
    if kind == "secret":
        names.update(as_dict(ref).get("name") for ref in as_list(spec.get("imagePullSecrets")))
    return {name for name in names if name and isinstance(name, str)}     # "" names nothing


def _secret_of_volume_plugin(volume: dict) -> list:
    """The Secret a storage plugin's volume logs in with (an iSCSI target's
    password, a CSI driver's credentials): the kubelet reads it too."""
    found = []
    for plugin, field in SECRET_VOLUME_REFS.items():
        ref = as_dict(volume.get(plugin)).get(field)
        found.append(ref if isinstance(ref, str) else as_dict(ref).get("name"))
    return found


class NodeAuthorizer:
    def __init__(self, store, node_rules: list[PolicyRule]):
        self.store = store
        self.node_rules = node_rules       # system:node's rules, for everything else

    # [START node-authorize]
    def decide(self, user, a: Attributes) -> tuple[str, str]:
        node = node_name(user)
        if not node:
            return "no opinion", ""
        if a.is_resource_request and a.api_group == "" and a.resource in ("secrets", "configmaps"):
            return self._read_for_pods(node, a)
        if a.is_resource_request and a.api_group == "" and a.resource in ("persistentvolumeclaims",
                                                                          "persistentvolumes"):
            return self._storage_for_pods(node, a)
        if a.is_resource_request and a.api_group == "" and a.resource == "serviceaccounts":
            return self._token_for_pods(node, a)
        if a.is_resource_request and a.api_group == "coordination.k8s.io" and a.resource == "leases":
            return self._own_lease(node, a)
        if any(rbac.rule_allows(rule, a) for rule in self.node_rules):
            return "allow", ""
        return "no opinion", ""

    def _read_for_pods(self, node: str, a: Attributes) -> tuple[str, str]:
        if a.verb != "get" or not a.name or a.subresource:
            return "no opinion", "can only get individual resources of this type"
        kind = "secret" if a.resource == "secrets" else "configMap"
        pods, _ = self.store.list(PODS, a.namespace)
        if any(p.get("spec", {}).get("nodeName") == node and a.name in referenced(p, kind) for p in pods):
            return "allow", ""
        return "no opinion", f"no relationship found between node '{node}' and this object"

    def _storage_for_pods(self, node: str, a: Attributes) -> tuple[str, str]:
        """A claim a pod on this node mounts (and its status, which a kubelet
        updates when a volume grows), or the volume such a claim is bound to:
        Kubernetes' graph of pod -> claim -> volume."""
        verbs = ("get", "update", "patch") if a.subresource == "status" else ("get",)
        if a.verb not in verbs or not a.name or (a.subresource and a.resource != "persistentvolumeclaims"):
            return "no opinion", "can only get individual resources of this type"
        pods, _ = self.store.list(PODS, a.namespace if a.resource == "persistentvolumeclaims" else "")
        mounted = {(p["metadata"].get("namespace"), as_dict(v.get("persistentVolumeClaim")).get("claimName"))
                   for p in pods if p.get("spec", {}).get("nodeName") == node
                   for v in as_list(p["spec"].get("volumes")) if isinstance(v, dict)}
        if a.resource == "persistentvolumeclaims":
            related = (a.namespace, a.name) in mounted
        else:
            claims, _ = self.store.list(CLAIMS, "")
            related = any((c["metadata"].get("namespace"), c["metadata"]["name"]) in mounted
                          and as_dict(c.get("spec")).get("volumeName") == a.name for c in claims)
        if related:
            return "allow", ""
        return "no opinion", f"no relationship found between node '{node}' and this object"

    def _token_for_pods(self, node: str, a: Attributes) -> tuple[str, str]:
        """A token for a ServiceAccount some pod on this node runs as
        (NodeRestriction then insists the token be bound to such a pod)."""
        if a.verb != "create" or a.subresource != "token" or not a.name:
            return "no opinion", "can only create tokens for individual service accounts"
        pods, _ = self.store.list(PODS, a.namespace)
        if any(p.get("spec", {}).get("nodeName") == node and p["spec"].get("serviceAccountName") == a.name
               for p in pods):
            return "allow", ""
        return "no opinion", f"no relationship found between node '{node}' and this object"

    def _own_lease(self, node: str, a: Attributes) -> tuple[str, str]:
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return "no opinion", "can only get, create, update, patch, or delete a node lease"
        if a.namespace != LEASE_NAMESPACE:
            return "no opinion", f'can only access leases in the "{LEASE_NAMESPACE}" system namespace'
        # A create names no object yet: NodeRestriction checks the name then.
        if a.verb != "create" and a.name != node:
            return "no opinion", "can only access node lease with the same name as the requesting node"
        return "allow", ""
    # [END node-authorize]
