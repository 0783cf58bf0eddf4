"""Plugins that judge a node by the pods already on it (or near it).

- InterPodAffinity (filter): a pod's required podAffinity ("put me where a
  cache pod runs") and podAntiAffinity ("never two of us on one host"),
  and the anti-affinity of pods already placed, which can keep a newcomer
  away just as well.
- SelectorSpread (score): the seed post's rule that we "would not want this
  pod on a node already running an instance of it". Pods of the same owner
  (a ReplicaSet, say) or behind the same Service count as instances.
  Kubernetes removed this plugin in 1.29; in 1.32 PodTopologySpread does the
  job, with default constraints (per hostname and per zone) for a pod that
  sets none, and those apply only to pods a Service, ReplicaSet,
  StatefulSet or ReplicationController selects (kubernetes.io/docs/concepts/
  scheduling-eviction/topology-spread-constraints, "Cluster-level default
  constraints"). We keep SelectorSpread: it shows the idea in a few lines.

"Near" is a topology domain: nodes that share a value of the term's
topologyKey. With kubernetes.io/hostname every node is its own domain; with
a zone label, a whole zone is one.
"""
from __future__ import annotations

from typing import Callable

from common.model.selectors import Selector, SelectorError
from framework import MAX_NODE_SCORE, SKIP, Plugin

Domain = tuple[str, str]       # (topology key, value), e.g. ("kubernetes.io/hostname", "node1")


class InterPodAffinity(Plugin):
    name = "InterPodAffinity"

    def prepare(self, pod, nodes, state):
        """Find, once, the domains each rule points at; the filter then only
        looks a node's labels up in these sets."""
        wanted: list[set[Domain]] = [set() for _ in pod.affinity_terms]    # per term: where a match runs
        avoided: set[Domain] = set()        # where a pod we must not meet runs
        excluded: set[Domain] = set()       # where an existing pod's anti-affinity forbids us
        for node in nodes:
            if pod.affinity_terms or pod.anti_affinity_terms:
                for other in node.pods.values():
                    for i, term in enumerate(pod.affinity_terms):
                        if term.matches(other) and term.topology_key in node.labels:
                            wanted[i].add((term.topology_key, node.labels[term.topology_key]))
                    for term in pod.anti_affinity_terms:
                        if term.matches(other) and term.topology_key in node.labels:
                            avoided.add((term.topology_key, node.labels[term.topology_key]))
            for other in node.with_anti_affinity.values():
                for term in other.anti_affinity_terms:
                    if term.matches(pod) and term.topology_key in node.labels:
                        excluded.add((term.topology_key, node.labels[term.topology_key]))
        # The first pod of a group that wants to be near its own kind has
        # nobody to be near yet; it may go anywhere (Kubernetes' exception).
        first_of_its_kind = (pod.affinity_terms and not any(wanted)
                             and all(term.matches(pod) for term in pod.affinity_terms))
        if not (pod.affinity_terms or pod.anti_affinity_terms or excluded):
            return SKIP                     # no rule of ours or of anyone else's concerns this pod
        state[self.name] = (wanted, avoided, excluded, first_of_its_kind)

    def filter(self, pod, node, state) -> tuple[str, ...]:
        wanted, avoided, excluded, first_of_its_kind = state[self.name]
        labels = node.labels
        for i, term in enumerate(pod.affinity_terms):
            if term.topology_key not in labels:
                return ("node(s) didn't match pod affinity rules",)
            if not first_of_its_kind and (term.topology_key, labels[term.topology_key]) not in wanted[i]:
                return ("node(s) didn't match pod affinity rules",)
        if any((term.topology_key, labels.get(term.topology_key)) in avoided for term in pod.anti_affinity_terms):
            return ("node(s) didn't match pod anti-affinity rules",)
        if excluded and any((key, value) in excluded for key, value in labels.items()):
            return ("node(s) didn't satisfy existing pods anti-affinity rules",)
        return ()


class SelectorSpread(Plugin):
    """Fewer pods of the same kind on a node scores higher."""

    name = "SelectorSpread"

    def __init__(self, services: Callable[[], list[dict]] = lambda: []):
        self.services = services          # the Service informer's list

    def prepare(self, pod, nodes, state):
        """"The same kind" is: the same namespace, matched by every Service
        that selects this pod, and made by the same controller, if any."""
        selectors = []
        for service in self.services():
            meta, spec = service.get("metadata") or {}, service.get("spec") or {}
            if meta.get("namespace") != pod.namespace or not spec.get("selector"):
                continue
            try:
                selector = Selector.from_labels(spec["selector"])
            except SelectorError:
                continue
            if selector.matches(pod.labels):
                selectors.append(selector)
        if not selectors and not pod.owner_uid:
            return SKIP                     # no kin to spread from
        state[self.name] = (selectors, pod.owner_uid)

    def score(self, pod, node, state) -> int:
        """The raw score is a count: this pod's kin already on the node."""
        selectors, owner = state[self.name]
        return sum(1 for other in node.pods.values()
                   if other.namespace == pod.namespace and other.key != pod.key and not other.deleting
                   and (owner is None or other.owner_uid == owner)
                   and all(s.matches(other.labels) for s in selectors))

    def normalize(self, scores, state):
        """The node with the most kin scores 0, a node with none 100."""
        most = max(scores.values(), default=0)
        if most == 0:
            return {name: MAX_NODE_SCORE for name in scores}
        return {name: int(MAX_NODE_SCORE * (most - count) / most) for name, count in scores.items()}
