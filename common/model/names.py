"""Names and labels, checked as Kubernetes checks them.

The Is* checks of k8s.io/apimachinery/pkg/util/validation (v0.32.0,
validation.go), message for message, so that a learner can search for what
they print. Lengths are counted in bytes, as Go's len() counts them.
"""

from __future__ import annotations

import re

# ------------------------------------------------------- names and labels
# The Is* checks of k8s.io/apimachinery/pkg/util/validation. Like them, each
# returns the list of reasons the value is NOT valid: an empty list means
# valid, so read `if not is_dns1123_label(name):` as "if it is a label".

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case "
                          "alphanumeric characters, '-' or '.', and must start and end with "
                          "an alphanumeric character")
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must "
                       "start and end with an alphanumeric character")
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character")
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
TOTAL_ANNOTATION_SIZE_MAX = 256 * 1024


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Kubernetes' RegexError, including its double space before " or "."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def _too_long(value: str, limit: int) -> bool:
    """Go's len(value) > limit: UTF-8 bytes, not characters."""
    return len(value.encode("utf-8", "surrogatepass")) > limit


def _matches(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def _dns1123_label_format(value: str) -> list[str]:
    if _matches(_DNS1123_LABEL_FMT, value):
        return []
    if _matches(_DNS1123_SUBDOMAIN_FMT, value):
        # A valid subdomain that is not a label: only its dots are wrong.
        return ["must not contain dots"]
    return [_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc")]


def _dns1123_subdomain_format(value: str) -> list[str]:
    if _matches(_DNS1123_SUBDOMAIN_FMT, value):
        return []
    return [_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")]


def is_dns1123_label(value: str) -> list[str]:
    """Reasons value is not a DNS-1123 label (namespaces, container names)."""
    errs = [_max_len_error(DNS1123_LABEL_MAX)] if _too_long(value, DNS1123_LABEL_MAX) else []
    return errs + _dns1123_label_format(value)


def is_dns1123_subdomain(value: str) -> list[str]:
    """Reasons value is not a DNS-1123 subdomain (most object names)."""
    errs = [_max_len_error(DNS1123_SUBDOMAIN_MAX)] if _too_long(value, DNS1123_SUBDOMAIN_MAX) else []
    return errs + _dns1123_subdomain_format(value)


_WILDCARD_DNS1123_SUBDOMAIN_FMT = r"\*\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_DNS1123_SUBDOMAIN_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid "
                                   "DNS subdomain, which must consist of lower case alphanumeric characters, "
                                   "'-' or '.' and end with an alphanumeric character")


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """Reasons value is not `*.` and a DNS subdomain (an Ingress host such as
    *.example.com: the star stands for exactly one label)."""
    errs = [_max_len_error(DNS1123_SUBDOMAIN_MAX)] if _too_long(value, DNS1123_SUBDOMAIN_MAX) else []
    if not _matches(_WILDCARD_DNS1123_SUBDOMAIN_FMT, value):
        errs.append(_regex_error(_WILDCARD_DNS1123_SUBDOMAIN_MSG, _WILDCARD_DNS1123_SUBDOMAIN_FMT,
                                 "*.example.com"))
    return errs


_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"


def is_dns1035_label(value: str) -> list[str]:
    """Reasons value is not a DNS-1035 label (Service names: they become DNS
    names and environment variables such as WEB_SERVICE_HOST, so they must
    start with a letter)."""
    errs = [_max_len_error(DNS1123_LABEL_MAX)] if _too_long(value, DNS1123_LABEL_MAX) else []
    if not _matches(_DNS1035_LABEL_FMT, value):
        errs.append(_regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
            "start with an alphabetic character, and end with an alphanumeric character",
            _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def mask_trailing_dash(name: str) -> str:
    """What Kubernetes checks of a name that gets a suffix (generateName,
    envFrom names): maskTrailingDash in apimachinery pkg/api/validation,
    generic.go. Like it, this drops the character before the dash too
    ("web-" is checked as "wea"), so the same prefixes pass and fail."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def is_qualified_name(value: str) -> list[str]:
    """Reasons value is not a qualified name: `[prefix/]name`, as label keys."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _regex_error(
            _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errs = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + msg for msg in is_dns1123_subdomain(prefix)]
    if not name:
        errs.append("name part must be non-empty")
    elif _too_long(name, QUALIFIED_NAME_MAX):
        errs.append("name part " + _max_len_error(QUALIFIED_NAME_MAX))
    if not _matches(_QUALIFIED_NAME_FMT, name):
        errs.append("name part " + _regex_error(
            _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Reasons value cannot be a label value (empty is fine)."""
    errs = [_max_len_error(LABEL_VALUE_MAX)] if _too_long(value, LABEL_VALUE_MAX) else []
    if not _matches(_LABEL_VALUE_FMT, value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT,
                                 "MyValue", "my_value", "12345"))
    return errs


def is_valid_port_name(value: str) -> list[str]:
    """Reasons value is not an IANA_SVC_NAME (a named port such as "http")."""
    errs = [_max_len_error(15)] if _too_long(value, 15) else []
    if not _matches("[-a-z0-9]+", value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), "
                    "and hyphens (-)")
    if not re.search("[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_env_var_name(value: str) -> list[str]:
    """Reasons value cannot name an environment variable."""
    fmt = "[-._a-zA-Z][-._a-zA-Z0-9]*"
    errs = []
    if not _matches(fmt, value):
        errs.append(_regex_error(
            "a valid environment variable name must consist of alphabetic characters, "
            "digits, '_', '-', or '.', and must not start with a digit",
            fmt, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _no_dot_dir(value)


def is_config_map_key(value: str) -> list[str]:
    """Reasons value cannot be a key in a ConfigMap or Secret."""
    fmt = "[-._a-zA-Z0-9]+"
    errs = [_max_len_error(DNS1123_SUBDOMAIN_MAX)] if _too_long(value, DNS1123_SUBDOMAIN_MAX) else []
    if not _matches(fmt, value):
        errs.append(_regex_error("a valid config key must consist of alphanumeric "
                                 "characters, '-', '_' or '.'", fmt,
                                 "key.name", "KEY_NAME", "key-name"))
    return errs + _no_dot_dir(value)


def _no_dot_dir(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"must not be '{value}'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []
