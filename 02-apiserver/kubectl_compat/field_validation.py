"""Unknown and duplicate fields: the server side of `fieldValidation`.

A typo in a manifest (`imagee: nginx`) is not a type error, it is a field
Kubernetes does not know. A server that silently drops it leaves the learner
wondering why the image is missing, so Kubernetes decodes strictly and, with
`?fieldValidation=Strict` (what kubectl sends), refuses the request:

    strict decoding error: unknown field "spec.containers[0].imagee"

With `fieldValidation=Warn` the same texts travel as `Warning` headers and
the request goes ahead; with `Ignore` nothing is said.

We walk the object and the published schema (schemas.py) side by side. The
schema is first compiled into small nodes, once per definition, so that
checking a pod is a few dictionary lookups per field rather than a walk over
JSON-schema keywords with `$ref`s to follow.
"""
from __future__ import annotations

import json
from typing import Any

from . import schemas

# Fields every object may carry whatever its schema says (the type meta).
TYPE_META_FIELDS = ("apiVersion", "kind", "metadata")


class _Node:
    """A compiled schema: what may appear below one point of an object.

    Exactly one of the three is set, or none: a node with none set is a leaf
    (string, number, int-or-string, quantity) or an opaque object (FieldsV1,
    RawExtension, preserve-unknown-fields) where any content is allowed and
    the walk stops.
    """
    __slots__ = ("fields", "items", "values")

    def __init__(self) -> None:
        # field name -> child node, or None when the child is a leaf (saves a
        # call per scalar field, which is most fields)
        self.fields: dict[str, _Node | None] | None = None
        self.items: _Node | None = None     # array: the node for every item
        self.values: _Node | None = None    # map: the node for every value

    @property
    def is_leaf(self) -> bool:
        return self.fields is None and self.items is None and self.values is None


_by_definition: dict[str, _Node] = {}   # definition name -> compiled node, completely filled in
_UNKNOWN = _Node()                      # a sentinel: no schema field maps to it
_roots: dict[tuple[str, str, str], _Node | None] = {}   # (group, version, kind)


class _Compilation:
    """One kind's schema, being compiled into nodes.

    Request threads walk compiled nodes with no lock, so no node may be
    shared before it is completely filled in. The definitions this
    compilation adds stay in `self.new` until all of them are, and only then
    go into `_by_definition`. (Shared at once, they let a second request
    thread find PodSpec half-filled, take spec.containers for an unknown
    field and drop it: a valid pod refused with 422 "spec.containers:
    Required value".) Two threads that compile the same kind at the same
    moment both do the work and publish equal nodes; nobody waits.
    type_check.py, compiling the same schemas, takes a lock instead: either
    way, no request sees a node half-filled."""

    def __init__(self) -> None:
        self.new: dict[str, _Node] = {}   # definition name -> node, made by this compilation
        self.filling: set[int] = set()    # ids of the definition nodes being filled in now

    def compile(self, schema: dict) -> _Node:
        name = schemas.ref_name(schema)
        if name is None:
            node = _Node()
            self.fill(node, schema)
            return node
        node = _by_definition.get(name) or self.new.get(name)
        if node is None:
            # Register before filling: definitions refer to themselves
            # (JSONSchemaProps), and the second visit must find this node.
            node = self.new[name] = _Node()
            self.filling.add(id(node))
            self.fill(node, schemas.definitions()[name])
            self.filling.discard(id(node))
        return node

    def fill(self, node: _Node, schema: dict) -> None:
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return                                      # anything goes
        if "properties" in schema:
            node.fields = {}
            for field, sub in schema["properties"].items():
                child = self.compile(sub)
                # A node still being filled looks like a leaf but is not one.
                leaf = child.is_leaf and id(child) not in self.filling
                node.fields[field] = None if leaf else child
        elif isinstance(schema.get("additionalProperties"), dict):
            node.values = self.compile(schema["additionalProperties"])   # labels, limits, data
        elif schema.get("additionalProperties") is False:
            node.fields = {}
        elif "items" in schema:
            node.items = self.compile(schema["items"])
        # Anything else is a leaf or an object without listed properties: both
        # accept any content.

    def publish(self) -> None:
        """Share this compilation's nodes, now that all are filled in."""
        _by_definition.update(self.new)


def _root(group: str, version: str, kind: str) -> _Node | None:
    key = (group, version, kind)
    if key not in _roots:
        _roots[key] = _compile_root(group, version, kind)
    return _roots[key]


def _compile_root(group: str, version: str, kind: str) -> _Node | None:
    schema = schemas.schema_for(group, version, kind)
    if not schema:
        return None                 # a kind Kubernetes publishes no schema for
    compilation = _Compilation()
    root = compilation.compile(schema)
    compilation.publish()
    if root.fields is not None:
        # A copy, so the shared definition node keeps its own field list.
        top = _Node()
        top.fields = dict(root.fields)
        for field in TYPE_META_FIELDS:
            top.fields.setdefault(field, None)
        root = top
    return root


# [START unknown-fields]
def unknown_fields(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """The path of every field in `obj` that the published schema of the kind
    does not define, e.g. ["spec.containers[0].imagee", "metadata.labelz"].

    A kind Kubernetes publishes no schema for has no unknown fields."""
    root = _root(group, version, kind)
    found: list[str] = []
    if root is not None:
        _walk(root, obj, "", found)
    return found


def _walk(node: _Node, value: Any, path: str, found: list[str]) -> None:
    # Type mismatches (a string where an object belongs) are validation's
    # business, not ours: we only look inside values of the expected shape.
    if node.fields is not None:
        if type(value) is dict:
            fields = node.fields
            for key, sub in value.items():
                child = fields.get(key, _UNKNOWN)
                if child is _UNKNOWN:
                    found.append(f"{path}.{key}" if path else key)
                elif child is not None and sub is not None:
                    _walk(child, sub, f"{path}.{key}" if path else key, found)
    elif node.items is not None:
        if type(value) is list and not node.items.is_leaf:
            for i, item in enumerate(value):
                _walk(node.items, item, f"{path}[{i}]", found)
    elif node.values is not None:
        if type(value) is dict and not node.values.is_leaf:
            for key, sub in value.items():
                _walk(node.values, sub, f"{path}.{key}", found)
# [END unknown-fields]


class _Duplicated(dict):
    """A decoded JSON object that had some keys more than once."""
    __slots__ = ("duplicates",)


def find_duplicate_fields(body: bytes | str) -> list[str]:
    """Paths of the keys a JSON document repeats within one object, e.g.
    ["metadata.name"]. Python's json keeps the last value silently, as Go's
    decoder does; Kubernetes reports the repetition, so we look for it.

    Returns [] for a body that is not JSON (the decoder reports that)."""
    seen_any = False

    def note_duplicates(pairs: list[tuple[str, Any]]) -> dict:
        nonlocal seen_any
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        seen_any = True
        marked = _Duplicated(obj)
        seen: set[str] = set()
        marked.duplicates = []
        for key, _ in pairs:
            if key in seen and key not in marked.duplicates:
                marked.duplicates.append(key)
            seen.add(key)
        return marked

    try:
        doc = json.loads(body, object_pairs_hook=note_duplicates)
    except ValueError:
        return []
    found: list[str] = []
    if seen_any:   # the common case skips the second walk altogether
        _collect_duplicates(doc, "", found)
    return found


def _collect_duplicates(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        duplicates = getattr(value, "duplicates", ())
        for key, sub in value.items():
            where = f"{path}.{key}" if path else key
            if key in duplicates:
                found.append(where)
            _collect_duplicates(sub, where, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _collect_duplicates(item, f"{path}[{i}]", found)
