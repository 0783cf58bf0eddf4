"""Your kubelet: chapter 01's kubelet, written by you, one stage at a time.

    python 01-kubelet/build-it-yourself/kubelet.py --node-name node1 --manifests /tmp/manifests

Written for you (the machinery, read it once): the command line, the
manifest directory read every sync, the listing of this node's Docker
containers by their labels, the sync loop, the decision of what to do for
each container (sync_pod), and the read-only port with /healthz and /pods.
Yours to write, in the order the stages ask for it, are the places marked
TODO(stage N): start a container, the pause container, the pod's status,
removing deleted pods, the restart policy, the back-off, noticing an
edited spec, noticing a new pause container, and stopping a container
gracefully. Each TODO names the lesson section that explains it.

It may use the Docker SDK (docker), Flask and common/ (reading and
validating manifests, logging), but none of 01-kubelet/'s own modules:
that kubelet is ours, this one is yours.

Grade your work with `make stage-01` (every stage up to the first that
fails) or `make stage-01 STAGE=3` (one stage); with your own copy of this
file, add MINE=path/to/it.py. The stages look only at Docker (containers
with this node's labels) and at the read-only port, so change anything
you like, as long as it keeps this command line and these labels.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import docker
from flask import Flask, jsonify
from werkzeug.serving import make_server

from common.model.defaults import apply_pod_defaults
from common.log import get_logger
from common.model.manifests import ManifestError, load_manifests
from common.times import duration
from common.model.validation import validate_pod

# Every container carries these labels: they are the kubelet's only memory
# (the names are Kubernetes'; the node's is ours, as several kubelets may
# share one Docker).
NODE = "io.groundup.node-name"
POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
CONTAINER_NAME = "io.kubernetes.container.name"
HASH = "io.kubernetes.container.hash"
RESTART_COUNT = "io.kubernetes.container.restartCount"
# The pod's terminationGracePeriodSeconds, kept on each container: once a
# manifest is deleted its spec is gone, and the stop still needs it.
GRACE_PERIOD = "io.kubernetes.pod.terminationGracePeriod"
SANDBOX = "POD"             # the container name of a pod's pause container

log = get_logger("kubelet")


# ---------------------------------------------------------------- helpers (given)

def pod_key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def spec_hash(spec: dict) -> str:
    """Changes whenever anything in the container's spec changes."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def labels_for(pod: dict, container_name: str, node_name: str, spec: dict | None = None,
               restart_count: int = 0) -> dict[str, str]:
    """The labels of one of the pod's containers (container_name "POD": its pause container)."""
    labels = {NODE: node_name, POD_NAME: pod["metadata"]["name"], POD_NAMESPACE: pod["metadata"]["namespace"],
              CONTAINER_NAME: container_name, RESTART_COUNT: str(restart_count),
              GRACE_PERIOD: str(pod["spec"].get("terminationGracePeriodSeconds", 30))}
    if spec is not None:
        labels[HASH] = spec_hash(spec)
    return labels


def docker_name(pod: dict, container_name: str, node_name: str, attempt: int) -> str:
    """k8s_<container>_<pod>_<namespace>_<node>_<attempt>, so `docker ps` reads like a node's."""
    meta = pod["metadata"]
    return f"k8s_{container_name}_{meta['name']}_{meta['namespace']}_{node_name}_{attempt}"


def newest(containers: list, name: str):
    """The most recent Docker container of this container name, or None."""
    mine = [c for c in containers if c.labels.get(CONTAINER_NAME) == name]
    return max(mine, key=restart_count, default=None)


def restart_count(container) -> int:
    return int(container.labels.get(RESTART_COUNT, "0"))


def exit_code(container) -> int:
    return container.attrs["State"]["ExitCode"]


def docker_time(text: str) -> float:
    """Docker's "2026-11-22T03:57:59.123456789Z" as seconds since the epoch (0: never)."""
    head, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(head + "+00:00").timestamp()
    return 0.0 if seconds < 0 else seconds + float(f"0.{fraction or 0}")


def read_manifests(directory: str, reported: set[str]) -> dict[str, dict]:
    """pod key -> pod, for every valid Pod in the directory's files. A bad
    file is logged once (reported remembers) and skipped."""
    pods = {}
    for path in sorted(Path(directory).glob("*")):
        if path.name.startswith(".") or path.suffix not in (".yaml", ".yml", ".json"):
            continue
        try:
            objects = [apply_pod_defaults(m.obj) for m in load_manifests(path)]
            errors = [str(e) for obj in objects for e in validate_pod(obj)]
        except ManifestError as error:
            objects, errors = [], [error.message]
        for error in errors:
            if f"{path}: {error}" not in reported:
                reported.add(f"{path}: {error}")
                log.error(f"manifest skipped: {error}", obj=str(path))
        pods.update({pod_key(pod): pod for pod in objects if not errors})
    return pods


# ---------------------------------------------------------------- the kubelet

class Kubelet:
    def __init__(self, args: argparse.Namespace):
        self.node_name = args.node_name
        self.manifests = args.manifests
        self.pause_image = args.pod_infra_container_image
        self.sync_frequency = args.sync_frequency
        self.backoff_initial, self.backoff_max = args.backoff_initial, args.backoff_max
        self.docker = docker.from_env(timeout=120)
        self.reported: set[str] = set()
        self.pods: list[dict] = []             # what /pods serves: each desired pod, with its status

    def containers_by_pod(self) -> dict[str, list]:
        """pod key -> its Docker containers, running or not: the actual state."""
        found: dict[str, list] = {}
        mine = {"label": f"{NODE}={self.node_name}"}
        for container in self.docker.containers.list(all=True, filters=mine, ignore_removed=True):
            key = f"{container.labels[POD_NAMESPACE]}/{container.labels[POD_NAME]}"
            found.setdefault(key, []).append(container)
        return found

    def run(self) -> None:
        """Sync forever; a failed sync (Docker away, a TODO's exception) is logged and retried."""
        log.info("kubelet started", obj=self.node_name)
        last_error = None
        while True:
            try:
                self.sync_once()
                last_error = None
            except Exception as error:
                if f"{error!r}" != last_error:     # once, not every sync
                    log.error("sync failed", error=f"{type(error).__name__}: {error}")
                last_error = f"{error!r}"
            time.sleep(self.sync_frequency)

    def sync_once(self) -> None:
        desired = read_manifests(self.manifests, self.reported)
        actual = self.containers_by_pod()
        for key, pod in desired.items():
            self.sync_pod(pod, actual.get(key, []))
        self.remove_unwanted(desired, actual)
        actual = self.containers_by_pod()      # status tells what is, after this sync's changes
        self.pods = [{**pod, "status": pod_status(pod, actual.get(key, []))} for key, pod in desired.items()]

    def sync_pod(self, pod: dict, containers: list) -> None:
        """Compare each container of the spec with its newest Docker container, and act."""
        sandbox = self.ensure_sandbox(pod, containers)
        for spec in pod["spec"]["containers"]:
            current = newest(containers, spec["name"])
            if current is None:
                self.run_container(pod, spec, 0, sandbox)
            elif current.status == "running" and self.sandbox_changed(current, sandbox):
                log.info("pod sandbox changed, replacing", obj=pod_key(pod), container=spec["name"])
                self.replace(pod, spec, current, sandbox)
            elif current.status == "running" and self.spec_changed(spec, current):
                log.info("spec changed, replacing", obj=pod_key(pod), container=spec["name"])
                self.replace(pod, spec, current, sandbox)
            elif current.status == "exited" and (self.spec_changed(spec, current) or (
                    self.should_restart(pod, current) and self.backoff_over(current))):
                for old in containers:         # keep one dead container: the one before the new
                    if old.labels.get(CONTAINER_NAME) == spec["name"] and old.id != current.id:
                        old.remove(force=True)
                log.info("restarting", obj=pod_key(pod), container=spec["name"], exitCode=exit_code(current))
                self.run_container(pod, spec, restart_count(current) + 1, sandbox)

    def replace(self, pod: dict, spec: dict, current, sandbox) -> None:
        """Stop and remove a running container, and start its spec afresh: a restart."""
        self.stop_container(current)
        current.remove(force=True)
        self.run_container(pod, spec, restart_count(current) + 1, sandbox)

    def run_container(self, pod: dict, spec: dict, restarts: int, sandbox):
        # TODO(stage 1): create and start one Docker container for this
        # container of the pod (self.docker.containers.run(..., detach=True))
        # and return it. Its image; its `command` replaces the image's
        # ENTRYPOINT and its `args` the image's CMD. Careful, the names cross
        # over: the Docker SDK's entrypoint= takes Kubernetes' `command`, and
        # its command= takes Kubernetes' `args`. Its `env` list as a dict
        # of name -> value (environment=); the labels from labels_for(pod,
        # spec["name"], self.node_name, spec, restarts); the name from
        # docker_name(), with restarts as the attempt.
        # Once stage 2 gives the pod a sandbox (else None), join its network:
        # network_mode=f"container:{sandbox.id}". Lesson: "The pause container
        # and the app containers" in 01-kubelet/lesson-1-how-the-kubelet-works.md.
        raise NotImplementedError("run_container() is yours to write: see TODO(stage 1)")

    def ensure_sandbox(self, pod: dict, containers: list):
        # TODO(stage 2): return the pod's running pause container (the one
        # labelled with container name SANDBOX, "POD"), or start one if it has
        # none: image self.pause_image, labels_for(pod, SANDBOX, ...), the
        # pod's name as hostname. Remove a dead one first (its name would
        # clash; give the new one the next attempt number). Lesson: "The
        # pause container and the app containers" in lesson-1-how-the-kubelet-works.md,
        # and "4. One pod, one network" in lesson-2-run-the-kubelet.md.
        return None

    def remove_unwanted(self, desired: dict, actual: dict) -> None:
        # TODO(stage 4): a pod in actual that no manifest wants any more
        # (its file was deleted, maybe while this kubelet was not running):
        # stop and remove every one of its containers, the pause container
        # too (self.stop_container(container), which stage 9 makes graceful,
        # then container.remove(force=True)). Lesson: "9. Delete a pod" in
        # lesson-2-run-the-kubelet.md.
        pass

    def should_restart(self, pod: dict, container) -> bool:
        # TODO(stage 5): is this exited container to be started again? The
        # pod's spec.restartPolicy says: "Always" (the default), "OnFailure"
        # (only after a non-zero exit_code()), "Never". Lesson: "5. Kill a
        # container, watch it come back" and "6. More pods: a web server, a
        # crash loop, a one-shot job" in lesson-2-run-the-kubelet.md.
        return False

    def backoff_over(self, container) -> bool:
        # TODO(stage 6): a container that keeps crashing waits longer each
        # time. The first restart comes at once (restart_count() 0); after
        # that, wait self.backoff_initial seconds from when it finished
        # (docker_time(container.attrs["State"]["FinishedAt"])), doubling
        # with each restart, up to self.backoff_max. No back-off object to
        # keep: the restart count on the container's labels and the time it
        # finished give the same delays as the lesson's (without its reset
        # after ten quiet minutes). Lesson: "Restart back-off" in
        # lesson-1-how-the-kubelet-works.md.
        return True

    def spec_changed(self, spec: dict, container) -> bool:
        # TODO(stage 7): did the manifest change this container's spec since
        # the container was made? Its labels remember the spec's hash. Lesson:
        # "Compare and decide" in lesson-1-how-the-kubelet-works.md.
        return False

    def sandbox_changed(self, container, sandbox) -> bool:
        # TODO(stage 8): is this running app container outside the pod's
        # current sandbox? When a pause container dies, ensure_sandbox()
        # starts a new one, with a new network namespace; the app containers
        # still sit in the dead one's, where no one can reach them, and are
        # to be replaced. Docker keeps the network an app container joined
        # as its container.attrs["HostConfig"]["NetworkMode"], which
        # run_container() set to f"container:{sandbox.id}". (No sandbox at
        # all, before stage 2: nothing to compare with.) Lesson: "When the
        # pause container dies" in lesson-1-how-the-kubelet-works.md.
        return False

    def stop_container(self, container) -> None:
        # TODO(stage 9): stop it as Kubernetes does: SIGTERM first, so the
        # program can finish what it was doing, then SIGKILL if it still runs
        # once the pod's terminationGracePeriodSeconds are over. Docker's
        # stop does just that: container.stop(timeout=seconds). Read the
        # seconds from the container's GRACE_PERIOD label (a deleted pod's
        # manifest is gone). Until you do, the remove(force=True) that
        # follows every call kills it at once. Lesson: "Stopping a container
        # gracefully" in lesson-1-how-the-kubelet-works.md.
        pass


def pod_status(pod: dict, containers: list) -> dict:
    # TODO(stage 3): the pod's status, as Kubernetes writes it: "phase"
    # (Pending until each container has started; Running while one runs or
    # will restart; Succeeded when all exited 0 and none restarts; Failed
    # under restartPolicy Never when one failed), "podIP" (the running
    # pause container's container.attrs["NetworkSettings"]["IPAddress"]),
    # and "containerStatuses": per container of the spec, {"name", "ready"
    # (running), "restartCount", "state"}, where state is {"running": {}},
    # {"terminated": {"exitCode": N, "reason": "Completed" or "Error"}} or
    # {"waiting": {"reason": "ContainerCreating"}}. "Will restart" is
    # stage 5's rule (restartPolicy and the exit code), needed here too
    # (pod_status is no method: it cannot ask should_restart). A container waiting out
    # its back-off reads "terminated" here (the lesson's kubelet says
    # CrashLoopBackOff; this one need not). The pause container keeps
    # running while the pod exists, so a finished pod keeps its IP.
    # Lesson: "Status" in lesson-1-how-the-kubelet-works.md, "3. Ask the
    # kubelet what it runs" in lesson-2-run-the-kubelet.md.
    return {}


# ---------------------------------------------------------------- the read-only port (given)

def serve(kubelet: Kubelet, address: str, port: int) -> None:
    """/healthz and /pods (a PodList) on a thread of their own."""
    app = Flask("kubelet")
    app.add_url_rule("/healthz", "healthz", lambda: "ok")
    app.add_url_rule("/pods", "pods", lambda: jsonify({"kind": "PodList", "apiVersion": "v1",
                                                       "metadata": {}, "items": kubelet.pods}))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(address, port, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log.info(f"{address}:{port}: read-only port listening")


def main() -> int:
    parser = argparse.ArgumentParser(description="Your kubelet (chapter 01, build it yourself).")
    parser.add_argument("--node-name", required=True, help="this node's name, on every container's labels")
    parser.add_argument("--manifests", "--pod-manifest-path", dest="manifests", required=True,
                        help="directory of pod manifests to run (static pods)")
    parser.add_argument("--pod-infra-container-image", default="registry.k8s.io/pause:3.9",
                        help="the pause image holding each pod's network namespace")
    parser.add_argument("--address", default="0.0.0.0", help="address of the read-only port")
    parser.add_argument("--read-only-port", type=int, default=10255)
    parser.add_argument("--sync-frequency", type=duration, default=1.0, help="how often to sync (default 1s)")
    parser.add_argument("--backoff-initial", type=duration, default=10.0, help="first crash back-off (10s)")
    parser.add_argument("--backoff-max", type=duration, default=300.0, help="back-off ceiling (5m)")
    args = parser.parse_args()
    kubelet = Kubelet(args)
    serve(kubelet, args.address, args.read_only_port)
    try:
        kubelet.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
