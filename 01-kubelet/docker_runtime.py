"""The kubelet's container runtime: a thin layer over the Docker SDK.

Everything the kubelet knows about its containers comes from here, from
Docker itself: every container it made carries labels (pod uid, namespace,
name, container name, node name, spec hash, restart count), and a listing
filtered on this node's label is the kubelet's whole view of "actual".
"""
from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import docker
import docker.errors
from docker.types import Mount

import pod_config as cfg
import security_context
from common.model.quantity import parse_quantity

NEVER = "0001-01-01T00:00:00Z"  # Docker's zero time: not started / not finished
# The volume types whose files the kubelet writes from the API server's
# objects (api_volumes/): alone, without one, it has none of them.
API_VOLUMES_NEED = dict.fromkeys(("configMap", "secret", "downwardAPI", "projected", "persistentVolumeClaim"),
                                 " without an API server (give --apiserver or --kubeconfig: chapter 02)")


class StartError(Exception):
    """Docker created the container but could not start it (e.g. its
    command is not in the image). The container stays, with State.Error."""

    def __init__(self, container_id: str, message: str):
        super().__init__(message)
        self.container_id = container_id


class ImagePullError(Exception):
    """The image could not be pulled (ErrImagePull) or may not be (ErrImageNeverPull)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass
class ContainerInfo:
    """One Docker container as the kubelet sees it."""
    id: str
    name: str             # the Kubernetes container name; "POD" for the pause container
    pod_uid: str
    pod_namespace: str
    pod_name: str
    hash: str
    restart_count: int
    sandbox_id: str
    grace_period: int
    state: str            # created, running, exited, dead...
    exit_code: int
    oom_killed: bool
    error: str            # Docker's State.Error, e.g. a failed exec of the command
    started_at: float | None
    finished_at: float | None
    created: float
    image: str
    image_id: str
    ip: str               # the pod IP: a running pause container's, or the label on an app container
    pid: int = 0          # its first process, on this machine (0 when not running): its cgroup's counters

    @property
    def running(self) -> bool:
        return self.state in ("running", "restarting", "paused")

    @property
    def never_started(self) -> bool:
        """Created but never started: the kubelet died between the two calls."""
        return self.state == "created" and not self.error


def _timestamp(text: str | None) -> float | None:
    if not text or text.startswith("0001-"):
        return None
    # Docker prints nanoseconds; Python parses at most microseconds.
    head, _, frac = text.rstrip("Z").partition(".")
    micro = (frac + "000000")[:6]
    moment = datetime.strptime(f"{head}.{micro}", "%Y-%m-%dT%H:%M:%S.%f")
    return moment.replace(tzinfo=timezone.utc).timestamp()


def _info(attrs: dict) -> ContainerInfo:
    labels = attrs["Config"].get("Labels") or {}
    state = attrs["State"]
    return ContainerInfo(
        id=attrs["Id"],
        name=labels.get(cfg.LABEL_CONTAINER_NAME, ""),
        pod_uid=labels.get(cfg.LABEL_POD_UID, ""),
        pod_namespace=labels.get(cfg.LABEL_POD_NAMESPACE, ""),
        pod_name=labels.get(cfg.LABEL_POD_NAME, ""),
        hash=labels.get(cfg.LABEL_CONTAINER_HASH, ""),
        restart_count=int(labels.get(cfg.LABEL_RESTART_COUNT, "0") or 0),
        sandbox_id=labels.get(cfg.LABEL_SANDBOX_ID, ""),
        grace_period=int(labels.get(cfg.LABEL_GRACE_PERIOD, "30") or 30),
        state=state.get("Status", "unknown"),
        exit_code=state.get("ExitCode", 0),
        oom_killed=bool(state.get("OOMKilled")),
        error=state.get("Error", ""),
        started_at=_timestamp(state.get("StartedAt")),
        finished_at=_timestamp(state.get("FinishedAt")),
        created=_timestamp(attrs.get("Created")) or 0.0,
        image=attrs["Config"].get("Image", ""),
        image_id=attrs.get("Image", ""),
        ip=_container_ip(attrs) or labels.get(cfg.LABEL_POD_IP, ""),
        pid=state.get("Pid") or 0,
    )


def _container_ip(attrs: dict) -> str:
    """The container's IP: on Docker's default bridge at the top of
    NetworkSettings, on a network of its own (the pod network, chapter 05)
    under that network's name."""
    settings = attrs.get("NetworkSettings") or {}
    networks = (settings.get("Networks") or {}).values()
    return settings.get("IPAddress") or next((n["IPAddress"] for n in networks if n.get("IPAddress")), "")


class DockerRuntime:
    def __init__(self, node_name: str, node: security_context.Node,
                 client: docker.DockerClient | None = None):
        self.node_name = node_name
        self.client = client or docker.from_env(timeout=300)
        self.api = self.client.api
        # Docker's default bridge: every node's pods get 172.17.0.x, which is
        # fine on one machine. Chapter 05's pod network names its own.
        self.pod_network = "bridge"
        # chapter 05's resolver settings (service_discovery/pod_dns.py); None: Docker's
        self.pod_dns = lambda pod: None
        self.sandbox_started = lambda: None  # chapter 05: the pod network's hairpin mode (pod_network/kubenet.py)
        self.node = node                    # AppArmor? SELinux? seccomp profiles? (securityContext)
        # Chapter 02: where a configMap, secret, downwardAPI or projected
        # volume is on the node (api_volumes/volumes.py, set up when the
        # kubelet joins a cluster), or None if it is none of those.
        self.api_volume_path = lambda pod, volume_name: None
        # Chapter 04: where a persistentVolumeClaim volume's data is on the node,
        # and whether it is mounted read-only (api_volumes/persistent.py), or None.
        self.claim_volume_path = lambda pod, volume: None
        # Inspecting every container on every sync would cost a Docker call
        # each; a container's details change only when its state does.
        self._inspected: dict[tuple[str, str], ContainerInfo] = {}
        self._lock = threading.Lock()

    # --- the view of "actual" ---------------------------------------------

    def list_containers(self, all_nodes: bool = False) -> list[ContainerInfo]:
        """Every container this node's kubelet made, running or not."""
        label = cfg.LABEL_NODE_NAME if all_nodes else f"{cfg.LABEL_NODE_NAME}={self.node_name}"
        summaries = self.api.containers(all=True, filters={"label": label})
        infos, seen = [], set()
        for summary in summaries:
            key = (summary["Id"], summary["State"])
            seen.add(key)
            with self._lock:
                info = self._inspected.get(key)
            if info is None:
                try:
                    info = _info(self.api.inspect_container(summary["Id"]))
                except docker.errors.NotFound:
                    continue  # removed since the listing
                # "created" is not cached: between create and a failed start
                # it changes (State.Error is set) without changing state.
                if info.state != "created":
                    with self._lock:
                        self._inspected[key] = info
            infos.append(info)
        with self._lock:
            for key in [k for k in self._inspected if k not in seen]:
                del self._inspected[key]
        return infos

    def inspect(self, container_id: str) -> ContainerInfo:
        return _info(self.api.inspect_container(container_id))

    # --- images ---------------------------------------------------------------

    def ensure_image(self, image: str, policy: str, on_pull=None) -> bool:
        """Pull according to imagePullPolicy: Always, IfNotPresent or Never.
        True if it pulled; on_pull() is called just before a pull starts
        (the kubelet's "Pulling" event)."""
        present = self._image_present(image)
        if policy == "Never" and not present:
            raise ImagePullError("ErrImageNeverPull",
                                 f'Container image "{image}" is not present with pull policy of Never')
        if policy == "Always" or not present:
            repository, tag = _split_image(image)
            if on_pull:
                on_pull()
            try:
                self.api.pull(repository, tag=tag)
                return True
            except docker.errors.APIError as error:
                if policy == "Always" and present:
                    return False  # no registry right now; the local copy will do
                raise ImagePullError("ErrImagePull", f'failed to pull image "{image}": {_explain(error)}')
        return False

    def _image_present(self, image: str) -> bool:
        try:
            self.api.inspect_image(image)
            return True
        except docker.errors.ImageNotFound:
            return False

    # --- volumes --------------------------------------------------------------

    def mounts(self, pod: dict, container: dict) -> list[Mount]:
        """Docker mounts for a container's volumeMounts. emptyDir volumes are
        Docker named volumes (one per pod and volume, labelled like the
        containers), so Docker creates and removes them with the right owner;
        medium: Memory makes that volume a tmpfs."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        result = []
        for mount in container.get("volumeMounts") or []:
            volume = volumes[mount["name"]]
            read_only = bool(mount.get("readOnly", False))
            api_path = self.api_volume_path(pod, volume["name"])
            claim_path = self.claim_volume_path(pod, volume) if "persistentVolumeClaim" in volume else None
            _check_sub_path(mount, bool(api_path or claim_path))
            if "emptyDir" in volume:
                source = self._empty_dir(pod, volume)
                result.append(Mount(mount["mountPath"], source, type="volume", read_only=read_only))
            elif "hostPath" in volume:
                path = _prepare_host_path(volume["hostPath"], volume["name"])
                result.append(Mount(mount["mountPath"], path, type="bind", read_only=read_only))
            elif claim_path:
                path, claim_read_only = claim_path
                if mount.get("subPath"):          # a directory of its own inside the volume
                    path = os.path.join(path, mount["subPath"])
                    os.makedirs(path, mode=0o777, exist_ok=True)
                result.append(Mount(mount["mountPath"], path, type="bind", read_only=read_only or claim_read_only))
            elif api_path:
                # Read-only whatever the pod says, as Kubernetes mounts them:
                # the kubelet owns these files. A subPath binds the one file
                # as it is now: like Kubernetes', it sees no later update.
                path = os.path.join(api_path, mount["subPath"]) if mount.get("subPath") else api_path
                result.append(Mount(mount["mountPath"], path, type="bind", read_only=True))
            else:
                kind = next((k for k in volume if k != "name"), "?")
                raise cfg.ConfigError(f'volume "{volume["name"]}": type {kind} is not supported by this kubelet'
                                      + API_VOLUMES_NEED.get(kind, ""))
        return result

    def _empty_dir(self, pod: dict, volume: dict) -> str:
        uid = pod["metadata"]["uid"]
        name = f"{cfg.EMPTY_DIR_PREFIX}_{uid}_{volume['name']}"
        spec = volume.get("emptyDir") or {}
        options = {}
        if spec.get("medium") == "Memory":
            size = f",size={parse_quantity(spec['sizeLimit']).value()}" if spec.get("sizeLimit") else ""
            options = {"type": "tmpfs", "device": "tmpfs", "o": "mode=1777" + size}
        try:
            existing = self.api.inspect_volume(name)
            if (existing.get("Options") or {}) == options:
                return name
            self.api.remove_volume(name)  # its medium or size changed (the pod was recreated)
        except docker.errors.NotFound:
            pass
        self.api.create_volume(name, driver="local", driver_opts=options, labels={
            cfg.LABEL_POD_UID: uid, cfg.LABEL_NODE_NAME: self.node_name,
            cfg.LABEL_POD_NAME: pod["metadata"]["name"],
            cfg.LABEL_POD_NAMESPACE: pod["metadata"]["namespace"]})
        return name

    def sandbox_mounts(self, pod: dict) -> list[Mount]:
        """The pause container keeps every emptyDir mounted, so a tmpfs
        (medium: Memory) lives as long as the pod, not only while some app
        container runs: Docker unmounts a tmpfs volume nobody uses."""
        return [Mount(f"/volumes/{v['name']}", self._empty_dir(pod, v), type="volume")
                for v in cfg.empty_dirs(pod)]

    def mounted_host_paths(self) -> set[str]:
        """The node's directories this node's containers have bind-mounted now."""
        containers = self.api.containers(all=True, filters={"label": f"{cfg.LABEL_NODE_NAME}={self.node_name}"})
        return {m.get("Source", "") for c in containers for m in c.get("Mounts") or [] if m.get("Type") == "bind"}

    def list_volume_pods(self, all_nodes: bool = False) -> dict[str, str]:
        """emptyDir volume name -> pod uid, for this node's volumes."""
        label = cfg.LABEL_NODE_NAME if all_nodes else f"{cfg.LABEL_NODE_NAME}={self.node_name}"
        volumes = self.api.volumes(filters={"label": label}).get("Volumes") or []
        return {v["Name"]: (v.get("Labels") or {}).get(cfg.LABEL_POD_UID, "") for v in volumes}

    def remove_volume(self, name: str) -> None:
        try:
            self.api.remove_volume(name, force=True)
        except docker.errors.NotFound:
            pass

    # --- containers -----------------------------------------------------------

    # [START pause-container]
    def run_sandbox(self, pod: dict, image: str, attempt: int) -> str:
        """Create and start the pause container that holds the pod's network
        namespace (and IPC namespace); returns its id."""
        spec = pod["spec"]
        labels = cfg.pod_labels(pod, self.node_name, cfg.SANDBOX_NAME)
        labels[cfg.LABEL_CONTAINER_HASH] = cfg.sandbox_hash(pod)
        labels[cfg.LABEL_RESTART_COUNT] = str(attempt)
        host_network = bool(spec.get("hostNetwork"))
        bindings = cfg.host_port_bindings(pod)
        host_config = self.api.create_host_config(
            network_mode="host" if host_network else self.pod_network,
            port_bindings=None if host_network else bindings,
            ipc_mode="shareable",  # the app containers join it, as they join its network
            mounts=self.sandbox_mounts(pod),
            sysctls=security_context.sandbox_sysctls(pod),  # they change the namespaces it holds
        )
        container = self.api.create_container(
            image, name=cfg.docker_name(pod, cfg.SANDBOX_NAME, attempt),
            hostname=None if host_network else spec.get("hostname", pod["metadata"]["name"]),
            labels=labels, host_config=host_config,
            ports=None if host_network else [(int(port), proto) for port, proto in
                                              (key.split("/") for key in bindings)])
        try:
            self.api.start(container["Id"])
        except docker.errors.APIError:
            self.remove(container["Id"])  # e.g. its host port is taken: try afresh later
            raise
        self._own_empty_dirs(pod, container["Id"])
        self._write_resolv_conf(pod, container["Id"])
        self.sandbox_started()
        return container["Id"]
    # [END pause-container]

    def _own_empty_dirs(self, pod: dict, sandbox_id: str) -> None:
        """Fresh emptyDirs get Kubernetes' mode (0777) and, with fsGroup,
        its group and the setgid bit (security_context.set_volume_ownership)."""
        fs_group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
        for volume in cfg.empty_dirs(pod):
            security_context.set_volume_ownership(self.api, sandbox_id, f"/volumes/{volume['name']}", fs_group)

    def image_user(self, image: str) -> str:
        """The image's USER ("" when it sets none: root)."""
        return (self.api.inspect_image(image).get("Config") or {}).get("User") or ""

    def _write_resolv_conf(self, pod: dict, sandbox_id: str) -> None:
        """Chapter 05's resolver settings, written over the resolv.conf
        Docker made for the pause container (as Kubernetes' dockershim did):
        the app containers, which join its network, share that file."""
        dns = self.pod_dns(pod)
        if dns is None:
            return                    # Docker's default: the node's resolver
        lines = [f"nameserver {server}" for server in dns.servers]
        lines += [f"search {' '.join(dns.searches)}"] if dns.searches else []
        lines += [f"options {' '.join(dns.options)}"] if dns.options else []
        path = self.api.inspect_container(sandbox_id)["ResolvConfPath"]
        with open(path, "w") as resolv_conf:
            resolv_conf.write("\n".join(lines) + "\n")

    # [START app-container]
    def run_container(self, pod: dict, container: dict, sandbox_id: str, pod_ip: str,
                      restart_count: int, env: dict[str, str], mounts: list[Mount]) -> str:
        """Create and start one app container inside the pod's sandbox."""
        entrypoint, cmd = cfg.command_line(container, env)
        security = security_context.docker_options(pod, container, self.image_user(container["image"]),
                                                   sandbox_id, self.node)   # ConfigError: refused
        labels = cfg.pod_labels(pod, self.node_name, container["name"])
        labels.update({cfg.LABEL_CONTAINER_HASH: cfg.container_hash(pod, container),
                       cfg.LABEL_RESTART_COUNT: str(restart_count),
                       cfg.LABEL_SANDBOX_ID: sandbox_id,
                       cfg.LABEL_POD_IP: pod_ip})  # status keeps it after the pod ends
        host_config = self.api.create_host_config(
            network_mode=f"container:{sandbox_id}",  # share the pod's IP and localhost
            ipc_mode=f"container:{sandbox_id}",
            mounts=mounts,
            **cfg.docker_resources(container), **security.host_config)
        created = self.api.create_container(
            container["image"], name=cfg.docker_name(pod, container["name"], restart_count),
            entrypoint=entrypoint, command=cmd, working_dir=container.get("workingDir"), user=security.user,
            environment=env, labels=labels, host_config=host_config,
            tty=bool(container.get("tty")), stdin_open=bool(container.get("stdin")))
        try:
            self.api.start(created["Id"])
        except docker.errors.APIError as error:
            # The container stays, with State.Error set; its status reads
            # terminated (StartError) and it restarts with back-off like any
            # other failure.
            raise StartError(created["Id"], _explain(error)) from None
        return created["Id"]
    # [END app-container]

    def stop(self, container_id: str, grace_period: int) -> None:
        """SIGTERM, then SIGKILL after the grace period (Docker's stop)."""
        try:
            self.api.stop(container_id, timeout=max(0, int(grace_period)))
        except docker.errors.NotFound:
            pass

    def remove(self, container_id: str) -> None:
        try:
            self.api.remove_container(container_id, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as error:
            if "already in progress" not in str(error):
                raise

    def logs(self, container_id: str, tail: int | None, follow: bool, timestamps: bool):
        return self.api.logs(container_id, stream=follow, follow=follow, timestamps=timestamps,
                             tail="all" if tail is None else tail)

    def exec(self, container_id: str, command: list[str], timeout: float) -> tuple[int, bytes]:
        """Run a command in a container (an exec probe). Its own client, with
        the probe's timeout on the socket: one hanging probe must not hold a
        connection another needs. On timeout the command keeps running in
        the container, as it does under Kubernetes with Docker."""
        client = docker.from_env(timeout=timeout)
        try:
            run = client.api.exec_create(container_id, command, stdout=True, stderr=True)
            output = client.api.exec_start(run["Id"])
            return client.api.exec_inspect(run["Id"]).get("ExitCode") or 0, output
        finally:
            client.close()

    # ----- streaming: kubectl exec, attach (streaming/remote_command.py) -----

    def exec_stream(self, container_id: str, command: list[str], stdin: bool, tty: bool):
        """Start `command` in the container with its stdio on a socket of its
        own (Docker hijacks the HTTP connection, as `docker exec -i` does).
        Returns the exec's id and the raw socket: with a TTY it carries the
        terminal's bytes; without, stdout and stderr multiplexed (demux)."""
        run = self.api.exec_create(container_id, command, stdin=stdin, stdout=True, stderr=True, tty=tty)
        hijacked = self.api.exec_start(run["Id"], tty=tty, socket=True)
        return run["Id"], _raw_socket(hijacked)

    def exec_exit_code(self, exec_id: str, timeout: float = 5.0) -> int | None:
        """The exit code once Docker has noticed the process ended (its output
        can close a moment before); None if it is still running."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.api.exec_inspect(exec_id)
            if not state.get("Running") or time.monotonic() > deadline:
                return None if state.get("Running") else state.get("ExitCode") or 0
            time.sleep(0.01)

    def attach_stream(self, container_id: str):
        """The running container's own stdio, from now on (no old logs).
        Returns whether it has a TTY (then output is raw) and the socket."""
        tty = bool(self.api.inspect_container(container_id)["Config"].get("Tty"))
        hijacked = self.api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                               "stream": 1, "logs": 0})
        return tty, _raw_socket(hijacked)

    def resize(self, exec_id: str | None, container_id: str, width: int, height: int) -> None:
        """A terminal's new size: an exec's, or (attach) the container's."""
        if exec_id:
            self.api.exec_resize(exec_id, height=height, width=width)
        else:
            self.api.resize(container_id, height=height, width=width)

    def version(self) -> str:
        return self.api.version().get("Version", "unknown")


@dataclass
class Hijacked:
    """A connection Docker has handed over to a container's stdio."""
    sock: socket.socket
    keep: object          # the SDK's wrapper: while it lives, its finalizer cannot close the socket

    def close(self) -> None:
        """Both: a socket with a file wrapper open keeps its descriptor until the wrapper closes too."""
        self.keep.close()
        self.sock.close()


def _raw_socket(hijacked) -> Hijacked:
    """The socket under what the Docker SDK returns (a SocketIO over a unix
    or TCP socket), without the SDK client's 300 s timeout: an exec may sit
    idle for as long as its user likes."""
    sock = getattr(hijacked, "_sock", hijacked)
    sock.settimeout(None)
    return Hijacked(sock, hijacked)


def _split_image(image: str) -> tuple[str, str | None]:
    """"busybox:1.35" -> ("busybox", "1.35"); a registry port is not a tag."""
    if "@" in image:
        return image, None
    name, _, tag = image.rpartition(":")
    if name and "/" not in tag:
        return name, tag
    return image, "latest"


def _explain(error: docker.errors.APIError) -> str:
    return getattr(error, "explanation", None) or str(error)


def _check_sub_path(mount: dict, api_volume: bool) -> None:
    """subPath is honoured for configMap, secret, downwardAPI and projected
    volumes; elsewhere, and subPathExpr anywhere, it is refused rather than
    mounting the whole volume where the pod asked for a part of it."""
    name = mount["name"]
    if mount.get("subPathExpr"):
        raise cfg.ConfigError(f'volumeMounts "{name}": subPathExpr is not supported by this kubelet')
    sub_path = mount.get("subPath")
    if not sub_path:
        return
    if not api_volume:
        raise cfg.ConfigError(f'volumeMounts "{name}": subPath is supported by this kubelet only for configMap, '
                              "secret, downwardAPI and projected volumes")
    parts = sub_path.split("/")
    if sub_path.startswith("/") or ".." in parts:
        raise cfg.ConfigError(f'volumeMounts "{name}": subPath {sub_path!r} must be a relative path '
                              "inside the volume")


def _prepare_host_path(spec: dict, volume_name: str) -> str:
    """Check (or create) a hostPath as its `type` asks, like the kubelet."""
    path, kind = spec["path"], spec.get("type", "")
    if kind == "DirectoryOrCreate":
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif kind == "FileOrCreate" and not os.path.exists(path):
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        open(path, "a").close()
    checks = {"Directory": os.path.isdir, "File": os.path.isfile,
              "Socket": lambda p: os.path.exists(p) and _is_kind(p, "S_ISSOCK"),
              "CharDevice": lambda p: os.path.exists(p) and _is_kind(p, "S_ISCHR"),
              "BlockDevice": lambda p: os.path.exists(p) and _is_kind(p, "S_ISBLK")}
    if kind in checks and not checks[kind](path):
        raise cfg.ConfigError(f'hostPath volume "{volume_name}": {path} is not a {kind}')
    return path


def _is_kind(path: str, test: str) -> bool:
    import stat
    return getattr(stat, test)(os.stat(path).st_mode)
