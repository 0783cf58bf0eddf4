"""Claims and volumes: which volume can serve which claim, on which node.

One copy of the matching rules, so that the binder (chapter 04), the
scheduler's volume filters (chapter 03) and the kubelet (chapter 01) never
disagree about a claim. Kubernetes shares them the same way, in
k8s.io/component-helpers/storage/volume and pkg/controller/volume/persistentvolume.

A claim asks; a volume offers. A volume can serve a claim when it is of the
claim's class, holds at least what the claim requests, allows every access
mode the claim needs, presents the same volumeMode, and carries the labels
the claim's selector asks for. Of those, the binder takes the smallest, so
that a 1Gi claim does not use up a 100Gi disk while a 1Gi volume sits idle.
"""
from __future__ import annotations

from dataclasses import dataclass

from common.model.lenient import as_dict, as_list, as_str, dig
from common.model.quantity import QuantityError, parse_quantity
from common.model.scheduling import term_matches
from common.model.selectors import SelectorError, selector_from_label_selector

# Kubernetes' annotations, by their real names, so kubectl describe reads the same.
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"        # on a claim: the binder finished
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"  # the binder (not a user) chose this pair
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"         # on a volume: which provisioner made it
SELECTED_NODE = "volume.kubernetes.io/selected-node"       # on a claim: the scheduler's choice
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"   # on a claim: who should make its volume
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
HOSTNAME_LABEL = "kubernetes.io/hostname"

# Where the local-path provisioner (chapter 04) puts volumes on a node, and
# where the kubelet (chapter 01) removes the directories of volumes deleted.
# /var/tmp: any user may write there (a learner's kubelet may not run as
# root) and, unlike /tmp, it outlives a reboot. Rancher's provisioner uses
# /opt/local-path-provisioner; a real node would give it a disk of its own.
LOCAL_PATH_ROOT = "/var/tmp/groundup/local-path"

IMMEDIATE, WAIT_FOR_FIRST_CONSUMER = "Immediate", "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


@dataclass(frozen=True)
class NodeView:
    """What node affinity looks at: a node's name and labels."""
    name: str
    labels: dict

    @classmethod
    def of(cls, node: dict) -> "NodeView":
        return cls(as_str(dig(node, "metadata", "name")), as_dict(dig(node, "metadata", "labels")))


def storage_of(amounts) -> int:
    """The storage quantity in bytes (0 if absent or unreadable)."""
    try:
        return parse_quantity(as_dict(amounts).get("storage", 0)).value()
    except (QuantityError, TypeError, ValueError):
        return 0


def requested(claim: dict) -> int:
    return storage_of(dig(claim, "spec", "resources", "requests"))


def capacity(volume: dict) -> int:
    return storage_of(dig(volume, "spec", "capacity"))


def class_of(obj: dict) -> str:
    """The class a claim or volume names; "" is a class too: "no class"."""
    return as_str(dig(obj, "spec", "storageClassName"))


def is_default_class(storage_class: dict) -> bool:
    annotations = as_dict(dig(storage_class, "metadata", "annotations"))
    return annotations.get(DEFAULT_CLASS) == "true" or annotations.get(BETA_DEFAULT_CLASS) == "true"


def default_class(classes: list[dict]) -> dict | None:
    """The default StorageClass; with several, the newest (then the first by
    name), as Kubernetes' DefaultStorageClass admission picks."""
    defaults = [c for c in classes if is_default_class(c)]
    defaults.sort(key=lambda c: (as_str(dig(c, "metadata", "creationTimestamp")),
                                 as_str(dig(c, "metadata", "name"))), reverse=True)
    return defaults[0] if defaults else None


def binding_mode(storage_class: dict | None) -> str:
    return as_str((storage_class or {}).get("volumeBindingMode")) or IMMEDIATE


# [START volume-node-affinity]
def volume_allows_node(volume: dict, node: NodeView) -> bool:
    """A volume without nodeAffinity is reachable from every node; one with
    it (every local volume) only from the nodes its terms match."""
    terms = dig(volume, "spec", "nodeAffinity", "required", "nodeSelectorTerms")
    if dig(volume, "spec", "nodeAffinity") is None:
        return True
    return any(term_matches(term, node) for term in as_list(terms) if isinstance(term, dict))
# [END volume-node-affinity]


def pinned_node(volume: dict) -> str | None:
    """The one node a volume names by kubernetes.io/hostname, if it names exactly one."""
    names = {v for term in as_list(dig(volume, "spec", "nodeAffinity", "required", "nodeSelectorTerms"))
             for expr in as_list(as_dict(term).get("matchExpressions"))
             if as_dict(expr).get("key") == HOSTNAME_LABEL and as_dict(expr).get("operator") == "In"
             for v in as_list(as_dict(expr).get("values"))}
    return names.pop() if len(names) == 1 else None


def is_available(volume: dict) -> bool:
    """Free to bind: no claim holds it, it is not going away, and it is not
    a Released volume whose data still belongs to its old claim."""
    if dig(volume, "metadata", "deletionTimestamp") or dig(volume, "spec", "claimRef"):
        return False
    return as_str(dig(volume, "status", "phase")) in ("", "Pending", "Available")


def reserved_for(volume: dict, claim: dict) -> bool:
    """A volume whose claimRef names this claim (by a user, or a
    provisioner that made it for this claim): it serves no other."""
    ref = as_dict(dig(volume, "spec", "claimRef"))
    meta = as_dict(claim.get("metadata"))
    return bool(ref) and ref.get("name") == meta.get("name") and ref.get("namespace") == meta.get("namespace") \
        and ref.get("uid") in (None, "", meta.get("uid"))


# [START volume-matches-claim]
def matches(volume: dict, claim: dict) -> bool:
    """Could this volume serve this claim (its phase aside)?"""
    wanted_modes = set(as_list(dig(claim, "spec", "accessModes")))
    offered_modes = set(as_list(dig(volume, "spec", "accessModes")))
    if class_of(volume) != class_of(claim) or capacity(volume) < requested(claim):
        return False
    if not wanted_modes <= offered_modes:
        return False
    if (as_str(dig(volume, "spec", "volumeMode")) or "Filesystem") != \
            (as_str(dig(claim, "spec", "volumeMode")) or "Filesystem"):
        return False
    selector = dig(claim, "spec", "selector")
    if selector:
        try:
            return selector_from_label_selector(selector).matches(as_dict(dig(volume, "metadata", "labels")))
        except (SelectorError, TypeError, ValueError):
            return False
    return True


def best_volume(claim: dict, volumes: list[dict], node: NodeView | None = None) -> dict | None:
    """The volume to bind this claim to: one reserved for it if any, else
    the smallest available match (by name among equals, so two binders
    agree); with a node, only volumes that node can reach."""
    candidates = [v for v in volumes if (reserved_for(v, claim) or is_available(v)) and matches(v, claim)
                  and (node is None or volume_allows_node(v, node))]
    reserved = [v for v in candidates if reserved_for(v, claim)]
    pool = reserved or candidates
    return min(pool, key=lambda v: (capacity(v), as_str(dig(v, "metadata", "name"))), default=None)
# [END volume-matches-claim]


def claim_names(pod: dict) -> list[str]:
    """The claims a pod's volumes name, in order."""
    return [as_str(as_dict(v.get("persistentVolumeClaim")).get("claimName"))
            for v in as_list(dig(pod, "spec", "volumes"))
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)]


def is_bound(claim: dict) -> bool:
    return bool(dig(claim, "spec", "volumeName")) and as_str(dig(claim, "status", "phase")) == "Bound"
