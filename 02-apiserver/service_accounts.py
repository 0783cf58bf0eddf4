"""ServiceAccounts: who a pod is when it talks to the API server.

People sign in with the token file; a program in a pod signs in as its
ServiceAccount, with a token the API server signs (sa_tokens.py). Three
things make that work without the pod's author lifting a finger, as in
Kubernetes:

1. Every namespace has a ServiceAccount named `default`, and a ConfigMap
   `kube-root-ca.crt` holding the CA that the API server's certificate
   chains to, so a pod can check it is talking to the real server. In
   Kubernetes two controllers of the controller manager make them (the
   serviceaccount controller and root-ca-cert-publisher; ours are in
   04-controllers/serviceaccounts.py). With NoControllerManager (chapters
   02-03: no controller manager runs yet) this server makes them itself,
   when a namespace is created, at start-up, and again if one is deleted.
2. The ServiceAccount admission plugin (`admit`, below): a pod that names
   no account gets `default`; one naming an account that does not exist is
   refused; and, unless automountServiceAccountToken says false, every
   container gets the projected volume `kube-api-access-xxxxx` at
   /var/run/secrets/kubernetes.io/serviceaccount: a token, the CA, and the
   namespace.
3. The kubelet fills that volume in (01-kubelet/api_volumes/volumes.py), asking
   for the token with a TokenRequest (token_request.py).

One difference: this server adds the volume only when it can sign tokens
(--service-account-signing-key-file). Chapters 01-02 run it without keys,
and their pods should not wait for a token no one can make.

Names, paths and messages are Kubernetes 1.32's
(plugin/pkg/admission/serviceaccount/admission.go,
pkg/controller/certificates/rootcacertpublisher/publisher.go).
"""
from __future__ import annotations

import random
import threading

import api_errors
import objects
import registry
from common.model.defaults import apply_defaults
from node_authorizer import referenced

SERVICE_ACCOUNTS = registry.for_kind("", "ServiceAccount")
CONFIG_MAPS = registry.for_kind("", "ConfigMap")
NAMESPACES = registry.for_kind("", "Namespace")
DEFAULT_ACCOUNT = "default"
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
# An hour and 7 seconds: the odd 7 lets the API server tell the tokens this
# plugin asked for from all others (Kubernetes' WarnOnlyBoundTokenExpirationSeconds).
TOKEN_SECONDS = 3607
MIRROR = "kubernetes.io/config.mirror"
# The letters Kubernetes' random name suffixes use (no vowels: no words).
_SUFFIX_LETTERS = "bcdfghjklmnpqrstvwxz2456789"


# [START sa-token-volume]
def token_volume(name: str) -> dict:
    """The projected volume every pod gets: a token bound to the pod, the
    cluster's CA, and the pod's namespace, each a file."""
    return {"name": name, "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": ROOT_CA_KEY, "path": ROOT_CA_KEY}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}
# [END sa-token-volume]


def _forbidden(info, obj: dict, why: str) -> api_errors.APIError:
    """Kubernetes' admission.NewForbidden: `pods "web" is forbidden: why`."""
    name = obj["metadata"].get("name", "")
    return api_errors.APIError(403, "Forbidden", f'{info.resource} "{name}" is forbidden: {why}',
                               {"name": name, "kind": info.resource.plural})


# [START sa-admit]
def admit(server, obj: dict, old: dict | None, info, operation: str) -> None:
    """The ServiceAccount admission plugin, on a pod's CREATE."""
    if info.resource.kind != "Pod" or info.resource.group or operation != "CREATE" or info.subresource:
        return
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
    if spec is None:
        return                                   # validation reports it
    if MIRROR in (obj["metadata"].get("annotations") or {}):
        return _check_mirror_pod(info, obj, spec)   # the kubelet's copy of a static pod: left as it is
    # serviceAccount is the old name of the field; Kubernetes keeps the two equal.
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_ACCOUNT
    spec["serviceAccountName"] = spec["serviceAccount"] = name
    account = _get_account(server, info.namespace, name)
    if account is None:
        raise _forbidden(info, obj, f"error looking up service account {info.namespace}/{name}: "
                                    f'serviceaccount "{name}" not found')
    if server.token_issuer is not None and _automount(spec, account):
        mount_token(spec)
# [END sa-admit]


def _automount(spec: dict, account: dict) -> bool:
    """The pod's automountServiceAccountToken wins, then the account's; default yes."""
    for holder in (spec, account):
        if isinstance(holder.get("automountServiceAccountToken"), bool):
            return holder["automountServiceAccountToken"]
    return True


def mount_token(spec: dict) -> None:
    """Mount the token volume in every container that has nothing at the
    path yet (init containers too); add the volume if any container does."""
    volumes = spec.setdefault("volumes", []) if isinstance(spec.get("volumes", []), list) else None
    if volumes is None:
        return                                   # validation reports it
    existing = next((v.get("name") for v in volumes if isinstance(v, dict)
                     and str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = existing or VOLUME_PREFIX + "".join(random.choice(_SUFFIX_LETTERS) for _ in range(5))
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict) or not isinstance(container.get("volumeMounts", []), list):
                continue
            mounts = container.setdefault("volumeMounts", [])
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue                         # the author put something there: theirs wins
            mounts.append({"name": name, "readOnly": True, "mountPath": MOUNT_PATH})
            needed = True
    if needed and existing is None:
        volumes.append(token_volume(name))


def _check_mirror_pod(info, obj: dict, spec: dict) -> None:
    """A static pod runs with no API server to ask: it may not use a
    ServiceAccount, its token, nor a Secret (its kubelet could then read
    that Secret through the Node authorizer, whoever wrote the manifest)."""
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        raise _forbidden(info, obj, "a mirror pod may not reference service accounts")
    if referenced(obj, "secret"):
        raise _forbidden(info, obj, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        sources = ((volume or {}).get("projected") or {}).get("sources") or []
        if any(isinstance(s, dict) and "serviceAccountToken" in s for s in sources):
            raise _forbidden(info, obj, "a mirror pod may not use ServiceAccountToken volume projections")


def _get_account(server, namespace: str, name: str) -> dict | None:
    """The account; `default` is waited for a moment, as Kubernetes does:
    a controller may be about to make it in a namespace just created."""
    attempts = 10 if name == DEFAULT_ACCOUNT else 1
    for attempt in range(attempts):
        account = server.store.get(SERVICE_ACCOUNTS, namespace, name)
        if account is not None or attempt == attempts - 1:
            return account
        threading.Event().wait(0.1)
    return None


# ----- NoControllerManager: the server makes each namespace's defaults -----

def default_objects(namespace: str, root_ca: str | None) -> list[tuple[object, dict]]:
    """(resource, object) a namespace should hold: the `default`
    ServiceAccount, and kube-root-ca.crt when the CA is known."""
    wanted = [(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                  "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}})]
    if root_ca:
        wanted.append((CONFIG_MAPS, root_ca_config_map(namespace, root_ca)))
    return wanted


def root_ca_config_map(namespace: str, root_ca: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                         "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
            "data": {ROOT_CA_KEY: root_ca}}


def ensure_namespace_defaults(server, namespace: str) -> None:
    """Create what is missing in a live namespace, and bring an out-of-date
    CA up to date. Only when no controller manager runs to do it."""
    if "NoControllerManager" not in server.admission_plugins:
        return
    ns = server.store.get(NAMESPACES, "", namespace)
    if ns is None or ns["metadata"].get("deletionTimestamp"):
        return                                   # gone or going: nothing new in it
    for resource, wanted in default_objects(namespace, server.root_ca):
        current = server.store.get(resource, namespace, wanted["metadata"]["name"])
        try:
            if current is None:
                objects.prepare_for_create(wanted, resource)
                server.store.create(resource, apply_defaults("", wanted["kind"], wanted))
            elif resource is CONFIG_MAPS and current.get("data") != wanted["data"]:
                server.store.update(resource, namespace, ROOT_CA_CONFIG_MAP, lambda cm: {
                    **cm, "data": wanted["data"],
                    "metadata": {k: v for k, v in cm["metadata"].items() if k != "resourceVersion"}})
        except api_errors.APIError:
            pass                                 # made or changed meanwhile: fine either way


def ensure_all_namespaces(server) -> None:
    """At start-up: namespaces made before this server knew to, or while it was down."""
    for namespace in server.store.list(NAMESPACES)[0]:
        ensure_namespace_defaults(server, namespace["metadata"]["name"])


def after_delete(server, resource, obj: dict) -> None:
    """A deleted `default` account or CA ConfigMap comes back, unless its namespace is going."""
    name = obj["metadata"]["name"]
    if (resource is SERVICE_ACCOUNTS and name == DEFAULT_ACCOUNT) or \
            (resource is CONFIG_MAPS and name == ROOT_CA_CONFIG_MAP):
        ensure_namespace_defaults(server, obj["metadata"]["namespace"])
