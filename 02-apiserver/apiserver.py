"""The API server: `python 02-apiserver/apiserver.py --data-dir DIR`.

Every other component talks only to this process. It keeps the objects (as
JSON files under --data-dir, or in etcd with --storage-backend etcd3
--etcd-servers URL), checks every write, and tells watchers about every
change.

Why this HTTP server (http_server.py, on the standard library): each watch
is a response that stays open for minutes, and kubectl, every kubelet, the
scheduler and the controllers each hold several. A server with a fixed pool
of worker threads (waitress, gunicorn's gthread, cheroot) stops answering
once the pool is full of watches; cheroot also does the TLS handshake in its
accepting thread, so one silent client freezes the port. Ours gives every
connection a thread of its own, does the handshake there, keeps connections
alive, and puts a deadline on every read and write. BENCHMARKS.md has the
measurements behind the choice.

This is the one place that chooses what plugs into the core (hooks.py):
extensions/ (what later chapters add, and field selectors) and what the
real kubectl needs (kubectl_compat/; off with --no-kubectl-compat).
"""
from __future__ import annotations

import argparse
import gc
import ipaddress
import resource
import signal
import ssl
import sys
import threading

import admission
import authorizers
from abac import PolicyFileError
from app import DEFAULTS, create_app
from extensions import custom_resources, field_selectors, service_ips
from file_store import StoreError
from gauntlet import SecurePort
from http_server import APIHTTPServer, Limits, tls_context
from tokens import TokenFileError as TokenAuthFileError  # for --token-auth-file
from common.addresses import this_machines_address
from common.log import get_logger
from common.times import duration
from common.client.token_file import TokenFileError, read_token_file  # for --kubelet-client-token-file

log = get_logger("apiserver")


def keep_stored_objects_out_of_full_collections() -> None:
    """Python's full garbage collection walks every live object: with 10,000
    stored pods that is a pause of 50-150 ms in the middle of some request.
    Stored objects are plain dicts and lists with no reference cycles, so
    reference counting frees them; once a second, survivors are moved out of
    the collector's sight (gc.freeze). Young objects are still collected."""
    def freeze_survivors():
        while True:
            gc.collect(1)
            gc.freeze()
            threading.Event().wait(1)
    gc.freeze()
    threading.Thread(target=freeze_survivors, daemon=True, name="gc-freeze").start()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The API server: the cluster's one source of truth.")
    parser.add_argument("--data-dir", help="directory of the JSON object files (created if missing); "
                                           "required with the default --storage-backend json-files")
    storage = parser.add_argument_group("etcd (part 8): the objects in etcd instead of JSON files")
    storage.add_argument("--storage-backend", choices=("json-files", "etcd3"), default="json-files",
                         help="where the objects live (default %(default)s)")
    storage.add_argument("--etcd-servers", default="",
                         help="etcd members' client URLs, comma separated, e.g. http://127.0.0.1:2379 "
                              "(with --storage-backend etcd3)")
    storage.add_argument("--etcd-prefix", default="/registry",
                         help="the prefix of every key in etcd (default %(default)s)")
    parser.add_argument("--insecure-port", "--port", dest="port", type=int, default=8080,
                        help="port of the plain-HTTP API, with no authentication (default 8080)")
    parser.add_argument("--insecure-bind-address", default="127.0.0.1",
                        help="address of the plain-HTTP API (default 127.0.0.1: this machine only)")
    parser.add_argument("--watch-cache-size", type=int, default=DEFAULTS["WATCH_CACHE_SIZE"],
                        help="events kept for reconnecting watches (older: 410 Gone)")
    parser.add_argument("--max-watches", type=int, default=DEFAULTS["MAX_WATCHES"],
                        help="open watches allowed at once (more: 429)")
    parser.add_argument("--max-request-bytes", type=int, default=DEFAULTS["MAX_BODY_BYTES"],
                        help="largest request body accepted (more: 413)")
    parser.add_argument("--max-connections", type=int, default=Limits.max_connections,
                        help="open connections allowed at once per port, watches not counted (more: 429)")
    parser.add_argument("--request-timeout", type=duration, default=Limits.request_timeout, metavar="DURATION",
                        help="how long a client may take to send a request (TLS handshake, head, body) "
                             "or to read a reply that is not a stream; slower: dropped (default 60s)")
    parser.add_argument("--watch-bookmark-seconds", type=duration, default=DEFAULTS["BOOKMARK_SECONDS"],
                        metavar="DURATION",
                        help="how often an idle watch that allows bookmarks gets one")
    secure = parser.add_argument_group("the secure port (HTTPS, tokens, a policy): see `make certs`")
    secure.add_argument("--secure-port", type=int, default=6443, help="HTTPS port (default 6443)")
    secure.add_argument("--bind-address", default="0.0.0.0",
                        help="address of the HTTPS port (default 0.0.0.0: every interface)")
    secure.add_argument("--tls-cert-file", help="the server's certificate (PEM); without it, no secure port")
    secure.add_argument("--tls-private-key-file", help="the certificate's private key (PEM)")
    secure.add_argument("--token-auth-file", help="CSV of token,user,uid,\"group1,group2\": who may connect")
    secure.add_argument("--authorization-mode", default="ABAC",
                        help="authorizers asked in turn, comma separated, e.g. RBAC,ABAC: ABAC "
                             "(--authorization-policy-file, the default), RBAC (Roles and bindings), "
                             "AlwaysAllow (any known user may do anything)")
    secure.add_argument("--authorization-policy-file", help="ABAC policy, one JSON object per line")
    secure.add_argument("--anonymous-auth", nargs="?", const="true", default="true", type=_bool_flag,
                        help="a request with no credentials at all is system:anonymous (group "
                             "system:unauthenticated), and the authorizers decide what it may do (default true, "
                             "as kube-apiserver's; a wrong token is still a 401); turned off with AlwaysAllow")
    accounts = parser.add_argument_group("ServiceAccount tokens (sa_tokens.py; make certs writes sa.key, sa.pub)")
    accounts.add_argument("--service-account-signing-key-file",
                          help="private key (PEM) that signs ServiceAccount tokens; without it, none are issued")
    accounts.add_argument("--service-account-key-file", action="append",
                          help="public key (PEM) that verifies tokens, repeatable (default: the signing key's)")
    accounts.add_argument("--service-account-issuer", default=None,
                          help="the tokens' iss claim (default https://kubernetes.default.svc.cluster.local)")
    accounts.add_argument("--api-audiences", help="audiences this server accepts, comma separated "
                                                  "(default: the issuer)")
    accounts.add_argument("--root-ca-file",
                          help="the CA published as every namespace's kube-root-ca.crt ConfigMap while no "
                               "controller manager runs (NoControllerManager); ours: kube-controller-manager's flag")
    services = parser.add_argument_group("Services (chapter 05)")
    services.add_argument("--service-cluster-ip-range", default=DEFAULTS["SERVICE_CLUSTER_IP_RANGE"],
                          help="the Services' virtual IPs (default %(default)s; the first is the kubernetes Service's)")
    services.add_argument("--service-node-port-range", default=DEFAULTS["SERVICE_NODE_PORT_RANGE"],
                          help="the ports NodePort Services get on every node (default %(default)s)")
    services.add_argument("--advertise-address",
                          help="this server's address in the kubernetes Service's endpoints "
                               "(default: --bind-address, or this machine's address)")
    parser.add_argument("--kubelet-client-token-file",
                        help="the token this server presents to kubelets for `kubectl logs` "
                             "(their --authentication-token-file; make certs: .certs/kubelet-client.token)")
    parser.add_argument("--enable-admission-plugins", default=",".join(admission.DEFAULT_PLUGINS),
                        help=f"admission plugins, in order (default {','.join(admission.DEFAULT_PLUGINS)})")
    parser.add_argument("--allow-privileged", nargs="?", const="true", default="false", type=_bool_flag,
                        help="let pods run privileged containers (default false: validation refuses them "
                             "with a 422, and DenyPrivileged, when enabled, with a 403); "
                             "--allow-privileged and --allow-privileged=true alike, as kube-apiserver takes it")
    parser.add_argument("--log-requests", action="store_true", help="log one line per HTTP request")
    parser.add_argument("--no-kubectl-compat", dest="kubectl_compat", action="store_false",
                        help="serve the core alone: JSON or YAML bodies, JSON answers, merge patches; no discovery, "
                             "OpenAPI, Tables, protobuf or YAML answers (what kubectl needs)")
    return parser.parse_args(argv)


def _bool_flag(text: str) -> bool:
    """A Go bool flag's value: true/false, 1/0, t/f, in any case."""
    value = text.strip().lower()
    if value in ("true", "t", "1"):
        return True
    if value in ("false", "f", "0"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {text!r}")


def raise_open_file_limit() -> None:
    """Every connection is a file descriptor (two with TLS), and Debian's
    default soft limit is 1,024: take the hard limit, as Go programs do."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv=None) -> int:
    args = parse_args(argv)
    raise_open_file_limit()
    try:
        ipaddress.ip_address(args.insecure_bind_address)
    except ValueError:
        print(f"error: --insecure-bind-address {args.insecure_bind_address!r} is not an IP address", file=sys.stderr)
        return 2
    if not ipaddress.ip_address(args.insecure_bind_address).is_loopback:
        log.info("WARNING: the insecure port has no authentication: anyone who can reach "
                 f"{args.insecure_bind_address}:{args.port} can read and change everything")
    problem = _check_storage_flags(args) or _check_secure_flags(args) or _check_service_flags(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        kubelet_token = read_token_file(args.kubelet_client_token_file) if args.kubelet_client_token_file else None
    except TokenFileError as error:
        print(f"error: --kubelet-client-token-file: {error}", file=sys.stderr)
        return 2
    try:
        app = create_app({"DATA_DIR": args.data_dir, "WATCH_CACHE_SIZE": args.watch_cache_size,
                          "STORAGE_BACKEND": args.storage_backend, "ETCD_PREFIX": args.etcd_prefix,
                          "ETCD_SERVERS": [url for url in args.etcd_servers.split(",") if url],
                          "MAX_WATCHES": args.max_watches, "MAX_BODY_BYTES": args.max_request_bytes,
                          "BOOKMARK_SECONDS": args.watch_bookmark_seconds,
                          "TOKEN_AUTH_FILE": args.token_auth_file,
                          "ANONYMOUS_AUTH": anonymous_auth(args),
                          "AUTHORIZATION_MODES": authorization_modes(args),
                          "AUTHORIZATION_POLICY_FILE": args.authorization_policy_file,
                          "ADMISSION_PLUGINS": [p for p in args.enable_admission_plugins.split(",") if p],
                          "ALLOW_PRIVILEGED": args.allow_privileged,
                          "KUBELET_CLIENT_TOKEN": kubelet_token,
                          "SERVICE_ACCOUNT_SIGNING_KEY_FILE": args.service_account_signing_key_file,
                          "SERVICE_ACCOUNT_KEY_FILES": args.service_account_key_file,
                          "SERVICE_ACCOUNT_ISSUER": args.service_account_issuer,
                          "API_AUDIENCES": [a for a in (args.api_audiences or "").split(",") if a],
                          "ROOT_CA_FILE": args.root_ca_file,
                          "SERVICE_CLUSTER_IP_RANGE": args.service_cluster_ip_range,
                          "SERVICE_NODE_PORT_RANGE": args.service_node_port_range,
                          "SECURE_PORT": args.secure_port if args.tls_cert_file else None,
                          "ADVERTISE_ADDRESS": advertise_address(args)}, extensions(args))
    except (StoreError, TokenAuthFileError, TokenFileError, PolicyFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:       # a key or CA file that cannot be read
        print(f"error: the service account key or root CA: {error}", file=sys.stderr)
        return 1
    limits = Limits(max_body_bytes=args.max_request_bytes, request_timeout=args.request_timeout,
                    max_connections=args.max_connections)
    try:
        server = APIHTTPServer((args.insecure_bind_address, args.port), app, limits, log_requests=args.log_requests)
    except OSError as error:
        print(f"error: cannot listen on {args.insecure_bind_address}:{args.port}: {error.strerror}", file=sys.stderr)
        return 1
    servers = [server]
    if args.tls_cert_file:
        try:
            secure_server = APIHTTPServer((args.bind_address, args.secure_port), SecurePort(app), limits,
                                          ssl_context=tls_context(args.tls_cert_file, args.tls_private_key_file),
                                          log_requests=args.log_requests)
        except (OSError, ssl.SSLError) as error:
            server.server_close()
            print(f"error: cannot serve HTTPS on {args.bind_address}:{args.secure_port}: {error}", file=sys.stderr)
            return 1
        servers.append(secure_server)
    keep_stored_objects_out_of_full_collections()

    def stop(signum, frame):
        for each in servers:
            threading.Thread(target=each.shutdown).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("serving", address=f"http://{args.insecure_bind_address}:{server.port}",
             **({"etcd_servers": args.etcd_servers} if args.storage_backend == "etcd3" else {"data_dir": args.data_dir}))
    if len(servers) == 2:
        threading.Thread(target=servers[1].serve_forever, daemon=True, name="secure-port").start()
        log.info("serving", address=f"https://{args.bind_address}:{servers[1].port}",
                 authorization=args.authorization_mode, admission=args.enable_admission_plugins)
    server.serve_forever()
    log.info("stopped")
    return 0


# [START extensions]
def extensions(args) -> tuple:
    """What plugs into the core, in order: Service IPs (chapter 05), custom
    kinds (chapter 04) and field selectors (every kubelet's watch) always;
    kubectl's needs unless switched off."""
    plugged = (service_ips, custom_resources, field_selectors)
    if not args.kubectl_compat:
        return plugged
    import kubectl_compat     # only here: --no-kubectl-compat loads none of it
    return plugged + (kubectl_compat,)
# [END extensions]


def _check_storage_flags(args) -> str | None:
    if args.storage_backend == "etcd3":
        if not args.etcd_servers:
            return "--storage-backend etcd3 needs --etcd-servers, e.g. http://127.0.0.1:2379"
        if not all(url.startswith(("http://", "https://")) for url in args.etcd_servers.split(",") if url):
            return f"--etcd-servers {args.etcd_servers!r}: URLs, such as http://127.0.0.1:2379,http://127.0.0.1:22379"
    elif not args.data_dir:
        return "--data-dir is required (or --storage-backend etcd3 --etcd-servers URL)"
    return None


def _check_service_flags(args) -> str | None:
    try:
        network = ipaddress.ip_network(args.service_cluster_ip_range)
    except ValueError as error:
        return f"--service-cluster-ip-range {args.service_cluster_ip_range!r}: {error}"
    if network.version != 4 or network.num_addresses < 8:
        return f"--service-cluster-ip-range {network}: an IPv4 network of at least 8 addresses, such as 10.96.0.0/12"
    first, dash, last = args.service_node_port_range.partition("-")
    if not (dash and first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last) <= 65535):
        return f"--service-node-port-range {args.service_node_port_range!r}: FIRST-LAST, such as 30000-32767"
    if args.advertise_address:
        try:
            ipaddress.ip_address(args.advertise_address)
        except ValueError:
            return f"--advertise-address {args.advertise_address!r} is not an IP address"
    return None


def advertise_address(args) -> str:
    """Where other machines reach this server, as Kubernetes picks it."""
    if args.advertise_address:
        return args.advertise_address
    if args.bind_address not in ("0.0.0.0", "::"):
        return args.bind_address
    return this_machines_address()


def authorization_modes(args) -> list[str] | None:
    """--authorization-mode as a list; None (no authorizer) for the default
    ABAC without a policy file, which only a server without a secure port,
    which authorizes nothing, may have (_check_secure_flags)."""
    modes = authorizers.parse_modes(args.authorization_mode)
    return None if "ABAC" in modes and not args.authorization_policy_file else modes


def anonymous_auth(args) -> bool:
    """--anonymous-auth, unless an AlwaysAllow authorizer would then let
    anyone at all do anything: kube-apiserver turns it off then, and says so."""
    if args.anonymous_auth and "AlwaysAllow" in (authorization_modes(args) or []):
        log.info("WARNING: AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth "
                 "to false. You should use a different authorizer")
        return False
    return args.anonymous_auth


def _check_secure_flags(args) -> str | None:
    """The secure port's flags make sense together, or say what is missing."""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        return "--tls-cert-file and --tls-private-key-file go together"
    if args.tls_cert_file and not args.token_auth_file:
        return "the secure port needs --token-auth-file: without it no one could use it (make certs writes one)"
    try:
        modes = authorizers.parse_modes(args.authorization_mode)
    except ValueError as error:
        return f"--authorization-mode: {error}"
    if args.tls_cert_file and "ABAC" in modes and not args.authorization_policy_file:
        return ("--authorization-mode ABAC needs --authorization-policy-file "
                "(02-apiserver/policy.jsonl is an example); or --authorization-mode AlwaysAllow")
    unknown = [p for p in args.enable_admission_plugins.split(",") if p and p not in admission.PLUGINS]
    if unknown:
        return f"unknown admission plugin(s) {', '.join(unknown)}: choose from {', '.join(admission.PLUGINS)}"
    return None


if __name__ == "__main__":
    sys.exit(main())
