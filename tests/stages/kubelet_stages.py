"""Chapter 01's stages: a kubelet, graded one capability at a time.

Each stage gets a fresh manifest directory and a node name of its own
(stage-<random>), starts the learner's kubelet with them, writes pod
manifests, and looks at what happens in two places only: Docker (the
containers labelled with that node's name, and for the graceful stop
their events: which signal each got, and when) and the kubelet's
read-only port (/pods). So any kubelet that keeps the command line and
the labels passes. A check that something does *not* happen (no restart
of a container that finished for good) always waits for something that
does (a restart elsewhere), so a kubelet that does nothing never passes
one. Whatever happens, every container of the stage's node is removed
after it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import docker
import docker.errors
import requests
import yaml

from common.tooling.ports import free_port
from stage_runner import Hint, Stage, StageContext, StageFailure

PART1 = "01-kubelet/lesson-1-how-the-kubelet-works.md"
PART2 = "01-kubelet/lesson-2-run-the-kubelet.md"

SYNC_LOOP = Hint("The sync loop", PART1)
DECIDE = Hint("Compare and decide", PART1)
PAUSE = Hint("The pause container and the app containers", PART1)
BACKOFF = Hint("Restart back-off", PART1)
STATUS = Hint("Status", PART1)
DEAD_SANDBOX = Hint("When the pause container dies", PART1)
GRACEFUL = Hint("Stopping a container gracefully", PART1)
GIVE = Hint("2. Give it a pod", PART2)
ASK = Hint("3. Ask the kubelet what it runs", PART2)
ONE_NETWORK = Hint("4. One pod, one network", PART2)
KILL = Hint("5. Kill a container, watch it come back", PART2)
MORE_PODS = Hint("6. More pods: a web server, a crash loop, a one-shot job", PART2)
DELETE = Hint("9. Delete a pod", PART2)
STOP = Hint("10. Stop the kubelet", PART2)

NODE_LABEL = "io.groundup.node-name"
POD_LABEL = "io.kubernetes.pod.name"
CONTAINER_LABEL = "io.kubernetes.container.name"
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
BACKOFF_INITIAL = 3          # seconds: --backoff-initial, short enough for a stage
GRACE = 4                    # seconds: the graceful-stop stage's terminationGracePeriodSeconds
START = 20                   # seconds for a first start: a busy machine is slow


class KubeletContext(StageContext):
    """A node name, a manifest directory and a read-only port of the
    stage's own, and Docker to look at (and to clean up after)."""

    def __init__(self, mine: Path, workdir: Path):
        super().__init__(mine, workdir)
        self.node_name = f"stage-{uuid.uuid4().hex[:8]}"
        self.manifests = workdir / "manifests"
        self.manifests.mkdir()
        self.port = free_port()
        self.docker = docker.from_env(timeout=120)

    def mine_args(self) -> list[str]:
        return ["--node-name", self.node_name, "--manifests", str(self.manifests),
                "--address", "127.0.0.1", "--read-only-port", str(self.port), "--sync-frequency", "0.5s",
                "--backoff-initial", f"{BACKOFF_INITIAL}s", "--backoff-max", f"{4 * BACKOFF_INITIAL}s"]

    def close(self) -> None:
        super().close()
        mine = {"label": f"{NODE_LABEL}={self.node_name}"}
        for container in self.docker.containers.list(all=True, filters=mine, ignore_removed=True):
            remove_eventually(container)
        for volume in self.docker.volumes.list(filters={"label": f"{NODE_LABEL}={self.node_name}"}):
            remove_eventually(volume)
        # What the reference kubelet keeps on the side, under this node's name.
        shutil.rmtree(Path(tempfile.gettempdir()) / "groundup-kubelet" / self.node_name, ignore_errors=True)
        lock = Path(tempfile.gettempdir()) / f"groundup-kubelet-{self.node_name}.lock"
        lock.unlink(missing_ok=True)


CONTEXT = KubeletContext


def remove_eventually(thing, timeout: float = 20) -> None:
    """Remove a container or volume; Docker's 409 (a removal already under
    way) means ask again shortly."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            thing.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as error:
            if error.status_code != 409 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# ---------------------------------------------------------------- manifests

def pod_manifest(name: str, *containers: dict, restart_policy: str | None = None) -> dict:
    spec: dict = {"containers": list(containers), "terminationGracePeriodSeconds": 2}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(name: str, script: str, **fields) -> dict:
    """A busybox container running a shell script (which stops at once on SIGTERM)."""
    return {"name": name, "image": "busybox:1.35", "command": ["sh", "-c"],
            "args": [f"trap 'exit 0' TERM; {script}"], **fields}


SLEEP = "sleep 3600 & wait"

# busybox:1.35 has no ENTRYPOINT, so a kubelet that runs `command` + `args`
# as Docker's CMD passes with it; this image has one of its own.
ENTRYPOINT_IMAGE = "groundup/stage-entrypoint:1"
ENTRYPOINT_SAYS = "the image's own ENTRYPOINT ran, with:"


def entrypoint_image(ctx: "KubeletContext") -> str:
    """ENTRYPOINT_IMAGE, made once on this computer (offline: a commit of
    a busybox container never started, with an ENTRYPOINT added)."""
    try:
        ctx.docker.images.get(ENTRYPOINT_IMAGE)
    except docker.errors.ImageNotFound:
        # No labels: a commit copies them into the image, and so into every container made from it.
        base = ctx.docker.containers.create("busybox:1.35")
        try:
            repository, tag = ENTRYPOINT_IMAGE.split(":")
            base.commit(repository=repository, tag=tag, changes=f'ENTRYPOINT ["echo", "{ENTRYPOINT_SAYS}"]')
        finally:
            base.remove(force=True)
    return ENTRYPOINT_IMAGE


def write_pod(ctx: KubeletContext, pod: dict, filename: str | None = None) -> Path:
    """Written atomically (a hidden file, renamed), so no kubelet reads half a file."""
    path = ctx.manifests / (filename or f"{pod['metadata']['name']}.yaml")
    hidden = ctx.manifests / f".{path.name}.tmp"
    hidden.write_text(yaml.safe_dump(pod, sort_keys=False))
    os.replace(hidden, path)
    return path


# ---------------------------------------------------------------- what Docker and /pods say

def containers_of(ctx: KubeletContext, pod: str, name: str | None = None, running: bool = False) -> list:
    """The pod's Docker containers on this node (of one container name), oldest first."""
    labels = [f"{NODE_LABEL}={ctx.node_name}", f"{POD_LABEL}={pod}"]
    if name:
        labels.append(f"{CONTAINER_LABEL}={name}")
    found = ctx.docker.containers.list(all=not running, filters={"label": labels}, ignore_removed=True)
    return sorted(found, key=lambda c: c.attrs["Created"])


def running_one(ctx: KubeletContext, pod: str, name: str):
    """The running container of that name, when exactly one runs."""
    found = containers_of(ctx, pod, name, running=True)
    return found[0] if len(found) == 1 else None


def describe(ctx: KubeletContext, pod: str) -> str:
    found = containers_of(ctx, pod)
    if not found:
        return f"Docker has no container labelled {NODE_LABEL}={ctx.node_name}, {POD_LABEL}={pod}"
    said = "Docker has " + ", ".join(f"{c.labels.get(CONTAINER_LABEL, '?')} ({c.status})" for c in found)
    if any(c.status == "created" for c in found):
        said += ": created, never started (Docker's reason is in your program's last lines)"
    return said


def wait_running(ctx: KubeletContext, pod: str, name: str, timeout: float = START, hint: Hint | None = None):
    return ctx.wait_until(lambda: running_one(ctx, pod, name),
                          expected=f"one running container of pod {pod}, labelled {CONTAINER_LABEL}={name}",
                          happened=lambda: describe(ctx, pod), timeout=timeout, hint=hint)


def listed_pods(ctx: KubeletContext) -> dict[str, dict]:
    """name -> pod, from the kubelet's /pods."""
    body = requests.get(f"http://127.0.0.1:{ctx.port}/pods", timeout=5).json()
    return {pod["metadata"]["name"]: pod for pod in body["items"]}


def pod_answer(ctx: KubeletContext, name: str) -> str:
    try:
        pod = listed_pods(ctx).get(name)
    except (requests.RequestException, ValueError) as error:
        return f"GET /pods failed: {type(error).__name__}"
    return f"/pods says {pod.get('status')!r}" if pod else f"/pods does not list {name}"


def logs(container) -> str:
    return container.logs().decode(errors="replace")


def started_at(container) -> float:
    head, _, fraction = container.attrs["State"]["StartedAt"].rstrip("Z").partition(".")
    return datetime.fromisoformat(head + "+00:00").timestamp() + float(f"0.{fraction or 0}")


def network_of(container) -> str:
    """Whose network an app container joined: "container:<id>" for a pause container's."""
    return container.attrs["HostConfig"]["NetworkMode"]


def describe_networks(ctx: KubeletContext, pod: str, dead=None) -> str:
    """The pod's running containers, each with the network it is in (dead:
    a pause container that no longer runs, named as such)."""
    found = containers_of(ctx, pod, running=True)
    if not found:
        return f"Docker has no running container of pod {pod}"

    def network(app) -> str:
        mode = network_of(app)
        return f"the dead pause container's, {mode[:22]}" if dead and mode == f"container:{dead.id}" else mode[:22]
    return "Docker runs " + ", ".join(
        f"{c.labels.get(CONTAINER_LABEL, '?')} {c.short_id}"
        + ("" if c.labels.get(CONTAINER_LABEL) == "POD" else f" (network {network(c)})") for c in found)


class DockerEvents:
    """Docker's events for the stage's node, collected by a thread from now
    on: the one place that tells which signal a container got, and when."""

    def __init__(self, ctx: KubeletContext):
        self.seen: list[dict] = []
        # A client of its own, apart from the stage's calls. Its 120 s read
        # timeout would end a stream quiet that long; a stage's lasts seconds.
        self.client = docker.from_env(timeout=120)
        self.stream = self.client.events(
            decode=True, filters={"type": "container", "label": f"{NODE_LABEL}={ctx.node_name}"})
        threading.Thread(target=self._collect, daemon=True, name="docker-events").start()

    def _collect(self) -> None:
        try:
            for event in self.stream:
                self.seen.append(event)
        except Exception:       # the stream closed under us: the stage is over
            pass

    def of(self, container) -> list[dict]:
        """One container's events so far, in order."""
        return [event for event in list(self.seen) if event["Actor"]["ID"] == container.id]

    def died(self, container) -> dict | None:
        return next((e for e in self.of(container) if e["Action"] == "die"), None)

    def signals(self, container) -> list[tuple[int, float]]:
        """(signal number, when) of each signal Docker sent it."""
        return [(int(e["Actor"]["Attributes"].get("signal", 0)), e["timeNano"] / 1e9)
                for e in self.of(container) if e["Action"] == "kill"]

    def close(self) -> None:
        self.stream.close()
        self.client.close()


def told(events: DockerEvents, container) -> str:
    """What Docker's events say happened to a container, in words."""
    words = []
    for event in events.of(container):
        if event["Action"] == "kill":
            number = int(event["Actor"]["Attributes"].get("signal", 0))
            words.append({15: "SIGTERM", 9: "SIGKILL"}.get(number, f"signal {number}"))
        elif event["Action"] == "die":
            words.append(f"exited with code {event['Actor']['Attributes'].get('exitCode')}")
    return ", then ".join(words) or "nothing yet"


# ---------------------------------------------------------------- the stages

def stage_runs_a_pod(ctx: KubeletContext) -> None:
    """One manifest, one container: it runs, labelled, with its command, args and env."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("hello", container("app", f"echo hello from $GREETING; {SLEEP}",
                                                  env=[{"name": "GREETING", "value": ctx.node_name}])))
    app = wait_running(ctx, "hello", "app", hint=PAUSE)
    if app.attrs["Config"]["Image"] != "busybox:1.35":
        raise StageFailure("the container to run the pod's image, busybox:1.35",
                           f"it runs {app.attrs['Config']['Image']}", PAUSE)
    ctx.wait_until(lambda: f"hello from {ctx.node_name}" in logs(app),
                   expected=f'the container to print "hello from {ctx.node_name}": `command` is the '
                            "ENTRYPOINT, `args` the CMD, and GREETING in its environment",
                   happened=lambda: f"its output is {logs(app)!r}", timeout=10, hint=PAUSE)
    # An image with an ENTRYPOINT of its own: the pod's `command` replaces it.
    write_pod(ctx, pod_manifest("entry", {**container("app", f"echo replaced; {SLEEP}"),
                                          "image": entrypoint_image(ctx)}))

    def output() -> str:
        return "".join(logs(c) for c in containers_of(ctx, "entry", "app"))

    def printed() -> str:
        """Its output once it has printed either line (each poll asks Docker once)."""
        text = output()
        return text if "replaced" in text or ENTRYPOINT_SAYS in text else ""
    said = ctx.wait_until(printed,
                          expected=f"pod entry's container (image {ENTRYPOINT_IMAGE}) to print \"replaced\"",
                          happened=lambda: f"{describe(ctx, 'entry')}; its output is {output()!r}",
                          timeout=START, hint=PAUSE)
    if ENTRYPOINT_SAYS in said:
        raise StageFailure(f"pod entry's `command` to replace the ENTRYPOINT of its image, {ENTRYPOINT_IMAGE} "
                           "(the Docker SDK's entrypoint=; `args` is its command=)",
                           f"the image's ENTRYPOINT ran with the pod's command and args after it: {said!r}", PAUSE)


def stage_pause_container(ctx: KubeletContext) -> None:
    """Two containers and a pause container; both join its network."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("pair", container("web", SLEEP), container("sidecar", SLEEP)))
    apps = {name: wait_running(ctx, "pair", name) for name in ("web", "sidecar")}
    # The apps join the pause container's namespace, so it starts first:
    # by now it runs (a few seconds' grace for a kubelet that starts it alongside).
    pause = wait_running(ctx, "pair", "POD", timeout=5, hint=PAUSE)
    if pause.attrs["Config"]["Image"] != PAUSE_IMAGE:
        raise StageFailure(f"the pause container to run {PAUSE_IMAGE}", f"it runs {pause.attrs['Config']['Image']}")
    for name, app in apps.items():
        mode = app.attrs["HostConfig"]["NetworkMode"]
        if mode != f"container:{pause.id}":
            raise StageFailure(f"{name} in the pause container's network namespace "
                               f"(network mode container:{pause.id[:12]}...)", f"its network mode is {mode!r}")


def stage_pods_port(ctx: KubeletContext) -> None:
    """GET /pods: each pod with its phase, IP and container states."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("web", container("app", SLEEP)))
    write_pod(ctx, pod_manifest("one-shot", container("job", "echo done"), restart_policy="Never"))
    write_pod(ctx, pod_manifest("broken", container("job", "exit 1"), restart_policy="Never"))
    wait_running(ctx, "web", "app")
    pause = wait_running(ctx, "web", "POD")
    pod = ctx.wait_until(lambda: listed_pods(ctx).get("web", {}).get("status", {}).get("phase") == "Running"
                         and listed_pods(ctx)["web"],
                         expected="GET /pods to list pod web, whose container runs, with status.phase Running",
                         happened=lambda: pod_answer(ctx, "web"), timeout=10, hint=STATUS)
    ip = pause.attrs["NetworkSettings"]["IPAddress"]
    if pod["status"].get("podIP") != ip:
        raise StageFailure(f"web's status.podIP to be its pause container's IP, {ip}",
                           f"it is {pod['status'].get('podIP')!r}", STATUS)
    statuses = pod["status"].get("containerStatuses") or [{}]
    seen = {key: statuses[0].get(key) for key in ("name", "ready", "restartCount")}
    if len(statuses) != 1 or seen != {"name": "app", "ready": True, "restartCount": 0} \
            or "running" not in (statuses[0].get("state") or {}):
        raise StageFailure('web\'s containerStatuses to be one, with name "app", ready true, restartCount 0 '
                           'and a "running" state', f"they are {pod['status'].get('containerStatuses')}", STATUS)
    done = ctx.wait_until(lambda: listed_pods(ctx).get("one-shot", {}).get("status", {}).get("phase") == "Succeeded"
                          and listed_pods(ctx)["one-shot"],
                          expected="pod one-shot (restartPolicy Never, its container exits 0) to be Succeeded",
                          happened=lambda: pod_answer(ctx, "one-shot"), timeout=START, hint=STATUS)
    ended = ((done["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get("terminated") or {}
    if (ended.get("exitCode"), ended.get("reason")) != (0, "Completed"):
        raise StageFailure('one-shot\'s container state to be "terminated" with exitCode 0 and reason "Completed"',
                           f"it is {done['status']['containerStatuses'][0].get('state')}", STATUS)
    failed = ctx.wait_until(lambda: listed_pods(ctx).get("broken", {}).get("status", {}).get("phase") == "Failed"
                            and listed_pods(ctx)["broken"],
                            expected="pod broken (restartPolicy Never, its container exits 1) to be Failed",
                            happened=lambda: pod_answer(ctx, "broken"), timeout=START, hint=STATUS)
    ended = ((failed["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get("terminated") or {}
    if (ended.get("exitCode"), ended.get("reason"), failed["status"]["containerStatuses"][0].get("ready")) \
            != (1, "Error", False):
        raise StageFailure('broken\'s container to be "terminated" with exitCode 1 and reason "Error", ready false',
                           f"its status is {failed['status']['containerStatuses'][0]}", STATUS)


def stage_deleted_manifest(ctx: KubeletContext) -> None:
    """A manifest removed: its pod's containers go, the others stay; also when
    it was removed while the kubelet was down."""
    first = ctx.start_mine()
    gone = write_pod(ctx, pod_manifest("gone", container("app", SLEEP)))
    write_pod(ctx, pod_manifest("kept", container("app", SLEEP)))
    wait_running(ctx, "gone", "app")
    kept_app = wait_running(ctx, "kept", "app")
    gone.unlink()
    ctx.wait_until(lambda: not containers_of(ctx, "gone"),
                   expected="every container of pod gone, its pause container too, removed once its manifest is",
                   happened=lambda: describe(ctx, "gone"), timeout=15)
    if running_one(ctx, "kept", "app") is None or running_one(ctx, "kept", "app").id != kept_app.id:
        raise StageFailure("pod kept's container to keep running untouched", describe(ctx, "kept"))
    later = write_pod(ctx, pod_manifest("later", container("app", SLEEP)))
    wait_running(ctx, "later", "app")
    first.kill()                               # kill -9: nothing is left of it but Docker's labels
    later.unlink()                             # removed while no kubelet runs
    ctx.start_mine()
    ctx.wait_until(lambda: not containers_of(ctx, "later"),
                   expected="a restarted kubelet to remove pod later, whose manifest was deleted while it was down "
                            "(what runs is in Docker's labels, not in the kubelet's memory)",
                   happened=lambda: describe(ctx, "later"), timeout=START, hint=STOP)
    if running_one(ctx, "kept", "app") is None or running_one(ctx, "kept", "app").id != kept_app.id:
        raise StageFailure("pod kept's container to keep running through the kubelet's restart, not replaced",
                           describe(ctx, "kept"), STOP)


def stage_restart_policy(ctx: KubeletContext) -> None:
    """Always restarts a killed container; OnFailure only a failed one; Never none."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("always", container("app", SLEEP)))
    write_pod(ctx, pod_manifest("retry", container("app", "sleep 1; exit 3"), restart_policy="OnFailure"))
    write_pod(ctx, pod_manifest("finished", container("app", "exit 0"), restart_policy="OnFailure"))
    write_pod(ctx, pod_manifest("never", container("app", "exit 1"), restart_policy="Never"))
    for pod in ("finished", "never"):         # ran once, and ended
        ctx.wait_until(lambda: any(c.status == "exited" for c in containers_of(ctx, pod, "app")),
                       expected=f"pod {pod}'s container to run and exit",
                       happened=lambda: describe(ctx, pod), timeout=START, hint=MORE_PODS)
    killed = wait_running(ctx, "always", "app")
    killed.kill()
    ctx.wait_until(lambda: (running_one(ctx, "always", "app") or killed).id != killed.id,
                   expected="pod always (restartPolicy Always) to get a new running container after `docker kill`",
                   happened=lambda: describe(ctx, "always"), timeout=15, hint=KILL)
    ctx.wait_until(lambda: len(containers_of(ctx, "retry", "app")) >= 2,
                   expected="pod retry (restartPolicy OnFailure, exits 3) to be started again",
                   happened=lambda: describe(ctx, "retry"), timeout=15, hint=MORE_PODS)
    for pod, why in (("finished", "OnFailure, and it exited 0"), ("never", "Never, though it exited 1")):
        made = containers_of(ctx, pod, "app")
        if len(made) != 1 or made[0].status != "exited":
            raise StageFailure(f"pod {pod} to have one exited container, never restarted (restartPolicy {why})",
                               describe(ctx, pod), MORE_PODS)
    restarts = listed_pods(ctx)["always"]["status"]["containerStatuses"][0]["restartCount"]
    if restarts != 1:
        raise StageFailure("/pods to say pod always's container restarted once (restartCount 1)",
                           f"its restartCount is {restarts}", KILL)


def stage_backoff(ctx: KubeletContext) -> None:
    """A container that crashes every second: restarts spaced by 3 s, then 6 s."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("crasher", container("app", "sleep 1; exit 3")))
    starts: dict[str, float] = {}

    def four_starts() -> bool:
        for found in containers_of(ctx, "crasher", "app"):
            if found.attrs["State"]["StartedAt"][:4] not in ("0001", ""):
                starts[found.id] = started_at(found)
        return len(starts) >= 4
    ctx.wait_until(four_starts, expected="pod crasher (restartPolicy Always, exits after 1 s) started 4 times",
                   happened=lambda: f"it started {len(starts)} times", timeout=START + 30, hint=BACKOFF)
    times = sorted(starts.values())[:4]
    waits = [round(later - earlier - 1, 1) for earlier, later in zip(times, times[1:])]   # less its 1 s run
    # Each wait in its window: at once, then 3 s, then 6 s, each up to half a
    # second early and anything short of the next step late (a busy machine
    # may be seconds late; a whole step late is the back-off off by one, and
    # it can only come after the next step, since its own delay adds).
    windows = [(0, BACKOFF_INITIAL), (BACKOFF_INITIAL - 0.5, 2 * BACKOFF_INITIAL),
               (2 * BACKOFF_INITIAL - 0.5, 4 * BACKOFF_INITIAL)]
    if not all(low <= wait < high for (low, high), wait in zip(windows, waits)):
        raise StageFailure(f"a back-off between crashes: the first restart at once, the second {BACKOFF_INITIAL} s "
                           f"after the crash (--backoff-initial), the third {2 * BACKOFF_INITIAL} s (it doubles)",
                           f"the restarts came {waits[0]} s, {waits[1]} s and {waits[2]} s after each crash")


def stage_edited_manifest(ctx: KubeletContext) -> None:
    """An edited manifest: the changed container is replaced, in the same pod."""
    ctx.start_mine()
    pod = pod_manifest("edited", container("app", SLEEP, env=[{"name": "VERSION", "value": "one"}]),
                       container("other", SLEEP))
    write_pod(ctx, pod)
    first = wait_running(ctx, "edited", "app")
    other = wait_running(ctx, "edited", "other")
    pause = wait_running(ctx, "edited", "POD")
    pod["spec"]["containers"][0]["env"][0]["value"] = "two"
    write_pod(ctx, pod)

    def replaced():
        now = running_one(ctx, "edited", "app")
        return now if now and now.id != first.id and "VERSION=two" in now.attrs["Config"]["Env"] else None
    ctx.wait_until(replaced, expected="pod edited's app container replaced by one with VERSION=two, "
                                      "once the manifest says so",
                   happened=lambda: describe(ctx, "edited"), timeout=15, hint=DECIDE)
    for name, before in (("other", other), ("POD", pause)):
        now = running_one(ctx, "edited", name)
        if now is None or now.id != before.id:
            raise StageFailure(f"{name} to keep running untouched: its spec did not change, and the pod keeps "
                               "its pause container (and its IP)", describe(ctx, "edited"), DECIDE)


def stage_dead_sandbox(ctx: KubeletContext) -> None:
    """The pause container killed: a new one, and the app containers
    re-created in its network; another pod untouched."""
    ctx.start_mine()
    write_pod(ctx, pod_manifest("pair", container("web", SLEEP), container("sidecar", SLEEP)))
    write_pod(ctx, pod_manifest("bystander", container("app", SLEEP)))
    before = {name: wait_running(ctx, "pair", name) for name in ("web", "sidecar")}
    dead = wait_running(ctx, "pair", "POD")
    bystander = wait_running(ctx, "bystander", "app")
    dead.kill()                     # as if it crashed: the pod's network namespace is gone

    def new_pause():
        now = running_one(ctx, "pair", "POD")
        return now if now is not None and now.id != dead.id else None
    pause = ctx.wait_until(new_pause, expected="a new pause container for pod pair, once `docker kill` ended its old one",
                           happened=lambda: describe(ctx, "pair"), timeout=15)

    def rejoined() -> bool:
        apps = [running_one(ctx, "pair", name) for name in before]
        return all(app is not None and network_of(app) == f"container:{pause.id}" for app in apps)
    ctx.wait_until(rejoined, expected=f"web and sidecar running again, each one container in the new pause "
                                      f"container's network (network mode container:{pause.short_id}...), "
                                      "none left in the dead one's",
                   happened=lambda: describe_networks(ctx, "pair", dead), timeout=15)

    def coherent() -> bool:
        status = listed_pods(ctx).get("pair", {}).get("status", {})
        counts = {s.get("name"): s.get("restartCount") for s in status.get("containerStatuses") or []}
        return (status.get("phase"), status.get("podIP"), counts) == (
            "Running", pause.attrs["NetworkSettings"]["IPAddress"], {"web": 1, "sidecar": 1})
    ctx.wait_until(coherent, expected="/pods to show pod pair Running, with the new pause container's IP as podIP "
                                      f"({pause.attrs['NetworkSettings']['IPAddress']}) and restartCount 1 for web and "
                                      "sidecar (each was re-created once, in the new sandbox)",
                   happened=lambda: pod_answer(ctx, "pair"), timeout=10)
    now = running_one(ctx, "bystander", "app")
    if now is None or now.id != bystander.id:
        raise StageFailure("pod bystander's container to keep running untouched: only pair's pause container died",
                           f"its container {bystander.short_id} was replaced: {describe_networks(ctx, 'bystander')}")


def stage_graceful_stop(ctx: KubeletContext) -> None:
    """SIGTERM first, SIGKILL only after terminationGracePeriodSeconds: for an
    edited container and for a deleted pod's."""
    ctx.start_mine()
    events = DockerEvents(ctx)
    try:
        polite = {"name": "polite", "image": "busybox:1.35", "command": ["sh", "-c"],
                  "args": ["trap 'echo caught SIGTERM; exit 7' TERM; sleep 3600 & wait"],
                  "env": [{"name": "VERSION", "value": "one"}]}
        stubborn = {"name": "stubborn", "image": "busybox:1.35", "command": ["sh", "-c"],
                    "args": ["trap '' TERM; sleep 3600 & wait"]}      # ignores SIGTERM
        pod = pod_manifest("graceful", polite, stubborn)
        pod["spec"]["terminationGracePeriodSeconds"] = GRACE
        path = write_pod(ctx, pod)
        first = wait_running(ctx, "graceful", "polite")
        ignoring = wait_running(ctx, "graceful", "stubborn")
        polite["env"][0]["value"] = "two"             # an edit: polite is replaced, so stopped
        write_pod(ctx, pod)
        expect_exit_by_trap(ctx, events, first, "once the manifest changed its env")
        second = wait_running(ctx, "graceful", "polite")
        path.unlink()
        expect_exit_by_trap(ctx, events, second, "once its manifest was deleted")
        expect_killed_after_grace(ctx, events, ignoring)
    finally:
        events.close()


def expect_exit_by_trap(ctx: KubeletContext, events: DockerEvents, polite, when: str) -> None:
    """polite traps SIGTERM and exits 7: that exit code means it was asked."""
    died = ctx.wait_until(lambda: events.died(polite),
                          expected=f"the polite container {polite.short_id} stopped {when}",
                          happened=lambda: f"Docker's events for it: {told(events, polite)}", timeout=15)
    code = int(died["Actor"]["Attributes"].get("exitCode", -1))
    if code != 7 or 15 not in [number for number, _ in events.signals(polite)]:
        raise StageFailure(f"a SIGTERM for the polite container {when}, and time to exit by itself: "
                           "its trap prints and exits 7", f"Docker's events for it: {told(events, polite)}")


def expect_killed_after_grace(ctx: KubeletContext, events: DockerEvents, stubborn) -> None:
    """stubborn ignores SIGTERM: it must still run until the grace period is
    over, and be killed then (Docker's own clock times both events)."""
    died = ctx.wait_until(lambda: events.died(stubborn),
                          expected=f"the stubborn container (it ignores SIGTERM) killed once its pod's "
                                   f"{GRACE} s terminationGracePeriodSeconds are over",
                          happened=lambda: f"Docker's events for it: {told(events, stubborn)}", timeout=GRACE + 20)
    terms = [at for number, at in events.signals(stubborn) if number == 15]
    if not terms:
        raise StageFailure("a SIGTERM for the stubborn container first, and SIGKILL only once the grace period is over",
                           f"Docker's events for it: {told(events, stubborn)}")
    lasted = died["timeNano"] / 1e9 - terms[0]
    if not GRACE - 1 <= lasted <= GRACE + 3:
        raise StageFailure(f"SIGKILL for the stubborn container (it ignores SIGTERM) about {GRACE} s after its "
                           "SIGTERM: the pod's terminationGracePeriodSeconds (a deleted pod's manifest is gone, "
                           "its containers' labels are not)",
                           f"it died {lasted:.1f} s after its SIGTERM ({told(events, stubborn)})")


STAGES = [
    Stage(1, "runs a pod's container from a manifest", stage_runs_a_pod, PAUSE,
          terms=("io.groundup.node-name", "io.kubernetes.pod.name", "`command` replaces the image's ENTRYPOINT",
                 "`args` its CMD", "Environment variables")),
    Stage(2, "the pause container: one network for the pod", stage_pause_container, PAUSE,
          terms=("registry.k8s.io/pause:3.9", "starts first", "network namespace", "container:<the pause")),
    Stage(3, "/pods: what runs, with its status", stage_pods_port, STATUS,
          terms=("GET /pods", "status.podIP", "pause container's IP", "containerStatuses", "restartCount",
                 "`Completed`", "`Error`", "`Succeeded`", "`Failed`")),
    Stage(4, "a deleted manifest removes its pod, also while the kubelet was down", stage_deleted_manifest, DELETE,
          terms=("every container of its pod", "pause container included", "untouched",
                 "while the kubelet was down", "Docker labels")),
    Stage(5, "restartPolicy: Always, OnFailure, Never", stage_restart_policy, KILL,
          terms=("`Always`", "`OnFailure`", "`Never`", "exit code 0", "restartCount")),
    Stage(6, "crash-loop back-off", stage_backoff, BACKOFF,
          terms=("at once the first time", "doubles", "--backoff-initial", "counted from the crash")),
    Stage(7, "an edited manifest replaces the changed container", stage_edited_manifest, DECIDE,
          terms=("spec hash", "only the containers whose spec hash changed", "keeps running untouched",
                 "pause container")),
    Stage(8, "a dead pause container is replaced, and the pod's containers with it", stage_dead_sandbox,
          DEAD_SANDBOX, terms=("new sandbox", "starts every container again inside it", "restartCount",
                               "the new pause container's", "Only that pod is touched")),
    Stage(9, "a graceful stop: SIGTERM, then SIGKILL after the grace period", stage_graceful_stop, GRACEFUL,
          terms=("SIGTERM", "SIGKILL", "terminationGracePeriodSeconds", "io.kubernetes.pod.terminationGracePeriod",
                 "spec edited", "pod was deleted")),
]
