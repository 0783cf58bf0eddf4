"""Your scheduler: chapter 03's scheduler, written by you, one stage at a time.

    python 03-scheduler/build-it-yourself/scheduler.py --apiserver http://127.0.0.1:8080

Written for you (the machinery, read it once): the command line, the watch
on pods and nodes (two informers from common/), a queue of pending pods,
what each node already holds, and the binding. Yours to write, in the
order the stages ask for it, are the places marked TODO(stage N): pick a
node, the filters, the score, the FailedScheduling event, and which pods
are yours. Each TODO names the lesson section that explains it.

Grade your work with `make stage-03` (every stage up to the first that
fails) or `make stage-03 STAGE=3` (one stage); with your own copy of this
file, add MINE=path/to/it.py. The stages talk to your scheduler only
through the API server, so change anything you like, as long as it keeps
this command line.
"""
from __future__ import annotations

import argparse
import queue
import sys
import threading
import traceback

from common.client import kubeconfig
from common.client.client import APIClient
from common.client.events import EventRecorder
from common.client.informer import Informer
from common.log import get_logger
from common.model.quantity import parse_quantity

DEFAULT_SCHEDULER = "default-scheduler"
log = get_logger("scheduler")


# ---------------------------------------------------------------- requests and allocatable

def amount(resource: str, value) -> int:
    """A quantity as an integer: cpu in millicores ("500m" is 500, "2" is
    2000), anything else in bytes or plain counts ("1Gi" is 1073741824)."""
    quantity = parse_quantity(value)
    return quantity.milli_value() if resource == "cpu" else quantity.value()


def pod_requests(pod: dict) -> dict[str, int]:
    """What a pod asked for: its containers' requests, added up
    ({"cpu": 600, "memory": 268435456}; a resource nobody asked for is absent)."""
    total: dict[str, int] = {}
    for container in pod["spec"].get("containers") or []:
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[resource] = total.get(resource, 0) + amount(resource, value)
    return total


def node_allocatable(node: dict) -> dict[str, int]:
    """What a node offers pods ({"cpu": 2000, "memory": ..., "pods": 110})."""
    offered = (node.get("status") or {}).get("allocatable") or {}
    return {resource: amount(resource, value) for resource, value in offered.items()}


# ---------------------------------------------------------------- filters: can this node run the pod?
# Each gets the pod, the node and the pods already on that node (dicts, as
# the API server sends them), and returns the reasons it says no, in
# Kubernetes' words ("Insufficient cpu"), or [] when the node will do.

def node_ready(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    # TODO(stage 4): a node whose Ready condition is not "True" gets no
    # pods: "node(s) were not ready" (a node with no Ready condition at all
    # is not ready either: no kubelet has reported). The kubelet reports
    # it in status.conditions, a list of
    # {"type": "Ready", "status": "True", "reason": "KubeletReady", ...}
    # beside MemoryPressure, DiskPressure and PIDPressure (`kubectl get
    # node NAME -o yaml` shows them). Lesson: "8. Cordon a node" in
    # 03-scheduler/lesson-2-run-the-scheduler.md.
    return []


def node_unschedulable(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    # TODO(stage 4): a cordoned node (spec.unschedulable) gets no new pods:
    # "node(s) were unschedulable". Lesson: "8. Cordon a node" in
    # 03-scheduler/lesson-2-run-the-scheduler.md.
    return []


def taint_toleration(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    # TODO(stage 5): every NoSchedule or NoExecute taint in spec.taints
    # must be tolerated by one of the pod's spec.tolerations. A toleration
    # matches a taint when its effect is empty or the same, and: operator
    # Exists (the value does not matter; an empty key with Exists tolerates
    # every taint), or operator Equal, the default, with the same key and
    # value. Else: f"node(s) had untolerated taint {{{key}: {value}}}".
    # The shapes: spec.taints is [{"key": "dedicated", "value": "lesson", "effect":
    # "NoSchedule"}], spec.tolerations is [{"key": "dedicated", "operator":
    # "Equal", "value": "lesson", "effect": "NoSchedule"}] (manifests/tolerant.yaml).
    # Lesson: "11. A taint and a toleration" in lesson-2-run-the-scheduler.md.
    return []


def node_selector(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    # TODO(stage 3): every label in the pod's spec.nodeSelector must be on
    # the node with the same value. Else: "node(s) didn't match Pod's node
    # affinity/selector". Lesson: "10. A nodeSelector" in lesson-2-run-the-scheduler.md.
    return []


def resources_fit(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    # TODO(stage 2): for each resource the pod requests, the node's
    # allocatable minus what node_pods already requested must leave room:
    # else f"Insufficient {resource}". Requests, not usage: use
    # pod_requests() and node_allocatable() above. (The lesson's filter also
    # counts pods against the node's "pods" allocatable, "Too many pods":
    # optional here, no stage checks it.) Lesson: "A filter: does the pod
    # fit?" in lesson-1-how-it-schedules.md.
    return []


# Cheapest first; a node is out at the first filter that says no.
FILTERS = [node_ready, node_unschedulable, taint_toleration, node_selector, resources_fit]


# ---------------------------------------------------------------- score: which node is best?

def least_allocated(pod: dict, node: dict, node_pods: list[dict]) -> int:
    # TODO(stage 6): 0-100, higher for the node with more room left once
    # the pod is on it: for cpu and memory, (allocatable - requested) * 100
    # // allocatable, averaged, where requested is what node_pods request
    # *plus this pod* (without it, two empty nodes of different sizes tie). (The lesson's scorer counts a container
    # with no requests as 100m cpu and 200Mi: optional here.) Lesson: "A
    # score: the emptiest node" in lesson-1-how-it-schedules.md.
    return 0


def fit_error(node_count: int, reasons: dict[str, list[str]]) -> str:
    # TODO(stage 8): the FailedScheduling message, in Kubernetes' shape:
    # "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    # reasons is {node name: that node's reasons}: count each reason over
    # the nodes, and sort the "<count> <reason>" strings themselves (that
    # is why "1 node(s)..." comes before "2 Insufficient cpu"). Lesson: "A filter: does
    # the pod fit?" and "When nothing fits" in lesson-1-how-it-schedules.md.
    return ""


# ---------------------------------------------------------------- the scheduler

class Scheduler:
    def __init__(self, client: APIClient, name: str):
        self.client = client
        self.name = name
        self.events = EventRecorder(client, name).start()
        self.pods = Informer(client, "v1", "pods")      # every pod, pending and bound
        self.nodes = Informer(client, "v1", "nodes")
        self.pending: queue.Queue[str] = queue.Queue()   # "namespace/name" of pods to place
        self.waiting: set[str] = set()                   # placed nowhere; retried when the cluster changes
        self.just_bound: dict[str, tuple[str, dict]] = {}  # key -> (node, pod) until the watch shows it bound
        self.changes = 0                                 # cluster changes seen, to catch one mid-decision
        self.lock = threading.Lock()
        self.turn = 0                                    # for pick(): whose turn it is among equals

    def is_mine(self, pod: dict) -> bool:
        # TODO(stage 9): also only the pods whose spec.schedulerName is
        # this scheduler's name (self.name; a pod that names none means
        # "default-scheduler"). Lesson: "12. Another scheduler" in
        # lesson-2-run-the-scheduler.md.
        return not pod["spec"].get("nodeName")

    def pick(self, best: list[str]) -> str:
        # TODO(stage 1): return one node name out of best (the nodes that
        # share the highest score); for stage 1 any of them will do. Stage 7
        # asks that a stream of identical pods facing the same tie take the
        # nodes in turn (self.turn is there for that). Lesson: "Picking
        # among equals: round robin" in lesson-1-how-it-schedules.md.
        raise NotImplementedError("pick() is yours to write: see TODO(stage 1)")

    def failed_scheduling(self, pod: dict, message: str) -> None:
        # TODO(stage 8): tell the user why the pod stays Pending: a
        # "Warning" event with reason "FailedScheduling" and the message
        # (bind() below writes the "Scheduled" event: do the same). Lesson:
        # "When nothing fits" in lesson-1-how-it-schedules.md.
        pass

    # ------------------------------------------------ the cycle (written for you)

    def schedule(self, pod: dict) -> str | None:
        """Filter every node, score the ones left, pick among the best."""
        nodes = {node["metadata"]["name"]: node for node in self.nodes.list()}
        on_node = self.pods_by_node()
        feasible, reasons = [], {}
        for name, node in nodes.items():
            for check in FILTERS:
                said_no = check(pod, node, on_node.get(name, []))
                if said_no:
                    reasons[name] = said_no
                    break
            else:
                feasible.append(name)
        if not feasible:
            # Said in the log as well as in the event (yours to write, stage
            # 8): a pod that stays Pending must leave a trace, each node's reason.
            log.warning("no node fits", obj=key(pod), nodes=len(nodes),
                        why="; ".join(f"{name}: {', '.join(said)}" for name, said in sorted(reasons.items())))
            self.failed_scheduling(pod, fit_error(len(nodes), reasons))
            return None
        scores = {name: least_allocated(pod, nodes[name], on_node.get(name, [])) for name in feasible}
        best = max(scores.values())
        return self.pick([name for name in feasible if scores[name] == best])

    def pods_by_node(self) -> dict[str, list[dict]]:
        """node name -> the pods that take room there: those the watch shows
        bound, and those we bound a moment ago that it has not shown yet."""
        with self.lock:
            placed = dict(self.just_bound)             # key -> (node, pod)
        for pod in self.pods.list():
            if pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                placed[key(pod)] = (pod["spec"]["nodeName"], pod)   # counted once, where the watch says
        result: dict[str, list[dict]] = {}
        for node, pod in placed.values():
            result.setdefault(node, []).append(pod)
        return result

    def bind(self, pod: dict, node: str) -> None:
        """POST pods/NAME/binding: the API server sets spec.nodeName, once."""
        meta = pod["metadata"]
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.client.create_subresource("v1", "pods", meta["namespace"], meta["name"], "binding", binding)
        with self.lock:
            self.just_bound[key(pod)] = (node, pod)
        log.info("bound", obj=key(pod), node=node)
        self.events.event(pod, "Normal", "Scheduled", f"Successfully assigned {key(pod)} to {node}")

    def run(self) -> None:
        """Take pending pods off the queue, one at a time, forever."""
        self.pods.add_handler(self.on_pod, lambda old, new: self.on_pod(new), self.on_pod_gone)
        self.nodes.add_handler(self.on_node, lambda old, new: self.on_node(new), self.on_node)
        self.pods.start()
        self.nodes.start()
        self.pods.wait_for_sync()
        self.nodes.wait_for_sync()
        log.info("scheduling", scheduler=self.name)
        while True:
            pod_key = self.pending.get()
            pod = self.pods.get(*pod_key.split("/", 1))
            if pod is None or not self.is_mine(pod) or pod_key in self.just_bound:
                continue                       # deleted, bound, or not ours
            changes = self.changes
            try:
                node = self.schedule(pod)
                if node:
                    self.bind(pod, node)
                    continue
            except Exception as error:        # a refused binding, or a bug in a TODO: one pod, not the scheduler
                where = traceback.extract_tb(error.__traceback__)[-1]
                log.error("cannot schedule", obj=pod_key, error=f"{type(error).__name__}: {error}",
                          at=f"{where.name}() line {where.lineno}")
            with self.lock:                    # wait for the cluster to change, unless it just did
                if self.changes == changes:
                    self.waiting.add(pod_key)
                else:
                    self.pending.put(pod_key)

    # ------------------------------------------------ the watch's news (the informers' threads)

    def on_pod(self, pod: dict) -> None:
        if pod["spec"].get("nodeName"):
            with self.lock:
                self.just_bound.pop(key(pod), None)   # the watch caught up
        elif self.is_mine(pod):
            self.pending.put(key(pod))

    def on_pod_gone(self, pod: dict) -> None:
        with self.lock:
            self.just_bound.pop(key(pod), None)
        self.retry_waiting()                   # its room is free again

    def on_node(self, node: dict) -> None:
        self.retry_waiting()                   # a new node, or one that changed, may fit

    def retry_waiting(self) -> None:
        with self.lock:
            self.changes += 1
            waiting, self.waiting = self.waiting, set()
        for pod_key in waiting:
            self.pending.put(pod_key)


def key(pod: dict) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"


def main() -> int:
    parser = argparse.ArgumentParser(description="Your scheduler (chapter 03, build it yourself).")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER,
                        help="schedule the pods whose spec.schedulerName is this (default: default-scheduler)")
    kubeconfig.add_flags(parser)
    args = parser.parse_args()
    client = APIClient(kubeconfig.from_args(args), user_agent=f"scheduler/{args.scheduler_name}")
    try:
        Scheduler(client, args.scheduler_name).run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
