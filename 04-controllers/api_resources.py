"""Which kinds the API server serves, read from its discovery documents.

Two controllers need to know more than the kinds they were written for.
The garbage collector meets owner references to any kind (`apiVersion: v1,
kind: Node`) and must find the owner's URL (`/api/v1/nodes/NAME`); the
namespace controller must empty a namespace of every kind, including ones
added to the server after it was written. Both ask the server, as
`kubectl api-resources` does: GET /api and /apis for the group versions,
then each group version for its resources (Kubernetes' RESTMapper and
discovery client, in small).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from common.client.client import APIClient, NotFound


@dataclass(frozen=True)
class APIResource:
    group_version: str           # "v1", "apps/v1"
    plural: str                  # "pods": the URL's name for the kind
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]


def resources_in(document: dict) -> list[APIResource]:
    """The kinds of one APIResourceList; subresources (pods/status) are not kinds."""
    group_version = document.get("groupVersion", "")
    return [APIResource(group_version, entry["name"], entry["kind"], bool(entry.get("namespaced")),
                        tuple(entry.get("verbs") or ()))
            for entry in document.get("resources") or [] if "/" not in entry["name"]]


class APIResources:
    """Discovery, fetched when first needed and kept: our server's kinds are fixed while it runs."""

    def __init__(self, client: APIClient):
        self.client = client
        self._by_group_version: dict[str, list[APIResource]] = {}
        self._lock = threading.Lock()

    def group_versions(self) -> list[str]:
        core = self.client.request("GET", "/api").get("versions") or []
        groups = self.client.request("GET", "/apis").get("groups") or []
        return list(core) + [(g.get("preferredVersion") or g["versions"][0])["groupVersion"] for g in groups]

    def in_group_version(self, group_version: str) -> list[APIResource]:
        with self._lock:
            if group_version not in self._by_group_version:
                path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
                self._by_group_version[group_version] = resources_in(self.client.request("GET", path))
            return self._by_group_version[group_version]

    def all(self) -> list[APIResource]:
        return [r for gv in self.group_versions() for r in self.in_group_version(gv)]

    def for_kind(self, api_version: str, kind: str) -> APIResource | None:
        """The resource an owner reference's apiVersion and kind name, or None if not served."""
        try:
            resources = self.in_group_version(api_version)
        except NotFound:         # a group version the server does not serve
            return None
        return next((r for r in resources if r.kind == kind), None)
