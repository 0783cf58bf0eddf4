"""Discovery: how a client learns what this server serves.

kubectl knows no resource types by heart. Before `kubectl get po` it asks
/api and /apis which groups, versions and resources exist, their short names
(po -> pods), verbs and categories (`kubectl get all`). It asks for the
"aggregated" form first (one answer per URL, apidiscovery.k8s.io/v2) and
falls back to the older one-request-per-group-version form; we serve both,
from the same registry table. kubectl caches the answer in ~/.kube/cache.
"""
from __future__ import annotations

import platform
import sys

from flask import Blueprint, Response, request

import api_errors
import registry
from rest import respond

bp = Blueprint("discovery", __name__)
# Every discovery route answers with and without a trailing slash, as
# Kubernetes does: the official Python client asks for /api/v1/ and /apis/.

KUBERNETES_MINOR = "32"     # the kubectl dispatcher picks its kubectl by this: keep 1.32
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_SUBRESOURCE_KIND = {"scale": ("autoscaling", "v1", "Scale"), "binding": ("", "v1", "Binding")}
_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"],
                      "binding": ["create"], "log": ["get"]}


@bp.get("/version", strict_slashes=False)
def version():
    return respond({"major": "1", "minor": KUBERNETES_MINOR, "gitVersion": f"v1.{KUBERNETES_MINOR}.0-groundup",
                    "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z",
                    "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
                    "compiler": "cpython", "platform": f"linux/{platform.machine()}"})


@bp.get("/healthz")
@bp.get("/livez")
@bp.get("/readyz")
def healthz():
    return Response("ok", mimetype="text/plain")


def _wants_aggregated() -> bool:
    return "as=APIGroupDiscoveryList" in request.headers.get("Accept", "")


def _aggregated(items: list) -> Response:
    body = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
    response = respond(body)
    response.headers["Content-Type"] = AGGREGATED     # exactly this, or kubectl finds nothing
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
                          "resources": [_resource_discovery(r) for r in registry.in_group_version(group, v)]}
                         for v in registry.group_versions()[group]]}


@bp.get("/api", strict_slashes=False)
def core_versions():
    if _wants_aggregated():
        return _aggregated([_group_discovery("")])
    return respond({"kind": "APIVersions", "versions": registry.group_versions()[""],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}]})


def _group(group: str) -> dict:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.group_versions()[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


@bp.get("/apis", strict_slashes=False)
def groups():
    named = [g for g in registry.group_versions() if g]
    if _wants_aggregated():
        return _aggregated([_group_discovery(g) for g in named])
    return respond({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in named]})


@bp.get("/apis/<group>", strict_slashes=False)
def group(group: str):
    if group not in registry.group_versions() or not group:
        raise api_errors.not_found("groups", group)
    return respond({"kind": "APIGroup", "apiVersion": "v1", **_group(group)})


@bp.get("/api/<version>", strict_slashes=False)
def core_resources(version: str):
    return _resource_list("", version)


@bp.get("/apis/<group>/<version>", strict_slashes=False)
def group_resources(group: str, version: str):
    return _resource_list(group, version)


def _resource_list(group: str, version: str):
    served = registry.in_group_version(group, version)
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
