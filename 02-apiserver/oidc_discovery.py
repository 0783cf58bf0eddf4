"""Who signs ServiceAccount tokens, and with which keys: OpenID Connect discovery.

    GET /.well-known/openid-configuration   the issuer, and where its keys are
    GET /openid/v1/jwks                     the public keys, as a JSON Web Key Set

A ServiceAccount token is a JWT anyone can check who has the public key
(sa_tokens.py). Publishing the keys the way OpenID Connect providers do
lets a system outside the cluster accept a pod's token without asking the
API server about each one: a cloud's identity federation, Vault's
Kubernetes auth, another cluster. It reads the configuration, fetches the
keys, and verifies signatures itself. (Such a verifier learns nothing of
revocation: a token of a deleted pod still verifies until it expires,
which is why bound tokens are short-lived.)

Kubernetes serves both paths when it signs tokens, to the group
system:serviceaccounts by default (the ClusterRole
system:service-account-issuer-discovery), since the documents say nothing
secret; a cluster may open them to unauthenticated callers too. Without
--service-account-signing-key-file there is nothing to publish: 404.
"""
from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Blueprint
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

import api_errors
from request_context import respond, server
from sa_tokens import _algorithm, key_id

bp = Blueprint("oidc_discovery", __name__)
JWKS_PATH = "/openid/v1/jwks"


def _signing() -> tuple[str, tuple]:
    """The issuer and the verifying keys; 404 when this server signs no tokens."""
    issuer = server().token_issuer
    if issuer is None:
        raise api_errors.APIError(404, "NotFound", "the server could not find the requested resource")
    return issuer.issuer, server().service_account_keys


@bp.get("/.well-known/openid-configuration")
def openid_configuration():
    issuer, keys = _signing()
    return respond({
        "issuer": issuer,
        "jwks_uri": issuer.rstrip("/") + JWKS_PATH,     # kube-apiserver's default --service-account-jwks-uri
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": sorted({_algorithm(k) for k in keys}),
    })


@bp.get(JWKS_PATH)
def jwks():
    _, keys = _signing()
    return respond({"keys": [jwk(k) for k in keys]})


def jwk(public_key) -> dict:
    """One key as RFC 7517 writes it, with the `kid` our tokens carry in their header."""
    writer = RSAAlgorithm if isinstance(public_key, rsa.RSAPublicKey) else ECAlgorithm
    key = writer.to_jwk(public_key, as_dict=True)
    key = key if isinstance(key, dict) else json.loads(key)
    return {**key, "kid": key_id(public_key), "use": "sig", "alg": _algorithm(public_key)}
