"""ServiceAccount tokens: JWTs this server signs, and accepts when they come back.

A program in a pod has no password and no line in the token file: it gets
a token the API server signed for its ServiceAccount. The token is a JWT
(RFC 7519): three base64url parts, header.claims.signature. Anyone can
read the claims; only the holder of the signing key can make a signature
that verifies, so the server needs no list of the tokens it gave out. It
checks the signature, the dates, the audience, and that what the token
names (the ServiceAccount, the pod it is bound to) still exists with the
same uid. Deleting the pod is how a bound token is revoked.

The claims, as Kubernetes 1.32 writes them (pkg/serviceaccount/claims.go):

    iss  --service-account-issuer        sub  system:serviceaccount:NS:NAME
    aud  who may accept it (--api-audiences: this server)
    iat, nbf  when issued                exp  when it stops working
    jti  a random id, for audit logs
    kubernetes.io: {namespace, serviceaccount: {name, uid},
                    pod: {name, uid}, node: {name, uid}}   (pod and node when bound)

Signing uses PyJWT (ES256 for the P-256 key `make certs` writes, RS256
for an RSA key, as Kubernetes accepts both); nothing here is hand-rolled
crypto. The token itself is never logged.
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import uuid

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import api_errors
import registry
from authentication import User
from common.log import get_logger
from tokens import AUTHENTICATED, bearer_token

log = get_logger("apiserver")

SERVICE_ACCOUNTS = registry.for_kind("", "ServiceAccount")
PODS = registry.for_kind("", "Pod")
NODES = registry.for_kind("", "Node")
# kubeadm's choice, the name pods reach this server by (the `kubernetes` Service).
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
USER_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
PRIVATE_CLAIMS = "kubernetes.io"


def user_name(namespace: str, name: str) -> str:
    return f"{USER_PREFIX}{namespace}:{name}"


def groups(namespace: str) -> tuple[str, ...]:
    """Every ServiceAccount's groups, as Kubernetes gives them."""
    return (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED)


def _algorithm(key) -> str:
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "RS256"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        return {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}[key.curve.name]
    raise ValueError(f"unsupported key type {type(key).__name__}: use an RSA or ECDSA key")


def key_id(public_key) -> str:
    """The `kid` header: base64url of the SHA-256 of the public key's DER,
    as Kubernetes computes it (keyIDFromPublicKey, pkg/serviceaccount/jwt.go),
    so a verifier holding several keys knows which one to try."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


def load_public_keys(paths) -> list:
    """--service-account-key-file: PEM public keys, or private keys (their public half)."""
    keys = []
    for path in paths:
        data = open(path, "rb").read()
        try:
            keys.append(serialization.load_pem_public_key(data))
        except ValueError:
            keys.append(serialization.load_pem_private_key(data, password=None).public_key())
    return keys


# [START sa-token-issue]
class TokenIssuer:
    """Signs tokens with --service-account-signing-key-file."""

    def __init__(self, signing_key_path: str, issuer: str):
        with open(signing_key_path, "rb") as f:
            self.key = serialization.load_pem_private_key(f.read(), password=None)
        self.algorithm = _algorithm(self.key)
        self.kid = key_id(self.key.public_key())
        self.issuer = issuer

    def issue(self, account: dict, seconds: int, audiences: list[str], pod: dict | None = None,
              node: dict | None = None, now: datetime.datetime | None = None) -> tuple[str, datetime.datetime]:
        """A token for `account`, valid `seconds` from now; with pod, bound to it."""
        now = now or datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        expires = now + datetime.timedelta(seconds=seconds)
        meta = account["metadata"]
        private = {"namespace": meta["namespace"],
                   "serviceaccount": {"name": meta["name"], "uid": meta["uid"]}}
        if pod is not None:
            private["pod"] = {"name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        if node is not None:
            private["node"] = {"name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}
        claims = {"aud": audiences, "exp": expires, "iat": now, "nbf": now, "iss": self.issuer,
                  "jti": str(uuid.uuid4()), PRIVATE_CLAIMS: private,
                  "sub": user_name(meta["namespace"], meta["name"])}
        token = jwt.encode(claims, self.key, algorithm=self.algorithm, headers={"kid": self.kid})
        return token, expires
# [END sa-token-issue]


class TokenRefused(Exception):
    """Why a token of ours is not accepted; logged, never sent (the client gets a plain 401)."""


class ServiceAccountTokens:
    """Accepts the tokens TokenIssuer made, while what they name still exists."""

    def __init__(self, public_keys: list, issuer: str, audiences: list[str], store):
        self.keys = public_keys
        self.issuer, self.audiences, self.store = issuer, audiences, store

    def is_ours(self, token: str) -> bool:
        """A JWT whose (unverified) issuer is ours: then we, not the token file, decide."""
        try:
            return jwt.decode(token, options={"verify_signature": False}).get("iss") == self.issuer
        except jwt.InvalidTokenError:
            return False

    def authenticate(self, token: str) -> User:
        try:
            claims = self.verified_claims(token)
            account = self.still_valid(claims)
        except TokenRefused as why:
            log.info("service account token refused", reason=str(why))
            raise api_errors.unauthorized() from None
        namespace, name = account["metadata"]["namespace"], account["metadata"]["name"]
        return User(user_name(namespace, name), groups(namespace), account["metadata"]["uid"])

    # [START sa-token-authenticate]
    def verified_claims(self, token: str) -> dict:
        """Signature, issuer, dates and audience: the token's own promises."""
        for key in self.keys:
            try:
                return jwt.decode(token, key, algorithms=[_algorithm(key)], audience=self.audiences,
                                  issuer=self.issuer, options={"require": ["exp", "iat", "nbf", "sub"]})
            except jwt.InvalidSignatureError:
                continue                      # another of our keys may have signed it
            except jwt.InvalidTokenError as error:
                raise TokenRefused(str(error)) from None
        raise TokenRefused("signed by no key this server trusts")

    def still_valid(self, claims: dict) -> dict:
        """What the token names still exists, with the uid it had: the
        ServiceAccount, and the pod it is bound to. Returns the account."""
        private = claims.get(PRIVATE_CLAIMS) or {}
        namespace, ref = private.get("namespace", ""), private.get("serviceaccount") or {}
        account = self.store.get(SERVICE_ACCOUNTS, namespace, ref.get("name", ""))
        if account is None or account["metadata"]["uid"] != ref.get("uid"):
            raise TokenRefused(f"serviceaccount {namespace}/{ref.get('name')} is gone (or was recreated)")
        if "pod" in private:
            pod = self.store.get(PODS, namespace, private["pod"].get("name", ""))
            if pod is None or pod["metadata"]["uid"] != private["pod"].get("uid"):
                raise TokenRefused(f"the token's pod {namespace}/{private['pod'].get('name')} is gone")
            if pod["metadata"].get("deletionTimestamp"):
                raise TokenRefused(f"the token's pod {namespace}/{pod['metadata']['name']} is being deleted")
        return account
# [END sa-token-authenticate]


def set_up(config, server) -> None:
    """--service-account-signing-key-file signs; --service-account-key-file
    (default: the signing key's public half) verifies; tokens are for
    --api-audiences (default: the issuer), as kube-apiserver defaults them."""
    if config.get("ROOT_CA_FILE"):
        with open(config["ROOT_CA_FILE"]) as f:
            server.root_ca = f.read()
    signing_key = config.get("SERVICE_ACCOUNT_SIGNING_KEY_FILE")
    if not signing_key:
        return
    issuer = config.get("SERVICE_ACCOUNT_ISSUER") or DEFAULT_ISSUER
    server.token_issuer = TokenIssuer(signing_key, issuer)
    server.api_audiences = tuple(config.get("API_AUDIENCES") or [issuer])
    keys = load_public_keys(config.get("SERVICE_ACCOUNT_KEY_FILES") or [signing_key])
    server.service_account_keys = tuple(keys)
    server.authenticator = WithServiceAccountTokens(
        server.authenticator, ServiceAccountTokens(keys, issuer, list(server.api_audiences), server.store))


class WithServiceAccountTokens:
    """The secure port's authenticator: a JWT from our issuer is checked
    here, any other token by the token file (Kubernetes asks its
    authenticators in turn, a union; the issuer says which one applies)."""

    def __init__(self, static, accounts: ServiceAccountTokens):
        self.static, self.accounts = static, accounts

    def __call__(self, request) -> User:
        token = bearer_token(request.headers)
        if token is not None and self.accounts.is_ours(token):
            return self.accounts.authenticate(token)
        return self.static(request)
