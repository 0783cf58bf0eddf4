"""Who is asking? On the secure port: whoever holds a token from the token file.

`--token-auth-file` names a CSV file in kube-apiserver's static token format,
one user per line:

    token,user,uid,"group1,group2"

    31ada4fd-adec-460c-809a-9e56ceadc7a4,admin,admin,system:masters
    9c6cbd9b-0d2b-4a34-8a3a-2f5f8bd2b1a2,system:node:node1,node1,system:nodes
    5b1d4e0a-7e4d-4f6c-9d5c-1f2e3a4b5c6d,scheduler,scheduler

The groups column is optional and holds any number of groups, comma
separated, so it is quoted when it holds more than one. Every user also gets
the group `system:authenticated`, as in Kubernetes. `certs.py` writes this
file with random tokens; it is a secret (mode 0600) and is never committed.

The file is read as Kubernetes reads it (Go's encoding/csv): blank lines are
skipped, fields are not trimmed, and a line starting with `#` is *not* a
comment (it would be a token starting with `#`). Kubernetes only warns about
an empty or a duplicate token and carries on; we refuse the file instead,
naming the line, because a typo in a secrets file should stop the server, not
lock a user out (or let the wrong one in) without a word.

A client proves who it is with a header: `Authorization: Bearer <token>`.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import re

import api_errors
from authentication import ANONYMOUS_USER, User

AUTHENTICATED = "system:authenticated"
# RFC 6750's b64token: the only characters a Bearer token may hold. Checking
# them (in the file and in the header) turns non-ASCII bytes, spaces, commas
# from a doubled header and control characters into a plain 401.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# Python's csv module, unlike Go's, lets a bare quote or a NUL through.
_CONTROL_OR_QUOTE = re.compile(r'["\x00-\x1f\x7f]')
# Far more than any real token; a longer header is refused before hashing it.
MAX_HEADER = 4096


class TokenFileError(ValueError):
    """The token file cannot be used; the message names the file and line."""


# [START tokens-load]
def load_token_file(path) -> list[tuple[bytes, User]]:
    """[(sha256 of token, User)] in file order; raises TokenFileError."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return _parse(path, f)
    except OSError as error:
        raise TokenFileError(f"token file {path}: cannot read it: {error.strerror}") from None
    except UnicodeDecodeError:
        raise TokenFileError(f"token file {path}: not UTF-8 text") from None


def _parse(path, f) -> list[tuple[bytes, User]]:
    entries: list[tuple[bytes, User]] = []
    first_line: dict[str, int] = {}
    # strict: a stray quote is an error, as in Go's reader, not a guess.
    reader = csv.reader(f, strict=True)
    while True:
        try:
            record = next(reader, None)
        except csv.Error as error:
            raise TokenFileError(f"token file {path}, line {reader.line_num}: {error}") from None
        if record is None:
            break
        line = reader.line_num
        if not record:
            continue                       # a blank line
        where = f"token file {path}, line {line}"
        if len(record) < 3:
            raise TokenFileError(
                f"{where}: has {len(record)} column(s), needs at least 3: token,user,uid[,\"group1,group2\"]"
                " (a line starting with # is not a comment here, as in Kubernetes)")
        token, name, uid = record[0], record[1], record[2]
        # The messages below never include the token: error output ends up
        # in logs and terminals that are not secret.
        if not token:
            raise TokenFileError(f"{where}: empty token")
        if not _TOKEN.fullmatch(token):
            raise TokenFileError(f"{where}: the token holds characters a Bearer header cannot carry"
                                 " (allowed: A-Z a-z 0-9 - . _ ~ + / and = at the end)")
        if token in first_line:
            raise TokenFileError(f"{where}: duplicate token (first on line {first_line[token]})")
        if not name:
            raise TokenFileError(f"{where}: missing user name (second column)")
        if name != name.strip():
            raise TokenFileError(f"{where}: user name {name!r} has spaces around it (fields are not trimmed)")
        for column, value in enumerate(record[1:], start=2):
            if _CONTROL_OR_QUOTE.search(value):
                raise TokenFileError(f"{where}: a quote or control character in column {column}")
        first_line[token] = line
        groups = [g for g in (record[3].split(",") if len(record) > 3 else []) if g]
        if AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        entries.append((_digest(token), User(name, tuple(groups), uid)))
    if not entries:
        raise TokenFileError(f"token file {path}: holds no tokens, so every request would be refused")
    return entries
# [END tokens-load]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def bearer_token(headers) -> str | None:
    """The token from `Authorization: Bearer <token>`; None if there is no
    such header; raises 401 for one we cannot read."""
    values = [v for k, v in headers.items() if k.lower() == "authorization"]
    if not values:
        return None
    if len(values) > 1 or not isinstance(values[0], str) or len(values[0]) > MAX_HEADER:
        raise api_errors.unauthorized()
    # Surrounding whitespace is dropped, as Kubernetes does; inside, exactly
    # one space between scheme and token. The scheme is case-insensitive
    # (RFC 7235), so "bearer" works as in Kubernetes.
    parts = values[0].strip().split(" ")
    if len(parts) != 2 or parts[0].lower() != "bearer" or not _TOKEN.fullmatch(parts[1]):
        raise api_errors.unauthorized()
    return parts[1]


# [START tokens-authenticate]
class TokenAuthenticator:
    """`authenticate(headers) -> User`, or api_errors 401 Unauthorized.

    Tokens are compared in constant time. Each stored token is kept only as
    its SHA-256 digest; a presented token is hashed and compared with
    hmac.compare_digest against *every* entry, with no early exit, so a
    right, a wrong and a nearly-right token cost the same. Hashing first
    makes every comparison 32 bytes against 32 bytes, so not even a token's
    length leaks. A dict lookup would be O(1) but its time can depend on
    what is stored; a token file holds a handful of users, so a scan of all
    of them is cheap and is easy to see to be constant time.
    """

    def __init__(self, path, anonymous: bool = False):
        self.path = str(path)
        self.entries = load_token_file(path)
        # Kubernetes' --anonymous-auth: a request with no Authorization
        # header at all is system:anonymous. A bad header is still a 401.
        self.anonymous = anonymous

    def authenticate(self, headers) -> User:
        token = bearer_token(headers)
        if token is None:
            if self.anonymous:
                return ANONYMOUS_USER
            raise api_errors.unauthorized()
        presented = _digest(token)
        found = None
        for digest, user in self.entries:
            if hmac.compare_digest(digest, presented) and found is None:
                found = user
        if found is None:
            raise api_errors.unauthorized()
        return found

    def __call__(self, request) -> User:
        """The app's authenticator hook: server().authenticator(request)."""
        return self.authenticate(request.headers)
# [END tokens-authenticate]
