"""Validate the workload kinds: ReplicaSet, Deployment, DaemonSet (apps/v1), Job and CronJob
(batch/v1), and the ReplicationController (core/v1) the ReplicaSet grew out of.

Each embeds a pod template, checked with the Pod's own rules at
`spec.template.spec`, and a label selector that must pick the pods the
template makes: a selector that missed them would have the controller
create pods forever. Messages follow k8s.io/kubernetes pkg/apis/apps/validation
and pkg/apis/batch/validation, except type errors (ours, see validation.py)
and an unsupported strategy type, which we report at `.type` with the bad
string where Kubernetes reports `spec.strategy` with the whole Go struct.

As in validation.py, fields that defaulting fills in (replicas, strategy,
restartPolicy of a ReplicaSet's pods, ...) may be left out; when given they
are checked. Each function takes the whole object and returns a list.
"""

from __future__ import annotations

from common.model import cron
from common.model.field_errors import FieldError, child, forbidden, invalid, not_supported, required
from common.model.validation import _check_enum, _get_bool, _get_dict, validate_annotations, \
    validate_labels, validate_pod_spec
from common.model.validation_shared import (check_immutable, go_int_or_string, go_label_selector,
                                      go_string_map, int_or_percent, nonnegative, normalized_selector,
                                      not_more_than_100_percent, selector_is_empty,
                                      selector_matches, validate_label_selector)


def _spec(errs: list, obj: dict) -> dict:
    """spec as an object; a missing spec reads as empty, as a Go struct would."""
    return _get_dict(errs, obj.get("spec"), "spec") or {}


# [START validate-template]
def _validate_template(errs: list, spec: dict, selector: dict | None) -> dict:
    """The pod template: its labels must match the selector, its spec is a pod spec."""
    path = "spec.template"
    template = _get_dict(errs, spec.get("template"), path) or {}
    meta = _get_dict(errs, template.get("metadata"), child(path, "metadata")) or {}
    labels = meta.get("labels")
    # Kubernetes reports the template's labels at spec.template.labels (sic).
    errs += validate_labels(labels, child(path, "labels"))
    errs += validate_annotations(meta.get("annotations"), child(path, "annotations"))
    if selector is not None and not selector_is_empty(selector) \
            and selector_matches(selector, labels) is False:
        errs.append(invalid(child(path, "metadata.labels"), go_string_map(labels),
                            "`selector` does not match template `labels`"))
    pod_spec = template.get("spec")
    errs += validate_pod_spec({} if pod_spec is None else pod_spec, child(path, "spec"))
    return pod_spec if isinstance(pod_spec, dict) else {}
# [END validate-template]


def _validate_required_selector(errs: list, spec: dict, kind: str) -> dict | None:
    """apps/v1 workloads must name their pods' labels; an empty selector
    would pick every pod in the namespace."""
    if spec.get("selector") is None:
        errs.append(required("spec.selector"))
        return None
    selector = validate_label_selector(errs, spec["selector"], "spec.selector")
    if selector is not None and selector_is_empty(selector):
        errs.append(invalid("spec.selector", go_label_selector(selector),
                            f"empty selector is invalid for {kind}"))
    return selector


def _pods_restart_always(errs: list, pod_spec: dict, kind: str) -> None:
    """A ReplicaSet's or DaemonSet's pods run forever: their controller
    replaces a pod that exits, so only Always makes sense."""
    policy = pod_spec.get("restartPolicy")
    if isinstance(policy, str) and policy and policy != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                              f"activeDeadlineSeconds in {kind} is not Supported"))


# ------------------------------------------------------------- ReplicaSet

def validate_replica_set(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(errs, obj)
    nonnegative(errs, spec, ("replicas", "minReadySeconds"), "spec")
    # Kubernetes' ReplicaSet check shares the Deployment's wording.
    selector = _validate_required_selector(errs, spec, "deployment")
    pod_spec = _validate_template(errs, spec, selector)
    _pods_restart_always(errs, pod_spec, "ReplicaSet")
    return errs


# ------------------------------------------------------------- Deployment

DEPLOYMENT_STRATEGIES = ("Recreate", "RollingUpdate")


def validate_deployment(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(errs, obj)
    nonnegative(errs, spec, ("replicas", "minReadySeconds", "revisionHistoryLimit",
                             "progressDeadlineSeconds"), "spec")
    selector = _validate_required_selector(errs, spec, "deployment")
    pod_spec = _validate_template(errs, spec, selector)
    _pods_restart_always(errs, pod_spec, "ReplicaSet")  # its pods belong to ReplicaSets
    _validate_deployment_strategy(errs, spec.get("strategy"), "spec.strategy")
    _get_bool(errs, spec.get("paused"), "spec.paused")
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    # A rollout that must progress before any pod may count as ready never can.
    if _is_int(deadline) and _is_int(min_ready) and 0 <= deadline <= min_ready:
        errs.append(invalid("spec.progressDeadlineSeconds", deadline,
                            "must be greater than minReadySeconds"))
    return errs


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate_deployment_strategy(errs: list, strategy, path: str) -> None:
    strategy = _get_dict(errs, strategy, path)
    if strategy is None:
        return
    kind = strategy.get("type")
    _check_enum(errs, kind, child(path, "type"), DEPLOYMENT_STRATEGIES)
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate" and rolling is not None:
        errs.append(forbidden(child(path, "rollingUpdate"),
                              "may not be specified when strategy `type` is 'Recreate'"))
        return
    rolling = _get_dict(errs, rolling, child(path, "rollingUpdate"))
    if rolling is None:
        return
    rolling_path = child(path, "rollingUpdate")
    unavailable = _int_or_percent_field(errs, rolling, "maxUnavailable", rolling_path)
    surge = _int_or_percent_field(errs, rolling, "maxSurge", rolling_path)
    # Both zero: the rollout could neither remove an old pod nor add a new one.
    if unavailable and surge and unavailable[0] == 0 and surge[0] == 0:
        errs.append(invalid(child(rolling_path, "maxUnavailable"),
                            _shown(rolling["maxUnavailable"]),
                            "may not be 0 when `maxSurge` is 0"))


def _int_or_percent_field(errs, obj: dict, field: str, path: str):
    value = obj.get(field)
    parsed = int_or_percent(errs, value, child(path, field))
    not_more_than_100_percent(errs, value, parsed, child(path, field))
    return parsed


def _shown(value):
    return go_int_or_string(value)


# -------------------------------------------------------------- DaemonSet

DAEMON_SET_STRATEGIES = ("RollingUpdate", "OnDelete")  # Kubernetes' order


def validate_daemon_set(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(errs, obj)
    nonnegative(errs, spec, ("minReadySeconds", "revisionHistoryLimit"), "spec")
    selector = _validate_required_selector(errs, spec, "daemonset")
    pod_spec = _validate_template(errs, spec, selector)
    _pods_restart_always(errs, pod_spec, "DaemonSet")
    _validate_daemon_set_strategy(errs, spec.get("updateStrategy"), "spec.updateStrategy")
    return errs


def _validate_daemon_set_strategy(errs: list, strategy, path: str) -> None:
    strategy = _get_dict(errs, strategy, path)
    if strategy is None:
        return
    _check_enum(errs, strategy.get("type"), child(path, "type"), DAEMON_SET_STRATEGIES)
    rolling_path = child(path, "rollingUpdate")
    rolling = _get_dict(errs, strategy.get("rollingUpdate"), rolling_path)
    if rolling is None or strategy.get("type") == "OnDelete":
        return
    unavailable = _int_or_percent_field(errs, rolling, "maxUnavailable", rolling_path)
    surge = _int_or_percent_field(errs, rolling, "maxSurge", rolling_path)
    # One node's pod at a time is replaced either by stopping it first
    # (maxUnavailable) or by starting the new one beside it (maxSurge).
    has_unavailable = bool(unavailable and unavailable[0])
    has_surge = bool(surge and surge[0])
    if has_unavailable and has_surge:
        errs.append(invalid(child(rolling_path, "maxSurge"), _shown(rolling["maxSurge"]),
                            "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge and (unavailable or surge):
        errs.append(required(child(rolling_path, "maxUnavailable"),
                             "cannot be 0 when maxSurge is 0"))


# -------------------------------------------------------------------- Job

COMPLETION_MODES = ("NonIndexed", "Indexed")  # Kubernetes' order
JOB_RESTART_POLICIES = ("OnFailure", "Never")


def validate_job(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _spec(errs, obj)
    nonnegative(errs, spec, ("parallelism", "completions", "activeDeadlineSeconds",
                             "backoffLimit", "ttlSecondsAfterFinished"), "spec")
    for field in ("manualSelector", "suspend"):
        _get_bool(errs, spec.get(field), child("spec", field))
    # Kubernetes generates a Job's selector (controller-uid) unless
    # manualSelector is set; a selector given must still pick the template.
    selector = None
    if spec.get("selector") is not None:
        selector = validate_label_selector(errs, spec["selector"], "spec.selector")
    elif spec.get("manualSelector") is True:
        errs.append(required("spec.selector"))
    pod_spec = _validate_template(errs, spec, selector)
    _check_enum(errs, spec.get("completionMode"), "spec.completionMode", COMPLETION_MODES)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        errs.append(required("spec.completions", "when completion mode is Indexed"))
    # A Job's pods run to completion: Always would restart a finished pod.
    # Kubernetes gives unset (defaulted to Always) and Always one message.
    policy = pod_spec.get("restartPolicy")
    if policy is None or policy in ("", "Always"):
        errs.append(required("spec.template.spec.restartPolicy",
                             'valid values: "OnFailure", "Never"'))
    elif isinstance(policy, str) and policy not in JOB_RESTART_POLICIES:
        errs.append(not_supported("spec.template.spec.restartPolicy", policy,
                                  JOB_RESTART_POLICIES))
    return errs


# ------------------------------------------------- ReplicationController

def validate_replication_controller(obj: dict) -> list[FieldError]:
    """The ReplicaSet's ancestor: its selector is a plain label map (equality
    only), and, unlike a ReplicaSet's, may change after creation."""
    errs: list[FieldError] = []
    spec = _spec(errs, obj)
    nonnegative(errs, spec, ("replicas", "minReadySeconds"), "spec")
    selector = spec.get("selector")
    errs += validate_labels(selector, "spec.selector")
    if not selector:            # defaulting copied the template's labels: still none
        errs.append(required("spec.selector"))
    template = spec.get("template")
    if template is None:
        errs.append(required("spec.template"))
        return errs
    template = _get_dict(errs, template, "spec.template") or {}
    meta = _get_dict(errs, template.get("metadata"), "spec.template.metadata") or {}
    labels = meta.get("labels")
    errs += validate_labels(labels, "spec.template.labels")
    errs += validate_annotations(meta.get("annotations"), "spec.template.annotations")
    if isinstance(selector, dict) and selector and isinstance(labels, dict) \
            and not selector.items() <= labels.items():
        errs.append(invalid("spec.template.metadata.labels", go_string_map(labels),
                            "selector does not match labels in spec.template"))
    pod_spec = template.get("spec")
    errs += validate_pod_spec({} if pod_spec is None else pod_spec, "spec.template.spec")
    _pods_restart_always(errs, pod_spec if isinstance(pod_spec, dict) else {}, "ReplicationController")
    return errs


# ---------------------------------------------------------------- CronJob

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
# A CronJob's Jobs are named <cronjob>-<minutes since epoch> (up to 11
# characters more), and a Job's name must fit a 63-character label.
CRON_JOB_NAME_MAX = 52


def validate_cron_job(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    if isinstance(name, str) and len(name) > CRON_JOB_NAME_MAX:
        errs.append(invalid("metadata.name", name, f"must be no more than {CRON_JOB_NAME_MAX} characters"))
    spec = _spec(errs, obj)
    schedule = spec.get("schedule")
    if schedule is None or schedule == "":
        errs.append(required("spec.schedule"))
    elif not isinstance(schedule, str):
        errs.append(invalid("spec.schedule", schedule, "must be a string"))
    else:
        try:
            cron.parse(schedule)
        except cron.ScheduleError as error:
            errs.append(invalid("spec.schedule", schedule, str(error)))
    zone = spec.get("timeZone")
    if zone is not None and not cron.valid_time_zone(zone):
        errs.append(invalid("spec.timeZone", zone, f"unknown time zone {zone}" if isinstance(zone, str)
                            else "must be a string"))
    _check_enum(errs, spec.get("concurrencyPolicy"), "spec.concurrencyPolicy", CONCURRENCY_POLICIES)
    nonnegative(errs, spec, ("startingDeadlineSeconds", "successfulJobsHistoryLimit",
                             "failedJobsHistoryLimit"), "spec")
    _get_bool(errs, spec.get("suspend"), "spec.suspend")
    job_template = _get_dict(errs, spec.get("jobTemplate"), "spec.jobTemplate")
    if job_template is None:
        errs.append(required("spec.jobTemplate"))
    else:
        # The template is a Job minus its name: the Job's own rules, one level down.
        for error in validate_job({"spec": job_template.get("spec") or {}}):
            errs.append(FieldError("spec.jobTemplate." + error.path, error.type, error.value, error.detail))
    return errs


# ---------------------------------------------------------------- updates

def validate_selector_update(new: dict, old: dict) -> list[FieldError]:
    """apps/v1: a workload's selector is fixed at creation, or it would
    orphan the pods it made and adopt others."""
    errs: list[FieldError] = []
    new_sel = (new.get("spec") or {}).get("selector") if isinstance(new.get("spec"), dict) \
        else None
    old_sel = (old.get("spec") or {}).get("selector") if isinstance(old.get("spec"), dict) \
        else None
    if normalized_selector(new_sel) != normalized_selector(old_sel):
        errs.append(invalid("spec.selector", go_label_selector(new_sel),
                            "field is immutable"))
    return errs


def validate_job_update(new: dict, old: dict) -> list[FieldError]:
    """A Job's pods are already running from its template: the template,
    selector and completion mode stay as they were."""
    errs = validate_selector_update(new, old)
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    check_immutable(errs, new_spec.get("template"), old_spec.get("template"), "spec.template")
    check_immutable(errs, new_spec.get("completionMode"), old_spec.get("completionMode"),
                    "spec.completionMode")
    if new_spec.get("completionMode") != "Indexed":
        check_immutable(errs, new_spec.get("completions"), old_spec.get("completions"),
                        "spec.completions")
    return errs


# ----------------------------------------------------------------- status

_STATUS_COUNTS = {
    "ReplicationController": ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                              "observedGeneration"),
    "ReplicaSet": ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                   "observedGeneration"),
    "Deployment": ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                   "unavailableReplicas", "observedGeneration", "collisionCount"),
    "DaemonSet": ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                  "numberReady", "updatedNumberScheduled", "numberAvailable",
                  "numberUnavailable", "observedGeneration", "collisionCount"),
    "Job": ("active", "succeeded", "failed", "terminating", "ready"),
}


def validate_workload_status(kind: str, obj: dict) -> list[FieldError]:
    """Counts a controller reports may not be negative."""
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status")
    if status is not None:
        nonnegative(errs, status, _STATUS_COUNTS.get(kind, ()), "status")
    return errs
