"""The scheduler: gives every pending pod a node, through the API server.

    python 03-scheduler/scheduler.py --apiserver http://127.0.0.1:8080 [--explain]

It watches pods and nodes. A pod with no spec.nodeName (and naming this
scheduler in spec.schedulerName) joins the scheduling queue; one loop takes
pods off the queue one at a time, picks a node (framework.py: filter,
score, round robin), counts the pod on that node in its cache at once, and
hands the binding to a thread pool, so the next pod is already being
decided while the API server writes the first. It never talks to a node:
the binding sets spec.nodeName, and that node's kubelet, which watches for
exactly that, does the rest.

Everything that matters lives in the API server: kill the scheduler at any
moment and start it again, and it lists the pods, finds the ones still
pending, and carries on. A pod is never bound twice, because the API server
refuses to bind a bound pod (409), and the scheduler takes that answer as
"someone got there first", not as an error.
"""
from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from common.client import kubeconfig, leader_election
from common.client.client import APIClient, APIConnectionError, APIStatusError, Conflict, NotFound
from common.client.events import EventRecorder
from common.client.informer import Informer
from common.log import get_logger
from common.model.keys import object_key
from common.model.persistent_volumes import SELECTED_NODE
from common.times import rfc3339
from default_profile import default_framework
from framework import Decision
from pod_info import PodInfo
from scheduler_cache import SchedulerCache
from scheduling_queue import QueuedPod, SchedulingQueue

DEFAULT_SCHEDULER = "default-scheduler"


class Scheduler:
    def __init__(self, client: APIClient, scheduler_name: str = DEFAULT_SCHEDULER, *, explain: bool = False,
                 bind_workers: int = 16, events: EventRecorder | None = None, log=None, console=None):
        self.client = client
        self.name = scheduler_name
        self.explain = explain
        self.log = log or get_logger("scheduler")
        self.events = events or EventRecorder(None, scheduler_name)
        self.console = console
        self.cache = SchedulerCache()
        self.queue = SchedulingQueue()
        # One watch on every pod, pending and bound alike: a binding then
        # arrives as one event that moves the pod out of the queue and into
        # the cache. With two watches (spec.nodeName= and spec.nodeName!=)
        # it would leave one before or after entering the other, and for a
        # moment the pod would be in both places, or in neither.
        self.pods = Informer(client, "v1", "pods")
        self.nodes = Informer(client, "v1", "nodes")
        self.services = Informer(client, "v1", "services")
        # What the volume plugins look at: claims, the volumes behind them, their classes.
        self.claims = Informer(client, "v1", "persistentvolumeclaims")
        self.volumes = Informer(client, "v1", "persistentvolumes")
        self.classes = Informer(client, "storage.k8s.io/v1", "storageclasses")
        self.framework = default_framework(services=self.services.list, claims=self.claims.get,
                                           volumes=self.volumes.list, classes=self.classes.get,
                                           write_selected_node=self.write_selected_node)
        self.framework.explain = explain          # keep each plugin's score per node, to print
        self.binder = ThreadPoolExecutor(bind_workers, thread_name_prefix="bind")
        self._stop = threading.Event()
        self.stopped = threading.Event()   # set once stop() has finished
        self.bound = 0                     # bindings that went through (for logs and tests)

    # ------------------------------------------------ starting and stopping

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start watching; True once pods and nodes are listed. Scheduling
        from a half-listed cache could put a pod on a node that looks empty
        only because its pods are not listed yet, so run() waits for this."""
        self.pods.add_handler(self.on_pod_added, self.on_pod_updated, self.on_pod_deleted)
        self.nodes.add_handler(self.on_node_added, self.on_node_updated, self.on_node_deleted)
        for storage in (self.claims, self.volumes, self.classes):
            # A claim bound, a volume made: a pod waiting for one may fit now.
            storage.add_handler(on_add=lambda obj: self.queue.cluster_event("storage changed"),
                                on_update=lambda old, new: self.queue.cluster_event("storage changed"))
        for informer in self.informers():
            informer.start()
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        # Services only tune a score: not waited for; storage neither (a pod
        # with a claim waits, and is tried again when its claim shows up).
        # The short waits let stop() end a start that is still waiting for the API server.
        while not (self.pods.has_synced() and self.nodes.has_synced()):
            if self._stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                return False
            self.pods.wait_for_sync(0.2)
            self.nodes.wait_for_sync(0.2)
        return True

    def run(self) -> None:
        """Schedule pods until stop()."""
        self.log.info("scheduling", scheduler=self.name, nodes=len(self.nodes.list()),
                      pending=len(self.queue))
        while not self._stop.is_set():
            queued = self.queue.pop()
            if queued is None:
                continue
            try:
                self.schedule_one(queued)
            except Exception as error:         # one odd pod must not stop the scheduler
                self.log.error("scheduling failed", obj=queued.key, error=f"{type(error).__name__}: {error}")
                self.queue.backoff(queued)

    def stop(self) -> None:
        """Stop scheduling; bindings already sent are waited for, events flushed."""
        self._stop.set()
        self.queue.close()
        for informer in self.informers():
            informer.stop(timeout=2)
        self.binder.shutdown(wait=True, cancel_futures=False)
        self.events.stop(timeout=10)           # a burst's backlog of events; what is left is counted as dropped
        self.stopped.set()

    def informers(self) -> tuple[Informer, ...]:
        return self.pods, self.nodes, self.services, self.claims, self.volumes, self.classes

    # ------------------------------------------------ one pod

    # [START scheduling-cycle]
    def schedule_one(self, queued: QueuedPod) -> None:
        """One scheduling cycle: decide where one pod goes, count it there,
        and send the binding off without waiting for it."""
        namespace, name = queued.key.split("/", 1)
        pod = self.pods.get(namespace, name)          # the newest version we know
        if pod is None or not self.responsible_for(pod):
            self.queue.done(queued)                   # deleted, bound, or not ours any more
            return
        if self.cache.is_placed(queued.key):
            self.queue.done(queued)                   # bound a moment ago; the watch is behind
            return
        info = PodInfo.of(pod)
        with self.cache.lock:                          # one consistent picture for the whole decision
            self.cache.expire_assumed()
            decision = self.framework.schedule(info, self.cache.nodes())
            if decision.node:
                self.cache.assume(info, decision.node)   # counted now: the next pod sees it
        if self.explain:
            self.print_explanation(info, decision)
        if decision.node is None:
            self.queue.unschedulable(queued)
            self.record_unschedulable(pod, decision)
            return
        self.binder.submit(self.bind, queued, info, decision.node)
    # [END scheduling-cycle]

    def responsible_for(self, pod: dict) -> bool:
        """Pending, not being deleted, and naming this scheduler."""
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        return (not spec.get("nodeName") and not meta.get("deletionTimestamp")
                and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == self.name
                and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))

    # [START scheduler-bind]
    def bind(self, queued: QueuedPod, info: PodInfo, node: str) -> None:
        """POST pods/NAME/binding (on a binder thread). The API server sets
        spec.nodeName and PodScheduled=True, once: a second binding is a 409."""
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": info.name, "namespace": info.namespace, "uid": info.uid},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        if not self.pre_bind(queued, info, node):       # a waiting claim learns its node first
            return
        try:
            self.client.create_subresource("v1", "pods", info.namespace, info.name, "binding", binding)
        except (NotFound, Conflict) as error:
            # Deleted, bound by someone else, or re-created under the same
            # name meanwhile: the watch tells us the truth; nothing to retry.
            self.cache.forget(info.key)
            self.queue.done(queued)
            self.log.info("binding refused, pod changed meanwhile", obj=info.key, node=node, error=error.message)
        except (APIConnectionError, APIStatusError) as error:
            # We cannot tell whether it happened; try the pod again later
            # (if it did bind, the retry finds it bound and drops it).
            self.cache.forget(info.key)
            self.log.warning("binding failed, will retry", obj=info.key, node=node, error=str(error))
            self.queue.backoff(queued)
        else:
            self.cache.finish_binding(info.key)
            self.queue.done(queued)
            self.bound += 1
            self.log.info("bound", obj=info.key, node=node)
            self.events.event(info.pod, "Normal", "Scheduled", f"Successfully assigned {info.key} to {node}")
    # [END scheduler-bind]

    def pre_bind(self, queued: QueuedPod, info: PodInfo, node: str) -> bool:
        """What the plugins write before the binding (the node, on a waiting
        claim); False if that failed and the pod is to be tried again."""
        try:
            self.framework.pre_bind(info, node)
        except (APIConnectionError, APIStatusError) as error:
            self.cache.forget(info.key)
            self.log.warning("writing the chosen node on a claim failed, will retry", obj=info.key, node=node,
                             error=str(error))
            self.queue.backoff(queued)
            return False
        return True

    def write_selected_node(self, claim: dict, node: str) -> None:
        """The node chosen for a pod whose WaitForFirstConsumer claim waits: the binder binds there."""
        self.client.patch("v1", "persistentvolumeclaims", claim["metadata"]["namespace"], claim["metadata"]["name"],
                          {"metadata": {"annotations": {SELECTED_NODE: node}}})
        self.log.info("selected node for claim", obj=f"{claim['metadata']['namespace']}/{claim['metadata']['name']}",
                      node=node)

    def record_unschedulable(self, pod: dict, decision: Decision) -> None:
        """Say why, where a person looks: a FailedScheduling event and the
        pod's PodScheduled condition (what `kubectl describe pod` shows)."""
        key = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        self.log.info("unschedulable", obj=key, reason=decision.message)
        self.events.event(pod, "Warning", "FailedScheduling", decision.message)
        current = next((c for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), None)
        if current and current.get("status") == "False" and current.get("reason") == "Unschedulable" \
                and current.get("message") == decision.message:
            return                                   # already says so: no write
        since = current.get("lastTransitionTime") if current and current.get("status") == "False" else None
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": decision.message, "lastProbeTime": None,
                     "lastTransitionTime": since or rfc3339()}
        # Written here, on the scheduling thread, not by a binder: a later
        # binding of this same pod must not be overtaken by this older news.
        try:
            self.client.patch("v1", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"],
                              {"status": {"conditions": [condition]}}, strategy="strategic", subresource="status")
        except (APIConnectionError, APIStatusError) as error:
            self.log.warning("cannot update pod condition", obj=key, error=str(error))

    def print_explanation(self, info: PodInfo, decision: Decision) -> None:
        from explain import print_explanation
        print_explanation(info.key, decision, self.framework, self.console)

    # ------------------------------------------------ pod events (the informer's thread)

    def on_pod_added(self, pod: dict) -> None:
        if pod["spec"].get("nodeName"):
            info = PodInfo.of(pod)
            if not info.terminated:
                self.cache.add_pod(info)
        elif self.responsible_for(pod):
            self.queue.add(object_key(pod), PodInfo.of(pod).priority)

    def on_pod_updated(self, old: dict, new: dict) -> None:
        if new["spec"].get("nodeName"):
            self.queue.delete(object_key(new))             # bound (by us or anyone): no longer pending
            info = PodInfo.of(new)
            if info.terminated:
                self._room_freed(info.key, "pod finished")
            else:
                self.cache.add_pod(info)             # confirms our assumption, or moves it
        elif not self.responsible_for(new):
            self.queue.delete(object_key(new))
        elif _scheduling_inputs(old) != _scheduling_inputs(new):
            self.queue.add(object_key(new), PodInfo.of(new).priority)   # in case we never had it
            self.queue.update(object_key(new), PodInfo.of(new).priority)
        # A status-only change (such as our own PodScheduled=False) is no reason to try again.

    def on_pod_deleted(self, pod: dict) -> None:
        if pod["spec"].get("nodeName"):
            self._room_freed(object_key(pod), "pod deleted")
        else:
            self.queue.delete(object_key(pod))
            self.cache.forget(object_key(pod))

    def _room_freed(self, key: str, why: str) -> None:
        if self.cache.is_placed(key):
            self.cache.remove_pod(key)
            self.queue.cluster_event(why)

    # ------------------------------------------------ node events

    def on_node_added(self, node: dict) -> None:
        self.cache.set_node(node)
        self.queue.cluster_event("node added")

    def on_node_updated(self, old: dict, new: dict) -> None:
        self.cache.set_node(new)
        # Kubelets renew a heartbeat every few seconds; only a change the
        # filters can see is worth another try for the unschedulable pods.
        if _node_facts(old) != _node_facts(new):
            self.queue.cluster_event("node updated")

    def on_node_deleted(self, node: dict) -> None:
        self.cache.remove_node(node["metadata"]["name"])


def _scheduling_inputs(pod: dict) -> tuple:
    """What a pod's placement depends on: its spec and its labels."""
    return pod.get("spec"), (pod.get("metadata") or {}).get("labels")


def _node_facts(node: dict) -> tuple:
    """What the filters and scores read from a node (not heartbeat times)."""
    status = node.get("status") or {}
    conditions = sorted((c.get("type"), c.get("status")) for c in status.get("conditions") or [])
    return ((node.get("metadata") or {}).get("labels"), node.get("spec"), status.get("allocatable"),
            status.get("capacity"), conditions)


# ---------------------------------------------------------------- the command

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scheduler.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER,
                        help="schedule the pods whose spec.schedulerName is this (default: default-scheduler)")
    parser.add_argument("--explain", action="store_true",
                        help="print, for every pod, each node's filter verdicts and scores")
    parser.add_argument("--bind-workers", type=int, default=16, help="bindings sent at once (default 16)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    kubeconfig.add_flags(parser)
    # One lease name whatever --scheduler-name says, as in Kubernetes: a
    # second, differently named scheduler needs --leader-elect-resource-name.
    leader_election.add_flags(parser, "kube-scheduler")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("scheduler", "DEBUG" if args.verbose else None)
    try:
        connection = kubeconfig.from_args(args)
    except kubeconfig.KubeconfigError as error:
        log.error("cannot find the API server", error=str(error))
        return 2
    try:
        election = leader_election.config_from_args(args) if args.leader_elect else None
    except ValueError as error:
        log.error("cannot elect a leader", error=str(error))
        return 2
    client = APIClient(connection, user_agent=f"scheduler/{args.scheduler_name}")
    # One Scheduled event per pod: a burst of thousands of pods outruns one
    # writer thread, so four write at once (the API server commits their
    # writes together) and the queue holds that many; a drop is counted and
    # logged, and the stop line says how many.
    events = EventRecorder(client, args.scheduler_name, log=log, queue_size=10_000, writers=4).start()
    console = None
    if args.explain:
        from rich.console import Console
        console = Console(width=None if sys.stdout.isatty() else 200)
    scheduler = Scheduler(client, args.scheduler_name, explain=args.explain, bind_workers=args.bind_workers,
                          events=events, log=log, console=console)
    faulthandler.register(signal.SIGUSR1)      # `kill -USR1 PID` prints every thread's stack
    # Stop from another thread: the handler runs on the main thread, which
    # may be holding a lock stop() needs.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: threading.Thread(target=scheduler.stop, name="stop").start())
    log.info("starting", scheduler=args.scheduler_name, apiserver=connection.server,
             identity=election.identity if election else None)
    # Waits for the first list; the informers ride out an API server that
    # is not up yet, retrying with back-off.
    if scheduler.start():
        if election is None:
            scheduler.run()
        else:
            # Every copy watches and queues; only the leader schedules. The
            # elector stops once SIGTERM's stop() has finished the bindings
            # in flight (scheduler.stopped), and only then releases the lease.
            elector = leader_election.LeaderElector(
                leader_election.lease_client(connection, election, f"scheduler/{args.scheduler_name}"), election,
                on_started_leading=scheduler.run, events=events, log=log)
            if not elector.run(scheduler.stopped):
                # The scheduling thread may be mid-decision and another copy
                # may take over at any moment: go now, as kube-scheduler does.
                log.error("leaderelection lost")
                logging.shutdown()
                os._exit(1)
    scheduler.stopped.wait(20)                 # the stop thread finishing the bindings in flight
    log.info("stopped", bound=scheduler.bound, events_dropped=events.dropped or None)
    logging.shutdown()
    os._exit(0)       # daemon threads may sit in a socket read; nothing of ours is left to flush


if __name__ == "__main__":
    sys.exit(main())
