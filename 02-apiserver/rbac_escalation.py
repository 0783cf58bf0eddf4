"""You cannot grant what you do not hold: RBAC's escalation check.

Whoever may create Roles could otherwise write one granting everything, bind
it to themselves, and be an administrator. So a write of a Role or
ClusterRole must come from someone who already holds every permission it
lists, and a write of a binding from someone who holds every permission of
the role it binds. Two verbs open the door on purpose, for people whose job
is handing out rights:

    escalate  on roles/clusterroles: write a role with any rules
    bind      on roles/clusterroles: bind that role (name) to anyone

and members of system:masters are never checked. Refused, the answer is
Kubernetes' 403 (pkg/registry/rbac/validation/rule.go, ConfirmNoEscalation):

    roles.rbac.authorization.k8s.io "pod-reader" is forbidden: user "dev" (groups=["system:authenticated"])
    is attempting to grant RBAC permissions not currently held:
    {APIGroups:[""], Resources:["pods"], Verbs:["get"]}

"Held" means held through RBAC, in the namespace of the role or binding
(everything, for a cluster-scoped one), as in Kubernetes: a right ABAC gives
does not count, since no RBAC rule says it. Kubernetes checks before
validating the object; we check after, so a malformed Role gets its 422
with the field, not a 403 about rules that could never be stored.
"""
from __future__ import annotations

import json

import abac
import api_errors
import rbac
from authentication import PRIVILEGED_GROUP
from rbac import PolicyRule


# [START rbac-covers]
def breakdown(rule: PolicyRule) -> list[PolicyRule]:
    """One rule per (group, resource, verb[, name]) or (URL, verb)."""
    pieces = [PolicyRule((verb,), (group,), (resource,), (name,) if name else ())
              for group in rule.api_groups for resource in rule.resources for verb in rule.verbs
              for name in (rule.resource_names or ("",))]
    return pieces + [PolicyRule((verb,), non_resource_urls=(url,))
                     for url in rule.non_resource_urls for verb in rule.verbs]


def rule_covers(owner: PolicyRule, wanted: PolicyRule) -> bool:
    """Does holding `owner` mean holding all of `wanted` (one broken-down rule)?"""
    def all_in(have, want):
        return "*" in have or set(want) <= set(have)
    resources_covered = all(r in owner.resources or "*" in owner.resources
                            or ("/" in r and "*/" + r.split("/", 1)[1] in owner.resources)
                            for r in wanted.resources)
    urls_covered = all(any(u == o or (o.endswith("*") and u.startswith(o.rstrip("*")))
                           for o in owner.non_resource_urls) for u in wanted.non_resource_urls)
    names_covered = (not owner.resource_names
                     or bool(wanted.resource_names) and set(wanted.resource_names) <= set(owner.resource_names))
    return (all_in(owner.verbs, wanted.verbs) and all_in(owner.api_groups, wanted.api_groups)
            and resources_covered and urls_covered and names_covered)


def missing_rules(owner_rules: list[PolicyRule], wanted_rules: list[PolicyRule]) -> list[PolicyRule]:
    """The broken-down pieces of `wanted_rules` that no owner rule covers."""
    return [piece for rule in wanted_rules for piece in breakdown(rule)
            if not any(rule_covers(owner, piece) for owner in owner_rules)]
# [END rbac-covers]


def compact(rules: list[PolicyRule]) -> list[PolicyRule]:
    """Pieces that differ only in their verb, joined again (Kubernetes' CompactRules)."""
    merged: dict[tuple, PolicyRule] = {}
    others = []
    for rule in rules:
        if len(rule.api_groups) == 1 and len(rule.resources) == 1 and len(rule.resource_names) <= 1 \
                and not rule.non_resource_urls:
            key = (rule.api_groups, rule.resources, rule.resource_names)
            before = merged.get(key)
            merged[key] = rule if before is None else PolicyRule(
                before.verbs + rule.verbs, rule.api_groups, rule.resources, rule.resource_names)
        else:
            others.append(rule)
    return others + list(merged.values())


def compact_string(rule: PolicyRule) -> str:
    """{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}: Go's %q of each list."""
    parts = [(name, values) for name, values in (
        ("APIGroups", rule.api_groups), ("Resources", rule.resources),
        ("NonResourceURLs", rule.non_resource_urls), ("ResourceNames", rule.resource_names),
        ("Verbs", rule.verbs)) if values]
    return "{" + ", ".join(f"{name}:[{' '.join(json.dumps(v) for v in values)}]" for name, values in parts) + "}"


def confirm_no_escalation(resolver: rbac.RuleResolver, user, namespace: str,
                          rules: list[PolicyRule]) -> str | None:
    """None if `user` holds all of `rules` in `namespace`; else why not."""
    owner_rules, errors = resolver.rules_for(user, namespace)
    missing = missing_rules(owner_rules, rules)
    if not missing:
        return None
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    groups = "[" + " ".join(json.dumps(g) for g in user.groups) + "]"
    message = (f"user {json.dumps(user.name)} (groups={groups}) is attempting to grant RBAC permissions "
               "not currently held:\n" + "\n".join(lines))
    if errors:
        message += f"; resolution errors: [{', '.join(errors)}]"
    return message


# [START rbac-escalation-check]
def check(server, user, obj: dict, old: dict | None, info) -> None:
    """Before a Role, ClusterRole or binding is stored: 403 if it would give
    away more than `user` holds (and `user` may not escalate or bind)."""
    kind = info.resource.kind
    if info.resource.group != rbac.GROUP or PRIVILEGED_GROUP in user.groups:
        return
    namespace = info.namespace
    if kind in ("Role", "ClusterRole"):
        rules = [PolicyRule.from_dict(r) for r in obj.get("rules") or () if isinstance(r, dict)]
        if old is not None and (old.get("rules") or []) == (obj.get("rules") or []):
            return                    # only labels or annotations changed
        if _allowed(server, user, "escalate", info.resource.plural, namespace, obj["metadata"]["name"]):
            return
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        if old is not None and old.get("subjects") == obj.get("subjects"):
            return                    # roleRef cannot change; only metadata did
        ref = obj.get("roleRef") or {}
        plural = "roles" if ref.get("kind") == "Role" else "clusterroles"
        if _allowed(server, user, "bind", plural, namespace, ref.get("name", "")):
            return
        try:
            rules = rbac.RuleResolver(server.store).role_rules(ref, namespace)
        except rbac.RoleNotFound as missing:
            raise _forbidden(info, obj, str(missing)) from None
    else:
        return
    why = confirm_no_escalation(rbac.RuleResolver(server.store), user, namespace, rules)
    if why:
        raise _forbidden(info, obj, why)
# [END rbac-escalation-check]


def _allowed(server, user, verb: str, plural: str, namespace: str, name: str) -> bool:
    """Does the authorizer chain allow `verb` on this role (escalate, bind)?"""
    attributes = abac.Attributes(verb, plural, "", rbac.GROUP, namespace, name)
    decide = getattr(server.authorizer, "decide", None)
    return decide is not None and decide(user, attributes)[0] == "allow"


def _forbidden(info, obj: dict, why: str) -> api_errors.APIError:
    name = obj["metadata"].get("name", "")
    return api_errors.APIError(403, "Forbidden", f'{info.resource} "{name}" is forbidden: {why}',
                               {"name": name, "group": rbac.GROUP, "kind": info.resource.plural})
