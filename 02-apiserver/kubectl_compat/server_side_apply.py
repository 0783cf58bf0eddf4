"""Server-side apply, simplified: the server remembers who set which field.

With client-side apply, kubectl keeps the last manifest it applied in an
annotation and works out a patch itself. Server-side apply
(`kubectl apply --server-side`) sends the whole manifest instead and lets
the server do the bookkeeping. Each sender is a *field manager* ("kubectl",
"my-operator"), and the server records, per manager, the set of fields that
manager's last apply contained, in `metadata.managedFields`:

    managedFields:
    - manager: kubectl
      operation: Apply
      apiVersion: apps/v1
      time: "2025-01-01T12:00:00Z"
      fieldsType: FieldsV1
      fieldsV1:
        f:spec:
          f:replicas: {}
          f:template:
            f:spec:
              f:containers:
                k:{"name":"web"}:
                  .: {}
                  f:image: {}
                  f:name: {}

`f:replicas` is a field, `k:{"name":"web"}` is the item of a keyed list
whose key is name=web, `.` means the item itself and `v:"x"` a value in a
set such as finalizers. With these sets an apply can do two things a patch
cannot:

- remove what a manager stopped sending: a field the manager applied last
  time, but not now, is deleted, unless some other manager also owns it;
- notice two managers fighting: applying a value to a field that another
  Apply manager owns with a different value is a 409 Conflict naming the
  field and the other manager, unless the client forces
  (`--force-conflicts`), which moves ownership to it.

What the real thing does that this does not, honestly:

- Kubernetes records every write, not only applies: a create, update or
  patch adds an `operation: Update` entry for its manager (kubectl
  client-side apply, controllers), and applying over those fields conflicts
  too. We only write Apply entries and only conflict with Apply managers;
  entries written by others are still respected as owners when removing.
- Kubernetes merges with a typed model (structured-merge-diff) driven by
  `x-kubernetes-list-type` and `x-kubernetes-map-type`. We merge like a
  strategic merge patch, so a list that is keyed but has no merge strategy
  is replaced whole, dropping other managers' items, and sets merge only
  where the patch strategy says "merge".
- Kubernetes compares values after defaulting and converts between API
  versions, handles the status subresource and its own ownership rules,
  and migrates fields from client-side to server-side apply. We do none of
  that: the comparison is of the stored object with the manifest as sent.
"""
from __future__ import annotations

import copy
import json

import api_errors
from . import schemas
from . import strategic_merge
from common.times import rfc3339

APPLY = "Apply"
Path = tuple[str, ...]  # fieldsV1 keys from the root: ("f:spec", "f:replicas")

# Set by the server on every object; a manifest that carries them (copied
# from `kubectl get -o yaml`) does not get to apply them.
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                    "selfLink")
# Identity, not content: naming the object does not make one its manager.
_IDENTITY = {("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"),
             ("f:metadata", "f:namespace")}
_MISSING = object()


# [START server-side-apply]
def apply(live: dict | None, applied: dict, manager: str, group: str, version: str,
          kind: str, force: bool = False) -> dict:
    """The object after `manager` applies the manifest `applied` to `live`
    (None: the object does not exist yet). `live` is not changed."""
    api_version = f"{group}/{version}" if group else version
    applied = _clean(applied, api_version, kind)
    schema = schemas.schema_for(group, version, kind) or {}
    obj = copy.deepcopy(live or {})
    entries = _entries(obj)

    mine = field_set(applied, schema)
    conflicts = _conflicts(obj, applied, mine, entries, manager)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    entries = _give_up(entries, conflicts)  # forced: the other managers lose those fields

    previous = _fields_of(entries, manager, APPLY)
    elsewhere = set().union(*(decode(e.get("fieldsV1")) for e in entries
                              if e.get("manager") != manager))
    # Whole list items first: their fields, key included, go with them.
    for path in sorted(previous - mine, key=lambda p: (p[-1] != ".", -len(p), p)):
        owner = path[:-1] if path[-1] == "." else path
        if not any(other[:len(owner)] == owner for other in elsewhere):
            _remove(obj, path)

    obj = strategic_merge.strategic_merge(obj, applied, schema)
    changed = _content(obj) != _content(live or {})
    obj.setdefault("metadata", {})["managedFields"] = _record(
        entries, manager, api_version, mine, changed)
    return obj
# [END server-side-apply]


def field_set(obj: dict, schema: dict) -> set[Path]:
    """Every field path `obj` sets, in fieldsV1 terms, minus its identity."""
    out: set[Path] = set()
    _collect_map(obj, schema, (), out)
    return out - _IDENTITY


def _collect_map(value: dict, schema: dict, path: Path, out: set[Path]) -> None:
    for key, child in value.items():
        if child is not None:  # null sets nothing (the merge deletes the field)
            _collect(child, strategic_merge.field_schema(schema, key), path + (f"f:{key}",), out)


def _collect(value, schema: dict, path: Path, out: set[Path]) -> None:
    if isinstance(value, dict):
        # A map is never owned whole, not even an empty one: owning
        # `labels: {}` would let the next apply delete everyone's labels.
        _collect_map(value, schema, path, out)
    elif isinstance(value, list) and value and _list_keys(schema) is not None:
        keys = _list_keys(schema)
        item_schema = schemas.resolve(schema).get("items") or {}
        for item in value:
            if keys and isinstance(item, dict):
                item_path = path + (_item_element(item, keys, path),)
                out.add(item_path + (".",))
                _collect_map(item, item_schema, item_path, out)
            else:
                out.add(path + ("v:" + _compact(item),))
    else:
        out.add(path)  # a scalar or an atomic list: owned whole


def _list_keys(schema: dict) -> list[str] | None:
    """How a list is owned: by item key (["name"]), by value ([]) or whole (None)."""
    if schema.get("x-kubernetes-list-map-keys"):
        return schema["x-kubernetes-list-map-keys"]
    merge = "merge" in schema.get("x-kubernetes-patch-strategy", "").split(",")
    if merge and schema.get("x-kubernetes-patch-merge-key"):
        return [schema["x-kubernetes-patch-merge-key"]]
    if merge or schema.get("x-kubernetes-list-type") == "set":
        return []
    return None


def _item_element(item: dict, keys: list[str], path: Path) -> str:
    key = {k: item[k] for k in keys if k in item}
    if not key:
        raise api_errors.bad_request(f"{describe(path)}: every item needs its key field "
                                     f"{keys[0]!r} (got {_compact(item)[:80]})")
    return "k:" + _compact(key)


def _compact(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _conflicts(live: dict, applied: dict, mine: set[Path], entries: list,
               manager: str) -> list[tuple[dict, Path]]:
    """(entry of the other manager, field) for each field we would change under it."""
    found = []
    for entry in entries:
        if entry.get("manager") == manager or entry.get("operation") != APPLY:
            continue
        for path in sorted(mine & decode(entry.get("fieldsV1"))):
            if path[-1] == "." or path[-1].startswith("v:"):
                continue  # an item or set value both want present: nothing to disagree on
            current = _lookup(live, path)
            if current is not _MISSING and current != _lookup(applied, path):
                found.append((entry, path))
    return found


def _conflict_error(conflicts: list[tuple[dict, Path]]) -> api_errors.APIError:
    by_manager: dict[str, list[str]] = {}
    for entry, path in conflicts:
        who = f'"{entry.get("manager")}"'
        if entry.get("apiVersion"):
            who += f' using {entry["apiVersion"]}'
        by_manager.setdefault(who, []).append(describe(path))
    count = len(conflicts)
    if count == 1:
        (who, [field]), = by_manager.items()
        summary = f"Apply failed with 1 conflict: conflict with {who}: {field}"
    else:
        summary = f"Apply failed with {count} conflicts: " + "\n".join(
            f"conflicts with {who}:\n" + "\n".join(f"- {f}" for f in fields)
            for who, fields in by_manager.items())
    hint = ("\nTo manage these fields yourself, apply again with --force-conflicts; "
            "to leave them to the other manager, remove them from your manifest.")
    causes = [{"reason": "FieldManagerConflict", "field": field, "message": f"conflict with {who}"}
              for who, fields in by_manager.items() for field in fields]
    return api_errors.APIError(409, "Conflict", summary + hint, {"causes": causes})


def _give_up(entries: list, conflicts: list[tuple[dict, Path]]) -> list:
    """Take the conflicting fields away from their managers; drop emptied entries."""
    lost: dict[int, set[Path]] = {}
    for entry, path in conflicts:
        lost.setdefault(id(entry), set()).add(path)
    kept = []
    for entry in entries:
        if id(entry) in lost:
            remaining = decode(entry.get("fieldsV1")) - lost[id(entry)]
            if not remaining:
                continue
            entry = {**entry, "fieldsV1": encode(remaining)}
        kept.append(entry)
    return kept


def _record(entries: list, manager: str, api_version: str, mine: set[Path],
            changed: bool) -> list:
    fields = encode(mine)
    now = rfc3339()
    ours = {"manager": manager, "operation": APPLY, "apiVersion": api_version, "time": now,
            "fieldsType": "FieldsV1", "fieldsV1": fields}
    out, found = [], False
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == APPLY:
            found = True
            same = entry.get("fieldsV1") == fields and entry.get("apiVersion") == api_version
            # An apply that changes nothing leaves the object, time included,
            # as it was, so the server can skip the write.
            out.append(entry if same and not changed else ours)
        else:
            out.append(entry)
    return out if found else out + [ours]


def _entries(obj: dict) -> list[dict]:
    """The managedFields entries we can read (a hand-edited one may be anything)."""
    entries = (obj.get("metadata") or {}).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _fields_of(entries: list, manager: str, operation: str) -> set[Path]:
    return set().union(*(decode(e.get("fieldsV1")) for e in entries
                         if e.get("manager") == manager and e.get("operation") == operation))


def encode(paths: set[Path]) -> dict:
    """A set of paths as a fieldsV1 tree: leaves are {}."""
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return tree


def decode(tree, prefix: Path = ()) -> set[Path]:
    """The set of leaf paths in a fieldsV1 tree (garbage decodes to nothing)."""
    paths: set[Path] = set()
    if not isinstance(tree, dict):
        return paths
    for element, child in tree.items():
        path = prefix + (_canonical(element),)
        paths |= decode(child, path) if child else {path}
    return paths


def _canonical(element: str) -> str:
    # k: and v: carry JSON; spell it one way so that equal keys compare equal.
    if element[:2] in ("k:", "v:"):
        try:
            return element[:2] + _compact(json.loads(element[2:]))
        except ValueError:
            pass
    return element


def describe(path: Path) -> str:
    """The path as Kubernetes prints it: .spec.containers[name="web"].image"""
    out = ""
    for element in path:
        kind, rest = element[:2], element[2:]
        if kind == "f:":
            out += "." + rest
        elif kind == "k:":
            out += "[" + ",".join(f"{k}={_compact(v)}" for k, v in _key(rest).items()) + "]"
        elif kind == "v:":
            out += f"[={rest}]"
    return out or "."


def _key(text: str) -> dict:
    try:
        key = json.loads(text)
    except ValueError:
        return {}
    return key if isinstance(key, dict) else {}


def _step(node, element: str):
    """One step down a path, or _MISSING."""
    kind, rest = element[:2], element[2:]
    if kind == "f:":
        return node.get(rest, _MISSING) if isinstance(node, dict) else _MISSING
    if not isinstance(node, list):
        return _MISSING
    try:
        value = json.loads(rest)
    except ValueError:
        return _MISSING  # a hand-edited managedFields entry we cannot read
    if kind == "k:" and isinstance(value, dict):
        return next((item for item in node if isinstance(item, dict)
                     and all(item.get(k) == v for k, v in value.items())), _MISSING)
    if kind == "v:":
        return value if value in node else _MISSING
    return _MISSING


def _lookup(obj: dict, path: Path):
    node = obj
    for element in path:
        if element != ".":  # "." is the list item we are already at
            node = _step(node, element)
            if node is _MISSING:
                break
    return node


def _remove(obj: dict, path: Path) -> None:
    """Delete the field (or list item, or set value) at `path`, then prune
    maps and lists the deletion left empty, below the top-level fields."""
    if path[-1] == ".":
        path = path[:-1]
    chain = [obj]
    for element in path[:-1]:
        chain.append(_step(chain[-1], element))
        if chain[-1] is _MISSING:
            return
    for depth in range(len(path) - 1, -1, -1):
        container, element = chain[depth], path[depth]
        target = _step(container, element)
        if target is _MISSING:
            return
        if depth < len(path) - 1 and (target or depth == 0):
            return  # still has content, or is a top-level field such as spec
        if isinstance(container, dict):
            del container[element[2:]]
        else:
            container.remove(target)


def _content(obj: dict) -> dict:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


def _clean(applied: dict, api_version: str, kind: str) -> dict:
    applied = copy.deepcopy(applied)
    sent = (applied.setdefault("apiVersion", api_version), applied.setdefault("kind", kind))
    if sent != (api_version, kind):
        raise api_errors.bad_request(
            f"the manifest is a {sent[0]} {sent[1]}, but it was sent to the "
            f"{api_version} {kind} endpoint")
    applied.pop("status", None)  # status belongs to controllers, via the status subresource
    metadata = applied.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise api_errors.bad_request("metadata must be an object")
    for key in _SERVER_METADATA:
        metadata.pop(key, None)
    return applied
