"""Desired pods from a directory of manifests: the kubelet's "static pods".

Every sync the directory is scanned; a file is read again only when its
size, mtime or inode changed. A file that does not parse, or holds an
invalid Pod, is reported once per change (file, line, field path, reason)
and skipped: the other pods are not affected.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

import pod_fields
from common.model.defaults import apply_pod_defaults
from common.log import EventLogger
from common.model.manifests import ManifestError, load_manifests
from common.model.validation import validate_pod

SUFFIXES = (".yaml", ".yml", ".json")
# Static pods get a stable uid derived from node, namespace and name, so an
# edited manifest updates the same pod (the changed containers are replaced).
UID_NAMESPACE = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")


@dataclass
class _File:
    signature: tuple
    pods: list[dict] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)   # pod key -> line


def unsupported(pod: dict) -> list[str]:
    """Valid Kubernetes this kubelet cannot honour (pod_fields.py): a pod
    using it is refused rather than run differently from what it asks (an
    ignored startupProbe would let the liveness probe kill a slow starter;
    an ignored preStop hook would skip the graceful shutdown it describes)."""
    return pod_fields.refused(pod)


def api_references(pod: dict) -> list[str]:
    """The field paths by which a pod reads ConfigMaps or Secrets (or asks
    for a ServiceAccount token). A static pod may not: the kubelet runs it
    with no API server to ask, and Kubernetes refuses them too."""
    found = []
    for i, volume in enumerate(pod["spec"].get("volumes") or []):
        for kind in ("configMap", "secret"):
            if kind in volume:
                found.append(f"spec.volumes[{i}].{kind}")
        for j, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            found += [f"spec.volumes[{i}].projected.sources[{j}].{kind}" for kind in source if kind != "downwardAPI"]
    containers = [(f"spec.{field}[{i}]", c) for field in ("initContainers", "containers")
                  for i, c in enumerate(pod["spec"].get(field) or [])]
    for where, container in containers:
        found += [f"{where}.envFrom[{j}]" for j, _ in enumerate(container.get("envFrom") or [])]
        for j, var in enumerate(container.get("env") or []):
            found += [f"{where}.env[{j}].valueFrom.{kind}" for kind in (var.get("valueFrom") or {})
                      if kind in ("configMapKeyRef", "secretKeyRef")]
    return found


class FileSource:
    """Pods from --manifests DIR (the real kubelet's --pod-manifest-path, a flag
    it deprecates in favour of staticPodPath in its configuration file)."""

    def __init__(self, directory: str, node_name: str, log: EventLogger, name_suffix: bool = False):
        self.directory = directory
        self.node_name = node_name
        self.log = log
        self.name_suffix = name_suffix        # in a cluster: <name>-<node name>, see apiserver_join/mirror_pods.py
        self._files: dict[str, _File] = {}
        self._reported_duplicates: set[str] = set()

    def has_synced(self) -> bool:
        return True           # the directory is read afresh at every pods()

    def pods(self) -> dict[str, dict]:
        """uid -> pod, for every valid pod in the directory."""
        present = self._scan()
        for path in [p for p in self._files if p not in present]:
            del self._files[path]
            self.log.info("manifest removed", obj=os.path.basename(path))
        for path, signature in present.items():
            known = self._files.get(path)
            if known is None or known.signature != signature:
                self._files[path] = self._read(path, signature)
        return self._merge()

    def _scan(self) -> dict[str, tuple]:
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return {}
        present = {}
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(SUFFIXES):
                continue
            try:
                stat = entry.stat()
            except FileNotFoundError:
                continue  # removed while scanning
            if entry.is_file():
                present[entry.path] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        return present

    def _read(self, path: str, signature: tuple) -> _File:
        result = _File(signature)
        try:
            manifests = load_manifests(path)
        except ManifestError as error:
            where = f"{error.filename}:{error.line}" if error.line else error.filename
            self.log.error(f"manifest skipped: {error.message}", obj=where)
            return result
        for manifest in manifests:
            obj = manifest.obj
            where = f"{manifest.filename}:{manifest.line}"
            if obj.get("kind") != "Pod" or obj.get("apiVersion") != "v1":
                self.log.error(f"manifest skipped: kind {obj.get('kind')!r} (apiVersion {obj.get('apiVersion')!r}) "
                               "is not a v1 Pod; a kubelet runs only Pods", obj=where)
                continue
            pod = apply_pod_defaults(obj)
            errors = validate_pod(pod)
            missing = [] if errors else unsupported(pod)
            if missing:
                self.log.error(f"manifest skipped: {missing[0]}: this kubelet does not support it yet; "
                               "running the pod without it would not be what it asks", obj=where)
                continue
            from_api = [] if errors else api_references(pod)
            if from_api:
                self.log.error(f"manifest skipped: {from_api[0]}: a static pod cannot use ConfigMaps or Secrets: "
                               "the kubelet runs it without asking the API server (Kubernetes refuses this too)",
                               obj=where)
                continue
            if errors:
                for error in errors:
                    self.log.error(f"manifest skipped: {error}", obj=f"{manifest.filename}:{manifest.line_of(error.path)}")
                continue
            self._complete(pod)
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            result.pods.append(pod)
            result.lines[key] = manifest.line
            self.log.info("manifest read", obj=key, file=where)
        return result

    def _complete(self, pod: dict) -> None:
        """What the kubelet adds to a static pod: a uid, its node, its source."""
        meta = pod["metadata"]
        if self.name_suffix:
            meta["name"] = f"{meta['name']}-{self.node_name}"
        if not meta.get("uid"):
            meta["uid"] = str(uuid.uuid5(UID_NAMESPACE, f"{self.node_name}/{meta['namespace']}/{meta['name']}"))
        pod["spec"]["nodeName"] = self.node_name
        meta.setdefault("annotations", {})["kubernetes.io/config.source"] = "file"

    def _merge(self) -> dict[str, dict]:
        """One pod per namespace/name: the first file (in name order) wins."""
        pods: dict[str, dict] = {}
        owners: dict[str, str] = {}
        duplicates = set()
        for path in sorted(self._files):
            for pod in self._files[path].pods:
                key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                if key in owners:
                    line = self._files[path].lines.get(key, 1)
                    duplicates.add(f"{path}:{line}: pod {key} is already defined in {owners[key]}")
                    continue
                owners[key] = path
                pods[pod["metadata"]["uid"]] = pod
        for message in sorted(duplicates - self._reported_duplicates):
            self.log.error(f"manifest skipped: {message}")
        self._reported_duplicates = duplicates
        return pods
