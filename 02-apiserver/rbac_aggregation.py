"""Aggregated ClusterRoles: `admin`, `edit` and `view` fill themselves.

A ClusterRole with an aggregationRule owns no rules of its own: its rules
are those of every ClusterRole its label selectors pick. So a CRD's author
can ship a small role labelled `rbac.authorization.k8s.io/aggregate-to-view:
"true"`, and everyone bound to `view` may read the new kind. In Kubernetes
the clusterrole-aggregation controller (in the controller manager) keeps the
rules up to date; ours runs in the API server, on a thread that wakes on
every ClusterRole change, because chapter 02's server runs alone.

Aggregation chains: `view` is itself labelled aggregate-to-edit, and `edit`
aggregate-to-admin, so `admin` holds everything `edit` and `view` hold. One
pass per link settles it; we repeat until nothing changes.
"""
from __future__ import annotations

import threading
import time

from common.model.validation_shared import selector_matches
from rbac import CLUSTER_ROLES
from watch_cache import Expired

MAX_PASSES = 10        # a chain longer than this is a loop of selectors, not a hierarchy


# [START aggregate]
def aggregate(store) -> None:
    """Give every aggregated ClusterRole the rules of the roles it selects."""
    for _ in range(MAX_PASSES):
        roles, _ = store.list(CLUSTER_ROLES)
        changed = False
        for role in roles:
            selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
            if not selectors:
                continue
            rules = []
            for other in roles:
                if other is role or not any(selector_matches(s, other["metadata"].get("labels"))
                                            for s in selectors):
                    continue
                rules += [r for r in other.get("rules") or () if r not in rules]
            if rules != (role.get("rules") or []):
                store.update(CLUSTER_ROLES, "", role["metadata"]["name"], lambda current, r=rules: {**current, "rules": r})
                changed = True
        if not changed:
            return
# [END aggregate]


def keep_aggregated(store) -> None:
    """A thread that re-aggregates after every change to a ClusterRole."""
    def run():
        seen = store.resource_version
        while True:
            try:
                for event in store.watch_cache.events_after(seen, time.monotonic() + 3600, resource=CLUSTER_ROLES):
                    if event is None:
                        continue
                    seen = event.resource_version
                    if event.resource is CLUSTER_ROLES:
                        aggregate(store)
            except Expired:          # fell behind the kept history: start again from now
                seen = store.resource_version
    threading.Thread(target=run, daemon=True, name="clusterrole-aggregation").start()
