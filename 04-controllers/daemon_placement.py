"""What a DaemonSet decides, as pure functions: which nodes should run its
pod, how that pod is pinned to its node, what to create or delete on each
node, which old pods a rolling update replaces now, and the status.

A DaemonSet does not pick nodes for its pods; the default scheduler still
does the binding. What the controller does is make one pod per node and
give it a required node affinity on that node's name:

    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchFields:
            - {key: metadata.name, operator: In, values: [node2]}

so the scheduler can place it nowhere else, and still checks the node's
resources and ports as for any pod (Kubernetes has done this since 1.12;
before, the controller bound the pods itself).
"""
from __future__ import annotations

import copy
from typing import Callable, NamedTuple

# The scheduler's own taint and node-affinity rules, so the controller and
# the scheduler never disagree about a node (Kubernetes' daemon controller
# calls the same helpers, from k8s.io/component-helpers/scheduling).
from common.model.scheduling import NO_EXECUTE, NO_SCHEDULE, term_matches, tolerated

REVISION_LABEL = "controller-revision-hash"

# Taints the node lifecycle controller puts on a node in trouble. A daemon
# (a log shipper, a network plugin) should stay on its node through them,
# and the unschedulable one is what `kubectl cordon` means: no *new* work,
# but a node's own daemons are not new work. Network-unavailable is only
# tolerated by pods on the host network: they do not need the pod network.
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": NO_EXECUTE},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": NO_EXECUTE},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": NO_SCHEDULE},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": NO_SCHEDULE},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": NO_SCHEDULE},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": NO_SCHEDULE},
]
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                           "effect": NO_SCHEDULE}


# ---------------------------------------------------------------- the pod for one node

def with_daemon_tolerations(pod_spec: dict) -> list[dict]:
    """The template's tolerations plus the daemon ones it does not already have."""
    tolerations = list(pod_spec.get("tolerations") or [])
    wanted = DAEMON_TOLERATIONS + ([HOST_NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])
    for toleration in wanted:
        if not any(t.get("key") == toleration["key"] and t.get("effect") == toleration["effect"]
                   for t in tolerations):
            tolerations.append(toleration)
    return tolerations


def pinned_to(affinity: dict | None, node_name: str) -> dict:
    """The pod's affinity with its required node terms narrowed to one node.
    Each of the template's terms keeps its label expressions and gets the
    node-name field; a template without terms gets a term of its own."""
    affinity = copy.deepcopy(affinity or {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    name_field = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [{**term, "matchFields": [name_field]} for term in terms]
    return affinity


def daemon_pod_spec(template_spec: dict, node_name: str) -> dict:
    spec = copy.deepcopy(template_spec)
    spec["tolerations"] = with_daemon_tolerations(spec)
    spec["affinity"] = pinned_to(spec.get("affinity"), node_name)
    return spec


def target_node(pod: dict) -> str | None:
    """The node a daemon pod is for: where it is bound, or, before the
    scheduler has bound it, the node its affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}) \
        .get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" \
                    and len(field.get("values") or []) == 1:
                return field["values"][0]
    return None


# ---------------------------------------------------------------- should this node run it?

class NodeView(NamedTuple):
    """What the scheduler's term_matches reads of a node."""
    name: str
    labels: dict


class Placement(NamedTuple):
    should_run: bool          # a pod belongs here: create one if there is none
    should_continue: bool     # a pod already here may stay


def placement(template_spec: dict, node: dict) -> Placement:
    """Would the scheduler accept this DaemonSet's pod on this node, judging
    only by what the DaemonSet can know (names, labels, taints)? Resources
    are the scheduler's business: a pod that does not fit stays Pending
    and says why, which is more useful than no pod at all.

    A new NoSchedule taint keeps new pods away but leaves the running one;
    a NoExecute taint the pod does not tolerate evicts it."""
    meta = node.get("metadata") or {}
    view = NodeView(meta.get("name", ""), meta.get("labels") or {})
    if template_spec.get("nodeName") and template_spec["nodeName"] != view.name:
        return Placement(False, False)
    if not all(view.labels.get(k) == v for k, v in (template_spec.get("nodeSelector") or {}).items()):
        return Placement(False, False)
    required = (((template_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is not None and not any(term_matches(t, view) for t in required.get("nodeSelectorTerms") or []):
        return Placement(False, False)
    tolerations = with_daemon_tolerations(template_spec)
    untolerated = [t for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("effect") in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(tolerations, t)]
    if untolerated:
        return Placement(False, not any(t.get("effect") == NO_EXECUTE for t in untolerated))
    return Placement(True, True)


# ---------------------------------------------------------------- what to do on one node

class NodeActions(NamedTuple):
    create: bool
    delete: list[dict]


def oldest_first(pods: list[dict]) -> list[dict]:
    return sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))


# [START daemon-node-actions]
def node_actions(where: Placement, pods: list[dict]) -> NodeActions:
    """One node, its Placement and the DaemonSet's pods there (all of them,
    finished and terminating too): what makes it one healthy pod, or none."""
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if not where.should_continue:
        return NodeActions(create=False, delete=live)
    # A daemon runs until its node goes: a pod that stopped (Failed, or
    # Succeeded though restartPolicy is Always) is replaced.
    finished = [p for p in live if (p.get("status") or {}).get("phase") in ("Failed", "Succeeded")]
    running = oldest_first([p for p in live if p not in finished])
    # Two pods for one node (a slow watch, a restart mid-create): keep the oldest.
    extra = running[1:]
    # While any pod is still here, even terminating, wait: the next
    # reconcile after it is gone creates the replacement.
    return NodeActions(create=where.should_run and not pods, delete=finished + extra)
# [END daemon-node-actions]


# ---------------------------------------------------------------- rolling update

class NodePods(NamedTuple):
    """One node's pods during a rollout: from the current template, or older."""
    new: list[dict]
    old: list[dict]


# [START daemon-rolling-update]
def old_pods_to_replace(nodes: list[NodePods], max_unavailable: int,
                        available: Callable[[dict], bool]) -> list[dict]:
    """Which old pods to delete now (the controller then creates the new
    pod on that node), so that at most max_unavailable nodes are without
    an available daemon at once. An old pod that is not available anyway
    costs nothing to replace, so it always goes."""
    unavailable = 0
    free, candidates = [], []
    for node in nodes:
        if len(node.new) + len(node.old) != 1:
            unavailable += 1            # none, or two at once: node_actions is on it
        elif node.new:
            unavailable += 0 if available(node.new[0]) else 1
        elif not available(node.old[0]):
            free.append(node.old[0])    # unavailable already: its node counts, and it may go
            unavailable += 1
        else:
            candidates.append(node.old[0])
    room = max(0, max_unavailable - unavailable)
    return free + candidates[:room]
# [END daemon-rolling-update]


# ---------------------------------------------------------------- status

class NodeState(NamedTuple):
    where: Placement
    pods: list[dict]           # the live (not terminating) daemon pods on the node, oldest first


def daemon_status(nodes: list[NodeState], revision: str, ready: Callable[[dict], bool],
                  available: Callable[[dict], bool]) -> dict:
    """The counts `kubectl get ds` shows. Per node, the oldest pod speaks
    for the node (as in Kubernetes): it is the one that stays."""
    status = dict.fromkeys(("desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled",
                            "numberReady", "numberAvailable", "updatedNumberScheduled"), 0)
    for node in nodes:
        if not node.where.should_run:
            status["numberMisscheduled"] += 1 if node.pods else 0
            continue
        status["desiredNumberScheduled"] += 1
        if not node.pods:
            continue
        pod = node.pods[0]
        status["currentNumberScheduled"] += 1
        status["numberReady"] += ready(pod)
        status["numberAvailable"] += available(pod)
        status["updatedNumberScheduled"] += (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision
    status["numberUnavailable"] = status["desiredNumberScheduled"] - status["numberAvailable"]
    return status
