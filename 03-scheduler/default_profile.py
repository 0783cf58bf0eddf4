"""The default profile: which plugins run, in what order, and how much each score weighs.

Filters run in this order and a node stops at its first "no", so the
order decides which reason a rejected node is counted under. After our own
NodeConditions (Kubernetes reads node conditions as taints instead), it
follows Kubernetes 1.32's default profile: cheap checks on the node itself
first, checks that look at other pods last.

The scores are a simplification. Ours are the seed posts' scheduler's:
LeastAllocated, BalancedAllocation and SelectorSpread once each, node
affinity twice, taints three times. Kubernetes 1.32 weighs taints 3, node
affinity 2, NodeResourcesFit 1 (least-allocated is its default scoring
strategy, not a plugin of its own), PodTopologySpread 2 (SelectorSpread's
successor; SelectorSpread was removed in 1.29), InterPodAffinity 2,
BalancedAllocation 1 and ImageLocality 1
(pkg/scheduler/apis/config/v1/default_plugins.go, getDefaultPlugins).

To change the policy, change this list: a new score plugin is a class with
a name and a score() method (see the chapter's exercises).
"""
from __future__ import annotations

from typing import Callable

from framework import Framework
from inter_pod import InterPodAffinity, SelectorSpread
from node_filters import NodeAffinity, NodeConditions, NodeName, NodePorts, NodeUnschedulable, TaintToleration
from node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit, NodeResourcesLeastAllocated
from volume_filters import VolumeBinding, VolumeRestrictions


def default_framework(services: Callable[[], list[dict]] = lambda: [], *, claims=lambda namespace, name: None,
                      volumes: Callable[[], list[dict]] = lambda: [], classes=lambda namespace, name: None,
                      write_selected_node=lambda claim, node: None) -> Framework:
    """services: returns the cluster's Service objects (for SelectorSpread);
    claims, volumes and classes: the storage the volume plugins look at
    (an informer's get or list), and how the chosen node is written on a claim."""
    taints, affinity = TaintToleration(), NodeAffinity()
    filters = [
        NodeConditions(),
        NodeUnschedulable(),
        NodeName(),
        taints,
        affinity,
        NodePorts(),
        NodeResourcesFit(),
        VolumeRestrictions(claims),
        VolumeBinding(claims, volumes, classes, write_selected_node),
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
