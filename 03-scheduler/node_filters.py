"""Plugins that judge a node by the node itself: its conditions, cordon,
name, taints, labels and host ports.

The reason strings are Kubernetes' own, word for word, so that a
FailedScheduling message from this scheduler reads like one from a real
cluster (and searching the web for it finds the right answers).

Whether a toleration covers a taint and whether a node matches a
nodeSelectorTerm are rules the controllers of chapter 04 apply too: they
live in common/model/scheduling.py, and the plugins here apply them.
"""
from __future__ import annotations

from common.model.scheduling import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, term_matches, tolerated
from framework import SKIP, Plugin, default_normalize

# ---------------------------------------------------------------- node conditions

# What the node's kubelet reports, and the taint Kubernetes' node lifecycle
# controller would put on the node for it (TaintNodesByCondition). Today the
# real scheduler only sees those taints; we have no such controller yet, so
# this plugin reads the conditions directly, with the reason strings the
# scheduler used when it still did the same. A pod that tolerates the taint
# (DaemonSet pods do) may still go there, as in Kubernetes.
CONDITION_TAINTS = {
    "MemoryPressure": ("node.kubernetes.io/memory-pressure", "node(s) had memory pressure"),
    "DiskPressure": ("node.kubernetes.io/disk-pressure", "node(s) had disk pressure"),
    "PIDPressure": ("node.kubernetes.io/pid-pressure", "node(s) had pid pressure"),
}
NOT_READY = ("node.kubernetes.io/not-ready", "node(s) were not ready")
UNREACHABLE = ("node.kubernetes.io/unreachable", "node(s) were not ready")


class NodeConditions(Plugin):
    """Ready, and not under memory, disk or pid pressure."""

    name = "NodeConditions"

    def filter(self, pod, node, state) -> tuple[str, ...]:
        ready = node.conditions.get("Ready")
        # A node that never said it is Ready (no kubelet behind it yet) is not.
        if ready != "True":
            taint_key, reason = UNREACHABLE if ready == "Unknown" else NOT_READY
            if not tolerated(pod.tolerations, {"key": taint_key, "effect": NO_SCHEDULE}):
                return (reason,)
        for condition, (taint_key, reason) in CONDITION_TAINTS.items():
            if node.conditions.get(condition) != "True":
                continue
            # Memory pressure keeps out only pods that asked for nothing:
            # Kubernetes gives every other pod a toleration for it, trusting
            # that pods with requests can live with what they asked for.
            if condition == "MemoryPressure" and not pod.best_effort:
                continue
            if not tolerated(pod.tolerations, {"key": taint_key, "effect": NO_SCHEDULE}):
                return (reason,)
        return ()


# ---------------------------------------------------------------- cordon

class NodeUnschedulable(Plugin):
    """`kubectl cordon` sets spec.unschedulable: no new pods, unless they tolerate it."""

    name = "NodeUnschedulable"
    TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}

    def filter(self, pod, node, state) -> tuple[str, ...]:
        if node.unschedulable and not tolerated(pod.tolerations, self.TAINT):
            return ("node(s) were unschedulable",)
        return ()


# ---------------------------------------------------------------- spec.nodeName

class NodeName(Plugin):
    """A pod that names its node may only go there. (Such a pod never reaches
    the queue, it is bound already; the filter matters when other code asks
    "could this pod run there?", as Kubernetes' preemption does.)"""

    name = "NodeName"

    def prepare(self, pod, nodes, state):
        if not pod.node_name:
            return SKIP

    def filter(self, pod, node, state) -> tuple[str, ...]:
        if pod.node_name and pod.node_name != node.name:
            return ("node(s) didn't match the requested node name",)
        return ()


# ---------------------------------------------------------------- taints

class TaintToleration(Plugin):
    """Filter: every NoSchedule and NoExecute taint must be tolerated.
    Score: fewer untolerated PreferNoSchedule taints is better."""

    name = "TaintToleration"

    def filter(self, pod, node, state) -> tuple[str, ...]:
        for taint in node.taints:
            if taint.get("effect") in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(pod.tolerations, taint):
                # Kubernetes 1.32's wording, naming the first untolerated taint
                # (pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go,
                # Filter, at v1.32.0). Later releases print "untolerated taint(s)"
                # without it, since a taint's value may be private.
                return (f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}",)
        return ()

    def prepare(self, pod, nodes, state) -> None:
        state[self.name] = [t for t in pod.tolerations if (t.get("effect") or PREFER_NO_SCHEDULE) == PREFER_NO_SCHEDULE]

    def score(self, pod, node, state) -> int:
        soft = state[self.name]
        return sum(1 for taint in node.taints
                   if taint.get("effect") == PREFER_NO_SCHEDULE and not tolerated(soft, taint))

    def normalize(self, scores, state):
        return default_normalize(scores, reverse=True)    # most taints: 0; none: 100


# ---------------------------------------------------------------- node selector and node affinity

class NodeAffinity(Plugin):
    """Filter: spec.nodeSelector (every label equal) and the required node
    affinity (any one of its terms) must both match the node's labels.
    Score: the sum of the weights of the preferred terms the node matches."""

    name = "NodeAffinity"

    def prepare(self, pod, nodes, state):
        if not (pod.node_selector or pod.required_node_terms is not None or pod.preferred_node_terms):
            return SKIP

    def filter(self, pod, node, state) -> tuple[str, ...]:
        labels = node.labels
        selector_ok = all(labels.get(key) == value for key, value in pod.node_selector.items())
        terms = pod.required_node_terms
        affinity_ok = terms is None or any(term_matches(term, node) for term in terms)
        if selector_ok and affinity_ok:
            return ()
        return ("node(s) didn't match Pod's node affinity/selector",)

    def score(self, pod, node, state) -> int:
        return sum(int(preferred.get("weight") or 0) for preferred in pod.preferred_node_terms
                   if term_matches(preferred.get("preference") or {}, node))

    def normalize(self, scores, state):
        return default_normalize(scores)


# ---------------------------------------------------------------- host ports

def ports_conflict(wanted: tuple[str, str, int], used: tuple[str, str, int]) -> bool:
    """Two host ports clash on the same port and protocol if either listens
    on every address (0.0.0.0) or both on the same one."""
    wanted_ip, wanted_protocol, wanted_port = wanted
    used_ip, used_protocol, used_port = used
    if wanted_port != used_port or wanted_protocol != used_protocol:
        return False
    return wanted_ip == used_ip or "0.0.0.0" in (wanted_ip, used_ip)


class NodePorts(Plugin):
    """A hostPort can be taken by one pod per node."""

    name = "NodePorts"

    def prepare(self, pod, nodes, state):
        if not pod.host_ports:
            return SKIP

    def filter(self, pod, node, state) -> tuple[str, ...]:
        for wanted in pod.host_ports:
            if any(ports_conflict(wanted, used) for used in node.used_ports):
                return ("node(s) didn't have free ports for the requested pod ports",)
        return ()
