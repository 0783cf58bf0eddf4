"""The default profile: which plugins run, in what order, and how much each score weighs.

Filters run in this order and a node stops at its first "no", so the
order decides which reason a rejected node is counted under. It follows
Kubernetes' default profile (cheap checks on the node itself first, checks
that look at other pods last). The weights are Kubernetes' defaults too:
taints count three times, node affinity twice, the rest once.

To change the policy, change this list: a new score plugin is a class with
a name and a score() method (see the chapter's exercises).
"""
from __future__ import annotations

from typing import Callable

from framework import Framework
from inter_pod import InterPodAffinity, SelectorSpread
from node_filters import NodeAffinity, NodeConditions, NodeName, NodePorts, NodeUnschedulable, TaintToleration
from node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit, NodeResourcesLeastAllocated


def default_framework(services: Callable[[], list[dict]] = lambda: []) -> Framework:
    """services: returns the cluster's Service objects (for SelectorSpread)."""
    taints, affinity = TaintToleration(), NodeAffinity()
    filters = [
        NodeConditions(),
        NodeUnschedulable(),
        NodeName(),
        taints,
        affinity,
        NodePorts(),
        NodeResourcesFit(),
        InterPodAffinity(),
    ]
    scores = [
        (NodeResourcesLeastAllocated(), 1),
        (NodeResourcesBalancedAllocation(), 1),
        (SelectorSpread(services), 1),
        (affinity, 2),
        (taints, 3),
    ]
    return Framework(filters, scores)
