"""ConfigMaps, Secrets and tokens: what the kubelet fetches from the API server for a pod.

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

ServiceAccount tokens (TokenCache, at the end) are not fetched but asked
for: a TokenRequest per pod, bound to it, renewed before it expires.

Missing objects read as Kubernetes reads them: `configmap "x" not found`,
`secret "x" not found`. The messages never contain a Secret's data.
"""
from __future__ import annotations

import base64
import calendar
import threading
import time
from typing import Callable

import pod_config as cfg

from common.client.client import APIClient, APIConnectionError, APIStatusError, NotFound
from common.model.names import is_env_var_name

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


# --- ServiceAccount tokens for projected volumes ---------------------------

class TokenError(ObjectError):
    """No token could be had; the message is FailedMount's (never the token)."""


# [START token-cache]
class TokenCache:
    """A pod's ServiceAccount token, from TokenRequest, bound to the pod.

    Tokens expire, so the kubelet asks for a new one before that: when 80%
    of its lifetime has passed, or it is a day old, as Kubernetes' token
    manager does (pkg/kubelet/token/token_manager.go). Until then every
    refresh round gets the same token, and the volume's file stays as it
    is. A pod that goes takes its tokens with it (forget)."""

    MAX_AGE = 24 * 3600

    def __init__(self, client: APIClient | None, clock: Callable[[], float] = time.time):
        self.client, self.clock = client, clock
        self.requests = 0                 # TokenRequests made, for the tests
        self._tokens: dict[tuple, tuple[float, float, str]] = {}   # key -> (issued, expires, token)
        self._lock = threading.Lock()

    def get(self, pod: dict, audience: str, seconds: int) -> bytes:
        meta = pod["metadata"]
        account = pod["spec"].get("serviceAccountName") or "default"
        key = (meta["uid"], account, audience, seconds)
        with self._lock:
            issued, expires, token = self._tokens.get(key, (0.0, 0.0, ""))
        if not token or self.needs_refresh(issued, expires):
            issued, expires, token = self._request(pod, account, audience, seconds)
            with self._lock:
                self._tokens[key] = (issued, expires, token)
        return token.encode()

    def needs_refresh(self, issued: float, expires: float) -> bool:
        now = self.clock()
        return now >= issued + 0.8 * (expires - issued) or now >= issued + self.MAX_AGE
    # [END token-cache]

    def _request(self, pod: dict, account: str, audience: str, seconds: int) -> tuple[float, float, str]:
        meta = pod["metadata"]
        if self.client is None:
            raise TokenError("failed to fetch token: this kubelet has no API server")
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": [audience] if audience else [], "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}}
        self.requests += 1
        try:
            answer = self.client.create_subresource("v1", "serviceaccounts", meta["namespace"], account, "token", body)
        except (APIConnectionError, APIStatusError) as error:
            raise TokenError(f"failed to fetch token: {error}") from None
        # The token's own times: the server's clock said when it expires,
        # and the lifetime is what was granted; issued is counted back from it.
        expires = _epoch(answer["status"]["expirationTimestamp"])
        granted = answer["spec"].get("expirationSeconds") or seconds
        return expires - granted, expires, answer["status"]["token"]

    def forget(self, unwanted) -> None:
        """Drop the tokens of every pod uid for which unwanted(uid) is true."""
        with self._lock:
            self._tokens = {key: value for key, value in self._tokens.items() if not unwanted(key[0])}


def _epoch(timestamp: str) -> float:
    return calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))
