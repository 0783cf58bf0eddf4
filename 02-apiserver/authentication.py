"""Who is asking? On the insecure port: an administrator, whoever it is.

Kubernetes' insecure port (127.0.0.1:8080, removed in 1.20) skipped
authentication and authorization entirely; that is why it only ever listened
on localhost. The secure port, with tokens and a policy, is the next lesson;
its authenticator and authorizer plug in where these two are called
(rest.serve_resource).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()


INSECURE_USER = User("system:admin", ("system:masters",))


def allow_anonymous_admin(request) -> User:
    return INSECURE_USER


def allow_all(user: User, info) -> None:
    """An authorizer raises api_errors 403 Forbidden to refuse; this one never does."""
