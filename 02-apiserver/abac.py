"""May they do this? Kubernetes' ABAC policy file, `--authorization-policy-file`.

One policy per line, each a JSON object:

    {"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy",
     "spec": {"user": "viewer", "namespace": "*", "resource": "*", "apiGroup": "*",
              "readonly": true}}

A request is allowed when any one line matches it, and refused otherwise
(default deny). A line matches when all of these hold:

- subject: `user` equals the user's name, and/or `group` is one of the user's
  groups; "*" matches anyone. A line naming neither matches no one.
  Signed-in users are all in `system:authenticated`; anonymous ones in
  `system:unauthenticated`.
- readonly: a `"readonly": true` line allows only get, list and watch.
- for a request about a resource (/api/v1/namespaces/default/pods):
  `namespace`, `resource` and `apiGroup` each equal the request's, or are "*".
  A field left out is "", and "" matches only "": a line without
  `namespace` covers cluster-scoped kinds and all-namespace lists only;
  without `apiGroup` it covers only the core group ("" - pods, nodes, ...).
  `resource` is the plural; a subresource is not matched on its own, so
  "pods" covers pods/status, pods/log and pods/binding too.
- for any other path (/version, /api, /apis/apps/v1, /healthz, /openapi/v3):
  `nonResourcePath` equals the path, or is "*", or ends in "*" and is a
  prefix of it ("/apis/*", "/api*").

There is no verb field: ABAC only knows "read" or "everything", and no way
to name one subresource; an RBAC rule lists verbs and "pods/status"
separately. But the reason Kubernetes gave for moving on to RBAC (1.6) was
another: an ABAC policy is a file on the master, so a change needs root there
and a restart of the API server, while RBAC's roles and bindings are API
objects, changed while the cluster runs, whose management can be delegated
("RBAC Support in Kubernetes", kubernetes.io blog, 2017; see part 3).

Blank lines and lines starting with `#` are skipped, as in Kubernetes. We
are stricter than Kubernetes in one way: an unknown field (say "readOnly")
is an error rather than silently ignored, because ignoring that one would
grant write access.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import api_errors
import registry

API_VERSION = "abac.authorization.kubernetes.io/v1beta1"
_STRING_FIELDS = ("user", "group", "namespace", "resource", "apiGroup", "nonResourcePath")
_READ_VERBS = ("get", "list", "watch")    # Kubernetes' Attributes.IsReadOnly


class PolicyFileError(ValueError):
    """The policy file cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Policy:
    user: str = ""
    group: str = ""
    namespace: str = ""
    resource: str = ""
    apiGroup: str = ""
    nonResourcePath: str = ""
    readonly: bool = False
    line: int = 0                # where it came from, for messages and tests


@dataclass(frozen=True)
class Attributes:
    """What is asked: a resource request (resource set) or a path (path set)."""
    verb: str
    resource: str = ""           # plural: "pods"; "" for a non-resource request
    subresource: str = ""        # "status", "log", "binding", ...
    api_group: str = ""          # "" is the core group
    namespace: str = ""
    name: str = ""
    path: str = ""               # non-resource requests only: "/version"

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)


def attributes_from(info) -> Attributes:
    """From a request_info.RequestInfo."""
    resource = info.resource
    namespace = info.namespace
    # Kubernetes files a Namespace object under its own name, so a policy
    # for namespace "team-a" covers GET /api/v1/namespaces/team-a too.
    if resource.group == "" and resource.plural == "namespaces" and info.name:
        namespace = info.name
    return Attributes(info.verb, resource.plural, info.subresource, resource.group,
                      namespace, info.name)


def non_resource_attributes(method: str, path: str) -> Attributes:
    # For paths the verb is the HTTP method in lower case ("get", "post"),
    # as in Kubernetes; so a HEAD is "head", which a readonly line refuses.
    return Attributes(method.lower(), path=path)


# [START abac-load]
def load_policy_file(path) -> list[Policy]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as error:
        raise PolicyFileError(f"error reading policy file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise PolicyFileError(f"error reading policy file {path}: not UTF-8 text") from None
    policies = []
    for number, text in enumerate(lines, start=1):
        if not text.strip() or text.strip().startswith("#"):
            continue
        try:
            policies.append(parse_policy(text, number))
        except ValueError as error:     # json.JSONDecodeError is a ValueError
            shown = text if len(text) <= 200 else text[:200] + "..."
            # Kubernetes' shape: "error reading policy file F, line N: <line>: <why>"
            raise PolicyFileError(f"error reading policy file {path}, line {number}: {shown}: {error}") from None
    return policies


def parse_policy(text: str, line: int = 0) -> Policy:
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError("a policy line is one JSON object")
    if "apiVersion" not in document:
        raise ValueError(f'no apiVersion: write {{"apiVersion": "{API_VERSION}", "kind": "Policy", '
                         '"spec": {...}} (unversioned policy lines are not supported)')
    if document.get("apiVersion") != API_VERSION or document.get("kind") != "Policy":
        raise ValueError(f'apiVersion must be "{API_VERSION}" and kind "Policy"')
    unknown = sorted(set(document) - {"apiVersion", "kind", "spec"})
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    spec = document.get("spec")
    if not isinstance(spec, dict):
        raise ValueError("spec must be an object")
    unknown = sorted(set(spec) - set(_STRING_FIELDS) - {"readonly"})
    if unknown:
        raise ValueError(f"unknown field spec.{unknown[0]} (fields: {', '.join(_STRING_FIELDS)}, readonly)")
    for field in _STRING_FIELDS:
        if not isinstance(spec.get(field, ""), str):
            raise ValueError(f"spec.{field} must be a string")
    if not isinstance(spec.get("readonly", False), bool):
        raise ValueError("spec.readonly must be true or false")
    policy = Policy(**spec, line=line)
    # Both would load in Kubernetes and then never match anything: almost
    # certainly not what the author meant.
    if not policy.user and not policy.group:
        raise ValueError('names neither user nor group, so it matches no one '
                         '("user": "*" is everyone, "group": "system:authenticated" everyone signed in)')
    if not policy.resource and not policy.nonResourcePath:
        raise ValueError('names neither resource nor nonResourcePath, so it matches no request')
    return policy
# [END abac-load]


# [START abac-matches]
def matches(policy: Policy, user, attributes: Attributes) -> bool:
    return (subject_matches(policy, user)
            and (attributes.verb in _READ_VERBS or not policy.readonly)
            and (resource_matches(policy, attributes) if attributes.is_resource_request
                 else path_matches(policy, attributes.path)))


def subject_matches(policy: Policy, user) -> bool:
    if not policy.user and not policy.group:
        return False
    if policy.user and policy.user not in ("*", user.name):
        return False
    if policy.group and policy.group != "*" and policy.group not in user.groups:
        return False
    return True


def resource_matches(policy: Policy, a: Attributes) -> bool:
    return (policy.namespace in ("*", a.namespace)
            and policy.resource in ("*", a.resource)
            and policy.apiGroup in ("*", a.api_group))


def path_matches(policy: Policy, path: str) -> bool:
    pattern = policy.nonResourcePath
    if not pattern:
        return False
    if pattern == "*" or pattern == path:
        return True
    return pattern.endswith("*") and path.startswith(pattern.rstrip("*"))
# [END abac-matches]


# What Kubernetes appends when no ABAC line matched.
NO_MATCH = "No policy matched."


def forbidden(user, a: Attributes, reason: str = NO_MATCH) -> api_errors.APIError:
    """403 with Kubernetes' message, as kubectl prints it:

    pods is forbidden: User "node1" cannot list resource "pods" in API group "" in the namespace "default": No policy matched.
    """
    if not a.is_resource_request:
        message = f"forbidden: User {_quote(user.name)} cannot {a.verb} path {_quote(a.path)}"
        details = None
    else:
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        scope = f"in the namespace {_quote(a.namespace)}" if a.namespace else "at the cluster scope"
        why = (f"User {_quote(user.name)} cannot {a.verb} resource {_quote(resource)} "
               f"in API group {_quote(a.api_group)} {scope}")
        # "deployments.apps", as Go's GroupResource prints itself.
        qualified = f"{a.resource}.{a.api_group}" if a.api_group else a.resource
        named = f"{qualified} {_quote(a.name)}" if a.name else qualified
        message = f"{named} is forbidden: {why}"
        details = {k: v for k, v in (("name", a.name), ("group", a.api_group),
                                     ("kind", a.resource)) if v}
    if reason:
        message = f"{message}: {reason}"
    # Kubernetes escapes these so a refusal never looks like HTML.
    message = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return api_errors.APIError(403, "Forbidden", message, details)


def _quote(text: str) -> str:
    # Go's %q: double quotes, with quotes, backslashes and control
    # characters escaped, printable Unicode kept.
    return json.dumps(text, ensure_ascii=False)


# [START abac-authorize]
class ABACAuthorizer:
    def __init__(self, path):
        self.path = str(path)
        self.policies = load_policy_file(path)

    def authorize(self, user, attributes: Attributes) -> None:
        """Returns if any line allows the request; raises 403 Forbidden if none does."""
        for policy in self.policies:
            if matches(policy, user, attributes):
                return
        raise forbidden(user, attributes)

    def __call__(self, user, info) -> None:
        """The app's authorizer hook: server().authorizer(user, RequestInfo or Attributes)."""
        self.authorize(user, info if isinstance(info, Attributes) else attributes_from(info))
# [END abac-authorize]

    def decide(self, user, attributes: Attributes) -> tuple[str, str]:
        """As one link of a chain (authorizers.py): allow, or no opinion, so
        that the next authorizer may still allow what no line names."""
        if any(matches(policy, user, attributes) for policy in self.policies):
            return "allow", ""
        return "no opinion", NO_MATCH

    def rules_for(self, user, namespace: str) -> tuple[list[ResourceRule], list[NonResourceRule]]:
        """What `user` may do in `namespace`, as rules (`kubectl auth can-i --list`).

        Each line naming the user becomes one rule, as in Kubernetes' ABAC,
        with two differences. A line without a namespace (the cluster scope)
        still counts in a namespace for the cluster-scoped kinds it names,
        since a request for those carries no namespace: a kubelet may update
        nodes whichever namespace it asks about. And paths belong to no
        namespace, so a nonResourcePath line counts in every review."""
        resource_rules, path_rules = [], []
        for policy in self.policies:
            if not subject_matches(policy, user):
                continue
            if policy.resource:
                verbs = _READ_VERBS if policy.readonly else ("*",)
                resource_rules += _resource_rules(policy, namespace, verbs)
            if policy.nonResourcePath:
                # A path's verb is the HTTP method: of the read verbs, only a GET is ever asked.
                verbs = ("get",) if policy.readonly else ("*",)
                path_rules.append(NonResourceRule(verbs, (policy.nonResourcePath,)))
        return resource_rules, path_rules


@dataclass(frozen=True)
class ResourceRule:
    """Kubernetes' ResourceRule: these verbs on these resources (plural) of these groups."""
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    resource_names: tuple[str, ...] = ()    # RBAC's: only these objects; ABAC has none


@dataclass(frozen=True)
class NonResourceRule:
    verbs: tuple[str, ...]
    urls: tuple[str, ...]           # "/version", "/apis/*", "*"


def _resource_rules(policy: Policy, namespace: str, verbs: tuple[str, ...]) -> list[ResourceRule]:
    if policy.namespace in ("*", namespace):
        return [ResourceRule(verbs, (policy.apiGroup,), (policy.resource,))]
    if policy.namespace:            # another namespace
        return []
    # A cluster-scope line, asked about one namespace: its cluster-scoped kinds.
    return [ResourceRule(verbs, (r.group,), (r.plural,)) for r in registry.RESOURCES
            if not r.namespaced and policy.resource in ("*", r.plural) and policy.apiGroup in ("*", r.group)]
