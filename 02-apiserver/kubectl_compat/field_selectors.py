"""Field selectors: `?fieldSelector=spec.nodeName=node1,status.phase!=Failed`.

Label selectors match any label; field selectors match only the few fields
each kind declares selectable (registry.Resource.selectable_fields), because
Kubernetes indexes those. The kubelet's `spec.nodeName=<me>` watch is the
one the whole cluster depends on: it is how a node learns of its pods.
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


def parse_field_selector(text: str | None, resource) -> FieldSelector:
    """Parse and check against the fields `resource` supports; 400 otherwise."""
    requirements = []
    for term in filter(None, (text or "").split(",")):
        for operator, equal in (("!=", False), ("==", True), ("=", True)):
            field, found, value = term.partition(operator)
            if found:
                break
        else:
            raise api_errors.bad_request(f"invalid field selector: {term!r}: expected field=value or field!=value")
        field = field.strip()
        if field not in ALWAYS and field not in resource.selectable_fields:
            raise api_errors.bad_request(f'field label not supported: {field} (for {resource}: '
                                         f'{", ".join(ALWAYS + resource.selectable_fields)})')
        requirements.append(FieldRequirement(field, equal, value.strip()))
    return FieldSelector(requirements)


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
