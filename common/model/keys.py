"""The key a component files an object under: "namespace/name", or "name"
for a cluster-scoped object, as client-go's MetaNamespaceKeyFunc writes it.
Work queues, caches and log lines all use this one form."""
from __future__ import annotations


def object_key(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def split_key(key: str) -> tuple[str | None, str]:
    """(namespace or None, name): the inverse of object_key."""
    namespace, _, name = key.rpartition("/")
    return namespace or None, name
