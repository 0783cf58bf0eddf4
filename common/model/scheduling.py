"""Where a pod may run, as the scheduler and the controllers both judge it:
does a toleration cover a taint, does a node match a nodeSelectorTerm.

One copy of each rule, so that the scheduler (chapter 03), the node
lifecycle controller and the DaemonSet controller (chapter 04) never
disagree about a pod. Kubernetes shares them the same way, in
k8s.io/component-helpers/scheduling.
"""
from __future__ import annotations

NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE = "NoSchedule", "NoExecute", "PreferNoSchedule"


# ---------------------------------------------------------------- taints and tolerations

def tolerates(toleration: dict, taint: dict) -> bool:
    """Does one toleration cover one taint?

    The effect must match (an empty effect in the toleration matches all).
    Operator Exists matches any value of the key, and with an empty key any
    taint at all; Equal (the default) needs key and value both equal."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not key or key == taint.get("key")
    if operator == "Equal":
        return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: list[dict], taint: dict) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


# ---------------------------------------------------------------- node selector terms

def expression_matches(expression: dict, values_of: dict) -> bool:
    """One matchExpressions (or matchFields) entry against labels (or fields)."""
    key, operator = expression.get("key"), expression.get("operator")
    values = expression.get("values") or []
    present = key in values_of
    value = values_of.get(key)
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, limit = int(value), int(values[0])
        except (TypeError, ValueError):
            return False                    # not a number: never matches, as in Kubernetes
        return have > limit if operator == "Gt" else have < limit
    return False


def term_matches(term: dict, node) -> bool:
    """A nodeSelectorTerm: all its expressions must hold. An empty term
    matches no node. node: anything with .name and .labels (the
    scheduler's view of a node, or the DaemonSet controller's)."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return (all(expression_matches(e, node.labels) for e in expressions)
            and all(expression_matches(f, {"metadata.name": node.name}) for f in fields))
