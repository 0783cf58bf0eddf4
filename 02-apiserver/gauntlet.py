"""The gauntlet every request on the secure port runs before it may touch an object.

    authentication  who is asking?           a bearer token -> a user   (401 if unknown;
                                             no token: system:anonymous, --anonymous-auth)
    authorization   may they do this?        --authorization-mode       (403 if not)
                                             (ABAC, RBAC: authorizers.py)
    admission       is the object allowed?   admission.py's plugins     (after decoding)
    validation      is it well formed?       common/model/validate.py         (422)

Authentication comes first because authorization needs a name; admission
after both, because it looks at the decoded object, which only an
authorized request gets as far as. The insecure port (localhost only) skips
the first two, as Kubernetes' insecure port did: whoever can reach it is
the administrator.

Every change also leaves one audit line: who, what, on which object, and
the answer's code. Never the token.
"""
from __future__ import annotations

from flask import g, request

import abac
import impersonation
import request_info
from authentication import INSECURE_USER, User
from common.log import get_logger
from request_context import server

SECURE_PORT = "groundup.secure_port"    # set in the WSGI environ by the secure port's server
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")   # a load balancer asks these without a token
MUTATING = ("POST", "PUT", "PATCH", "DELETE")

audit_log = get_logger("audit")


class SecurePort:
    """WSGI middleware for the HTTPS server: marks its requests as secure."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        environ[SECURE_PORT] = True
        return self.app(environ, start_response)


def on_secure_port() -> bool:
    return bool(request.environ.get(SECURE_PORT))


# [START gauntlet]
def authenticate(req) -> User:
    """Who is asking: the token's user on the secure port; the admin on the insecure one."""
    if not req.environ.get(SECURE_PORT):
        return INSECURE_USER
    user = server().authenticator(req)      # raises 401 Unauthorized
    # --as / --as-group: the caller may act as another user if allowed to (403 if not).
    user = impersonation.act_as(user, req.headers, server().authorizer)
    g.user = user
    return user


def authorize(user: User, info) -> None:
    """May `user` do what `info` (a RequestInfo or abac.Attributes) describes? 403 if not."""
    if on_secure_port():
        server().authorizer(user, info)
# [END gauntlet]


def check_non_resource_request() -> None:
    """Before every request: paths that name no object (/version, /api,
    /openapi/v3) are authenticated and authorized here; object requests are,
    with what they name, in rest.serve_resource."""
    if request_info.is_resource_path(request.path) or not on_secure_port():
        return
    if request.path in HEALTH_PATHS:
        return
    user = authenticate(request)
    authorize(user, abac.non_resource_attributes(request.method, request.path))


def audit(response):
    """One line per change or exec/attach/port-forward: user, verb, resource, namespace/name, code."""
    info = g.get("info")
    # Changes, and connections into pods (kubectl exec is a GET, and no less worth a line).
    if request.method in MUTATING or info and info.subresource in ("exec", "attach", "portforward"):
        user = g.get("user") or (INSECURE_USER if not on_secure_port() else None)
        audit_log.info(
            "request", obj="/".join(filter(None, (info.namespace, info.name or g.get("created"))))
            if info else request.path,
            user=user.name if user else "(unauthenticated)",
            verb=info.verb if info else request.method.lower(),
            resource=(f"{info.resource}/{info.subresource}" if info and info.subresource
                      else str(info.resource) if info else ""),
            code=response.status_code)
    return response


def install(app) -> None:
    app.before_request(check_non_resource_request)
    app.after_request(audit)
