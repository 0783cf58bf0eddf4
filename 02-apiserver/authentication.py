"""Who is asking? On the insecure port: an administrator, whoever it is.

Kubernetes' insecure port (127.0.0.1:8080, removed in 1.20) skipped
authentication and authorization entirely; that is why it only ever listened
on localhost. The secure port, with tokens (tokens.py) and a policy (abac.py),
is the next lesson; its authenticator and authorizer plug in where these two
are called (rest.serve_resource).
"""
from __future__ import annotations

from dataclasses import dataclass

import api_errors


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""            # the token file's third column; audit logs name it


# Kubernetes' all-powerful group: let past authorization and escalation checks unasked.
PRIVILEGED_GROUP = "system:masters"
INSECURE_USER = User("system:admin", (PRIVILEGED_GROUP,))
# Who a request without credentials is, when anonymous requests are allowed:
# Kubernetes' names, so a policy can grant (or refuse) the group.
ANONYMOUS_USER = User("system:anonymous", ("system:unauthenticated",))


def allow_anonymous_admin(request) -> User:
    return INSECURE_USER


def nobody(request) -> User:
    """The secure port's authenticator when no --token-auth-file was given."""
    raise api_errors.unauthorized()


def allow_all(user: User, info) -> None:
    """An authorizer raises api_errors 403 Forbidden to refuse; this one never does."""
