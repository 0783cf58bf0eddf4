"""The DaemonSet controller: one pod on every node that matches.

Node agents (a log shipper, a metrics exporter, chapter 05's proxy in a
real cluster) must run once per machine, whatever the number of machines.
A ReplicaSet cannot say that; a DaemonSet can:

    nodes:    node1        node2        node3 (taint: gpu)   node4 joins
    pods:     agent-x7k2   agent-9fq4   -                    agent-m2tz (created)

The comparison, made per node whenever a node or a pod changes:

    should the node run the pod?  (its labels against the template's
                                   nodeSelector and node affinity, its
                                   taints against the template's tolerations)
    yes, and no pod there    ->  create one, pinned to the node by name
    no, and a pod there      ->  delete it
    a node gone              ->  delete its pod

Each pod carries the `controller-revision-hash` label: a hash of the
template it was made from. Kubernetes stores each template version as a
ControllerRevision object and labels pods with that revision's hash; we do
not serve ControllerRevisions, so the label holds the hash of the template
itself. A RollingUpdate compares it with the current template's hash and
replaces old pods a few nodes at a time (maxUnavailable, default 1).
"""
from __future__ import annotations

import copy
import time

from controller import key_for, split_key
from daemon_placement import (REVISION_LABEL, NodePods, NodeState, daemon_pod_spec, daemon_status, node_actions,
                              old_pods_to_replace, oldest_first, placement, target_node)
from deployment import template_hash, without_hash
from ownership import adopt, controller_of, is_controlled_by, owner_reference, release, selects
from pod_owner import PodOwnerController
from pods import is_active, is_available, is_ready
from rolling_update import resolve

GROUP_VERSION = "apps/v1"


def revision_of(ds: dict) -> str:
    """The hash of the DaemonSet's current template (the same hash a
    Deployment names its ReplicaSets by: empty values do not count)."""
    return template_hash(without_hash(ds["spec"]["template"]))


def max_unavailable(ds: dict, desired: int) -> int:
    """maxUnavailable as a number of nodes: a percentage of the nodes that
    should run the pod, rounded up; never 0, or the rollout could not move.
    (maxSurge, starting the new pod beside the old one, is not done here:
    see the chapter's README.)"""
    rolling = (ds["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
    return max(1, resolve(rolling.get("maxUnavailable"), desired, "1", round_up=True))


class DaemonSetController(PodOwnerController):
    name = "daemonset"
    owner_kind = "DaemonSet"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.daemonsets = self.informers.get(GROUP_VERSION, "daemonsets")
        self.watch_owners_and_pods(self.daemonsets)    # pod events -> DaemonSet keys (pod_owner.py)
        self.nodes = self.informers.get("v1", "nodes")
        self.nodes.add_handler(on_add=self.node_changed, on_update=self.node_updated, on_delete=self.node_changed)

    # ------------------------------------------------ events -> DaemonSet keys

    def node_changed(self, node: dict) -> None:
        for ds in self.daemonsets.list():
            self.enqueue(ds)

    def node_updated(self, old: dict, new: dict) -> None:
        # A kubelet rewrites its node's status every few seconds; only what
        # placement() reads can change which DaemonSets belong there.
        def seen(node):
            return (node["metadata"].get("labels"), (node.get("spec") or {}).get("taints"))
        if seen(old) != seen(new):
            self.node_changed(new)

    # ------------------------------------------------ reconcile

    # [START daemonset-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        ds = self.daemonsets.get(namespace, name)
        if ds is None:                      # deleted: the garbage collector takes its pods
            self.expectations.forget(key)
            return
        if ds["metadata"].get("deletionTimestamp"):
            return
        template_spec = ds["spec"]["template"].get("spec") or {}
        by_node: dict[str | None, list[dict]] = {}
        for pod in self.claim_pods(ds):
            by_node.setdefault(target_node(pod), []).append(pod)
        nodes = {node["metadata"]["name"]: placement(template_spec, node) for node in self.nodes.list()}
        if self.expectations.satisfied(key):
            changed = self.manage(ds, key, nodes, by_node)
            if not changed and (ds["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
                self.roll(ds, key, nodes, by_node)
        self.update_status(ds, nodes, by_node)
    # [END daemonset-reconcile]

    def manage(self, ds: dict, key: str, nodes: dict, by_node: dict) -> bool:
        """Create and delete until every node has one pod or none, as it should."""
        create, delete = [], []
        for node_name, where in nodes.items():
            actions = node_actions(where, by_node.get(node_name, []))
            if actions.create:
                create.append(node_name)
            delete += actions.delete
        # Pods for nodes that are gone (or pods that name no node at all).
        # Kubernetes leaves a *bound* pod of a deleted node to its pod
        # garbage collector; we have none, so the owner cleans up.
        for node_name, pods in by_node.items():
            if node_name not in nodes:
                delete += [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if delete:
            self.delete_pods(ds, key, delete)
        if create:
            self.create_pods(ds, key, create)
        return bool(create or delete)

    def roll(self, ds: dict, key: str, nodes: dict, by_node: dict) -> None:
        revision = revision_of(ds)
        min_ready, now = ds["spec"].get("minReadySeconds", 0), time.time()
        rollout = []
        for node_name, where in nodes.items():
            pods = by_node.get(node_name, [])
            if not (where.should_continue and pods):
                continue
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            new = [p for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision]
            rollout.append(NodePods(new=new, old=[p for p in live if p not in new]))
        desired = sum(1 for where in nodes.values() if where.should_run)
        victims = old_pods_to_replace(rollout, max_unavailable(ds, desired),
                                      available=lambda pod: is_available(pod, min_ready, now))
        if victims:
            self.delete_pods(ds, key, victims)

    # ------------------------------------------------ pods

    def claim_pods(self, ds: dict) -> list[dict]:
        namespace, selector = ds["metadata"]["namespace"], ds["spec"].get("selector")
        owned = []
        for pod in self.pods.list():
            if pod["metadata"]["namespace"] != namespace:
                continue
            matches = selects(selector, pod["metadata"].get("labels"))
            if is_controlled_by(pod, ds):
                if matches:
                    owned.append(pod)
                else:
                    release(self.client, "v1", "pods", pod, ds)
            elif matches and controller_of(pod) is None and not pod["metadata"].get("deletionTimestamp"):
                owned.append(adopt(self.client, "v1", "pods", pod, ds))
        return owned

    def pod_for(self, ds: dict, node_name: str) -> dict:
        template = copy.deepcopy(ds["spec"]["template"])
        meta = template.get("metadata") or {}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": ds["metadata"]["name"] + "-",
                             "namespace": ds["metadata"]["namespace"],
                             "labels": {**(meta.get("labels") or {}), REVISION_LABEL: revision_of(ds)},
                             "annotations": meta.get("annotations") or {},
                             "ownerReferences": [owner_reference(ds)]},
                "spec": daemon_pod_spec(template.get("spec") or {}, node_name)}

    def create_pods(self, ds: dict, key: str, node_names: list[str]) -> None:
        self.create_owned_pods(ds, key, [self.pod_for(ds, node_name) for node_name in node_names])

    # ------------------------------------------------ status

    def update_status(self, ds: dict, nodes: dict, by_node: dict) -> None:
        min_ready, now = ds["spec"].get("minReadySeconds", 0), time.time()
        # is_active: not terminating, not finished; such a pod is on its way out.
        states = [NodeState(where, oldest_first([p for p in by_node.get(name, []) if is_active(p)]))
                  for name, where in nodes.items()]
        status = daemon_status(states, revision_of(ds), ready=is_ready,
                               available=lambda pod: is_available(pod, min_ready, now))
        status["observedGeneration"] = ds["metadata"].get("generation", 1)
        old = ds.get("status") or {}
        if any(old.get(k, 0) != v for k, v in status.items()):
            self.client.update_status(GROUP_VERSION, "daemonsets", {**ds, "status": {**old, **status}})
        if any(is_ready(s.pods[0]) and not is_available(s.pods[0], min_ready, now) for s in states if s.pods):
            # Nothing will tell us when minReadySeconds has passed: look again then.
            self.queue.add_after(key_for(ds), min_ready)
