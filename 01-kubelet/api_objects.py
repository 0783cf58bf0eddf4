"""ConfigMaps and Secrets: what the kubelet fetches from the API server for a pod.

A pod may take its configuration from other objects: environment variables
from a ConfigMap's keys (`configMapKeyRef`, `envFrom`), files from a
Secret (a volume). The kubelet reads those objects when it starts the
containers, and again while they run, to keep the volumes up to date.

How to fetch them? Kubernetes 1.32 has two answers (the kubelet's
configMapAndSecretChangeDetectionStrategy):

- "Watch", its default: one watch per referenced object, so a change
  reaches the node within a second, and an idle node costs no requests;
- "Cache", the older one: a GET of the object when it is needed, kept for
  a short time (the node's TTL) and fetched again after that.

We use "Cache": a GET per object, cached for one refresh round. Why:

1. It is the kubelet's own loop again: every sync period it compares what
   the volume holds with what the object says and closes the gap. No
   watches to open, count, close and re-open when pods come and go.
2. It asks only for named objects (GET configmaps/x), never for a list or a
   watch of a namespace. That is exactly what a Node authorizer allows (a
   kubelet may read the objects its own pods reference, issue 27), and a
   learner can read each request in the API server's log.
3. The price: one GET per referenced object per sync period (1 s by
   default) while its pods run, where a watch costs nothing when idle.
   For a handful of pods per node that is a few requests a second, which
   the API server serves from memory. A node with hundreds of such pods
   would want the watch.

Missing objects read as Kubernetes reads them: `configmap "x" not found`,
`secret "x" not found`. The messages never contain a Secret's data.
"""
from __future__ import annotations

import base64
import threading
import time
from typing import Callable

import pod_config as cfg

from common.client import APIClient, APIConnectionError, APIStatusError, NotFound
from common.names import is_env_var_name

KINDS = {"configmaps": "configmap", "secrets": "secret"}   # plural -> how the kubelet's messages name it


class ObjectError(cfg.ConfigError):
    """The object cannot be had: missing, or the API server did not say.
    For a container's variables, that is CreateContainerConfigError."""


class ObjectNotFound(ObjectError):
    pass


# [START object-cache]
class ObjectCache:
    """GET a ConfigMap or Secret by name, remembering each answer (also
    "not found") with when it was fetched. A caller says how fresh an
    answer must be: the refresh round asks for "fetched since this round
    began", so pods sharing an object cost one GET per round; a pod
    about to start asks for "fetched now", as the real kubelet does when a
    pod is added (its cache forgets the objects a new pod references)."""

    def __init__(self, client: APIClient | None):
        self.client = client              # None: a kubelet without an API server
        self.gets = 0                     # requests made, for the tests and benchmarks
        self._answers: dict[tuple[str, str, str], tuple[float, dict | None]] = {}
        self._lock = threading.Lock()

    def get(self, plural: str, namespace: str, name: str, fresh_since: float | None = None) -> dict:
        """The object's data (`data`, and `binaryData` for a ConfigMap) or
        ObjectNotFound; fresh_since: a time.monotonic() the answer must
        not be older than (None: now)."""
        key = (plural, namespace, name)
        with self._lock:
            fetched, obj = self._answers.get(key, (-1.0, None))
        if fresh_since is None or fetched < fresh_since:
            fetched, obj = time.monotonic(), self._fetch(plural, namespace, name)
            with self._lock:
                self._answers[key] = (fetched, obj)
        if obj is None:
            raise ObjectNotFound(f'{KINDS[plural]} "{name}" not found')
        return obj
    # [END object-cache]

    def _fetch(self, plural: str, namespace: str, name: str) -> dict | None:
        if self.client is None:
            raise ObjectError(f"couldn't get {KINDS[plural]} {namespace}/{name}: this kubelet has no API server")
        self.gets += 1
        try:
            return self.client.get("v1", plural, namespace, name)
        except NotFound:
            return None
        except (APIConnectionError, APIStatusError) as error:
            # The error names the object and the server's reason, not its data.
            raise ObjectError(f"couldn't get {KINDS[plural]} {namespace}/{name}: {error}") from None

    def forget_before(self, moment: float) -> None:
        """Drop the answers fetched before moment (a time.monotonic()): the
        objects no pod has asked for since (and a Secret's data with them)."""
        with self._lock:
            self._answers = {key: answer for key, answer in self._answers.items() if answer[0] >= moment}


def config_map_data(obj: dict) -> dict[str, bytes]:
    """A ConfigMap's files: data (text) and binaryData (base64 on the wire)."""
    files = {key: value.encode() for key, value in (obj.get("data") or {}).items()}
    files.update({key: base64.b64decode(value) for key, value in (obj.get("binaryData") or {}).items()})
    return files


def secret_data(obj: dict) -> dict[str, bytes]:
    """A Secret's files: data is base64 on the wire (stringData is folded
    into data by the API server when the Secret is written)."""
    return {key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()}


DATA_OF = {"configmaps": config_map_data, "secrets": secret_data}


# --- environment variables from ConfigMaps and Secrets --------------------

class EnvResolver:
    """What container_env (pod_config.py) asks of the API: one variable
    (configMapKeyRef, secretKeyRef) or many (envFrom). `warn(pod, reason,
    message)` records a Warning event on the pod."""

    def __init__(self, cache: ObjectCache, warn: Callable[[dict, str, str], None]):
        self.cache = cache
        self.warn = warn

    def key_ref(self, pod: dict, kind: str, ref: dict) -> str | None:
        """configMapKeyRef / secretKeyRef: the key's value; None when the
        variable is to be left out (optional, and the object or key missing)."""
        plural = "configmaps" if kind == "configMapKeyRef" else "secrets"
        namespace, name, key = pod["metadata"]["namespace"], ref.get("name", ""), ref.get("key", "")
        optional = bool(ref.get("optional"))
        try:
            data = DATA_OF[plural](self.cache.get(plural, namespace, name))
        except ObjectNotFound:
            if optional:
                return None
            raise
        if key not in data:
            if optional:
                return None
            raise ObjectNotFound(f"couldn't find key {key} in {'ConfigMap' if plural == 'configmaps' else 'Secret'} "
                                 f"{namespace}/{name}")
        return data[key].decode(errors="replace")

    # [START env-from-api]
    def env_from(self, pod: dict, container: dict) -> dict[str, str]:
        """envFrom: every key of each ConfigMap or Secret, with its prefix.
        A key that cannot name a variable is skipped and told as an event
        (InvalidEnvironmentVariableNames), as the kubelet does."""
        env: dict[str, str] = {}
        namespace = pod["metadata"]["namespace"]
        for source in container.get("envFrom") or []:
            which = "configMapRef" if "configMapRef" in source else "secretRef"
            plural, ref = ("configmaps" if which == "configMapRef" else "secrets"), source[which]
            try:
                data = DATA_OF[plural](self.cache.get(plural, namespace, ref.get("name", "")))
            except ObjectNotFound:
                if ref.get("optional"):
                    continue
                raise
            prefix = source.get("prefix") or ""
            invalid = sorted(prefix + key for key in data if is_env_var_name(prefix + key))
            env.update({prefix + key: value.decode(errors="replace") for key, value in data.items()
                        if prefix + key not in invalid})
            if invalid:
                self.warn(pod, "InvalidEnvironmentVariableNames",
                          f"Keys [{', '.join(invalid)}] from the EnvFrom {'configMap' if plural == 'configmaps' else 'secret'} "
                          f"{namespace}/{ref.get('name', '')} were skipped since they are considered invalid "
                          "environment variable names.")
        return env
    # [END env-from-api]
