"""Where the API server is and who we are: the flags every client component takes.

Every component that talks to the API server (the kubelet, the scheduler,
the controller manager, the proxy, DNS) takes the same three ways of saying
where it is and who it is, as the real components do:

    --kubeconfig FILE          a kubeconfig, such as those `make certs` writes
    --apiserver URL            the server's URL (the insecure port, or HTTPS)
    --token TOKEN --certificate-authority FILE   for HTTPS without a kubeconfig

and, with none of them, inside a pod: the ServiceAccount token, CA and
namespace the kubelet projected at /var/run/secrets/kubernetes.io/serviceaccount,
and the `kubernetes` Service's address from KUBERNETES_SERVICE_HOST/PORT (what
client-go's InClusterConfig and the Python client's load_incluster_config read).
With none of them outside a pod, there is no API server to guess: the
component exits with client-go's own message (NOT_IN_CLUSTER), as
kube-scheduler does. (A default of http://127.0.0.1:8080 once stood there:
a controller whose pod lacked its token then retried a server that was
never there, forever, and said nothing.)

`add_flags(parser)` adds them and `from_args(args)` turns them into a
Connection, which knows how to make a `requests.Session` that sends the
token and trusts the cluster's CA. The kubeconfig's current context picks
the cluster and user; the CA may be inline (certificate-authority-data) or a
file path, relative to the kubeconfig's own directory, as kubectl reads it.
"""
from __future__ import annotations

import argparse
import base64
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Connection:
    server: str                    # https://10.0.0.10:6443 or http://127.0.0.1:8080
    token: str | None = None
    ca_file: str | None = None     # a PEM file to trust; None: the system's CAs (or plain HTTP)
    insecure_skip_tls_verify: bool = False
    namespace: str = "default"
    token_file: str | None = None  # read again as it changes: the kubelet renews a pod's token

    def session(self):
        import requests
        session = requests.Session()
        if self.token:
            session.headers["Authorization"] = f"Bearer {self.token}"
        elif self.token_file:
            session.auth = TokenFileAuth(self.token_file)
        session.verify = False if self.insecure_skip_tls_verify else (self.ca_file or True)
        return session

    def __repr__(self) -> str:       # never print a token
        return f"Connection(server={self.server!r}, token={'<set>' if self.token else None}, ca_file={self.ca_file!r})"


SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


# [START in-cluster]
def in_cluster(directory: Path | None = None, environ=None) -> Connection | None:
    """Where the API server is and who we are, from inside a pod; None outside one.

    The kubelet gave every container of the pod the `kubernetes` Service's
    address as KUBERNETES_SERVICE_HOST/PORT, and projected the pod's
    ServiceAccount token, the cluster's CA and the pod's namespace into
    `directory`. The token expires and the kubelet writes a new one before
    it does, so the file is named, not read once."""
    directory, environ = directory or SERVICE_ACCOUNT, os.environ if environ is None else environ
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token = directory / "token"
    if not host or not port or not token.is_file():
        return None
    host = f"[{host}]" if ":" in host else host          # an IPv6 Service address
    namespace = directory / "namespace"
    return Connection(server=f"https://{host}:{port}", token_file=str(token), ca_file=str(directory / "ca.crt"),
                      namespace=namespace.read_text().strip() if namespace.is_file() else "default")
# [END in-cluster]


class TokenFileAuth:
    """requests' auth hook that sends the token in a file, read again at
    most once a minute (as client-go does), so a renewed token is used
    before the old one expires."""
    PERIOD = 60.0

    def __init__(self, path: str):
        self.path, self._token, self._read_at = path, "", float("-inf")
        self._lock = threading.Lock()

    def token(self) -> str:
        with self._lock:
            if time.monotonic() - self._read_at >= self.PERIOD:
                try:
                    self._token = Path(self.path).read_text().strip()
                    self._read_at = time.monotonic()
                except OSError:
                    if not self._token:       # keep the last good token if a renewal is mid-way
                        raise
            return self._token

    def __call__(self, request):
        request.headers["Authorization"] = f"Bearer {self.token()}"
        return request


# client-go's rest.ErrNotInCluster, word for word.
NOT_IN_CLUSTER = ("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                  "KUBERNETES_SERVICE_PORT must be defined")


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connecting to the API server")
    group.add_argument("--kubeconfig", help="a kubeconfig file (server, CA and token); overrides the defaults below")
    group.add_argument("--apiserver", "--master", dest="apiserver",
                       help="the API server's URL, e.g. http://127.0.0.1:8080 (default: the kubeconfig's; "
                            "with neither, inside a pod, the kubernetes Service)")
    group.add_argument("--token", help="a bearer token for the secure port")
    group.add_argument("--certificate-authority", help="a CA file to trust for the secure port")


def from_args(args: argparse.Namespace) -> Connection:
    """The flags, else a kubeconfig, else the pod we run in; else KubeconfigError."""
    if args.kubeconfig:
        base = load(args.kubeconfig)
    else:
        base = Connection(args.apiserver) if args.apiserver else _in_cluster_or_error()
    return Connection(server=args.apiserver or base.server, token=args.token or base.token,
                      ca_file=args.certificate_authority or base.ca_file,
                      insecure_skip_tls_verify=base.insecure_skip_tls_verify, namespace=base.namespace,
                      token_file=None if args.token else base.token_file)


def _in_cluster_or_error() -> Connection:
    """The pod we run in, or why not, as client-go's InClusterConfig says it."""
    connection = in_cluster()
    if connection is not None:
        return connection
    if not (os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")):
        raise KubeconfigError(NOT_IN_CLUSTER)
    raise KubeconfigError(f"open {SERVICE_ACCOUNT / 'token'}: no such file or directory")   # in a pod, no token


def load(path: str | os.PathLike) -> Connection:
    """The current context's cluster and user from a kubeconfig file."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {error}") from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{path} is not a kubeconfig (expected a YAML map with clusters, users, contexts)")
    name = config.get("current-context")
    context = _named(config, "contexts", name, path).get("context") or {}
    cluster = _named(config, "clusters", context.get("cluster"), path).get("cluster") or {}
    user = _named(config, "users", context.get("user"), path).get("user") or {} if context.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"{path}: cluster {context.get('cluster')!r} has no server URL")
    return Connection(server=server.rstrip("/"), token=user.get("token"),
                      ca_file=_ca_file(cluster, path),
                      insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
                      namespace=context.get("namespace") or "default")


def _named(config: dict, section: str, name, path: Path) -> dict:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    raise KubeconfigError(f"{path}: no {section[:-1]} named {name!r} (current-context {config.get('current-context')!r})")


def _ca_file(cluster: dict, path: Path) -> str | None:
    if cluster.get("certificate-authority"):
        ca = Path(cluster["certificate-authority"])
        return str(ca if ca.is_absolute() else path.parent / ca)
    if cluster.get("certificate-authority-data"):
        # requests wants a file: write the inline CA to a private temporary one.
        try:
            pem = base64.b64decode(cluster["certificate-authority-data"])
        except ValueError:
            raise KubeconfigError(f"{path}: certificate-authority-data is not base64") from None
        handle, name = tempfile.mkstemp(prefix="groundup-ca-", suffix=".crt")
        with os.fdopen(handle, "wb") as f:
            f.write(pem)
        return name
    return None
