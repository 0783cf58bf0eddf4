"""Kubernetes' published object schemas, read from a maintained package.

We do not write the field lists of Pod, Deployment and friends by hand: the
`kubernetes-validate` package ships the JSON schemas that Kubernetes publishes
for each release. We read the v1.32 set (the version our server reports) and
use it for three things:

- strict field validation (an unknown field such as `imagee` is an error),
- the strategic merge patch (which lists merge by which key),
- the /openapi/v3 documents that `kubectl explain` reads.

The file is about 1.3 MB of JSON; it is read once, on first use.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

KUBERNETES_VERSION = "1.32.0"
_DEFINITIONS = f"kubernetes-json-schema/v{KUBERNETES_VERSION}-local/_definitions.json"
_REF_PREFIX = "#/$defs/"


@functools.lru_cache(maxsize=1)
def definitions() -> dict[str, dict]:
    """Every published definition, by name, e.g. "io.k8s.api.core.v1.Pod"."""
    text = resources.files("kubernetes_validate").joinpath(_DEFINITIONS).read_text()
    return json.loads(text)["$defs"]


@functools.lru_cache(maxsize=1)
def _names_by_gvk() -> dict[tuple[str, str, str], str]:
    out = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            out[(gvk["group"], gvk["version"], gvk["kind"])] = name
    return out


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition name of a kind: ("apps", "v1", "Deployment") ->
    "io.k8s.api.apps.v1.Deployment"; None if Kubernetes publishes none."""
    return _names_by_gvk().get((group, version, kind))


def schema_for(group: str, version: str, kind: str) -> dict | None:
    name = definition_name(group, version, kind)
    return definitions()[name] if name else None


def resolve(schema: dict | None) -> dict:
    """Follow a {"$ref": "#/$defs/..."} to the definition it names.

    Other keys beside the $ref (a description) are dropped: callers want the
    shape. Returns {} for None, so a missing schema means "anything goes"."""
    while schema and "$ref" in schema:
        schema = definitions()[schema["$ref"][len(_REF_PREFIX):]]
    return schema or {}


def ref_name(schema: dict) -> str | None:
    """"io.k8s.api.core.v1.Container" for {"$ref": "#/$defs/io.k8s...Container"}."""
    ref = schema.get("$ref") if schema else None
    return ref[len(_REF_PREFIX):] if ref else None
