"""Acting as someone else: `kubectl --as bob --as-group dev`.

kubectl sends who it wants to be in headers, beside its own token:

    Impersonate-User: bob
    Impersonate-Group: dev          (repeatable)
    Impersonate-Uid: 42

The server first authenticates the caller as usual, then asks the
authorizer whether the *caller* may `impersonate` each of them: the user
(resource "users"), each group ("groups") and the uid ("uids", in the group
authentication.k8s.io); a user name system:serviceaccount:NS:NAME is the
service account NAME in NS ("serviceaccounts"). Only if every one is allowed
does the request go on, as that user, for authorization and everything
after. That is how an administrator checks what a colleague may do
(`kubectl auth can-i --list --as bob`) without holding their token.

Groups named in headers are the user's groups, as in Kubernetes, plus
system:authenticated (a service account with none named gets its two
service-account groups). Kubernetes' Impersonate-Extra-* headers are
not supported: our users carry no extra fields, so such a header is refused
rather than ignored (see k8s.io/apiserver pkg/endpoints/filters/impersonation.go).
"""
from __future__ import annotations

import abac
import api_errors
from authentication import User

USER, GROUP, UID = "Impersonate-User", "Impersonate-Group", "Impersonate-Uid"
EXTRA = "Impersonate-Extra-"
SERVICE_ACCOUNT = "system:serviceaccount:"


# [START impersonate]
def act_as(caller: User, headers, authorizer) -> User:
    """`caller`, or the user the Impersonate-* headers name if `caller` may be them; 403 if not."""
    name = headers.get(USER, "")
    # Repeated headers reach a WSGI app joined by commas: a group name may not hold one here.
    groups = [g.strip() for g in headers.get(GROUP, "").split(",") if g.strip()]
    uid = headers.get(UID, "")
    if any(key.lower().startswith(EXTRA.lower()) for key in headers.keys()):
        raise api_errors.bad_request("Impersonate-Extra-* headers are not supported by this server")
    if not name:
        if groups or uid:
            # Kubernetes answers this with a 500 Internal error; the mistake is the client's.
            raise api_errors.bad_request("requested impersonation of groups or a uid without impersonating a user")
        return caller
    for attributes in _requests(name, groups, uid):
        decision, reason = authorizer.decide(caller, attributes)
        if decision != "allow":
            raise abac.forbidden(caller, attributes, reason)
    return User(name, _groups(name, groups), uid)
# [END impersonate]


def _requests(name: str, groups: list[str], uid: str) -> list[abac.Attributes]:
    """One `impersonate` question per thing asked for."""
    asks = []
    if name.startswith(SERVICE_ACCOUNT) and name.count(":") == 3:
        namespace, account = name[len(SERVICE_ACCOUNT):].split(":")
        asks.append(abac.Attributes("impersonate", "serviceaccounts", "", "", namespace, account))
    else:
        asks.append(abac.Attributes("impersonate", "users", name=name))
    asks += [abac.Attributes("impersonate", "groups", name=group) for group in groups]
    if uid:
        asks.append(abac.Attributes("impersonate", "uids", api_group="authentication.k8s.io", name=uid))
    return asks


def _groups(name: str, asked: list[str]) -> tuple[str, ...]:
    """The groups asked for; with none, a service account's own two. Anyone
    but system:anonymous is also in system:authenticated, unless asked to be
    in system:unauthenticated."""
    groups = list(asked)
    if not groups and name.startswith(SERVICE_ACCOUNT) and name.count(":") == 3:
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{name.split(':')[2]}"]
    if name != "system:anonymous" and not {"system:authenticated", "system:unauthenticated"} & set(groups):
        groups.append("system:authenticated")
    return tuple(groups)
