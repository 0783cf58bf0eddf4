"""Validate rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

A role is a list of rules ("these verbs on these resources"); a binding
hands one role to a list of subjects (users, groups, service accounts).
Messages and paths follow k8s.io/kubernetes pkg/apis/rbac/validation.

Two of Kubernetes' choices show here. Role names are path segments, not DNS
names, so the default roles can be called `system:node`. And a binding's
roleRef may not change: a binding that silently started granting another
role would surprise everyone who had checked it; delete and re-create it.
"""

from __future__ import annotations

from common.model.field_errors import (FieldError, GoValue, child, go_string_slice, index, invalid,
                                 not_supported, required)
from common.model.validation import _get_dict, _get_list, _get_str, _items, _string_list
from common.model.validation_shared import validate_label_selector

GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def is_path_segment_name(value: str) -> list[str]:
    """A name that can be one segment of a URL path: anything but ".", ".."
    and names holding "/" or "%" (Kubernetes' IsValidPathSegmentName)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def validate_role(obj: dict) -> list[FieldError]:
    return _validate_rules(obj, namespaced=True)


def validate_cluster_role(obj: dict) -> list[FieldError]:
    errs = _validate_rules(obj, namespaced=False)
    rule = _get_dict(errs, obj.get("aggregationRule"), "aggregationRule")
    if rule is not None:
        path = child("aggregationRule", "clusterRoleSelectors")
        selectors = _get_list(errs, rule.get("clusterRoleSelectors"), path, "a list of label selectors")
        if not selectors:
            errs.append(required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors or ()):
            validate_label_selector(errs, selector, index(path, i))
    return errs


def _validate_rules(obj: dict, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for _, path, rule in _items(errs, obj.get("rules"), "rules", "policy rules"):
        errs += validate_policy_rule(rule, namespaced, path)
    return errs


def validate_policy_rule(rule: dict, namespaced: bool, path: str) -> list[FieldError]:
    """A rule names either resources (with their API groups) or URL paths, never both."""
    errs: list[FieldError] = []
    for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
        _string_list(errs, rule.get(field), child(path, field))
    if errs:
        return errs
    if not rule.get("verbs"):
        errs.append(required(child(path, "verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs")
    if urls:
        if namespaced:
            # A path such as /healthz belongs to no namespace.
            errs.append(invalid(child(path, "nonResourceURLs"), go_string_slice(urls),
                                "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(invalid(child(path, "nonResourceURLs"), go_string_slice(urls),
                                "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(required(child(path, "apiGroups"), "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(required(child(path, "resources"), "resource rules must supply at least one resource"))
    return errs


def validate_role_binding(obj: dict) -> list[FieldError]:
    return _validate_binding(obj, namespaced=True)


def validate_cluster_role_binding(obj: dict) -> list[FieldError]:
    return _validate_binding(obj, namespaced=False)


def _validate_binding(obj: dict, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    ref = _get_dict(errs, obj.get("roleRef"), "roleRef") or {}
    group = _get_str(errs, ref.get("apiGroup"), "roleRef.apiGroup") or ""
    if group != GROUP:
        errs.append(not_supported("roleRef.apiGroup", group, [GROUP]))
    kind = _get_str(errs, ref.get("kind"), "roleRef.kind") or ""
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if kind not in kinds:
        errs.append(not_supported("roleRef.kind", kind, kinds))
    name = _get_str(errs, ref.get("name"), "roleRef.name") or ""
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid("roleRef.name", name, msg) for msg in is_path_segment_name(name)]
    for _, path, subject in _items(errs, obj.get("subjects"), "subjects", "subjects"):
        errs += validate_subject(subject, namespaced, path)
    return errs


def validate_subject(subject: dict, namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = _get_str(errs, subject.get("name"), child(path, "name")) or ""
    kind = _get_str(errs, subject.get("kind"), child(path, "kind")) or ""
    group = _get_str(errs, subject.get("apiGroup"), child(path, "apiGroup")) or ""
    namespace = _get_str(errs, subject.get("namespace"), child(path, "namespace")) or ""
    if not name:
        errs.append(required(child(path, "name")))
    if kind == "ServiceAccount":
        if group:
            errs.append(not_supported(child(path, "apiGroup"), group, [""]))
        # A RoleBinding's service account defaults to the binding's namespace;
        # a ClusterRoleBinding has none to offer.
        if not namespaced and not namespace:
            errs.append(required(child(path, "namespace")))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(not_supported(child(path, "apiGroup"), group, [GROUP]))
    else:
        errs.append(not_supported(child(path, "kind"), kind, list(SUBJECT_KINDS)))
    return errs


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def validate_binding_update(new: dict, old: dict) -> list[FieldError]:
    ref = new.get("roleRef")
    if isinstance(ref, dict) and ref != old.get("roleRef"):
        # Go prints the struct: rbac.RoleRef{APIGroup:"...", Kind:"Role", Name:"x"}
        # (a field that is not a string has its own error already; shown as "")
        shown = ", ".join(f'{go}:"{_text(ref.get(json))}"' for go, json in
                          (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name")))
        return [invalid("roleRef", GoValue("rbac.RoleRef{" + shown + "}"), "cannot change roleRef")]
    return []


__all__ = ["is_path_segment_name", "validate_role", "validate_cluster_role", "validate_role_binding",
           "validate_cluster_role_binding", "validate_binding_update", "validate_policy_rule"]
