"""A file holding one bearer token: the credential the API server presents
to every kubelet (`--kubelet-client-token-file`), and the one each kubelet
accepts (`--authentication-token-file`). `make certs` writes it as
.certs/kubelet-client.token.
"""
from __future__ import annotations

import hashlib
import hmac


class TokenFileError(ValueError):
    """The file cannot serve as a token: says which file and what to do."""


def read_token_file(path: str) -> str:
    """The token in `path`: its one line, without surrounding whitespace
    (an editor's final newline is not part of the token)."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as error:
        raise TokenFileError(f"cannot read token file {path}: {error.strerror} "
                             "(make certs writes .certs/kubelet-client.token)") from None
    except UnicodeDecodeError:
        raise TokenFileError(f"token file {path} is not text: it should hold one token on one line") from None
    if not token or any(c.isspace() for c in token):
        raise TokenFileError(f"token file {path} should hold exactly one token on one line")
    return token


def same_token(presented: str, expected: str) -> bool:
    """Compare in constant time. Both sides are hashed first, so the
    comparison is always 32 bytes against 32: not even the length of the
    expected token shows in how long a wrong one takes to refuse."""
    return hmac.compare_digest(hashlib.sha256(presented.encode()).digest(),
                               hashlib.sha256(expected.encode()).digest())
