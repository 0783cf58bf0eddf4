"""The Flask application: `create_app(config)` wires the pieces together.

As in Flask's own tutorial, the app is built by a factory, so tests can make
a fresh one over a temporary data directory, and the command line
(apiserver.py) is only flag parsing around it.

It wires the parts of this folder, naming modules outside the core: the
gauntlet (part 3), post_start (the defaults every server writes), health,
metrics and resource_metrics (`kubectl top`): take those on trust on a
first read. What extends the core comes in `extensions` (apiserver.py
picks them), and each registers itself into `server.hooks` (hooks.py).
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field

from flask import Flask, g
from werkzeug.exceptions import HTTPException

import access_review
import admission
import api_errors
import authentication
import authorizers
import gauntlet
import health
import metrics
import oidc_discovery
import post_start
import deletion
import rbac_aggregation
import rbac_bootstrap
import resource_metrics
import rest
from request_context import respond
import sa_tokens
import service_accounts
import tokens
import writes
from common.log import get_logger
from etcd_store import EtcdStore
from file_store import FileStore
from hooks import Hooks
from storage import Store
from watch import WatchCounter

log = get_logger("apiserver")

DEFAULTS = {
    "STORAGE_BACKEND": "json-files",  # or "etcd3", as kube-apiserver's --storage-backend
    "DATA_DIR": None,                 # json-files: where the JSON files live (required)
    "ETCD_SERVERS": [],               # etcd3: its members' client URLs (required)
    "ETCD_PREFIX": "/registry",       # etcd3: every key starts with it
    "MAX_BODY_BYTES": 3 * 1024 * 1024,  # Kubernetes' limit too
    "WATCH_CACHE_SIZE": 10_000,       # events kept for watches that reconnect
    "MAX_WATCHES": 3_000,
    "MAX_WATCH_SECONDS": 1800,        # a watch with no timeoutSeconds ends after 30-60 min
    "BOOKMARK_SECONDS": 10,
    "SERVICE_CLUSTER_IP_RANGE": "10.96.0.0/12",     # Services' virtual IPs (chapter 05: extensions/service_ips.py)
    "SERVICE_NODE_PORT_RANGE": "30000-32767",
    "ADVERTISE_ADDRESS": None,        # where the `kubernetes` Service's endpoint points (with SECURE_PORT)
    "SECURE_PORT": None,
}


@dataclass
class APIServer:
    """What the request handlers share: reached through request_context.server()."""
    store: Store
    watches: WatchCounter
    max_watch_seconds: int
    bookmark_seconds: float
    # The secure port's gauntlet (the insecure port needs none): who holds
    # which token, and what the policy allows. With no token file, nobody.
    authenticator: object = field(default=authentication.nobody)
    authorizer: object = field(default=authentication.allow_all)
    admission_plugins: tuple = admission.DEFAULT_PLUGINS
    allow_privileged: bool = False
    # What this server presents to a kubelet's port (kubectl logs); None: nothing.
    kubelet_client_token: str | None = None
    hooks: Hooks = field(default_factory=Hooks)   # what extensions registered (hooks.py)
    token_issuer: object = None                   # ServiceAccount tokens (sa_tokens.py), if a key was given
    api_audiences: tuple[str, ...] = ()
    service_account_keys: tuple = ()              # what verifies them, published by oidc_discovery.py
    root_ca: str | None = None                    # the PEM kube-root-ca.crt publishes


def create_app(config: dict | None = None, extensions: tuple = ()) -> Flask:
    """The server; `extensions` are modules with an init_app(app) (apiserver.py picks them)."""
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    app.config.update(config or {})
    app.config["MAX_CONTENT_LENGTH"] = app.config["MAX_BODY_BYTES"]   # http_server.py refuses larger bodies first
    # No automatic OPTIONS answer (an empty 200): OPTIONS is 405, a Status like every other refusal.
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False

    store = open_store(app.config)
    server = APIServer(
        store=store, watches=WatchCounter(app.config["MAX_WATCHES"]),
        max_watch_seconds=app.config["MAX_WATCH_SECONDS"], bookmark_seconds=app.config["BOOKMARK_SECONDS"],
        admission_plugins=tuple(app.config.get("ADMISSION_PLUGINS") or admission.DEFAULT_PLUGINS),
        allow_privileged=bool(app.config.get("ALLOW_PRIVILEGED")),
        kubelet_client_token=app.config.get("KUBELET_CLIENT_TOKEN"))
    server.hooks.patchers["application/merge-patch+json"] = writes.merge_patch   # the core's one PATCH format
    if app.config.get("TOKEN_AUTH_FILE"):
        server.authenticator = tokens.TokenAuthenticator(app.config["TOKEN_AUTH_FILE"], app.config.get("ANONYMOUS_AUTH"))
    sa_tokens.set_up(app.config, server)      # --service-account-* flags: tokens for pods
    # --authorization-mode; without one, ABAC if there is a policy file, as before RBAC came.
    modes = app.config.get("AUTHORIZATION_MODES") or (
        ["ABAC"] if app.config.get("AUTHORIZATION_POLICY_FILE") else ["AlwaysAllow"])
    server.authorizer = authorizers.build(modes, store, app.config.get("AUTHORIZATION_POLICY_FILE"))
    # The default roles exist wherever the RBAC API is served, whatever authorizes (as in Kubernetes).
    rbac_bootstrap.ensure(store, node_authorizer="Node" in modes)   # the defaults, reconciled
    rbac_aggregation.keep_aggregated(store)
    app.extensions["apiserver"] = server
    deletion.resume_namespace_deletions(server)
    post_start.ensure_system_namespaces(store)   # default, kube-system, kube-public, kube-node-lease
    service_accounts.ensure_all_namespaces(server)      # with NoControllerManager: `default`, the CA
    for extension in extensions:       # Service IPs, custom kinds, field selectors, kubectl_compat
        extension.init_app(app)

    # The fixed paths first; rest's catch-all /api/... and /apis/... last (metrics.k8s.io is not stored).
    for part in (health, access_review, oidc_discovery, metrics, resource_metrics, rest):
        app.register_blueprint(part.bp)
    metrics.install(app)       # first, so it counts what the gauntlet refuses too
    gauntlet.install(app)
    app.before_request(server.hooks.negotiate or rest.accept_json_only)   # Accept: a format we have, or 406
    if server.hooks.encode_answer:
        app.after_request(server.hooks.encode_answer)                     # JSON rewritten as YAML, if asked
    _register_error_handlers(app)
    return app


def open_store(config) -> Store:
    """The JSON files under DATA_DIR, or etcd (part 8): the rest never knows which."""
    if config["STORAGE_BACKEND"] == "etcd3":
        if not config["ETCD_SERVERS"]:
            raise ValueError("ETCD_SERVERS is required with the etcd3 storage backend")
        return EtcdStore(config["ETCD_SERVERS"], config["ETCD_PREFIX"], config["WATCH_CACHE_SIZE"])
    if not config["DATA_DIR"]:
        raise ValueError("DATA_DIR is required: the directory that holds the objects")
    return FileStore(config["DATA_DIR"], config["WATCH_CACHE_SIZE"])


def _register_error_handlers(app: Flask) -> None:
    # Every error is a Status object: kubectl prints its message, and an HTML
    # error page would be printed raw.
    @app.errorhandler(api_errors.APIError)
    def api_error(error: api_errors.APIError):
        return respond(error.status(), error.code, g.get("field_warnings", ()))   # the dropped fields' warnings

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        if error.code == 413:
            return api_error(api_errors.too_large(app.config["MAX_BODY_BYTES"]))
        reasons = {404: "NotFound", 405: "MethodNotAllowed", 400: "BadRequest", 406: "NotAcceptable",
                   408: "Timeout", 415: "UnsupportedMediaType", 429: "TooManyRequests"}
        message = "the server could not find the requested resource" if error.code == 404 else error.description
        return api_error(api_errors.APIError(error.code, reasons.get(error.code, "BadRequest"), message))

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        log.info("internal error", error=repr(error), trace=traceback.format_exc(limit=5))
        return api_error(api_errors.internal(f"an internal error occurred: {type(error).__name__}: {error}"))
