"""The static token file and the Bearer header: who is asking."""
from __future__ import annotations

import csv
import hmac
import secrets

import pytest
from werkzeug.datastructures import Headers

import api_errors
import tokens
from authentication import ANONYMOUS_USER, User

ADMIN = "adm1n-T0ken_with.all~chars+/=="
NODE = "n0de-token-000000000000000000001"
SCHED = "sched-token-0000000000000000000"
GOOD_FILE = (
    f'{ADMIN},admin,admin-uid,system:masters\n'
    f'\n'                                                  # blank lines are skipped
    f'{NODE},system:node:node1,node1,"system:nodes,extra"\n'
    f'{SCHED},scheduler,scheduler\n'                       # no groups column
    f'tok-empty-groups,viewer,viewer,\n'                   # an empty groups column
    f'tok-listed,me,me,"system:authenticated,,a"\n'
)


def write(tmp_path, text: str, name: str = "tokens.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def authn(tmp_path) -> tokens.TokenAuthenticator:
    return tokens.TokenAuthenticator(write(tmp_path, GOOD_FILE))


@pytest.mark.parametrize("token, user", [
    (ADMIN, User("admin", ("system:masters", "system:authenticated"), "admin-uid")),
    (NODE, User("system:node:node1", ("system:nodes", "extra", "system:authenticated"), "node1")),
    (SCHED, User("scheduler", ("system:authenticated",), "scheduler")),
    ("tok-empty-groups", User("viewer", ("system:authenticated",), "viewer")),
    # listed once, empty group names dropped
    ("tok-listed", User("me", ("system:authenticated", "a"), "me")),
])
def test_a_known_token_is_its_user_with_system_authenticated(authn, token, user):
    assert authn.authenticate({"Authorization": f"Bearer {token}"}) == user


@pytest.mark.parametrize("header", [
    f"bearer {SCHED}",          # the scheme is case-insensitive (RFC 7235), as in Kubernetes
    f"BEARER {SCHED}",
    f"  Bearer {SCHED}  ",      # surrounding whitespace is dropped, as in Kubernetes
])
def test_header_forms_kubernetes_accepts(authn, header):
    assert authn.authenticate({"Authorization": header}).name == "scheduler"


def test_header_name_is_case_insensitive(authn):
    assert authn.authenticate({"authorization": f"Bearer {SCHED}"}).name == "scheduler"
    assert authn.authenticate(Headers([("AUTHORIZATION", f"Bearer {SCHED}")])).name == "scheduler"


HOSTILE = [
    pytest.param({}, id="no header"),
    pytest.param({"Authorization": ""}, id="empty"),
    pytest.param({"Authorization": "Bearer"}, id="scheme only"),
    pytest.param({"Authorization": "Bearer "}, id="empty token"),
    pytest.param({"Authorization": f"Bearer  {SCHED}"}, id="two spaces"),
    pytest.param({"Authorization": f"Bearer\t{SCHED}"}, id="tab"),
    pytest.param({"Authorization": f"Bearer {SCHED} extra"}, id="extra word"),
    pytest.param({"Authorization": f"Basic {SCHED}"}, id="wrong scheme"),
    pytest.param({"Authorization": f"Token {SCHED}"}, id="other scheme"),
    pytest.param({"Authorization": SCHED}, id="no scheme"),
    pytest.param({"Authorization": "Bearer nope"}, id="unknown"),
    pytest.param({"Authorization": f"Bearer {SCHED[:-1]}"}, id="one short"),
    pytest.param({"Authorization": f"Bearer {SCHED}x"}, id="one long"),
    pytest.param({"Authorization": f"Bearer {SCHED.upper()}"}, id="tokens are case-sensitive"),
    pytest.param({"Authorization": "Bearer tøken"}, id="non-ASCII"),
    pytest.param({"Authorization": "Bearer ticket\u00a0x"}, id="non-breaking space"),
    pytest.param({"Authorization": f"Bearer {SCHED}\x00"}, id="NUL"),
    pytest.param({"Authorization": f"Bearer {SCHED}, Bearer {ADMIN}"}, id="two headers folded"),
    pytest.param(Headers([("Authorization", f"Bearer {SCHED}"), ("Authorization", f"Bearer {ADMIN}")]),
                 id="two headers"),
    pytest.param({"Authorization": "Bearer " + "a" * 1_000_000}, id="huge"),
    pytest.param({"Authorization": "Bearer =abc"}, id="padding first"),
    pytest.param({"Authorization": b"Bearer x"}, id="bytes"),
]


@pytest.mark.parametrize("headers", HOSTILE)
def test_anything_but_a_known_token_is_401_unauthorized(authn, headers):
    with pytest.raises(api_errors.APIError) as caught:
        authn.authenticate(headers)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (401, "Unauthorized", "Unauthorized")
    assert caught.value.status()["code"] == 401


def test_the_401_never_echoes_the_token(authn):
    with pytest.raises(api_errors.APIError) as caught:
        authn.authenticate({"Authorization": "Bearer secret-guess-123"})
    assert "secret-guess" not in str(caught.value.status())


def test_anonymous_only_without_any_header(tmp_path):
    authn = tokens.TokenAuthenticator(write(tmp_path, GOOD_FILE), anonymous=True)
    assert authn.authenticate({}) == ANONYMOUS_USER
    assert ANONYMOUS_USER.groups == ("system:unauthenticated",)
    # A header that is wrong is still a 401: anonymous is for no credentials at all.
    for header in ("Bearer nope", "Basic abc", ""):
        with pytest.raises(api_errors.APIError):
            authn.authenticate({"Authorization": header})
    assert authn.authenticate({"Authorization": f"Bearer {SCHED}"}).name == "scheduler"


def test_every_entry_is_compared_in_constant_time(authn, monkeypatch):
    """hmac.compare_digest runs against every entry, with 32-byte digests on
    both sides, whether the token is first, last, wrong or nearly right."""
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    entries = len(authn.entries)
    for token in (ADMIN, "tok-listed", "nope", ADMIN[:-1], "x" * 300):
        calls.clear()
        try:
            authn.authenticate({"Authorization": f"Bearer {token}"})
        except api_errors.APIError:
            pass
        assert calls == [(32, 32)] * entries, token


def test_tokens_are_kept_only_as_digests(authn):
    assert all(isinstance(d, bytes) and len(d) == 32 for d, _ in authn.entries)
    assert ADMIN not in repr(authn.__dict__)


def test_the_request_hook_reads_request_headers(authn):
    class Request:
        headers = Headers([("Authorization", f"Bearer {NODE}")])
    assert authn(Request()).name == "system:node:node1"


BAD_FILES = [
    ("a,b\n", 1, "has 2 column(s), needs at least 3"),
    ("# tokens for the cluster\n", 1, "a line starting with # is not a comment"),
    (f"{ADMIN},admin,1\n,bob,2\n", 2, "empty token"),
    (f"{ADMIN},admin,1\n\n{ADMIN},bob,2\n", 3, "duplicate token (first on line 1)"),
    (f"{ADMIN},,1\n", 1, "missing user name"),
    (f"{ADMIN}, admin,1\n", 1, "has spaces around it"),
    ("two words,admin,1\n", 1, "characters a Bearer header cannot carry"),
    ("tøken,admin,1\n", 1, "characters a Bearer header cannot carry"),
    (f'{ADMIN},admin,1\n{NODE},"node,1\n', 2, "unexpected end of data"),
    (f'{ADMIN},ad"min,1\n', 1, "quote or control character in column 2"),
    (f'{ADMIN},admin,1\n{NODE},n\x00,1\n', 2, "quote or control character in column 2"),
    (f'{ADMIN},admin,"1\n2"\n', 2, "quote or control character in column 3"),
    (f'{ADMIN},admin,1,"a,b\tc"\n', 1, "quote or control character in column 4"),
]


@pytest.mark.parametrize("text, line, why", BAD_FILES)
def test_a_bad_file_is_refused_naming_file_and_line(tmp_path, text, line, why):
    path = write(tmp_path, text)
    with pytest.raises(tokens.TokenFileError) as caught:
        tokens.TokenAuthenticator(path)
    message = str(caught.value)
    assert message.startswith(f"token file {path}, line {line}: "), message
    assert why in message
    # Never the secret itself, not even in an error a terminal shows.
    assert ADMIN not in message and NODE not in message


@pytest.mark.parametrize("setup, why", [
    (lambda p: p.write_text(""), "holds no tokens"),
    (lambda p: p.write_text("\n\n"), "holds no tokens"),
    (lambda p: p.write_bytes(b"\xff\xfe,admin,1\n"), "not UTF-8 text"),
    (lambda p: None, "cannot read it: No such file or directory"),
    (lambda p: p.mkdir(), "cannot read it"),
])
def test_an_unusable_file_is_refused_naming_the_file(tmp_path, setup, why):
    path = tmp_path / "tokens.csv"
    setup(path)
    with pytest.raises(tokens.TokenFileError) as caught:
        tokens.TokenAuthenticator(path)
    assert str(caught.value).startswith(f"token file {path}: ")
    assert why in str(caught.value)


def test_crlf_line_endings_and_quoted_fields(tmp_path):
    path = write(tmp_path, f'"{ADMIN}","admin","1","system:masters"\r\n{SCHED},scheduler,2\r\n')
    authn = tokens.TokenAuthenticator(path)
    assert authn.authenticate({"Authorization": f"Bearer {ADMIN}"}).groups == ("system:masters", "system:authenticated")
    assert authn.authenticate({"Authorization": f"Bearer {SCHED}"}).uid == "2"


def test_a_file_certs_py_writes_loads(tmp_path):
    rows = [[secrets.token_urlsafe(32), "admin", "admin", "system:masters"],
            [secrets.token_urlsafe(32), "scheduler", "scheduler", ""],
            [secrets.token_urlsafe(32), "system:node:node1", "system:node:node1", "system:nodes"]]
    with open(tmp_path / "tokens.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    authn = tokens.TokenAuthenticator(tmp_path / "tokens.csv")
    for token, name, _, _ in rows:
        assert authn.authenticate({"Authorization": f"Bearer {token}"}).name == name
