"""Field selectors: `?fieldSelector=spec.nodeName=node1,status.phase!=Failed`.

Label selectors match any label; field selectors match only the few fields
each kind declares selectable (registry.Resource.selectable_fields), because
Kubernetes indexes those. The kubelet's `spec.nodeName=<me>` watch is the
one the whole cluster depends on: it is how a node learns of its pods,
so they are served with or without kubectl_compat/: `init_app` registers
them into the core's `field_selector` hook (without one, the core answers
a field selector with a 400).
"""
from __future__ import annotations

from typing import NamedTuple

import api_errors

ALWAYS = ("metadata.name", "metadata.namespace")


class FieldRequirement(NamedTuple):
    field: str
    equal: bool        # "=" / "==" versus "!="
    value: str


class FieldSelector:
    def __init__(self, requirements: list[FieldRequirement]):
        self.requirements = requirements

    def matches(self, obj: dict) -> bool:
        return all((field_value(obj, r.field) == r.value) == r.equal for r in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements


def init_app(app) -> None:
    app.extensions["apiserver"].hooks.field_selector = parse_field_selector


def parse_field_selector(text: str | None, resource) -> FieldSelector:
    """Parse and check against the fields `resource` supports; 400 otherwise.

    As Kubernetes' fields.ParseSelector: terms split at commas, each term at
    its first operator; in a value, `,` `=` and `\\` must be escaped with a
    backslash, so `metadata.name==x==y` is a 400, not a search for "x==y"."""
    requirements = []
    for term in filter(None, _split_terms(text or "")):
        field, operator, value = _split_term(term)
        if not operator:
            raise api_errors.bad_request(f"invalid field selector: {term!r}: expected field=value or field!=value")
        field = field.strip()
        if field not in ALWAYS and field not in resource.selectable_fields:
            raise api_errors.bad_request(f'field label not supported: {field} (for {resource}: '
                                         f'{", ".join(ALWAYS + resource.selectable_fields)})')
        requirements.append(FieldRequirement(field, operator != "!=", _unescape(value).strip()))
    return FieldSelector(requirements)


def _split_terms(text: str) -> list[str]:
    """Split at the commas a backslash does not escape (the backslash stays)."""
    terms, start, escaped = [], 0, False
    for at, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:at])
            start = at + 1
    return terms + [text[start:]]


def _split_term(term: str) -> tuple[str, str, str]:
    """(field, operator, raw value) at the first operator; ("", "", "") if none."""
    for at in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, at):
                return term[:at], operator, term[at + len(operator):]
    return "", "", ""


def _unescape(value: str) -> str:
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise api_errors.bad_request(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise api_errors.bad_request(f"invalid field selector: unescaped character in value: {char!r} "
                                         f"(write it as \\{char})")
        else:
            out.append(char)
    if escaped:
        raise api_errors.bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


# Boolean fields Kubernetes selects on as Go bools: absent is "false", not "".
# (`--field-selector spec.hostNetwork=false` finds pods that never said.)
_ABSENT_MEANS_FALSE = ("spec.hostNetwork", "spec.unschedulable")


def field_value(obj: dict, field: str) -> str:
    """The string a selector compares: "" for an absent field, as Kubernetes does."""
    value = obj
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return "false" if field in _ABSENT_MEANS_FALSE else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):        # Event's "source" selects by component
        return str(value.get("component", ""))
    return str(value)
