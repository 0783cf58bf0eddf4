"""Volumes filled from the API: configMap, secret, downwardAPI and projected.

A projected volume may also hold the pod's ServiceAccount token
(serviceAccountToken): the kubelet asks the API server for one bound to
the pod (api_objects.TokenCache) and writes it like any other file; the
refresh thread below writes a new one when 80% of its lifetime has passed.

Each is a directory on the node, written by the kubelet (atomic_writer.py)
and bind-mounted read-only into the containers, as Kubernetes mounts them:
a program may read its configuration, never change it under its peers.

    <root-dir>/pods/<uid>/volumes/kubernetes.io~configmap/<volume>     on disk
    /dev/shm/groundup-kubelet/<node>/pods/<uid>/volumes/kubernetes.io~secret/<volume>

Secrets (and projected volumes, which may hold them) live only in memory:
a Secret written to a disk outlives the pod, in the disk's free blocks and
backups. Kubernetes mounts a tmpfs for each such volume, which takes root.
We use /dev/shm instead, the tmpfs every Linux machine has and any user
may write to, so that a kubelet run by a learner without root keeps
Secrets off the disk too; each node's directory there is readable by the
kubelet's user only (a container sees only its own volume, through the
bind mount). If /dev/shm is not a tmpfs, Secret volumes are refused.

The pod worker calls `ready(pod)` before it starts a pod's containers (a
missing ConfigMap stops the pod there: FailedMount, and the pod waits in
ContainerCreating). Then a thread of this module, every sync period,
rewrites each volume whose source changed (a ConfigMap edited, a label
added), off the sync loop, so a slow API server never holds up the pods.
"""
from __future__ import annotations

import os
import shutil
import threading
import time

import pod_config as cfg
from api_volumes import atomic_writer
from api_volumes.api_objects import DATA_OF, EnvResolver, ObjectCache, ObjectError, ObjectNotFound, TokenCache
from api_volumes.atomic_writer import File, PayloadError
from common.client.backoff import Backoff

MEMORY_ROOT = "/dev/shm"
KINDS = ("configMap", "secret", "downwardAPI", "projected")
PLUGIN_DIRS = {"configMap": "kubernetes.io~configmap", "secret": "kubernetes.io~secret",
               "downwardAPI": "kubernetes.io~downward-api", "projected": "kubernetes.io~projected"}
IN_MEMORY = ("secret", "projected")         # as Kubernetes: these on a tmpfs, the others on disk
DEFAULT_MODE = 0o644                         # every kind's defaultMode, when the pod gives none
# What a downwardAPI file may hold (Kubernetes' validDownwardAPIFieldPathExpressions).
VOLUME_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid",
                      "metadata.labels", "metadata.annotations")


class MountError(Exception):
    """A volume cannot be set up; the message is FailedMount's."""

    def __init__(self, volume: str, reason: str):
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {reason}')
        self.volume = volume


def api_volumes(pod: dict) -> list[tuple[int, dict]]:
    """(index in spec.volumes, volume) for the kinds this module serves."""
    return [(i, v) for i, v in enumerate(pod["spec"].get("volumes") or []) if any(k in v for k in KINDS)]


def kind_of(volume: dict) -> str:
    return next(k for k in KINDS if k in volume)


# --- payloads: what files a volume holds ------------------------------------

# Kubernetes' words for an item naming a key the object lacks.
NON_EXISTENT_KEY = {"configmap": "configmap references non-existent config key: ",
                    "secret": "references non-existent secret key: "}

class Sources:
    """Where a payload's contents come from: the objects (through the
    cache, no older than fresh_since), ServiceAccount tokens, and the
    node's allocatable (for resourceFieldRef limits a container does not set)."""

    def __init__(self, cache: ObjectCache, fresh_since: float | None, allocatable: dict,
                 tokens: TokenCache | None = None):
        self.cache, self.fresh_since, self.allocatable = cache, fresh_since, allocatable
        self.tokens = tokens or TokenCache(None)

    def data(self, plural: str, namespace: str, name: str, optional: bool) -> dict[str, bytes] | None:
        """The object's keys and contents; None if it is missing and optional."""
        try:
            return DATA_OF[plural](self.cache.get(plural, namespace, name, self.fresh_since))
        except ObjectNotFound:
            if optional:
                return None
            raise


# [START object-payload]
def object_payload(data: dict[str, bytes] | None, source: dict, path: str, default_mode: int,
                   what: str) -> dict[str, File]:
    """A configMap or secret source as files: every key by its own name,
    or only the `items` listed, each at its own path and mode. A key an
    item names that the object lacks is an error, unless optional."""
    if data is None:                            # optional, and the object is missing: no files
        return {}
    items = source.get("items")
    if not items:
        return {key: File(value, default_mode) for key, value in data.items()}
    payload = {}
    for i, item in enumerate(items):
        key = item.get("key", "")
        if key not in data:
            if source.get("optional"):
                continue
            raise ObjectError(NON_EXISTENT_KEY[what] + key)
        payload[_checked(item.get("path", ""), f"{path}.items[{i}].path")] = File(
            data[key], _mode(item.get("mode"), default_mode, f"{path}.items[{i}].mode"))
    return payload
# [END object-payload]


def downward_payload(pod: dict, source: dict, path: str, default_mode: int, sources: Sources) -> dict[str, File]:
    """A downwardAPI source: one file per item, a field of the pod
    (labels and annotations as `key="value"` lines) or a container's
    resource."""
    payload = {}
    for i, item in enumerate(source.get("items") or []):
        item_path = f"{path}.items[{i}]"
        if "fieldRef" in item:
            text = _field_text(pod, item["fieldRef"].get("fieldPath", ""), f"{item_path}.fieldRef.fieldPath")
        elif "resourceFieldRef" in item:
            ref = item["resourceFieldRef"]
            if not ref.get("containerName"):
                raise PayloadError(f"{item_path}.resourceFieldRef.containerName: Required value")
            try:
                text = cfg.resource_value(pod, ref["containerName"], ref, sources.allocatable)
            except cfg.ConfigError as error:
                raise PayloadError(f"{item_path}.{error}") from None
        else:
            raise PayloadError(f"{item_path}: must specify one of: `fieldRef` or `resourceFieldRef`")
        payload[_checked(item.get("path", ""), f"{item_path}.path")] = File(
            text.encode(), _mode(item.get("mode"), default_mode, f"{item_path}.mode"))
    return payload


def _field_text(pod: dict, field_path: str, where: str) -> str:
    base = field_path.split("[", 1)[0]
    if base not in VOLUME_FIELD_PATHS:
        raise PayloadError(f"{where}: Unsupported value: {field_path!r}: supported values: "
                           + ", ".join(f'"{p}"' for p in VOLUME_FIELD_PATHS))
    if field_path in ("metadata.labels", "metadata.annotations"):
        return format_map(pod["metadata"].get(field_path.split(".")[1]) or {})
    return cfg.field_value(pod, {"fieldPath": field_path})


def format_map(values: dict[str, str]) -> str:
    """Labels or annotations as the downward API writes them: one
    `key="value"` a line, sorted by key, the value quoted (Go's %q)."""
    return "\n".join(f"{key}={_go_quote(values[key])}" for key in sorted(values))


def _go_quote(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return '"' + "".join(escapes.get(c, c if c.isprintable() else f"\\u{ord(c):04x}") for c in text) + '"'


def _checked(item_path: str, where: str) -> str:
    try:
        atomic_writer.check_path(item_path)
    except PayloadError as error:
        raise PayloadError(f"{where}: {error}") from None
    return item_path


def _mode(mode, default: int, where: str) -> int:
    if mode is None:
        return default
    if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o777:
        raise PayloadError(f"{where}: Invalid value: {mode!r}: must be a number between 0 and 0777 (octal), "
                           "both inclusive")
    return mode


def volume_payload(pod: dict, index: int, volume: dict, sources: Sources) -> dict[str, File]:
    """Every file of one volume, or MountError saying why not."""
    kind = kind_of(volume)
    spec, path = volume[kind] or {}, f"spec.volumes[{index}].{kind}"
    namespace = pod["metadata"]["namespace"]
    try:
        default_mode = _mode(spec.get("defaultMode"), DEFAULT_MODE, f"{path}.defaultMode")
        if kind == "configMap":
            data = sources.data("configmaps", namespace, spec.get("name", ""), bool(spec.get("optional")))
            return object_payload(data, spec, path, default_mode, "configmap")
        if kind == "secret":
            data = sources.data("secrets", namespace, spec.get("secretName", ""), bool(spec.get("optional")))
            return object_payload(data, spec, path, default_mode, "secret")
        if kind == "downwardAPI":
            return downward_payload(pod, spec, path, default_mode, sources)
        return projected_payload(pod, spec, path, default_mode, sources)
    except (ObjectError, PayloadError) as error:
        raise MountError(volume["name"], str(error)) from None


def projected_payload(pod: dict, spec: dict, path: str, default_mode: int, sources: Sources) -> dict[str, File]:
    """Several sources in one directory: ConfigMaps, Secrets, the downward
    API and the pod's ServiceAccount token. Trust bundles (clusterTrustBundle)
    are refused: this API server serves none, and a pod that expects one
    must not start without it."""
    payload: dict[str, File] = {}
    namespace = pod["metadata"]["namespace"]
    for i, source in enumerate(spec.get("sources") or []):
        where = f"{path}.sources[{i}]"
        if "configMap" in source:
            ref = source["configMap"]
            data = sources.data("configmaps", namespace, ref.get("name", ""), bool(ref.get("optional")))
            payload.update(object_payload(data, ref, f"{where}.configMap", default_mode, "configmap"))
        elif "secret" in source:
            ref = source["secret"]
            data = sources.data("secrets", namespace, ref.get("name", ""), bool(ref.get("optional")))
            payload.update(object_payload(data, ref, f"{where}.secret", default_mode, "secret"))
        elif "downwardAPI" in source:
            payload.update(downward_payload(pod, source["downwardAPI"], f"{where}.downwardAPI", default_mode, sources))
        elif "serviceAccountToken" in source:
            payload.update(token_payload(pod, source["serviceAccountToken"], f"{where}.serviceAccountToken",
                                         default_mode, sources))
        else:
            kind = next(iter(source), "?")
            raise PayloadError(f"{where}.{kind}: not supported by this kubelet: its API server does not "
                               "serve trust bundles")
    return payload


# [START token-payload]
def token_payload(pod: dict, source: dict, path: str, default_mode: int, sources: Sources) -> dict[str, File]:
    """The pod's token as one file: for the source's audience (none: the
    API server's own), valid expirationSeconds (default an hour)."""
    seconds = source.get("expirationSeconds", 3600)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 600:
        raise PayloadError(f"{path}.expirationSeconds: Invalid value: {seconds!r}: may not specify a duration "
                           "less than 10 minutes")
    token = sources.tokens.get(pod, source.get("audience") or "", seconds)
    return {_checked(source.get("path", ""), f"{path}.path"): File(token, default_mode)}
# [END token-payload]


# --- the volumes on the node ----------------------------------------------

def is_tmpfs(path: str) -> bool:
    """Is path a tmpfs mount point (/proc/mounts says so)?"""
    try:
        with open("/proc/mounts") as mounts:
            return any(line.split()[1:3] == [path, "tmpfs"] for line in mounts)
    except OSError:
        return False


def memory_dir(node_name: str, memory_root: str = MEMORY_ROOT) -> str:
    """The node's directory on the tmpfs."""
    return os.path.join(memory_root, "groundup-kubelet", node_name)


class ApiVolumes:
    """The API-filled volumes of one node's pods: set up, refreshed, removed."""

    def __init__(self, node_name: str, root_dir: str, cache: ObjectCache, log, events, *,
                 allocatable: dict | None = None, memory_root: str = MEMORY_ROOT, tokens: TokenCache | None = None):
        self.cache, self.log, self.events = cache, log, events
        self.tokens = tokens or TokenCache(cache.client)
        self.allocatable = allocatable or {}
        self.disk_dir = os.path.join(root_dir, "pods")
        self.memory_dir = os.path.join(memory_dir(node_name, memory_root), "pods")
        self.memory_ok = is_tmpfs(memory_root)
        self._lock = threading.Lock()          # one writer per volume at a time
        self._failing: dict[tuple[str, str], str] = {}   # (uid, volume) -> last refresh error, told once
        # FailedMount is told at once, then again after 0.5 s, 1 s, 2 s ...
        # up to 2 min (the real volume manager's retry back-off), not at
        # every sync: the event's count grows, and the pod's other events
        # are not crowded out by the recorder's spam filter.
        self._told = Backoff(0.5, 122.0)
        self._told_at: dict[tuple[str, str], float] = {}

    def volume_dir(self, pod: dict, volume: dict) -> str:
        kind = kind_of(volume)
        base = self.memory_dir if kind in IN_MEMORY else self.disk_dir
        return os.path.join(base, pod["metadata"]["uid"], "volumes", PLUGIN_DIRS[kind], volume["name"])

    def ready(self, pod: dict) -> bool:
        """Set up the pod's volumes before its containers start; False (and
        a FailedMount event) if one cannot be: the pod waits, and the next
        sync tries again, so it starts as soon as the object is there."""
        if not api_volumes(pod):
            return True
        key = (pod["metadata"]["uid"], "")
        try:
            self.set_up(pod)
        except MountError as error:
            key = (pod["metadata"]["uid"], str(error))
            if not self._told.in_backoff_since(key, self._told_at.get(key, 0.0)):
                self._told.next(key)
                self._told_at[key] = time.monotonic()
                self.events.event(pod, "Warning", "FailedMount", str(error))
                self.log.warning("volume not set up", obj=cfg.pod_key(pod), error=str(error))
            return False
        self._told.forget_if(lambda k: k[0] == key[0])
        self._told_at = {k: t for k, t in self._told_at.items() if k[0] != key[0]}
        return True

    # [START volume-set-up]
    def set_up(self, pod: dict, fresh_since: float | None = None) -> None:
        """Write every API volume of the pod from fresh objects, or raise
        MountError for the first that cannot be (the pod then waits, in
        ContainerCreating, and is tried again at the next sync)."""
        sources = Sources(self.cache, fresh_since, self.allocatable, self.tokens)
        for index, volume in api_volumes(pod):
            if kind_of(volume) in IN_MEMORY and not self.memory_ok:
                raise MountError(volume["name"], f"{MEMORY_ROOT} is not a tmpfs: this kubelet writes "
                                                 "Secrets only to memory, never to a disk")
            payload = volume_payload(pod, index, volume, sources)
            target = self.volume_dir(pod, volume)
            with self._lock:
                self._private(target)
                if atomic_writer.write(target, payload) and fresh_since is not None:
                    self.log.info("volume updated", obj=cfg.pod_key(pod), volume=volume["name"])
    # [END volume-set-up]

    def _private(self, target: str) -> None:
        """The node's directory is the kubelet user's alone (0700): other
        users of the machine may not read a pod's Secrets."""
        for base in (self.disk_dir, self.memory_dir):
            if target.startswith(base + os.sep):
                node_dir = os.path.dirname(base)
                os.makedirs(node_dir, mode=0o700, exist_ok=True)
                os.chmod(node_dir, 0o700)

    def host_path(self, pod: dict, volume_name: str) -> str | None:
        """Where a volume of this module lives on the node (for the Docker
        bind mount), or None if it is not one of ours."""
        volume = next((v for v in pod["spec"].get("volumes") or [] if v.get("name") == volume_name), None)
        if volume is None or not any(k in volume for k in KINDS):
            return None
        return self.volume_dir(pod, volume)

    # --- keeping them up to date --------------------------------------------

    def start(self, period: float, stop: threading.Event, pods) -> "ApiVolumes":
        """The refresh thread: every period, rewrite each volume whose
        source changed. pods() is the kubelet's uid -> pod as of its last sync."""
        def run():
            while not stop.wait(period):
                started = time.monotonic()
                for pod in pods().values():
                    if api_volumes(pod):
                        self._refresh_pod(pod, started)
                self.cache.forget_before(started)    # objects no pod asked for this round
        threading.Thread(target=run, daemon=True, name="volume-refresh").start()
        return self

    def _refresh_pod(self, pod: dict, round_started: float) -> None:
        """Only volumes already set up (the pod started) are refreshed; a
        source that fails keeps the last good files, as in Kubernetes."""
        uid, key = pod["metadata"]["uid"], cfg.pod_key(pod)
        if not any(os.path.isdir(self.volume_dir(pod, v)) for _, v in api_volumes(pod)):
            return
        try:
            self.set_up(pod, fresh_since=round_started)
            self._failing = {k: v for k, v in self._failing.items() if k[0] != uid}
        except MountError as error:
            if self._failing.get((uid, error.volume)) != str(error):
                self._failing[(uid, error.volume)] = str(error)
                self.log.warning("volume not refreshed; it keeps its last contents", obj=key, error=str(error))
        except OSError as error:
            self.log.error("volume not refreshed", obj=key, error=f"{type(error).__name__}: {error}")

    # --- removing them --------------------------------------------------------

    def remove(self, unwanted) -> list[str]:
        """Remove the volumes of every pod uid for which unwanted(uid) is
        true; returns the uids removed."""
        removed = []
        with self._lock:
            for base in (self.disk_dir, self.memory_dir):
                for uid in (os.listdir(base) if os.path.isdir(base) else []):
                    if unwanted(uid):
                        shutil.rmtree(os.path.join(base, uid), ignore_errors=True)
                        removed.append(uid)
        self.tokens.forget(unwanted)          # a pod's tokens go with its volumes
        return removed


def install(kubelet, client, root_dir: str, sync_frequency: float) -> None:
    """Give a kubelet that joins a cluster ConfigMaps and Secrets, for its
    pods' variables and volumes, downward API and token volumes, and the
    thread that keeps them up to date (kubelet.py calls this)."""
    cache = ObjectCache(client)
    worker = kubelet.worker
    worker.env_api = EnvResolver(cache, lambda pod, reason, message: kubelet.events.event(pod, "Warning", reason,
                                                                                             message))
    worker.volumes = ApiVolumes(kubelet.node_name, root_dir, cache, kubelet.log, kubelet.events,
                                allocatable=worker.allocatable)
    kubelet.runtime.api_volume_path = worker.volumes.host_path
    worker.volumes.start(sync_frequency, kubelet.stopping, kubelet.pods_now)
