"""Discovery: how a client learns what this server serves.

kubectl knows no resource types by heart. Before `kubectl get po` it asks
/api and /apis which groups, versions and resources exist, their short names
(po -> pods), verbs and categories (`kubectl get all`). It asks for the
"aggregated" form first (one answer per URL, apidiscovery.k8s.io/v2) and
falls back to the older one-request-per-group-version form; we serve both,
from the same registry table. kubectl caches the answer in ~/.kube/cache.
"""
from __future__ import annotations

from flask import Blueprint, Response, request

import api_errors
import registry
from request_context import respond

bp = Blueprint("discovery", __name__)
# Every discovery route answers with and without a trailing slash, as
# Kubernetes does: the official Python client asks for /api/v1/ and /apis/.

# The aggregated document's versions, newest first. kubectl 1.30+ asks for v2
# first, 1.27-1.29 for v2beta1 only; the two have the same shape.
AGGREGATED_VERSIONS = ("v2", "v2beta1")

_SUBRESOURCE_KIND = {"scale": ("autoscaling", "v1", "Scale"), "binding": ("", "v1", "Binding"),
                     "token": ("authentication.k8s.io", "v1", "TokenRequest"),
                     "exec": ("", "v1", "PodExecOptions"), "attach": ("", "v1", "PodAttachOptions"),
                     "portforward": ("", "v1", "PodPortForwardOptions")}
_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"],
                      "binding": ["create"], "log": ["get"], "finalize": ["update"], "token": ["create"],
                      "exec": ["create", "get"], "attach": ["create", "get"], "portforward": ["create", "get"]}


def group_versions() -> dict[str, list[str]]:
    """{"": ["v1"], "apps": ["v1"], ...} in the order of the registry's table, custom groups last."""
    out: dict[str, list[str]] = {}
    for r in registry.served():
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


def in_group_version(group: str, version: str) -> list[registry.Resource]:
    return [r for r in registry.served() if r.group == group and r.version == version]


# [START discovery-negotiation]
def aggregated_content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def negotiate_discovery(accept: str) -> str | None:
    """Which answer /api and /apis give: "v2" or "v2beta1" for the
    aggregated document, None for the legacy one.

    A client lists what it can read in Accept, best first (or weighted with
    q=). kubectl 1.29 sends `...;v=v2beta1;as=APIGroupDiscoveryList,
    application/json`: it cannot read v2, so it must get v2beta1, and a
    client that only says `application/json` gets the legacy APIVersions
    or APIGroupList. Nothing acceptable is 406 Not Acceptable, as in
    Kubernetes."""
    if not accept.strip():
        return None
    for media_type, params in _by_preference(accept):
        if params.get("as") == "APIGroupDiscoveryList":
            if (media_type == "application/json" and params.get("g") == "apidiscovery.k8s.io"
                    and params.get("v") in AGGREGATED_VERSIONS):
                return params["v"]
        elif media_type in ("application/json", "application/*", "*/*") and "as" not in params:
            return None
    raise api_errors.APIError(406, "NotAcceptable", f"only the following media types are accepted: "
                              f"application/json, {', '.join(map(aggregated_content_type, AGGREGATED_VERSIONS))}")
# [END discovery-negotiation]


def _by_preference(accept: str) -> list[tuple[str, dict[str, str]]]:
    """Accept's media ranges with their parameters, highest q first (stable,
    so equal weights keep the client's order); q=0 means "never"."""
    ranges = []
    for item in accept.split(","):
        media_type, *raw_params = (part.strip() for part in item.split(";"))
        params = dict(p.split("=", 1) for p in raw_params if "=" in p)
        try:
            weight = float(params.pop("q", "1"))
        except ValueError:
            weight = 0.0
        if weight > 0 and media_type:
            ranges.append((weight, media_type.lower(), params))
    ranges.sort(key=lambda r: -r[0])
    return [(media_type, params) for _, media_type, params in ranges]


def _answer(aggregated_version: str | None, items: list, legacy: dict) -> Response:
    """The aggregated document in the version negotiated, or the legacy one.
    Either way `Vary: Accept`, so no cache in between hands one client's
    form to another."""
    if aggregated_version is None:
        response = respond(legacy)
    else:
        response = respond({"kind": "APIGroupDiscoveryList",
                            "apiVersion": f"apidiscovery.k8s.io/{aggregated_version}",
                            "metadata": {}, "items": items})
        # exactly this, or kubectl finds nothing
        response.headers["Content-Type"] = aggregated_content_type(aggregated_version)
    response.headers["Vary"] = "Accept"
    return response


def _resource_discovery(r: registry.Resource) -> dict:
    entry = {"resource": r.plural, "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
             "scope": "Namespaced" if r.namespaced else "Cluster", "singularResource": r.singular,
             "verbs": list(r.verbs)}
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    if r.subresources:
        entry["subresources"] = [
            {"subresource": s, "verbs": _SUBRESOURCE_VERBS[s],
             "responseKind": dict(zip(("group", "version", "kind"), _SUBRESOURCE_KIND.get(s, (r.group, r.version, r.kind))))}
            for s in r.subresources]
    return entry


def _group_discovery(group: str) -> dict:
    return {"metadata": {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None},
            "versions": [{"version": v, "freshness": "Current",
                          "resources": [_resource_discovery(r) for r in in_group_version(group, v)]}
                         for v in group_versions()[group]]}


@bp.get("/api", strict_slashes=False)
def core_versions():
    version = negotiate_discovery(request.headers.get("Accept", ""))
    return _answer(version, [_group_discovery("")] if version else [],
                   {"kind": "APIVersions", "versions": group_versions()[""],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}]})


def _group(group: str) -> dict:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in group_versions()[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


@bp.get("/apis", strict_slashes=False)
def groups():
    named = [g for g in group_versions() if g]
    version = negotiate_discovery(request.headers.get("Accept", ""))
    return _answer(version, [_group_discovery(g) for g in named] if version else [],
                   {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in named]})


@bp.get("/apis/<group>", strict_slashes=False)
def group(group: str):
    if group not in group_versions() or not group:
        raise api_errors.not_found("groups", group)
    return respond({"kind": "APIGroup", "apiVersion": "v1", **_group(group)})


@bp.get("/api/<version>", strict_slashes=False)
def core_resources(version: str):
    return _resource_list("", version)


@bp.get("/apis/<group>/<version>", strict_slashes=False)
def group_resources(group: str, version: str):
    return _resource_list(group, version)


def _resource_list(group: str, version: str):
    served = in_group_version(group, version)
    if not served:
        raise api_errors.APIError(404, "NotFound", f"the server could not find the requested resource "
                                  f"(group version {group + '/' if group else ''}{version})")
    resources = []
    for r in served:
        entry = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": list(r.verbs)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
        for s in r.subresources:
            sub_group, sub_version, sub_kind = _SUBRESOURCE_KIND.get(s, (r.group, r.version, r.kind))
            sub = {"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                   "kind": sub_kind, "verbs": _SUBRESOURCE_VERBS[s]}
            if (sub_group, sub_version) != (r.group, r.version):
                sub.update(group=sub_group, version=sub_version)
            resources.append(sub)
    return respond({"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": f"{group}/{version}" if group else version, "resources": resources})
