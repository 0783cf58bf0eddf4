"""The scheduling framework: how one pod's place is decided, plugin by plugin.

    every node ──filter──▶ the nodes that can run the pod ──score──▶ best total ──round robin──▶ one node

This is the seed posts' two-phase algorithm ("predicates" then "priorities"),
in the shape the Kubernetes scheduler framework gives it today:

- A **filter** looks at one node and says yes (an empty tuple) or no, with
  the reasons a person should read ("Insufficient cpu"). A node is out at
  its first "no"; the reasons of every rejected node add up to the
  FailedScheduling message, `0/3 nodes are available: 1 Insufficient cpu,
  2 node(s) were unschedulable.`, which therefore writes itself.
- A **score** gives each remaining node 0-100. Some plugins first count
  something (pods of the same app, untolerated taints) and only turn it
  into 0-100 once every node is counted (`normalize`). Each plugin has a
  weight; a node's total is the weighted sum, as in Kubernetes.
- Several nodes may share the best total. We take them in turn (round
  robin), so identical pods on identical nodes spread evenly.

One plugin object may do both (NodeAffinity filters on required rules and
scores preferred ones), and may `prepare` something once per pod before any
node is looked at (Kubernetes' PreFilter and PreScore). When prepare finds
the plugin has nothing to say about this pod (no host ports to check, no
affinity at all), it returns SKIP and the plugin sits this pod out: with a
thousand nodes, not calling a filter is the cheapest way to run it. Plugins
only read: the node infos they are given belong to the scheduler's cache.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

MAX_NODE_SCORE = 100
MIN_FEASIBLE_NODES = 100  # below this many nodes, every node is looked at
NO_NODES = "no nodes available to schedule pods"
SKIP = "skip"             # what prepare() returns when the plugin has nothing to check for this pod


@dataclass(frozen=True)
class Rejected:
    """What prepare() returns when no node can help, whatever the node
    (Kubernetes' PreFilter answering UnschedulableAndUnresolvable): the
    pod waits with this reason, e.g. "pod has unbound immediate
    PersistentVolumeClaims", and no filter runs."""
    reason: str


class Plugin:
    """A named unit of scheduling policy. Override what the plugin does."""

    name = "Plugin"

    def prepare(self, pod, nodes: list, state: dict) -> "str | Rejected | None":
        """Work out, once per pod, what filter and score will need (state[self.name]).
        Return SKIP if this pod gives the plugin nothing to do (it then passes every node),
        or Rejected(reason) if no node could take it."""

    def pre_bind(self, pod, node_name: str) -> None:
        """Once a node is chosen, before the binding: write what must be
        written first (the volume plugin's choice of node on a claim)."""

    def filter(self, pod, node, state: dict) -> tuple[str, ...]:
        """() if the pod may run on node, else the reasons it may not."""
        return ()

    def score(self, pod, node, state: dict) -> int:
        return 0

    def normalize(self, scores: dict[str, int], state: dict) -> dict[str, int]:
        """Turn raw scores (node name -> number) into 0-100. Default: as they are."""
        return scores


@dataclass
class Decision:
    """Everything one scheduling cycle found out; --explain prints it."""

    node: str | None = None                      # where the pod goes; None: nowhere
    message: str = ""                            # why nowhere: the FailedScheduling text
    nodes: list[str] = field(default_factory=list)                     # the nodes looked at
    total_nodes: int = 0                                               # of how many
    skipped: set[str] = field(default_factory=set)                     # plugins with nothing to do here
    failures: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # node -> (filter, reasons)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)    # node -> {score name: 0-100}, if explained
    totals: dict[str, int] = field(default_factory=dict)               # node -> weighted sum
    ties: list[str] = field(default_factory=list)                      # the nodes sharing the best total


class RoundRobin:
    """Chooses among equally good nodes in turn."""

    def __init__(self):
        self.turn = 0

    # [START round-robin]
    def pick(self, best: list[str]) -> str:
        """One of the nodes that share the best score, each in its turn.

        The counter moves on at every pick, so a stream of identical pods
        facing the same tie takes node1, node2, node3, node1, ... The seeds'
        scheduler did exactly this; Kubernetes today picks at random among
        the best instead, which spreads as evenly on average without a
        counter shared by every decision."""
        best = sorted(best)                  # the same tie is always in the same order
        choice = best[self.turn % len(best)]
        self.turn += 1
        return choice
    # [END round-robin]


def nodes_to_find(total: int) -> int:
    """How many feasible nodes are enough to choose from (Kubernetes'
    adaptive percentageOfNodesToScore): all of a small cluster; of a large
    one, a share that shrinks from 50% as it grows (42% of 1,000 nodes, 10%
    of 5,000), never under 5% nor under 100 nodes. The best of 420 good
    nodes is almost always as good as the best of 1,000, at 42% of the cost."""
    if total < MIN_FEASIBLE_NODES:
        return total
    percentage = max(50 - total // 125, 5)
    return max(total * percentage // 100, MIN_FEASIBLE_NODES)


class Framework:
    """Runs a profile: filters in order, then weighted scores, then the tie-break."""

    def __init__(self, filters: list[Plugin], scores: list[tuple[Plugin, int]], explain: bool = False):
        self.filters = filters
        self.scores = scores                       # (plugin, weight)
        self.explain = explain                     # keep every node's score per plugin (for --explain)
        self.round_robin = RoundRobin()
        self.next_start = 0                        # where the next search for feasible nodes begins
        self._prepared = list({id(p): p for p in filters + [p for p, _ in scores]}.values())

    def schedule(self, pod, nodes: list) -> Decision:
        """Decide where pod goes among nodes (NodeInfo objects with a Node)."""
        decision = Decision(total_nodes=len(nodes))
        if not nodes:
            decision.message = NO_NODES
            return decision
        state: dict = {}
        for plugin in self._prepared:
            outcome = plugin.prepare(pod, nodes, state)
            if isinstance(outcome, Rejected):
                decision.message = f"0/{len(nodes)} nodes are available: {outcome.reason}."
                return decision
            if outcome == SKIP:
                decision.skipped.add(plugin.name)
        feasible = self.run_filters(pod, nodes, state, decision)
        if not feasible:
            decision.message = fit_error(len(nodes), decision.failures)
            return decision
        self.run_scores(pod, feasible, state, decision)
        best = max(decision.totals.values())
        decision.ties = [name for name, total in decision.totals.items() if total == best]
        decision.node = self.round_robin.pick(decision.ties)
        return decision

    def pre_bind(self, pod, node_name: str) -> None:
        for plugin in self._prepared:
            plugin.pre_bind(pod, node_name)

    def run_filters(self, pod, nodes: list, state: dict, decision: Decision) -> list:
        """The feasible nodes: all of them, or enough (nodes_to_find) in a
        large cluster. Each search starts where the last one stopped, so
        every node gets its turn to be looked at."""
        filters = [plugin for plugin in self.filters if plugin.name not in decision.skipped]
        wanted, total = nodes_to_find(len(nodes)), len(nodes)
        feasible = []
        start = self.next_start % total
        looked_at = 0
        for i in range(total):
            node = nodes[(start + i) % total]
            looked_at += 1
            decision.nodes.append(node.name)
            for plugin in filters:
                reasons = plugin.filter(pod, node, state)
                if reasons:
                    decision.failures[node.name] = (plugin.name, reasons)
                    break                  # one "no" is enough; later filters need not run
            else:
                feasible.append(node)
                if len(feasible) == wanted:
                    break
        self.next_start = (start + looked_at) % total
        return feasible

    def run_scores(self, pod, nodes: list, state: dict, decision: Decision) -> None:
        """Weighted sum per node. A plugin with nothing to say about this pod
        (skipped) adds nothing: 0 for every node leaves the ranking as it is."""
        decision.totals = dict.fromkeys((node.name for node in nodes), 0)
        if self.explain:
            decision.scores = {name: {} for name in decision.totals}
        for plugin, weight in self.scores:
            if plugin.name in decision.skipped:
                continue
            raw = {node.name: plugin.score(pod, node, state) for node in nodes}
            totals = decision.totals
            for name, value in plugin.normalize(raw, state).items():
                totals[name] += value * weight
                if self.explain:
                    decision.scores[name][plugin.name] = value


def fit_error(node_count: int, failures: dict[str, tuple[str, tuple[str, ...]]]) -> str:
    """`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were unschedulable.`

    Each reason counted over the nodes, written "<count> <reason>", sorted
    as text (so "10 ..." comes before "2 ...", exactly as Kubernetes sorts).
    Kubernetes 1.32 then appends what its preemption plugin found, here
    "preemption: 0/3 nodes are available: 1 No preemption victims found for
    incoming pod, 2 Preemption is not helpful for scheduling." (a cordon is
    not something evicting pods can fix; pkg/scheduler/framework/types.go,
    FitError.Error). We have no preemption, so ours ends after the first
    sentence."""
    counts: Counter[str] = Counter()
    for _, reasons in failures.values():
        counts.update(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


def default_normalize(scores: dict[str, int], reverse: bool = False) -> dict[str, int]:
    """Scale so the highest raw score becomes 100 (reverse: becomes 0, and
    a zero becomes 100). All zero stays all zero, or all 100 if reversed."""
    highest = max(scores.values(), default=0)
    if highest == 0:
        return {name: MAX_NODE_SCORE if reverse else 0 for name in scores}
    scaled = {name: MAX_NODE_SCORE * value // highest for name, value in scores.items()}
    if reverse:
        scaled = {name: MAX_NODE_SCORE - value for name, value in scaled.items()}
    return scaled
