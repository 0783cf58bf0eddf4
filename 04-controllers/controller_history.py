"""ControllerRevisions: a workload's template history, as API objects.

A Deployment keeps its history in old ReplicaSets. A StatefulSet has no
ReplicaSets (its pods are its own), so it snapshots each version of its pod
template in a ControllerRevision:

    ControllerRevision web-7d9c5b8f4   revision: 1   data: the template of v1
    ControllerRevision web-6c8b7d9f5   revision: 2   data: the template of v2

Each pod is labelled `controller-revision-hash: web-6c8b7d9f5`, so the
controller can tell which pods are still on the old template. The revision
numbers are what `kubectl rollout history` lists, and `kubectl rollout
undo` applies an old revision's data to the set as a patch, which is why
the data has that shape, as in Kubernetes:

    {"spec": {"template": {...the pod template..., "$patch": "replace"}}}

Going back to an old template makes no new revision: the old one is found
by its content and gets the next number.
"""
from __future__ import annotations

import copy

from deployment import template_hash, without_hash
from ownership import owner_reference

HASH_LABEL = "controller.kubernetes.io/hash"


def revision_data(sts: dict) -> dict:
    template = copy.deepcopy(sts["spec"]["template"])
    template["$patch"] = "replace"           # kubectl rollout undo: replace the template, do not merge
    return {"spec": {"template": template}}


def template_in(revision: dict) -> dict:
    """The pod template a revision holds, without the patch directive."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def same_template(a: dict, b: dict) -> bool:
    """Equal as Kubernetes compares them: empty values (`resources: {}`,
    `creationTimestamp: null`, which kubectl writes back on undo) do not count."""
    return without_hash(a) == without_hash(b)


def revision_hash(template: dict, collision_count: int = 0) -> str:
    """The name's suffix. A collision (the name taken by different data) is
    resolved as Kubernetes does: status.collisionCount goes up, which
    changes every hash."""
    content = without_hash(template)
    return template_hash(content if not collision_count else {"t": content, "collisionCount": collision_count})


# [START new-revision]
def new_revision(sts: dict, number: int, collision_count: int = 0) -> dict:
    """A ControllerRevision of the set's current template, owned by the set
    and labelled like its pods (so `kubectl rollout history` finds it with
    the set's selector)."""
    template = sts["spec"]["template"]
    digest = revision_hash(template, collision_count)
    labels = {**((template.get("metadata") or {}).get("labels") or {}), HASH_LABEL: digest}
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"{sts['metadata']['name']}-{digest}", "namespace": sts["metadata"]["namespace"],
                         "labels": labels, "annotations": dict(sts["metadata"].get("annotations") or {}),
                         "ownerReferences": [owner_reference(sts)]},
            "data": revision_data(sts), "revision": number}
# [END new-revision]


def number_of(revision: dict) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) else 0


def find_equal(revisions: list[dict], template: dict) -> dict | None:
    """The newest revision holding this template, if any."""
    equal = [r for r in revisions if same_template(template_in(r), template)]
    return max(equal, key=number_of) if equal else None


def to_forget(revisions: list[dict], live: set[str], limit: int) -> list[dict]:
    """The oldest revisions beyond the history limit; a revision some pod
    or the status still names is never among them."""
    history = sorted((r for r in revisions if r["metadata"]["name"] not in live), key=number_of)
    return history[:max(0, len(history) - limit)]
