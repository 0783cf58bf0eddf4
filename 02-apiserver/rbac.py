"""May they do this? Kubernetes' RBAC: who may do what, as API objects.

    Role / ClusterRole               rules: these verbs on these resources
    RoleBinding / ClusterRoleBinding  this role, to these users, groups, service accounts

A request is allowed when some binding that names the user grants a role
with a rule that matches it. Nothing is ever denied outright: with no
matching rule RBAC has no opinion, and the next authorizer in
--authorization-mode may still allow it (authorizers.py).

Where a grant counts:

- a ClusterRoleBinding's role counts everywhere: every namespace, the
  cluster-scoped kinds, and (a ClusterRole's) URL paths;
- a RoleBinding's role counts only in the binding's namespace, whether it
  names a Role (which lives there) or a ClusterRole (a shared definition,
  such as `edit`, granted in one namespace only).

A rule matches when each of its lists matches the request:

- verbs: the request's verb (get, list, watch, create, update, patch,
  delete, deletecollection, or bind, escalate, impersonate), or "*";
- apiGroups: the group ("" is the core group), or "*";
- resources: the plural, "pods", or for a subresource "pods/log"
  ("pods" alone does not cover "pods/log"); "*" covers everything, and
  "*/scale" the scale subresource of every kind;
- resourceNames: empty (any object), or the object's name: so a rule
  with names cannot allow list, watch or create, which name no object;
- nonResourceURLs (for paths such as /healthz): the path, "*", or a
  prefix ending in "*" ("/apis/*").

As in Kubernetes (plugin/pkg/auth/authorizer/rbac/rbac.go and
pkg/registry/rbac/validation/rule.go), a binding whose role does not exist
grants nothing, and the refusal says so ("RBAC: role.rbac.authorization.k8s.io
"reader" not found"), so a deleted role is seen, not guessed at.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import registry
from abac import Attributes, NonResourceRule, ResourceRule

GROUP = "rbac.authorization.k8s.io"
ROLES = registry.for_kind(GROUP, "Role")
CLUSTER_ROLES = registry.for_kind(GROUP, "ClusterRole")
ROLE_BINDINGS = registry.for_kind(GROUP, "RoleBinding")
CLUSTER_ROLE_BINDINGS = registry.for_kind(GROUP, "ClusterRoleBinding")
ALL = "*"


@dataclass(frozen=True)
class PolicyRule:
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: dict) -> "PolicyRule":
        return cls(*(tuple(rule.get(field) or ()) for field in _FIELDS))

    def to_dict(self) -> dict:
        return {field: list(value) for field, value in zip(_FIELDS, (
            self.verbs, self.api_groups, self.resources, self.resource_names, self.non_resource_urls)) if value}


_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


# [START rbac-rule-allows]
def rule_allows(rule: PolicyRule, a: Attributes) -> bool:
    if not verb_matches(rule, a.verb):
        return False
    if not a.is_resource_request:
        return url_matches(rule, a.path)
    return (api_group_matches(rule, a.api_group)
            and resource_matches(rule, a.resource, a.subresource)
            and (not rule.resource_names or a.name in rule.resource_names))


def verb_matches(rule: PolicyRule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: PolicyRule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: PolicyRule, resource: str, subresource: str) -> bool:
    """"pods" matches pods only; "pods/log" the log; "*/log" every kind's log."""
    wanted = f"{resource}/{subresource}" if subresource else resource
    for pattern in rule.resources:
        if pattern in (ALL, wanted):
            return True
        if subresource and pattern == f"*/{subresource}":
            return True
    return False


def url_matches(rule: PolicyRule, path: str) -> bool:
    for pattern in rule.non_resource_urls:
        if pattern in (ALL, path):
            return True
        if pattern.endswith("*") and path.startswith(pattern.rstrip("*")):
            return True
    return False
# [END rbac-rule-allows]


def applies_to(subject: dict, user, binding_namespace: str) -> bool:
    """Does this subject of a binding name the user?"""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        # A RoleBinding's service account without a namespace is in the binding's.
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"system:serviceaccount:{namespace}:{name}"
    return False


class RoleNotFound(Exception):
    """A binding names a role that does not exist: it grants nothing."""


@dataclass(frozen=True)
class Grant:
    """One rule, and the binding it came through (for "allowed by ...")."""
    rule: PolicyRule
    source: str


class RuleResolver:
    """Finds the rules that apply to a user in a namespace, from the store."""

    def __init__(self, store):
        self.store = store

    # [START rbac-visit]
    def grants(self, user, namespace: str) -> Iterator[Grant | RoleNotFound]:
        """Every rule the user holds in `namespace` ("" for the cluster scope):
        first through ClusterRoleBindings, then through the namespace's
        RoleBindings. A binding whose role is missing yields the error."""
        bindings, _ = self.store.list(CLUSTER_ROLE_BINDINGS)
        if namespace:
            bindings += self.store.list(ROLE_BINDINGS, namespace)[0]
        for binding in bindings:
            where = binding["metadata"].get("namespace", "")
            subject = next((s for s in binding.get("subjects") or ()
                            if applies_to(s, user, where)), None)
            if subject is None:
                continue
            try:
                rules = self.role_rules(binding["roleRef"], where)
            except RoleNotFound as missing:
                yield missing
                continue
            source = describe(binding, subject)
            for rule in rules:
                yield Grant(rule, source)
    # [END rbac-visit]

    def role_rules(self, ref: dict, namespace: str) -> list[PolicyRule]:
        """The rules of the role a binding in `namespace` refers to."""
        if ref.get("kind") == "Role":
            role = self.store.get(ROLES, namespace, ref.get("name", ""))
            missing = f'role.{GROUP} "{ref.get("name", "")}" not found'
        elif ref.get("kind") == "ClusterRole":
            role = self.store.get(CLUSTER_ROLES, "", ref.get("name", ""))
            missing = f'clusterrole.{GROUP} "{ref.get("name", "")}" not found'
        else:
            raise RoleNotFound(f'unsupported role reference kind: "{ref.get("kind")}"')
        if role is None:
            raise RoleNotFound(missing)
        return [PolicyRule.from_dict(r) for r in role.get("rules") or () if isinstance(r, dict)]

    def rules_for(self, user, namespace: str) -> tuple[list[PolicyRule], list[str]]:
        """All the user's rules in `namespace`, and what could not be resolved."""
        rules, errors = [], []
        for grant in self.grants(user, namespace):
            if isinstance(grant, RoleNotFound):
                errors.append(str(grant))
            else:
                rules.append(grant.rule)
        return rules, errors


def describe(binding: dict, subject: dict) -> str:
    """`ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`, as Kubernetes
    names the grant that allowed a request."""
    meta, ref = binding["metadata"], binding["roleRef"]
    namespace = meta.get("namespace", "")
    name = f'{meta["name"]}/{namespace}' if namespace else meta["name"]
    who = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        who = f'{who}/{subject.get("namespace") or namespace}'
    return (f'{binding["kind"]} "{name}" of {ref.get("kind")} "{ref.get("name")}" '
            f'to {subject.get("kind")} "{who}"')


# [START rbac-authorize]
class RBACAuthorizer:
    def __init__(self, store):
        self.resolver = RuleResolver(store)

    def decide(self, user, a: Attributes) -> tuple[str, str]:
        """("allow", why) at the first rule that matches; else ("no opinion",
        the roles that could not be found, if any)."""
        missing = []
        for grant in self.resolver.grants(user, a.namespace):
            if isinstance(grant, RoleNotFound):
                missing.append(str(grant))
            elif rule_allows(grant.rule, a):
                return "allow", f"RBAC: allowed by {grant.source}"
        if not missing:
            return "no opinion", ""
        # Go's error aggregate: one error as itself, several in brackets.
        return "no opinion", "RBAC: " + (missing[0] if len(missing) == 1 else f"[{', '.join(missing)}]")
# [END rbac-authorize]

    def rules_for(self, user, namespace: str) -> tuple[list[ResourceRule], list[NonResourceRule]]:
        """What `kubectl auth can-i --list` shows: the user's rules, as they are."""
        rules, _ = self.resolver.rules_for(user, namespace)
        resource_rules = [ResourceRule(r.verbs, r.api_groups, r.resources, r.resource_names)
                          for r in rules if r.resources]
        path_rules = [NonResourceRule(r.verbs, r.non_resource_urls) for r in rules if r.non_resource_urls]
        return resource_rules, path_rules
