"""A pod's quality-of-service class: Guaranteed, Burstable or BestEffort.

The API server writes it into a new pod's status (status.qosClass) and the
kubelet reports it again; both ask here, so they cannot disagree. The class
decides who is evicted first when a node runs short of memory: BestEffort
pods, then Burstable, and Guaranteed last.

Kubernetes' rule (GetPodQOS in pkg/apis/core/helper/qos): only cpu and
memory count, and only amounts above zero, summed over the init and the app
containers.
- BestEffort: nobody requests or limits either.
- Guaranteed: every container limits both, and the pod's summed requests
  equal its summed limits (a request left out is defaulted to its limit by
  the API server, so it counts as equal).
- Burstable: everything else.

The API server asks before validation, so any shape is survived: what is not
a list, a map or a quantity counts as absent, and validation reports it.
"""
from __future__ import annotations

from common.model.lenient import as_dict, as_list
from common.model.quantity import parse_quantity

QOS_RESOURCES = ("cpu", "memory")


def _amounts(resources: dict, which: str) -> dict:
    """The cpu and memory a container asks for (which="requests") or is held to ("limits"), above zero."""
    found = {}
    for name, value in as_dict(resources.get(which)).items():
        if name not in QOS_RESOURCES:
            continue
        try:
            amount = parse_quantity(value)
        except (ValueError, TypeError):
            continue
        if amount.amount > 0:
            found[name] = amount.amount
    return found


def qos_class(spec: dict) -> str:
    containers = [c for c in as_list(spec.get("initContainers")) + as_list(spec.get("containers"))
                  if isinstance(c, dict)]
    requested = dict.fromkeys(QOS_RESOURCES, 0)
    limited = dict.fromkeys(QOS_RESOURCES, 0)
    anything = False
    limits_both = True
    for container in containers:
        resources = as_dict(container.get("resources"))
        requests, limits = _amounts(resources, "requests"), _amounts(resources, "limits")
        anything |= bool(requests or limits)
        limits_both &= set(limits) == set(QOS_RESOURCES)
        for name in QOS_RESOURCES:
            requested[name] += requests.get(name, limits.get(name, 0))     # defaulted from the limit
            limited[name] += limits.get(name, 0)
    if not anything:
        return "BestEffort"
    if limits_both and requested == limited:
        return "Guaranteed"
    return "Burstable"
