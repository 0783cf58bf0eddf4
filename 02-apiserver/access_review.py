"""Questions a user asks about themselves: may I? what may I? who am I?

    kubectl auth can-i delete pods    POST .../authorization.k8s.io/v1/selfsubjectaccessreviews
    kubectl auth can-i --list         POST .../authorization.k8s.io/v1/selfsubjectrulesreviews
    kubectl auth whoami               POST .../authentication.k8s.io/v1/selfsubjectreviews

and two a component asks about someone else, as a kubelet or an aggregated
API server does to check its own callers (Kubernetes' webhook token
authentication and webhook authorization):

    who is this token?                POST .../authentication.k8s.io/v1/tokenreviews
    may this user do that?            POST .../authorization.k8s.io/v1/subjectaccessreviews

    {"spec": {"resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}}}
    -> 201 {..., "status": {"allowed": false, "reason": "No policy matched."}}

Nothing is stored: the answer is computed by the same authenticator and
authorizer that guard every request on this port. Anyone signed in may ask
about themselves, as Kubernetes' system:basic-user role allows, so those
three are never sent to the policy (but system:anonymous, who is not
signed in, asks the policy like any request); asking about others is a `create` of
tokenreviews or subjectaccessreviews, which the policy must allow
(Kubernetes' system:auth-delegator role).
"""
from __future__ import annotations

from flask import Blueprint, request

import abac
import api_errors
import decode
from common.model import field_errors
import gauntlet
import registry
from authentication import User
from request_context import respond, server
from tokens import AUTHENTICATED

bp = Blueprint("access_review", __name__)
GROUP_VERSION = "authorization.k8s.io/v1"


@bp.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
def self_subject_access_review():
    user = _authenticate_self("authorization.k8s.io", "selfsubjectaccessreviews")
    review = _review("authorization.k8s.io", "selfsubjectaccessreviews")
    spec = review.get("spec")
    if not isinstance(spec, dict):
        raise api_errors.bad_request("a SelfSubjectAccessReview needs a spec with resourceAttributes "
                                     "or nonResourceAttributes")
    attributes = _attributes(spec)
    allowed, reason = True, ""
    if gauntlet.on_secure_port():
        # The chain's own answer (authorizers.py): "allow" and why, or the reasons it was not.
        decision, reason = server().authorizer.decide(user, attributes)
        allowed = decision == "allow"
    status = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return respond({"kind": "SelfSubjectAccessReview", "apiVersion": GROUP_VERSION,
                    "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}, 201)


def _attributes(spec: dict) -> abac.Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        group, plural = str(resource.get("group", "")), str(resource.get("resource", ""))
        namespace, name = str(resource.get("namespace", "")), str(resource.get("name", ""))
        served = _served(group, plural)
        # kubectl sends its current namespace whatever the kind. A request
        # for a cluster-scoped kind carries none, so neither may the
        # question, or `can-i update nodes` would say no to a kubelet that
        # may. (A Namespace is filed under its own name, as for a request.)
        if served is not None and not served.namespaced:
            namespace = name if plural == "namespaces" else ""
        return abac.Attributes(str(resource.get("verb", "")), plural, str(resource.get("subresource", "")),
                               group, namespace, name)
    path = spec.get("nonResourceAttributes")
    if isinstance(path, dict):
        return abac.Attributes(str(path.get("verb", "")), path=str(path.get("path", "")))
    raise api_errors.bad_request("spec needs resourceAttributes or nonResourceAttributes")


def _served(group: str, plural: str) -> registry.Resource | None:
    """The kind a question names, in whichever version we serve it."""
    return next((r for r in registry.RESOURCES if r.group == group and r.plural == plural), None)


@bp.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews")
def self_subject_rules_review():
    user = _authenticate_self("authorization.k8s.io", "selfsubjectrulesreviews")
    spec = _review("authorization.k8s.io", "selfsubjectrulesreviews").get("spec")
    namespace = str(spec.get("namespace", "")) if isinstance(spec, dict) else ""
    rules_for = getattr(server().authorizer, "rules_for", None)
    if not gauntlet.on_secure_port() or rules_for is None:
        # No policy to read (the insecure port, or --authorization-mode
        # AlwaysAllow): everything, as Kubernetes shows its cluster-admin.
        resource_rules = [abac.ResourceRule(("*",), ("*",), ("*",))]
        path_rules = [abac.NonResourceRule(("*",), ("*",))]
    else:
        resource_rules, path_rules = rules_for(user, namespace)
        resource_rules = [*ASK_ABOUT_YOURSELF, *resource_rules]
    status = {"resourceRules": [{"verbs": list(r.verbs), "apiGroups": list(r.api_groups),
                                 "resources": list(r.resources),
                                 **({"resourceNames": list(r.resource_names)} if r.resource_names else {})}
                                for r in resource_rules],
              "nonResourceRules": [{"verbs": list(r.verbs), "nonResourceURLs": list(r.urls)}
                                   for r in path_rules],
              "incomplete": False}
    return respond({"kind": "SelfSubjectRulesReview", "apiVersion": GROUP_VERSION,
                    "metadata": {"creationTimestamp": None}, "spec": {"namespace": namespace},
                    "status": status}, 201)


# What every signed-in user may do whatever the policy says: these three
# questions (Kubernetes' system:basic-user role).
ASK_ABOUT_YOURSELF = (
    abac.ResourceRule(("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews",
                                                               "selfsubjectrulesreviews")),
    abac.ResourceRule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",)),
)


# kubectl 1.28 and later ask v1 first; 1.27 asks v1beta1, then v1alpha1.
# The answer is the same in each; only v1 is listed in discovery.
@bp.post("/apis/authentication.k8s.io/<any(v1, v1beta1, v1alpha1):version>/selfsubjectreviews")
def self_subject_review(version: str):
    user = _authenticate_self("authentication.k8s.io", "selfsubjectreviews")
    return respond({"kind": "SelfSubjectReview", "apiVersion": f"authentication.k8s.io/{version}",
                    "metadata": {"creationTimestamp": None},
                    "status": {"userInfo": _user_info(user)}}, 201)


@bp.post("/apis/authentication.k8s.io/v1/tokenreviews")
def token_review():
    """Is spec.token one this server accepts, and whose is it? A refused
    token is an answer (authenticated false), not an error."""
    _authorize_review("authentication.k8s.io", "tokenreviews")
    review = _review("authentication.k8s.io", "tokenreviews")
    spec = review.get("spec")
    token = spec.get("token") if isinstance(spec, dict) else None
    if not isinstance(token, str) or not token:
        raise api_errors.invalid(registry.lookup("authentication.k8s.io", "v1", "tokenreviews"), "TokenReview",
                                 "", [field_errors.required("spec.token")])
    status: dict = {"authenticated": False, "user": {}}
    try:
        user = server().authenticator(_Presented(token))
        status = {"authenticated": True, "user": _user_info(user)}
        if server().token_issuer is not None:
            status["audiences"] = list(server().api_audiences)
    except api_errors.APIError:
        status["error"] = "invalid bearer token"
    return respond({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
                    "metadata": {"creationTimestamp": None}, "spec": review.get("spec"), "status": status}, 201)


class _Presented:
    """A token as if it came on a request: what the authenticators read."""
    def __init__(self, token: str):
        self.headers = {"Authorization": f"Bearer {token}"}


@bp.post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
def subject_access_review():
    """May spec.user (in spec.groups) do what spec.resourceAttributes say?"""
    _authorize_review("authorization.k8s.io", "subjectaccessreviews")
    review = _review("authorization.k8s.io", "subjectaccessreviews")
    spec = review.get("spec")
    if not isinstance(spec, dict) or not (spec.get("user") or spec.get("groups")):
        raise api_errors.invalid(registry.lookup("authorization.k8s.io", "v1", "subjectaccessreviews"), "SubjectAccessReview", "", [
            field_errors.required("spec.user", "at least one of user or group must be specified")])
    groups = spec.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise api_errors.invalid(registry.lookup("authorization.k8s.io", "v1", "subjectaccessreviews"), "SubjectAccessReview", "", [
            field_errors.invalid("spec.groups", groups, "must be a list of strings")])
    subject = User(str(spec.get("user", "")), tuple(groups), str(spec.get("uid", "")))
    try:
        server().authorizer(subject, _attributes(spec))
        status = {"allowed": True}
    except api_errors.APIError as refused:
        status = {"allowed": False, "reason": refused.message}
    return respond({"kind": "SubjectAccessReview", "apiVersion": GROUP_VERSION,
                    "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}, 201)


def _authenticate_self(group: str, plural: str) -> User:
    """The caller, who may ask about themselves if signed in (system:basic-user
    is bound to system:authenticated); system:anonymous only if the policy says so."""
    user = gauntlet.authenticate(request)
    if AUTHENTICATED not in user.groups:
        gauntlet.authorize(user, abac.Attributes("create", plural, api_group=group))
    return user


def _authorize_review(group: str, plural: str) -> None:
    """Asking about others is itself a request the policy must allow."""
    gauntlet.authorize(gauntlet.authenticate(request), abac.Attributes("create", plural, api_group=group))


def _user_info(user: User) -> dict:
    info = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    return info


def _review(group: str, plural: str) -> dict:
    """The review in the body, read as a create's body is: JSON or YAML, or
    a format registered in hooks.decoders (kubectl auth can-i sends
    protobuf, which kubectl_compat reads); 415 for any other."""
    return decode.decode_object(request.get_data(), request.content_type, registry.lookup(group, "v1", plural))
