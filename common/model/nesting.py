"""One nesting limit for every object: what a client sends, and what a store keeps.

Kubernetes' JSON decoder refuses bodies nested more than 10,000 levels.
Ours must stop far sooner. Python allows 1,000 nested calls, a request
thread has used about 100 of them before it reads a body, and the code that
walks an object recursively (copy.deepcopy, json.dumps, the merge patches,
server-side apply, validation) spends two or three calls per level. An object
600 levels deep was once accepted and stored, and then could not be copied,
changed or deleted, and stopped the server at its next start.

So every body, in every format, and every object a store loads is refused
past MAX_DEPTH levels. 100 is far above any real object (a Deployment is
about 12 levels deep, the deepest CustomResourceDefinition schemas 40 to 50)
and far below where Python runs out (about 300 levels on the deepest path).
Chapter 01's manifest loader uses the same limit.

    too_deep_at({"a": {"b": [1]}})   -> None           (3 levels)
    too_deep_at(<101 levels of "a">) -> "a.a.a.a.a.a... (101 levels)"
"""
from __future__ import annotations

MAX_DEPTH = 100
_SHOWN_PARTS = 6             # a path 101 levels long is shown by its start


def too_deep_at(value) -> str | None:
    """The field path where `value` nests more than MAX_DEPTH levels, or None.

    A walk with a stack of its own, not a recursive function: the point is
    to refuse, without running out of stack, what would run out of stack."""
    path: list = []                      # keys and indexes from the root to where we are
    stack = [iter(_children(value))]     # one iterator per open object or list
    while stack:
        step = next(stack[-1], None)
        if step is None:                 # this object or list is done: back up one level
            stack.pop()
            if path:
                path.pop()
            continue
        key, child = step
        if len(path) + 1 > MAX_DEPTH:
            return field_path(path + [key])
        if isinstance(child, (dict, list)):
            path.append(key)
            stack.append(iter(_children(child)))
    return None


def _children(value):
    if isinstance(value, dict):
        return value.items()
    if isinstance(value, list):
        return enumerate(value)
    return ()


def field_path(parts: list) -> str:
    """["spec", "containers", 0, "image"] -> "spec.containers[0].image", its start only if long."""
    text = ""
    for part in parts[:_SHOWN_PARTS]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    if len(parts) > _SHOWN_PARTS:
        text += f"... ({len(parts)} levels)"
    return text.lstrip(".")


def depth_message(what: str, where: str) -> str:
    return (f"{what} is nested more than {MAX_DEPTH} levels deep, at {where}: the limit keeps "
            "the server's recursive code within Python's stack, and real objects never nest so deep")


def checked(value, what: str = "the object"):
    """`value` itself, or ValueError if it nests too deep (for a store's loader)."""
    where = too_deep_at(value)
    if where is not None:
        raise ValueError(depth_message(what, where))
    return value
