"""Strategic merge patch: Kubernetes' own patch format, written out by hand.

A JSON merge patch (RFC 7386) is simple: maps merge key by key, `null`
deletes a key, and anything else, lists included, replaces what was there.
That last rule hurts Kubernetes objects, where the interesting parts are
lists: a pod's containers, a container's ports and env. To change one
container's image with a merge patch you must send every container, and two
clients doing that at once overwrite each other's changes.

So Kubernetes invented the *strategic* merge patch. It is still a JSON map,
but the server reads the object's schema while it applies it, and the schema
says, list by list, how to merge. `containers` is marked "merge by `name`",
so this patch changes only the image of the container named `web` and
leaves any other container alone:

    {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}

The same patch as a JSON merge patch would have replaced the whole list with
one container that has no other fields.

What this module understands, all read from the schema in schemas.py:

- maps merge recursively and `null` deletes a key;
- a list whose schema says patch strategy "merge" merges its items by the
  schema's merge key (containers by name, ports by containerPort, volume
  mounts by mountPath, ...); a list of plain values with that strategy
  (finalizers) becomes the union of old and new values;
- every other list is replaced, as in a JSON merge patch, and so is
  everything the schema does not describe (free-form maps such as labels
  still merge key by key, because they are maps);
- the directives clients send (kubectl's client-side apply sends most of
  them):
    `"$patch": "replace"`  in a map: the map replaces the old one entirely;
                           as a list item `{"$patch": "replace"}`: the
                           other items replace the old list;
    `"$patch": "delete"`   in a map: delete that map; in a list item
                           `{"name": "x", "$patch": "delete"}`: delete the
                           item with that key;
    `"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]`
                           the order the merged list should end up in;
    `"$retainKeys": ["type"]`
                           drop every old key not named, then merge (used
                           where one-of fields must not linger, such as a
                           Deployment strategy's `rollingUpdate` once the
                           type becomes `Recreate`);
    `"$deleteFromPrimitiveList/finalizers": ["a"]`
                           remove those values from a merged primitive list.

Errors are api_errors.bad_request values naming the field path. The depth of
the patch is not checked here: patches.py parses the body and refuses
absurdly deep documents before they reach these recursive functions.
"""
from __future__ import annotations

import copy
import json

import api_errors
from . import schemas

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER = "$setElementOrder/"
DELETE_FROM_LIST = "$deleteFromPrimitiveList/"

_DELETE = object()  # returned by _merge_map when the patch says `"$patch": "delete"`


# [START strategic-merge]
def strategic_merge(original: dict, patch: dict, schema: dict | None) -> dict:
    """Apply a strategic merge `patch` to `original` and return the result.

    `schema` is the kind's published schema (schemas.schema_for); None means
    the kind is unknown and the patch behaves like a JSON merge patch.
    `original` is not changed."""
    merged = _merge_map(copy.deepcopy(original), patch, schema or {}, "")
    if merged is _DELETE:
        raise api_errors.bad_request('"$patch": "delete" cannot delete the whole object')
    return merged


def _merge_map(original: dict, patch: dict, schema: dict, path: str):
    """Merge patch into original (which we own and may change in place)."""
    directive = patch.get(PATCH, "merge")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        original = {}
    elif directive != "merge":
        raise api_errors.bad_request(f'{path or "."}: unknown $patch directive {directive!r}; '
                                     'use "merge", "replace" or "delete"')
    if RETAIN_KEYS in patch:
        keep = _string_list(patch[RETAIN_KEYS], f"{path}.{RETAIN_KEYS}")
        original = {k: v for k, v in original.items() if k in keep}
    # Deletions come first, so that the same patch can remove one value and
    # add another without the two fighting.
    for key, values in patch.items():
        if key.startswith(DELETE_FROM_LIST):
            field = key[len(DELETE_FROM_LIST):]
            if isinstance(original.get(field), list):
                doomed = {_identity(v) for v in _list(values, f"{path}.{key}")}
                original[field] = [v for v in original[field] if _identity(v) not in doomed]
    for key, value in patch.items():
        if key.startswith("$"):
            _check_directive(key, path)
            continue
        field_path = f"{path}.{key}" if path else key
        sub_schema = field_schema(schema, key)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict):
            old = original.get(key)
            merged = _merge_map(old if isinstance(old, dict) else {}, value,
                                sub_schema, field_path)
            if merged is _DELETE:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            old = original.get(key)
            original[key] = _merge_list(old if isinstance(old, list) else [], value,
                                        sub_schema, field_path)
        else:
            original[key] = value
    # Orders apply last, to the merged lists, and also to lists the patch
    # only reorders without changing them.
    for key, order in patch.items():
        if key.startswith(SET_ORDER):
            field = key[len(SET_ORDER):]
            if isinstance(original.get(field), list):
                merge_key = field_schema(schema, field).get("x-kubernetes-patch-merge-key")
                original[field] = _set_order(original[field], _list(order, f"{path}.{key}"),
                                             merge_key)
    return original


def _merge_list(original: list, patch: list, schema: dict, path: str) -> list:
    strategies = schema.get("x-kubernetes-patch-strategy", "").split(",")
    if "merge" not in strategies:
        return copy.deepcopy(patch)  # the list is atomic: the patch replaces it
    if {PATCH: "replace"} in patch:
        original = []
        patch = [item for item in patch if item != {PATCH: "replace"}]
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    if not merge_key:
        # A set of plain values, such as finalizers: the union, old order first.
        present = {_identity(v) for v in original}
        return original + [copy.deepcopy(v) for v in patch if _identity(v) not in present]
    item_schema = schemas.resolve(schemas.resolve(schema).get("items"))
    merged = list(original)
    # Where each key's item sits, found once: looking it up by scanning the
    # list for every patch item would cost len(list) x len(patch), seconds
    # for a few thousand containers. A deleted item leaves a hole (None)
    # until the end, so the positions stay true. Linear, the largest patch
    # the 3 MiB body limit lets in merges in about half a second, so we do
    # not check in the middle whether its client is still there.
    where = _positions(merged, merge_key)
    for index, item in enumerate(patch):
        item_path = f"{path}[{index}]"
        if not isinstance(item, dict) or merge_key not in item:
            raise api_errors.bad_request(
                f"{item_path}: every item of {path} must be an object with the merge key "
                f"{merge_key!r} (got {json.dumps(item)[:80]})")
        key = _identity(item[merge_key])
        if key not in where:
            new = _merge_map({}, item, item_schema, item_path)
            if new is not _DELETE:  # deleting an item that is not there is fine
                where[key] = [len(merged)]
                merged.append(new)
            continue
        at = where[key][0]           # the first item with that key, as Kubernetes takes
        new = _merge_map(merged[at], item, item_schema, item_path)
        if new is _DELETE:
            merged[at] = None
            del where[key][0]
            if not where[key]:
                del where[key]
        else:
            merged[at] = new
    return [item for item in merged if item is not None]
# [END strategic-merge]


def _positions(items: list, merge_key: str) -> dict:
    """Merge key value -> the positions of the items that have it, in order."""
    where: dict = {}
    for position, item in enumerate(items):
        if isinstance(item, dict):   # (one without the key matches a patch's null, as before)
            where.setdefault(_identity(item.get(merge_key)), []).append(position)
    return where


def _identity(value):
    """`value` as a dict key: itself if hashable (a name, a port number),
    else its JSON text (a hostile patch may use a map as a merge key)."""
    if isinstance(value, (dict, list)):
        return ("json", json.dumps(value, sort_keys=True))
    return value


def _set_order(items: list, order: list, merge_key: str | None) -> list:
    """Put `items` in the order of `$setElementOrder`.

    The patch's author listed the items they know about. Items only the
    server has (another client added them) are not in `order`; like
    Kubernetes we keep each of them roughly where it was: it goes before the
    next known item unless, on the server, that known item came first.
    Every position is looked up in a dict built once, so this stays linear."""
    def identity(item):
        return _identity(item.get(merge_key) if merge_key and isinstance(item, dict) else item)

    wanted: dict = {}                # identity -> its place in `order`
    for place, wanted_item in enumerate(order):
        wanted.setdefault(identity(wanted_item), place)
    before: dict = {}                # identity -> its first place on the server
    for place, item in enumerate(items):
        before.setdefault(identity(item), place)
    known = sorted((i for i in items if identity(i) in wanted), key=lambda i: wanted[identity(i)])
    server_only = [i for i in items if identity(i) not in wanted]
    result, k, s = [], 0, 0
    while k < len(known) and s < len(server_only):
        if before[identity(known[k])] < before[identity(server_only[s])]:
            result.append(known[k])
            k += 1
        else:
            result.append(server_only[s])
            s += 1
    return result + known[k:] + server_only[s:]


def field_schema(schema: dict, key: str) -> dict:
    """The schema of field `key` inside an object schema, or {} if unknown.

    The unresolved property is returned on purpose: the patch strategy and
    merge key sit beside its $ref, and resolving would drop them."""
    shape = schemas.resolve(schema)
    properties = shape.get("properties") or {}
    if key in properties:
        return properties[key]
    extra = shape.get("additionalProperties")
    return extra if isinstance(extra, dict) else {}


def _check_directive(key: str, path: str) -> None:
    if key in (PATCH, RETAIN_KEYS) or key.startswith((SET_ORDER, DELETE_FROM_LIST)):
        return
    raise api_errors.bad_request(
        f"{path or '.'}: unknown strategic merge patch directive {key!r} (known: $patch, "
        f"$retainKeys, $setElementOrder/<field>, $deleteFromPrimitiveList/<field>)")


def _list(value, path: str) -> list:
    if not isinstance(value, list):
        raise api_errors.bad_request(f"{path} must be a list")
    return value


def _string_list(value, path: str) -> set[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise api_errors.bad_request(f"{path} must be a list of field names")
    return set(value)
