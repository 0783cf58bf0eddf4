"""One way to fill chapter 03's starter: for the tests, not for reading first.

Each function here replaces the starter's function of the same name
(03-scheduler/build-it-yourself/scheduler.py, the ones marked TODO(stage N));
tests/stages/test_scheduler_stages.py splices them in and checks that the
result passes every stage, and that leaving out stage N's functions fails
stage N. So the starter stays completable by filling its marked places,
and no stage passes a scheduler that skips what it grades.
"""
# flake8: noqa  (the names these functions use are the starter's)


def node_ready(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    conditions = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
    return [] if conditions.get("Ready") == "True" else ["node(s) were not ready"]


def node_unschedulable(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    return ["node(s) were unschedulable"] if (node.get("spec") or {}).get("unschedulable") else []


def taint_toleration(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    def tolerates(toleration, taint):
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            return False
        if toleration.get("operator") == "Exists":
            return not toleration.get("key") or toleration["key"] == taint["key"]
        return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")

    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint["effect"] in ("NoSchedule", "NoExecute") and \
                not any(tolerates(t, taint) for t in pod["spec"].get("tolerations") or []):
            return [f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"]
    return []


def node_selector(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    labels = node["metadata"].get("labels") or {}
    wanted = pod["spec"].get("nodeSelector") or {}
    if all(labels.get(key) == value for key, value in wanted.items()):
        return []
    return ["node(s) didn't match Pod's node affinity/selector"]


def resources_fit(pod: dict, node: dict, node_pods: list[dict]) -> list[str]:
    allocatable = node_allocatable(node)
    reasons = []
    for resource, wanted in pod_requests(pod).items():
        used = sum(pod_requests(other).get(resource, 0) for other in node_pods)
        if wanted > allocatable.get(resource, 0) - used:
            reasons.append(f"Insufficient {resource}")
    return reasons


def least_allocated(pod: dict, node: dict, node_pods: list[dict]) -> int:
    allocatable = node_allocatable(node)
    total = 0
    for resource in ("cpu", "memory"):
        used = pod_requests(pod).get(resource, 0) + sum(pod_requests(p).get(resource, 0) for p in node_pods)
        if allocatable.get(resource):
            total += max(allocatable[resource] - used, 0) * 100 // allocatable[resource]
    return total // 2


def fit_error(node_count: int, reasons: dict[str, list[str]]) -> str:
    counts: dict[str, int] = {}
    for node_reasons in reasons.values():
        for reason in node_reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return f"0/{node_count} nodes are available: {', '.join(sorted(f'{n} {r}' for r, n in counts.items()))}."


class Scheduler:
    """The starter's Scheduler methods."""

    def is_mine(self, pod: dict) -> bool:
        return not pod["spec"].get("nodeName") and (pod["spec"].get("schedulerName") or DEFAULT_SCHEDULER) == self.name

    def pick(self, best: list[str]) -> str:
        choice = sorted(best)[self.turn % len(best)]
        self.turn += 1
        return choice

    def failed_scheduling(self, pod: dict, message: str) -> None:
        self.events.event(pod, "Warning", "FailedScheduling", message)

    def pick_first(self, best: list[str]) -> str:
        """Not fair: the first of the best, every time (stage 7 must catch it)."""
        return sorted(best)[0]
