"""persistentVolumeClaim volumes: a pod's claim, followed to the directory on this node.

A pod names a claim (`persistentVolumeClaim: {claimName: data}`); the claim,
once bound, names a PersistentVolume; the volume says where the data is.
This kubelet mounts two kinds of volume, the ones a node can serve by itself:

    hostPath  a directory on the node (the local-path provisioner's, chapter 04):
              made on first mount if its type is DirectoryOrCreate
    local     a disk or directory an administrator prepared: it must exist

Before a pod's containers start, `ready(pod)` follows each claim through
the API server. While a claim is not bound, or its volume is pinned to
another node, the pod waits in ContainerCreating with a FailedMount event
saying why; it never mounts a directory of the same name on the wrong
node, which would give it an empty volume and split its data in two.

The data outlives the pod: removing a pod removes its containers, never a
persistent volume's directory. The directory goes only when its
PersistentVolume does: this module's clean-up thread removes a directory
under --local-path-root whose PersistentVolume no longer exists (the
provisioner deleted it, under reclaimPolicy Delete) and that no pod here
uses. The node does it because only the node can reach its disk; doing it
by looking at what exists, not at a deletion event, means a kubelet that
was down when the volume went still cleans up when it comes back.

It removes only directories it made itself, as its own record says (a
file per volume in the kubelet's --root-dir): the root is a directory of
the machine, and another cluster's kubelet on it (another API server, to
which this volume is unknown, a 404) must never take it for deleted.
"""
from __future__ import annotations

import os
import shutil
import threading

from common.client.client import APIConnectionError, APIStatusError, NotFound
from common.model.lenient import as_dict, as_str, dig
from common.model.persistent_volumes import HOSTNAME_LABEL, NodeView, volume_allows_node

SUPPORTED = ("hostPath", "local")


class ClaimNotReady(Exception):
    """A claim volume cannot be mounted yet; the message is the FailedMount event's."""


def claim_volumes(pod: dict) -> list[dict]:
    return [v for v in (pod.get("spec") or {}).get("volumes") or []
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)]


class ClaimVolumes:
    def __init__(self, client, node_name: str, events, log, local_path_root: str, records: str,
                 mounted=lambda: set()):
        self.client, self.node_name, self.events, self.log = client, node_name, events, log
        self.local_path_root = local_path_root
        self.records = records          # a file per directory this kubelet made: name = the PV's, text = the path
        self.mounted = mounted          # () -> the host paths this node's containers have mounted now
        self._paths: dict[tuple[str, str], tuple[str, bool]] = {}   # (pod uid, volume) -> (host path, read-only)
        self._told: dict[tuple[str, str], str] = {}                 # last event per (pod uid, volume)
        self._lock = threading.Lock()

    # [START claim-volume-ready]
    def ready(self, pod: dict) -> bool:
        """Follow every claim volume of the pod to its directory on this
        node; False (and a FailedMount event) while one cannot be mounted."""
        uid = pod["metadata"]["uid"]
        for volume in claim_volumes(pod):
            key = (uid, volume["name"])
            try:
                path, read_only = self.resolve(pod, volume)
            except ClaimNotReady as why:
                if self._told.get(key) != str(why):         # once per new reason, not every sync
                    self._told[key] = str(why)
                    self.events.event(pod, "Warning", "FailedMount", str(why))
                    self.log.info("waiting for a volume", obj=_pod_key(pod), volume=volume["name"], why=str(why))
                return False
            except (APIConnectionError, APIStatusError) as error:
                self.log.info("cannot read a claim; will retry", obj=_pod_key(pod), error=str(error))
                return False
            with self._lock:
                self._paths[key] = (path, read_only)
            self._told.pop(key, None)
        return True
    # [END claim-volume-ready]

    def resolve(self, pod: dict, volume: dict) -> tuple[str, bool]:
        """(host path, read-only) of one claim volume, or ClaimNotReady."""
        namespace, source = pod["metadata"]["namespace"], volume["persistentVolumeClaim"]
        name = as_str(source.get("claimName"))
        where = f"{namespace}/{name}"
        try:
            claim = self.client.get("v1", "persistentvolumeclaims", namespace, name)
        except NotFound:
            raise ClaimNotReady(f'persistentvolumeclaim "{name}" not found') from None
        if claim["metadata"].get("deletionTimestamp"):
            raise ClaimNotReady(f'error processing PVC {where}: PVC is being deleted')
        volume_name = dig(claim, "spec", "volumeName")
        if not volume_name or dig(claim, "status", "phase") != "Bound":
            raise ClaimNotReady(f"error processing PVC {where}: PVC is not bound")
        try:
            pv = self.client.get("v1", "persistentvolumes", None, volume_name)
        except NotFound:
            raise ClaimNotReady(f'error processing PVC {where}: failed to fetch PV "{volume_name}" from API server: '
                                f'persistentvolumes "{volume_name}" not found') from None
        if not volume_allows_node(pv, self.node_view()):
            raise ClaimNotReady(f'MountVolume.NodeAffinity check failed for volume "{volume_name}" : '
                                f"no matching NodeSelectorTerms (node {self.node_name})")
        kind = next((k for k in SUPPORTED if isinstance(dig(pv, "spec", k), dict)), None)
        if kind is None:
            found = next((k for k in as_dict(pv.get("spec")) if isinstance(pv["spec"][k], dict)
                          and k not in ("capacity", "claimRef", "nodeAffinity")), "?")
            raise ClaimNotReady(f'MountVolume.SetUp failed for volume "{volume_name}" : volume type {found} is '
                                "not supported by this kubelet (hostPath and local are)")
        path = as_str(pv["spec"][kind].get("path"))
        if kind == "hostPath" and pv["spec"]["hostPath"].get("type") == "DirectoryOrCreate":
            try:
                self._record(volume_name, path)                # before it exists: never one unrecorded
                os.makedirs(path, mode=0o777, exist_ok=True)   # any container user may write, as emptyDir
                os.chmod(path, 0o777)
            except OSError as error:
                raise ClaimNotReady(f'MountVolume.SetUp failed for volume "{volume_name}" : {error}') from None
        elif not os.path.isdir(path):
            raise ClaimNotReady(f'MountVolume.SetUp failed for volume "{volume_name}" : '
                                f'path "{path}" does not exist')
        return path, bool(source.get("readOnly"))

    def node_view(self) -> NodeView:
        """This node's name and labels (nodeAffinity may name any label)."""
        try:
            return NodeView.of(self.client.get("v1", "nodes", None, self.node_name))
        except (APIConnectionError, APIStatusError):
            return NodeView(self.node_name, {HOSTNAME_LABEL: self.node_name})

    def host_path(self, pod: dict, volume: dict) -> tuple[str, bool] | None:
        """Where a claim volume ready() resolved is on this node (for Docker's bind mount)."""
        with self._lock:
            return self._paths.get((pod["metadata"]["uid"], volume["name"]))

    def forget(self, unwanted) -> None:
        with self._lock:
            self._paths = {k: v for k, v in self._paths.items() if not unwanted(k[0])}
        self._told = {k: v for k, v in self._told.items() if not unwanted(k[0])}

    # [START remove-deleted-volumes]
    def remove_deleted(self) -> list[str]:
        """Remove the directories this kubelet made under --local-path-root
        whose PersistentVolume is gone (asked of the API server: a 404,
        nothing less) and which no pod on this node uses. Returns what was removed."""
        if not os.path.isdir(self.records):
            return []
        with self._lock:
            in_use = {path for path, _ in self._paths.values()}
        in_use |= self.mounted()          # a container from before a kubelet restart counts too
        removed = []
        for name in sorted(os.listdir(self.records)):
            path = _read(os.path.join(self.records, name))
            if path in in_use or not self._under_root(path):
                continue
            try:
                self.client.get("v1", "persistentvolumes", None, name)
                continue                          # still there: its data is someone's
            except NotFound:
                pass
            except (APIConnectionError, APIStatusError):
                continue                          # cannot tell: keep it
            shutil.rmtree(path, ignore_errors=True)
            os.unlink(os.path.join(self.records, name))
            self.log.info("removed the directory of a deleted volume", obj=name, path=path)
            removed.append(path)
        return removed
    # [END remove-deleted-volumes]

    def _record(self, volume_name: str, path: str) -> None:
        """Remember that this kubelet made the volume's directory (only under the provisioner's root)."""
        if not self._under_root(path) or os.path.sep in volume_name:
            return
        record = os.path.join(self.records, volume_name)
        if not os.path.exists(record):
            os.makedirs(self.records, exist_ok=True)
            with open(record, "w") as f:
                f.write(path)

    def _under_root(self, path: str) -> bool:
        root = os.path.realpath(self.local_path_root)
        return os.path.dirname(os.path.realpath(path)) == root

    def start(self, period: float, stop: threading.Event) -> "ClaimVolumes":
        def run():
            while not stop.wait(period):
                try:
                    self.remove_deleted()
                except OSError as error:
                    self.log.warning("cannot clean up deleted volumes", error=str(error))
        threading.Thread(target=run, daemon=True, name="volume-cleanup").start()
        return self


def _pod_key(pod: dict) -> str:
    return f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')}"


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def install(kubelet, client, local_path_root: str, root_dir: str, cleanup_period: float = 10.0) -> ClaimVolumes:
    """Give a kubelet that joins a cluster its pods' claims (kubelet.py calls this)."""
    claims = ClaimVolumes(client, kubelet.node_name, kubelet.events, kubelet.log, local_path_root,
                          os.path.join(root_dir, "local-volumes"), mounted=kubelet.runtime.mounted_host_paths)
    kubelet.worker.claims = claims
    kubelet.runtime.claim_volume_path = claims.host_path
    return claims.start(cleanup_period, kubelet.stopping)
