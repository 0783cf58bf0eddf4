"""TokenRequest: POST serviceaccounts/NAME/token, what `kubectl create token` and kubelets send.

    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
     "spec": {"audiences": [...], "expirationSeconds": 3600,
              "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "..."}}}

The answer is the same object with status.token and
status.expirationTimestamp (201 Created). Nothing is stored: the token is
signed (sa_tokens.py) and handed back. Authorization asked `create` on
serviceaccounts/token first (rest.serve_resource), so RBAC decides who may
mint tokens for whom, and a kubelet only for its own pods (node_authorizer.py,
and NodeRestriction below).

Kubernetes checks the same things in the same words
(pkg/registry/core/serviceaccount/storage/token.go,
pkg/apis/authentication/validation/validation.go); it also binds tokens to
Secrets and Nodes, which this server leaves out: a pod is what a kubelet binds to.
"""
from __future__ import annotations

from flask import request

import api_errors
import decode
import node_restriction
import objects
from common.model import field_errors
from request_context import respond, server
from sa_tokens import NODES, PODS, SERVICE_ACCOUNTS

MIN_SECONDS = 600                 # "may not specify a duration less than 10 minutes"
MAX_SECONDS = 2 ** 32
DEFAULT_SECONDS = 3600            # TokenRequestSpec's default
KIND = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}


def _spec_errors(spec: dict) -> list:
    errors = []
    seconds = spec.get("expirationSeconds")
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        errors.append(field_errors.invalid("spec.expirationSeconds", seconds, "must be a whole number of seconds"))
    elif seconds < MIN_SECONDS:
        errors.append(field_errors.invalid("spec.expirationSeconds", seconds,
                                           "may not specify a duration less than 10 minutes"))
    elif seconds > MAX_SECONDS:
        errors.append(field_errors.invalid("spec.expirationSeconds", seconds,
                                           "may not specify a duration larger than 2^32 seconds"))
    audiences = spec.get("audiences")
    if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
        errors.append(field_errors.invalid("spec.audiences", audiences, "must be a list of non-empty strings"))
    ref = spec.get("boundObjectRef")
    if ref is not None and (not isinstance(ref, dict) or ref.get("kind") != "Pod"):
        errors.append(field_errors.not_supported("spec.boundObjectRef.kind", (ref or {}).get("kind")
                                                 if isinstance(ref, dict) else ref, ["Pod"]))
    return errors


def _bound_pod(account_name: str, namespace: str, ref: dict) -> dict:
    """The pod a token is to be bound to: it exists, runs as this
    account, and is the one the reference's uid names."""
    pod = server().store.get(PODS, namespace, ref.get("name", ""))
    if pod is None:
        raise api_errors.not_found(PODS, ref.get("name", ""))
    if pod["spec"].get("serviceAccountName") != account_name:
        raise api_errors.bad_request(f'cannot bind token for serviceaccount "{account_name}" to pod running '
                                     "with different serviceaccount name.")
    if ref.get("uid") and ref["uid"] != pod["metadata"]["uid"]:
        raise api_errors.conflict("Pod", ref["name"], f"the UID in the bound object reference ({ref['uid']}) "
                                  "does not match the UID in record. The object might have been deleted and "
                                  "then recreated")
    return pod


# [START token-request]
def create_token(info):
    issuer = server().token_issuer
    if issuer is None:
        raise api_errors.APIError(404, "NotFound", "this API server issues no ServiceAccount tokens: start it "
                                  "with --service-account-signing-key-file (make certs writes .certs/sa.key)")
    body = decode.decode_any(request.get_data(), request.content_type, info.resource)   # kubectl create token: protobuf
    if not isinstance(body, dict):
        raise api_errors.bad_request("the body must be a TokenRequest object")
    spec = {k: v for k, v in (body.get("spec") or {}).items() if v is not None}   # protobuf: unset is None
    spec.setdefault("expirationSeconds", DEFAULT_SECONDS)
    spec["audiences"] = spec.get("audiences") or list(server().api_audiences)
    errors = _spec_errors(spec)
    if errors:
        raise api_errors.invalid(info.resource, "TokenRequest", info.name, errors)
    account = server().store.get(SERVICE_ACCOUNTS, info.namespace, info.name)
    if account is None:
        raise api_errors.not_found(SERVICE_ACCOUNTS, info.name)
    if "NodeRestriction" in server().admission_plugins:
        node_restriction.admit_token_request(info, spec.get("boundObjectRef"),
                                             lambda name: server().store.get(PODS, info.namespace, name))
    pod = node = None
    if spec.get("boundObjectRef"):
        pod = _bound_pod(info.name, info.namespace, spec["boundObjectRef"])
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": pod["metadata"]["name"],
                                  "uid": pod["metadata"]["uid"]}
        node = server().store.get(NODES, "", pod["spec"].get("nodeName") or "")
    token, expires = issuer.issue(account, spec["expirationSeconds"], spec["audiences"], pod, node)
    return respond({**KIND, "metadata": {"name": info.name, "namespace": info.namespace,
                                         "creationTimestamp": objects.now()},
                    "spec": spec, "status": {"token": token,
                                             "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}, 201)
# [END token-request]
