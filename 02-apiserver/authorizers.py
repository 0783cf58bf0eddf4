"""`--authorization-mode=RBAC,ABAC`: several authorizers, asked in turn.

Each authorizer answers a request with one of three decisions:

    "allow"        let it through; ask no one else
    "deny"         refuse it; ask no one else
    "no opinion"   nothing here says yes: ask the next one

and a reason. The first allow or deny decides; when every authorizer has no
opinion the request is refused (403), with their reasons joined. So an
authorizer only has to know what it grants: RBAC knows its bindings, ABAC
its policy lines, and a request neither mentions falls through both. This
is Kubernetes' union authorizer (k8s.io/apiserver pkg/authorization/union).

In front of every chain stands one more link, as in kube-apiserver: members
of system:masters are allowed everything without asking anyone, so an
administrator cannot lock themselves out by deleting a binding.

The modes (kube-apiserver's names):

    AlwaysAllow   everyone signed in may do anything
    ABAC          the policy file of --authorization-policy-file (abac.py)
    RBAC          Roles and ClusterRoles, granted by bindings (rbac.py)
    Node          kubelets: only what their own pods need (node_authorizer.py)
"""
from __future__ import annotations

import abac
import rbac
import rbac_bootstrap
from authentication import PRIVILEGED_GROUP
from node_authorizer import NodeAuthorizer

MODES = ("AlwaysAllow", "ABAC", "RBAC", "Node")


class AlwaysAllow:
    def decide(self, user, attributes) -> tuple[str, str]:
        return "allow", ""

    def rules_for(self, user, namespace: str):
        return [abac.ResourceRule(("*",), ("*",), ("*",))], [abac.NonResourceRule(("*",), ("*",))]


class PrivilegedGroup:
    """system:masters may do anything; it lists no rules (Kubernetes' neither)."""

    def decide(self, user, attributes) -> tuple[str, str]:
        return ("allow", "") if PRIVILEGED_GROUP in user.groups else ("no opinion", "")


# [START authorizer-chain]
class Chain:
    """The app's authorizer: server().authorizer(user, RequestInfo or Attributes)
    returns if the request is allowed and raises 403 Forbidden if not."""

    def __init__(self, authorizers):
        self.authorizers = (PrivilegedGroup(), *authorizers)

    def decide(self, user, attributes: abac.Attributes) -> tuple[str, str]:
        reasons = []
        for authorizer in self.authorizers:
            decision, reason = authorizer.decide(user, attributes)
            if decision in ("allow", "deny"):
                return decision, reason
            if reason:
                reasons.append(reason)
        return "no opinion", "\n".join(reasons)

    def __call__(self, user, info) -> None:
        attributes = info if isinstance(info, abac.Attributes) else abac.attributes_from(info)
        decision, reason = self.decide(user, attributes)
        if decision != "allow":
            # Kubernetes' text, "<what> is forbidden: User ... cannot ...[: reason]", and no
            # reason at all when none was given (RBAC's usual no opinion): Forbidden and
            # forbiddenMessage in k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go, v1.32.
            raise abac.forbidden(user, attributes, reason)
# [END authorizer-chain]

    def rules_for(self, user, namespace: str):
        """Every rule any authorizer lists for the user (`kubectl auth can-i --list`)."""
        resource_rules, path_rules = [], []
        for authorizer in self.authorizers:
            if hasattr(authorizer, "rules_for"):
                more_resources, more_paths = authorizer.rules_for(user, namespace)
                resource_rules += more_resources
                path_rules += more_paths
        return resource_rules, path_rules


def parse_modes(text: str) -> list[str]:
    """"Node,RBAC" -> ["Node", "RBAC"]; ValueError names an unknown or repeated mode."""
    modes = [m.strip() for m in text.split(",")]
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"authorization mode {mode!r} is not one of {', '.join(MODES)}")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization modes {text!r}: each may appear only once")
    return modes


def build(modes: list[str], store, policy_file=None) -> Chain:
    """The chain for --authorization-mode, in its order."""
    links = {"AlwaysAllow": lambda: AlwaysAllow(),
             "ABAC": lambda: abac.ABACAuthorizer(policy_file),
             "RBAC": lambda: rbac.RBACAuthorizer(store),
             "Node": lambda: NodeAuthorizer(store, rbac_bootstrap.node_rules())}
    return Chain([links[mode]() for mode in modes])
