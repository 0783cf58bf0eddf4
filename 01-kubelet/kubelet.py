"""The kubelet: a node agent that makes Docker run the pods it is given.

    python 01-kubelet/kubelet.py --node-name node1 --manifests 01-kubelet/manifests

Every second (and whenever something changes) it compares the pods it
should run, read from its sources, with the containers Docker has, and
closes the gap. It keeps no state of its own that matters: kill it at any
moment, start it again, and it picks up where it was from Docker's labels.
"""
from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import docker.errors

import pod_config as cfg
from common import addresses
from common.client import kubeconfig
from common.client.backoff import Backoff
from common.client.events import EventRecorder
from common.log import EventLogger, get_logger
from common.model.persistent_volumes import LOCAL_PATH_ROOT
from common.times import duration, rfc3339
from common.client.token_file import TokenFileError, read_token_file
from docker_runtime import ContainerInfo, DockerRuntime
from lifecycle_hooks import field_path
from manifest_source import FileSource
from node_allocatable import ReservationError, allocatable, machine_capacity, parse_reservation
from pod_actions import ProbeResults, compute_pod_actions, is_sidecar
from pod_status import Starting, Waiting, pod_status
from pod_worker import PodWorker, WaitingReasons
from probes import ProbeManager
from security_context import Node


class NoMetrics:
    """Where the sync loop's figures go when nobody serves /metrics."""

    def timing_sync(self):
        return contextlib.nullcontext()

    def pod_started(self, seconds: float) -> None:
        pass


class Kubelet:
    def __init__(self, node_name: str, runtime: DockerRuntime, sources: list, log: EventLogger, *,
                 pause_image: str = "registry.k8s.io/pause:3.9", host_ip: str = "127.0.0.1",
                 sync_frequency: float = 1.0, backoff_initial: float = 10.0, backoff_max: float = 300.0,
                 parallel_pod_workers: int = 4, events: EventRecorder | None = None, network=None):
        self.node_name = node_name
        self.network = network        # a pod_network/kubenet.Kubenet, or None: Docker's default bridge
        self.runtime = runtime
        self.sources = sources
        self.log = log
        self.host_ip = host_ip
        self.sync_frequency = sync_frequency
        self.crash_backoff = Backoff(backoff_initial, backoff_max, clock=time.time)
        self.start_backoff = Backoff(backoff_initial, backoff_max, clock=time.time)
        self.waiting = WaitingReasons()
        # Events go to the API server when there is one; alone, nowhere.
        self.events = events or EventRecorder(None, "kubelet", host=node_name)
        self.worker = PodWorker(runtime, log, self.waiting, self.crash_backoff, self.start_backoff,
                                pause_image, host_ip, self.events)
        self.probes = ProbeManager(runtime, log, on_change=self.wake, events=self.events)
        # What the sync loop remembers between syncs. None of it is needed
        # to converge after a restart; it makes status richer.
        self.pods: dict[str, dict] = {}                       # uid -> desired pod
        self.last_known: dict[str, dict] = {}                 # uid -> its spec, also once no longer desired
        self.containers: dict[str, list[ContainerInfo]] = {}  # uid -> its Docker containers
        self.statuses: dict[str, dict] = {}                   # uid -> last computed status
        self.first_seen: dict[str, float] = {}
        self.pod_ips: dict[str, str] = {}
        self._running_logged: set[str] = set()
        self._reported_dead: set[str] = set()
        self._started_at = rfc3339()
        # One worker per pod at a time, several pods in parallel.
        self._workers = ThreadPoolExecutor(max_workers=parallel_pod_workers, thread_name_prefix="pod-worker")
        self._busy: set[str] = set()
        self._done_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.syncs = 0          # completed syncs, served on /metrics
        # What the port tells about usage (stats/, chapter 02) replaces these
        # when it is served; until then the loop's figures go nowhere.
        self.metrics = NoMetrics()
        self.stats = None

    # --- the loop -------------------------------------------------------------

    # [START sync-loop]
    def run(self) -> None:
        """Sync until stopped; a failed sync is logged and retried."""
        self.log.info("kubelet started", obj=self.node_name, docker=self.runtime.version())
        while not self._stop.is_set():
            try:
                with self.metrics.timing_sync():     # kubelet_sync_loop_duration_seconds
                    self.sync_once()
            except Exception as error:  # Docker away, a bug: log it, never die
                self.log.error("sync failed, retrying", error=f"{type(error).__name__}: {error}")
            self._wake.wait(self.sync_frequency)
            self._wake.clear()

    def sync_once(self) -> None:
        # Asked first: a source whose first list lands later in this sync must
        # not count as ready for pods read before it (they would look unwanted).
        sources_ready = self._sources_ready()
        desired = {}
        for source in self.sources:
            desired.update(source.pods())
        listed_at = time.monotonic()
        actual = defaultdict(list)
        for container in self.runtime.list_containers():
            actual[container.pod_uid].append(container)
        with self._lock:
            self.pods, self.containers = desired, dict(actual)
        for uid, pod in desired.items():
            if self._may_sync(uid, listed_at):
                self.sync_pod(pod, actual.get(uid, []))
            else:   # its worker is busy: no new decision, but fresh status
                self._update_status(pod, actual.get(uid, []))
        self._remove_unwanted(desired, actual, listed_at, sources_ready=sources_ready)
        self._forget_gone_pods(desired, actual)
        self.probes.sync(self._running_app_containers(desired, actual))
        self._report_to_sources(desired, actual)
        self.syncs += 1
        self._sweep_orphan_volumes(set(desired) | set(actual))
    # [END sync-loop]

    # [START sync-pod]
    def sync_pod(self, pod: dict, containers: list[ContainerInfo]) -> None:
        """Compare, decide, hand the actions to a worker, report status."""
        uid = pod["metadata"]["uid"]
        if self._network_not_ready(pod):
            self._update_status(pod, containers)
            return
        actions = compute_pod_actions(pod, containers, self.waiting.of(uid), self._probe_results(pod, containers),
                                      self.crash_backoff, self.start_backoff)
        self._hold_back(pod, actions.waiting)
        if actions:
            self._submit(uid, cfg.pod_key(pod), self.worker.apply, pod, containers, actions)
        self._update_status(pod, containers)
    # [END sync-pod]

    def _remove_unwanted(self, desired: dict, actual: dict, listed_at: float, *, sources_ready: bool) -> None:
        """Stop and remove the pods no source wants any more: gracefully,
        with their preStop hooks, within the grace period their deletion
        asked for (kubectl delete --grace-period) or else their spec's.
        Only once every source had listed when `desired` was read."""
        self.last_known.update(desired)
        terminating = {}
        for source in self.sources:
            terminating.update(source.terminating() if hasattr(source, "terminating") else {})
        self.last_known.update(terminating)
        for uid in set(actual) - set(desired):
            if sources_ready and self._may_sync(uid, listed_at):
                first = actual[uid][0]
                key = f"{first.pod_namespace}/{first.pod_name}"
                pod = self.last_known.get(uid)
                self._submit(uid, key, self.worker.kill_pod, key, uid, actual[uid], pod, cfg.deletion_grace(pod))

    def _network_not_ready(self, pod: dict) -> bool:
        """A pod on the pod network cannot start before the network is set up
        (the node's podCIDR known); a hostNetwork pod can. Told once per pod."""
        problem = self.network and not pod["spec"].get("hostNetwork") and self.network.not_ready()
        if problem and pod["metadata"]["uid"] not in self.first_seen:
            self.events.event(pod, "Warning", "NetworkNotReady", f"network is not ready: {problem}")
        return bool(problem)

    def _sources_ready(self) -> bool:
        """Have all sources said what they want? A kubelet that has just
        started, while the API server is down, must not remove the pods the
        server has not listed yet: they are most likely still wanted."""
        return all(source.has_synced() for source in self.sources)

    def _report_to_sources(self, desired: dict, actual: dict) -> None:
        """Sources that can hear back (the API server) get every pod's status
        (static pods' too, for their mirror pods) and learn which pods have
        no containers left."""
        for source in self.sources:
            if hasattr(source, "report"):
                source.report(desired, self.statuses, set(actual))

    def _may_sync(self, uid: str, listed_at: float) -> bool:
        """May this pod be synced from a listing taken at listed_at? Not while
        its worker is busy, nor from a listing older than the worker's last
        change: it would not show what the worker just did."""
        with self._lock:
            return uid not in self._busy and self._done_at.get(uid, 0) < listed_at

    def _submit(self, uid: str, key: str, work, *args) -> None:
        with self._lock:
            self._busy.add(uid)

        def run():
            try:
                work(*args)
            except Exception as error:  # a worker must never die silently
                self.log.error("pod sync failed", obj=key, error=f"{type(error).__name__}: {error}")
            finally:
                with self._lock:
                    self._busy.discard(uid)
                    self._done_at[uid] = time.monotonic()
                self.wake()
        self._workers.submit(run)

    def _probe_results(self, pod: dict, containers: list[ContainerInfo]) -> ProbeResults:
        """What the probes found about this pod's containers, for the decision."""
        specs = {c["name"]: c for c in pod["spec"]["containers"] + (pod["spec"].get("initContainers") or [])}
        return ProbeResults(self.probes.failed_liveness, self.probes.failed_startup,
                            {c.id for c in containers if c.running and c.name in specs
                             and self.probes.awaits_startup(specs[c.name], c.id)})

    def _running_app_containers(self, desired: dict, actual: dict) -> list[tuple[dict, dict, str, str]]:
        """(pod, container spec, container id, pod IP) for the probes: app
        containers and sidecars, once their postStart hook has returned."""
        running = []
        for uid, pod in desired.items():
            specs = {c["name"]: c for c in pod["spec"]["containers"]
                     + [c for c in pod["spec"].get("initContainers") or [] if is_sidecar(c)]}
            for container in actual.get(uid, []):
                if container.running and container.name in specs and (uid, container.name) not in self.worker.starting:
                    running.append((pod, specs[container.name], container.id, self.pod_ips.get(uid, "")))
        return running

    def wake(self) -> None:
        self._wake.set()

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    # --- status ---------------------------------------------------------------

    def _update_status(self, pod: dict, containers: list[ContainerInfo]) -> None:
        uid = pod["metadata"]["uid"]
        self.pod_ips[uid] = self._pod_ip(pod, containers)
        # startTime is when the kubelet first took the pod on; after a
        # restart of the kubelet, the oldest of its containers tells.
        if uid not in self.first_seen:
            oldest = min((c.created for c in containers), default=None)
            self.first_seen[uid] = oldest or time.time()
            if oldest:
                self._running_logged.add(uid)   # adopted, not started: no startup time to report
        started = self.first_seen[uid]
        starting = Starting(hooks=frozenset(name for owner, name in set(self.worker.starting) if owner == uid),
                            probes=frozenset(self._probe_results(pod, containers).not_started))
        status = pod_status(pod, containers, self.waiting.of(uid), self.probes.ready, self.pod_ips.get(uid, ""),
                            self.host_ip, started, previous=self.statuses.get(uid), starting=starting)
        self._log_transitions(pod, self.statuses.get(uid), status, containers)
        self.statuses[uid] = status

    def _pod_ip(self, pod: dict, containers: list[ContainerInfo]) -> str:
        """The running sandbox's IP; once the pod has finished, the IP its
        last containers ran with (a label), as Kubernetes keeps podIP."""
        if pod["spec"].get("hostNetwork"):
            return self.host_ip
        sandbox = next((c for c in containers if c.name == cfg.SANDBOX_NAME and c.running), None)
        if sandbox:
            return sandbox.ip
        latest = max((c for c in containers if c.name != cfg.SANDBOX_NAME and c.ip),
                     key=lambda c: c.created, default=None)
        return latest.ip if latest else ""

    def _log_transitions(self, pod: dict, before: dict | None, after: dict, containers: list[ContainerInfo]) -> None:
        key, uid = cfg.pod_key(pod), pod["metadata"]["uid"]
        old = {s["name"]: s for s in (before or {}).get("containerStatuses", [])}
        old.update({s["name"]: s for s in (before or {}).get("initContainerStatuses", [])})
        for status in after.get("initContainerStatuses", []) + after["containerStatuses"]:
            state, was = status["state"], old.get(status["name"], {})
            # Report each death once: the terminated container in state or,
            # when it already waits to restart, in lastState.
            dead = {**status["lastState"], **state}.get("terminated")
            if dead and dead["containerID"] not in self._reported_dead and self._since_start(dead["finishedAt"]):
                self._reported_dead.add(dead["containerID"])
                self.log.info("container died", obj=key, container=status["name"],
                              exitCode=dead["exitCode"], reason=dead["reason"])
            reason = state.get("waiting", {}).get("reason")
            if reason and reason not in ("ContainerCreating", "PodInitializing") and reason != was.get("state", {}).get("waiting", {}).get("reason"):
                self.log.warning("container waiting", obj=key, container=status["name"],
                                 reason=reason, message=state["waiting"].get("message"))
        if before and before["phase"] != after["phase"]:
            self.log.info("pod phase changed", obj=key, phase=after["phase"])
        all_running = all("running" in s["state"] for s in after["containerStatuses"])
        if all_running and uid not in self._running_logged:
            self._running_logged.add(uid)
            started = max(c.started_at or 0 for c in containers if c.name != cfg.SANDBOX_NAME)
            startup = max(0.0, started - self.first_seen[uid])
            self.log.info("pod running", obj=key, startup=f"{startup:.3f}s")
            self.metrics.pod_started(startup)

    def _hold_back(self, pod: dict, waiting: dict[str, Waiting]) -> None:
        """Remember why containers wait (a back-off, mostly). Each wait that
        begins is told as a BackOff event: after every failed pull or crash,
        so the recorder's count shows how often it happened."""
        uid, meta = pod["metadata"]["uid"], pod["metadata"]
        before = self.waiting.of(uid)
        images = {c["name"]: c["image"] for c in pod["spec"]["containers"] + (pod["spec"].get("initContainers") or [])}
        for name, reason in waiting.items():
            self.waiting.set(uid, name, reason)
            if name in before and before[name].reason == reason.reason:
                continue
            field = field_path(pod, name)
            if reason.reason == "CrashLoopBackOff":
                self.events.event(pod, "Warning", "BackOff", f"Back-off restarting failed container {name} in pod "
                                  f"{meta['name']}_{meta['namespace']}({uid})", field_path=field)
            elif reason.reason == "ImagePullBackOff":
                self.events.event(pod, "Normal", "BackOff", f'Back-off pulling image "{images.get(name)}"',
                                  field_path=field)
                self.events.event(pod, "Warning", "Failed", "Error: ImagePullBackOff", field_path=field)

    def _since_start(self, moment: str | None) -> bool:
        """Did it happen while this kubelet ran? (Deaths from before a
        restart were reported by the previous kubelet.)"""
        return bool(moment) and moment >= self._started_at

    def _forget_gone_pods(self, desired: dict, actual: dict) -> None:
        live = set(desired) | set(actual)
        for table in (self.statuses, self.first_seen, self.pod_ips, self.last_known):
            for uid in [u for u in table if u not in live]:
                del table[uid]
        self.waiting.keep_only(live)
        with self._lock:
            for uid in [u for u in self._done_at if u not in live and u not in self._busy]:
                del self._done_at[uid]
        self._running_logged &= set(desired)
        self._reported_dead &= {f"docker://{c.id}" for containers in actual.values() for c in containers}
        # Back-off keys start with the pod's uid (see cfg.backoff_key).
        for backoff in (self.crash_backoff, self.start_backoff):
            backoff.forget_if(lambda key: key[0] not in desired)

    def _sweep_orphan_volumes(self, live: set[str]) -> None:
        """Every 30 syncs: emptyDir volumes whose pod is gone (a kubelet
        killed between removing a pod's containers and its volumes leaves
        these)."""
        if self.syncs % 30 == 1 and not self._busy:
            self.worker.remove_volumes(lambda owner: owner not in live)

    # --- what the read-only server asks -----------------------------------------

    def pod_list(self) -> dict:
        """A PodList of every pod with its latest status (for GET /pods)."""
        with self._lock:
            pods = list(self.pods.values())
        items = [{**pod, "status": self.statuses.get(pod["metadata"]["uid"], {"phase": "Pending"})} for pod in pods]
        items.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
        return {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}

    def pods_now(self) -> dict[str, dict]:
        """uid -> pod, as of the latest sync (for the volume refresh thread)."""
        with self._lock:
            return dict(self.pods)

    def pods_and_containers(self) -> list[tuple[dict, list[ContainerInfo]]]:
        """Each pod wanted here with its Docker containers, as of the latest
        sync (for /stats/summary and /metrics: no Docker call)."""
        with self._lock:
            return [(pod, self.containers.get(uid, [])) for uid, pod in self.pods.items()]

    def find_pod(self, namespace: str, name: str) -> tuple[dict | None, list[ContainerInfo]]:
        with self._lock:
            for uid, pod in self.pods.items():
                if pod["metadata"]["namespace"] == namespace and pod["metadata"]["name"] == name:
                    return pod, self.containers.get(uid, [])
        return None, []

    def shutdown(self, wait: float = 5.0) -> bool:
        """Stop syncing and let running workers finish their step for up to
        `wait` seconds; True if they all did. Pods keep running."""
        self.probes.stop()
        self._workers.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + wait
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self._busy


def cleanup(runtime: DockerRuntime, all_nodes: bool, log: EventLogger, root_dir: str) -> int:
    """--cleanup: remove every container and volume this node (or every
    node, with --all-nodes) made. The kubelet's own exit never does."""
    import glob
    import shutil
    from api_volumes.volumes import memory_dir    # Secrets' tmpfs, if it ever joined a cluster
    containers = runtime.list_containers(all_nodes=all_nodes)
    for container in containers:
        runtime.remove(container.id)
    volumes = runtime.list_volume_pods(all_nodes=all_nodes)
    for volume in volumes:
        runtime.remove_volume(volume)
    # configMap, secret and downwardAPI volumes: only the pods/ folders this kubelet makes
    directories = [os.path.join(root_dir, "pods"), memory_dir(runtime.node_name)]
    if all_nodes:
        directories += glob.glob(os.path.join(default_root_dir("*"), "pods")) + glob.glob(memory_dir("*"))
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    log.info("cleaned up", obj="all nodes" if all_nodes else runtime.node_name,
             containers=len(containers), volumes=len(volumes))
    return 0


def lock_node(node_name: str):
    """One kubelet per node name per machine: two would fight over the same
    containers, each removing what the other starts. The lock is released
    by the kernel when the process dies, however it dies."""
    import fcntl
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"groundup-kubelet-{node_name}.lock")
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        raise SystemExit(f"another kubelet with --node-name {node_name} is running on this machine "
                         f"(pid {handle.read().strip() or '?'}); give this one another --node-name")
    handle.truncate(0)
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def default_node_ip(apiserver: str | None = None) -> str:
    """This host's address as other machines see it. In a cluster, the
    address this machine reaches the API server from: on a VM whose default
    route is a NAT interface (Vagrant, VirtualBox), the hostname and the
    default route both name the NAT address, which no other machine can
    reach. Else the machine's own idea of its address (common.addresses).
    --node-ip overrides all this."""
    host = urlsplit(apiserver).hostname if apiserver else None
    if host and not host.startswith("127.") and host not in ("localhost", "::1"):
        try:
            source = addresses.source_address(host, urlsplit(apiserver).port or 443)
            if not source.startswith("127."):
                return source
        except OSError:
            pass
    return addresses.this_machines_address()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kubelet.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-name", default=socket.gethostname(), help="this node's name (default: hostname)")
    parser.add_argument("--manifests", "--pod-manifest-path", dest="manifests",
                        help="directory of pod manifests to run (static pods)")
    # 3.9 is what kubeadm pinned for Kubernetes 1.26-1.30; 1.31 and 1.32 pin 3.10,
    # which does the same. The lessons' output shows 3.9, so we keep it.
    parser.add_argument("--pod-infra-container-image", default="registry.k8s.io/pause:3.9",
                        help="the pause image holding each pod's network namespace")
    parser.add_argument("--node-ip", default=None, help="this node's IP, reported as hostIP")
    parser.add_argument("--address", default="0.0.0.0", help="address of the read-only HTTP port")
    parser.add_argument("--read-only-port", type=int, default=10255, help="read-only HTTP port (0 = off)")
    parser.add_argument("--authentication-token-file",
                        help="a file holding the API server's token (make certs: .certs/kubelet-client.token): "
                             "then only the API server, presenting it, and this machine (loopback) may read "
                             "/pods, /metrics, /stats/summary and /containerLogs; without it, anyone who reaches the port may")
    parser.add_argument("--sync-frequency", type=duration, default=1.0, help="how often to sync (default 1s)")
    parser.add_argument("--backoff-initial", type=duration, default=10.0,
                        help="first crash/pull back-off delay (Kubernetes: 10s)")
    parser.add_argument("--backoff-max", type=duration, default=300.0, help="back-off ceiling (Kubernetes: 5m)")
    parser.add_argument("--parallel-pod-workers", type=int, default=4, help="pods synced at once")
    parser.add_argument("--cleanup", action="store_true",
                        help="remove every container and volume this node made, then exit")
    parser.add_argument("--all-nodes", action="store_true", help="with --cleanup: every node's, not just this one's")
    parser.add_argument("--network-plugin", choices=("", "kubenet"), default="",
                        help="kubenet: pods on the node's podCIDR with cluster-unique IPs (chapter 05); "
                             "default: Docker's bridge")
    parser.add_argument("--pod-cidr", default="", help="with kubenet and no API server: this node's pod range")
    parser.add_argument("--non-masquerade-cidr", default="10.0.0.0/8",
                        help="with kubenet: traffic to outside this range is masqueraded (Kubernetes' default)")
    parser.add_argument("--cluster-dns", default="",
                        help="cluster DNS servers for pods' resolv.conf, comma separated (chapter 05)")
    parser.add_argument("--cluster-domain", default="cluster.local", help="the cluster's DNS domain")
    parser.add_argument("--node-status-update-frequency", type=duration, default=10.0,
                        help="with an API server: how often the node's Ready heartbeat is renewed (default 10s)")
    parser.add_argument("--system-reserved", default="",
                        help="with an API server: what the operating system keeps, e.g. cpu=250m,memory=256Mi; "
                             "the node's allocatable is its capacity minus this and --kube-reserved")
    parser.add_argument("--kube-reserved", default="",
                        help="with an API server: what Kubernetes' own daemons keep (same form)")
    parser.add_argument("--local-path-root", default=LOCAL_PATH_ROOT,
                        help="where the local-path provisioner puts volumes on this node; the kubelet removes "
                             "a directory it made there once its PersistentVolume is deleted "
                             f"(default {LOCAL_PATH_ROOT})")
    parser.add_argument("--root-dir", default=None,
                        help="the kubelet's own directory (default: <temp dir>/groundup-kubelet/<node name>; "
                             "Kubernetes' is /var/lib/kubelet): configMap and downwardAPI volumes are written "
                             "there (Secrets go to /dev/shm, a tmpfs, instead), and seccompProfile Localhost "
                             "profiles are read from its seccomp/ folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    kubeconfig.add_flags(parser)
    args = parser.parse_args(argv)
    try:
        args.reserved = (parse_reservation("--system-reserved", args.system_reserved),
                         parse_reservation("--kube-reserved", args.kube_reserved))
        if any(args.reserved):                                 # more than the machine has: say so now
            allocatable(machine_capacity(), *args.reserved)
    except ReservationError as error:
        parser.error(str(error))
    if args.sync_frequency <= 0 or args.backoff_initial <= 0 or args.backoff_max < args.backoff_initial:
        parser.error("--sync-frequency and --backoff-initial must be above 0, and --backoff-max at least --backoff-initial")
    return args


def default_root_dir(node_name: str) -> str:
    import tempfile
    return os.path.join(tempfile.gettempdir(), "groundup-kubelet", node_name)


# --- what the flags add ---------------------------------------------------------
# Each later chapter's part of the kubelet lives in a folder of its own and
# is imported here only when a flag asks for it. Alone, with --manifests,
# the kubelet loads only stats/, for its read-only port's /metrics (and
# with --read-only-port 0 not even that).

def measure_node(kubelet: Kubelet, reserved: tuple[dict, dict]) -> None:
    """The node's allocatable, which the downward API gives a container for
    a limit it leaves unset (resourceFieldRef)."""
    try:
        kubelet.worker.allocatable = allocatable(machine_capacity(), *reserved)
    except (OSError, RuntimeError) as error:    # only resourceFieldRef without limits needs it
        kubelet.log.warning("cannot measure this machine; resourceFieldRef limits read as 0", error=str(error))


def serve_port(kubelet: Kubelet, address: str, port: int, client_token: str | None) -> None:
    """The read-only port (chapter 01), with what it tells about usage
    (stats/, chapter 02's part 6) and, when there is a token to check the
    API server by, exec, attach and port-forward (streaming/, its part 7)."""
    from readonly_server import serve
    from stats import routes as stats
    blueprints = [stats.install(kubelet)]
    if client_token:
        from streaming import server as streaming
        blueprints.append(streaming.bp)
    # A port in use ends the process here with werkzeug's own clear message.
    serve(kubelet, address, port, kubelet.log, client_token, tuple(blueprints))


def join_cluster(kubelet: Kubelet, client, args: argparse.Namespace) -> None:
    """--apiserver or --kubeconfig (chapter 02, part 4): register the node,
    read ConfigMaps and Secrets (api_volumes/), give containers the
    Services' variables (service_discovery/, chapter 05), then take the pods
    the API server binds here as a second source."""
    from api_volumes import persistent, volumes
    from apiserver_join.join import pods_bound_here, register_node
    from service_discovery.service_env import services_env_from
    volumes.install(kubelet, client, args.root_dir, args.sync_frequency)
    # Claims' volumes (chapter 04); deleted volumes' directories are looked for every ten syncs.
    persistent.install(kubelet, client, args.local_path_root, args.root_dir,
                       cleanup_period=max(10 * args.sync_frequency, 2.0))
    register_node(kubelet, client, args.node_ip or default_node_ip(client.connection.server), args.read_only_port,
                  args.reserved, args.node_status_update_frequency, wait_for_pod_cidr=not args.pod_cidr)
    kubelet.worker.service_env = services_env_from(client)
    kubelet.sources.append(pods_bound_here(kubelet, client))


def use_cluster_dns(runtime: DockerRuntime, servers: str, domain: str) -> None:
    """--cluster-dns (chapter 05): pods' resolv.conf names the cluster's DNS."""
    from service_discovery.pod_dns import node_resolver, pod_dns
    nameservers, node = [ip for ip in servers.split(",") if ip], node_resolver()
    runtime.pod_dns = lambda pod: pod_dns(pod, nameservers, domain, node)


def use_kubenet(runtime: DockerRuntime, non_masquerade_cidr: str, pod_cidr: str, log: EventLogger):
    """--network-plugin kubenet (chapter 05): pods on the node's podCIDR.
    None if the range given with --pod-cidr cannot be set up."""
    from pod_network.kubenet import NETWORK, Kubenet, PodNetworkError
    network = Kubenet(runtime.api, non_masquerade_cidr, log)
    runtime.pod_network = NETWORK
    runtime.sandbox_started = network.allow_hairpin
    if pod_cidr:
        try:
            network.set_up(pod_cidr)
        except PodNetworkError as error:
            log.error("cannot set up the pod network", error=str(error))
            return None
    return network


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("kubelet", "DEBUG" if args.verbose else None)
    args.root_dir = args.root_dir or default_root_dir(args.node_name)
    try:
        runtime = DockerRuntime(args.node_name, Node.detect(seccomp_root=os.path.join(args.root_dir, "seccomp")))
        runtime.version()
    except docker.errors.DockerException as error:
        log.error("cannot reach Docker", error=str(error))
        return 1
    if args.cleanup:
        return cleanup(runtime, args.all_nodes, log, args.root_dir)
    joins_cluster = bool(args.apiserver or args.kubeconfig)
    if not args.manifests and not joins_cluster:
        log.error("nothing to run: give --manifests DIR, or --apiserver URL / --kubeconfig FILE")
        return 2
    try:
        client_token = read_token_file(args.authentication_token_file) if args.authentication_token_file else None
    except TokenFileError as error:
        log.error("cannot secure the read-only port", error=str(error))
        return 2
    lock = lock_node(args.node_name)  # noqa: F841 (held until the process exits)
    if args.manifests and not os.path.isdir(args.manifests):
        log.warning("manifest directory does not exist yet; waiting for it", obj=args.manifests)
    # In a cluster a static pod is named <name>-<node>, as in Kubernetes, so
    # that one manifest on two nodes makes two pods in the API (mirror pods).
    sources = [FileSource(args.manifests, args.node_name, log, name_suffix=joins_cluster)] if args.manifests else []
    client = events = None
    if joins_cluster:
        from common.client.client import APIClient
        client = APIClient(kubeconfig.from_args(args), user_agent=f"kubelet/{args.node_name}")
        events = EventRecorder(client, "kubelet", host=args.node_name, log=log).start()
    if args.cluster_dns:
        use_cluster_dns(runtime, args.cluster_dns, args.cluster_domain)
    network = None
    if args.network_plugin == "kubenet":
        if not (joins_cluster or args.pod_cidr):
            log.error("kubenet needs the node's pod range: from the API server, or --pod-cidr")
            return 2
        network = use_kubenet(runtime, args.non_masquerade_cidr, args.pod_cidr, log)
        if network is None:
            return 1
    kubelet = Kubelet(args.node_name, runtime, sources, log, network=network,
                      pause_image=args.pod_infra_container_image, host_ip=args.node_ip or default_node_ip(client.connection.server if client else None),
                      sync_frequency=args.sync_frequency, backoff_initial=args.backoff_initial,
                      backoff_max=args.backoff_max, parallel_pod_workers=args.parallel_pod_workers,
                      events=events)
    measure_node(kubelet, args.reserved)
    if args.read_only_port:
        serve_port(kubelet, args.address, args.read_only_port, client_token)
    if joins_cluster:
        join_cluster(kubelet, client, args)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: kubelet.stop())
    kubelet.run()
    if not kubelet.shutdown():
        log.warning("pod workers were still busy; their pods are picked up at the next start")
    log.info("kubelet stopped; its pods keep running", obj=args.node_name,
             hint="make clean-node removes them")
    # Exit now rather than wait for a worker in a 30-second graceful stop:
    # whatever it leaves half-done, the next kubelet converges from.
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
