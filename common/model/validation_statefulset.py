"""Validate a StatefulSet and its history (apps/v1 StatefulSet, ControllerRevision).

A StatefulSet is a ReplicaSet whose pods keep their names (web-0, web-1...)
and get a disk each, made from `volumeClaimTemplates`. The rules follow
k8s.io/kubernetes pkg/apis/apps/validation (ValidateStatefulSetSpec,
ValidateStatefulSetUpdate, ValidateControllerRevision) and keep their
messages. One difference: Kubernetes skips the pod template's spec
altogether (a container may mount a claim template's name, which is not
in the template's volumes, and its validation could not tell). We check the
spec as the controller will make it, with a claim volume for each template,
so a typo in a mount is caught at `kubectl apply` and not by a pod that
never starts.
"""

from __future__ import annotations

from common.model.field_errors import FieldError, child, forbidden, invalid, not_supported, required
from common.model.names import is_dns1123_subdomain
from common.model.validation import _get_dict, _items, validate_annotations, validate_labels, validate_pod_spec
from common.model.validation_shared import (go_label_selector, go_string_map, nonnegative, selector_is_empty,
                                            selector_matches, validate_label_selector)

POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
UPDATE_STRATEGIES = ("RollingUpdate", "OnDelete")
RETENTION_POLICIES = ("Retain", "Delete")
# What `kubectl apply` may change after creation; the rest (selector,
# serviceName, volumeClaimTemplates, podManagementPolicy...) is fixed, as
# the pods and claims made from it already exist.
UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
             "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
UPDATE_FORBIDDEN = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


def validate_stateful_set(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), "spec") or {}
    _validate_pod_management_policy(errs, spec.get("podManagementPolicy"))
    _validate_update_strategy(errs, spec.get("updateStrategy"))
    nonnegative(errs, spec, ("replicas", "minReadySeconds", "revisionHistoryLimit"), "spec")
    ordinals = _get_dict(errs, spec.get("ordinals"), "spec.ordinals")
    if ordinals is not None:
        nonnegative(errs, ordinals, ("start",), "spec.ordinals")
    _validate_retention_policy(errs, spec.get("persistentVolumeClaimRetentionPolicy"))
    selector = _validate_selector(errs, spec.get("selector"))
    claim_names = _validate_claim_templates(errs, spec.get("volumeClaimTemplates"))
    _validate_template(errs, spec.get("template"), selector, claim_names)
    return errs


def _validate_pod_management_policy(errs: list, policy) -> None:
    path = "spec.podManagementPolicy"
    if policy in (None, ""):
        errs.append(required(path))
    elif policy not in POD_MANAGEMENT_POLICIES:
        errs.append(invalid(path, policy, "must be 'OrderedReady' or 'Parallel'"))


def _validate_update_strategy(errs: list, strategy) -> None:
    path = "spec.updateStrategy"
    strategy = _get_dict(errs, strategy, path) or {}
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    rolling_path = child(path, "rollingUpdate")
    if kind in (None, ""):
        errs.append(required(path))
    elif kind == "OnDelete":
        if rolling is not None:          # a partition means nothing when pods change only when deleted
            errs.append(invalid(rolling_path, rolling, "only allowed for updateStrategy 'RollingUpdate'"))
    elif kind == "RollingUpdate":
        rolling = _get_dict(errs, rolling, rolling_path)
        if rolling is not None:
            nonnegative(errs, rolling, ("partition",), rolling_path)
    else:
        errs.append(invalid(child(path, "type"), kind, "must be 'RollingUpdate' or 'OnDelete'"))


def _validate_retention_policy(errs: list, policy) -> None:
    path = "spec.persistentVolumeClaimRetentionPolicy"
    policy = _get_dict(errs, policy, path)
    for field in ("whenDeleted", "whenScaled"):
        value = (policy or {}).get(field)
        if policy is not None and value not in RETENTION_POLICIES:
            errs.append(not_supported(child(path, field), value if value is not None else "", RETENTION_POLICIES))


def _validate_selector(errs: list, selector) -> dict | None:
    if selector is None:
        errs.append(required("spec.selector"))
        return None
    selector = validate_label_selector(errs, selector, "spec.selector")
    if selector is not None and selector_is_empty(selector):
        errs.append(invalid("spec.selector", go_label_selector(selector), "empty selector is invalid for statefulset"))
    return selector


def _validate_claim_templates(errs: list, templates) -> list[str]:
    """Each template is a claim without its namespace; its name starts the
    claims' names (www -> www-web-0) and is what containers mount."""
    path = "spec.volumeClaimTemplates"
    names: list[str] = []
    for i, item_path, claim in _items(errs, templates, path, "PersistentVolumeClaims"):
        meta = _get_dict(errs, claim.get("metadata"), child(item_path, "metadata")) or {}
        name = meta.get("name")
        name_path = child(item_path, "metadata.name")
        if not name:
            errs.append(required(name_path, "name or generateName is required"))
        elif not isinstance(name, str):
            errs.append(invalid(name_path, name, "must be a string"))
        else:
            errs += [invalid(name_path, name, message) for message in is_dns1123_subdomain(name)]
            names.append(name)
        errs += validate_labels(meta.get("labels"), child(item_path, "metadata.labels"))
        claim_spec = _get_dict(errs, claim.get("spec"), child(item_path, "spec")) or {}
        modes = claim_spec.get("accessModes")
        if not modes:
            errs.append(required(child(item_path, "spec.accessModes"), "at least 1 access mode is required"))
        requests = ((claim_spec.get("resources") or {}).get("requests") or {}) \
            if isinstance(claim_spec.get("resources"), dict) else {}
        if not isinstance(requests, dict) or "storage" not in requests:
            errs.append(required(child(item_path, "spec.resources[storage]")))
    return names


def _validate_template(errs: list, template, selector: dict | None, claim_names: list[str]) -> None:
    path = "spec.template"
    if template is None:
        errs.append(required(path))
        return
    template = _get_dict(errs, template, path) or {}
    meta = _get_dict(errs, template.get("metadata"), child(path, "metadata")) or {}
    labels = meta.get("labels")
    if selector is not None and not selector_is_empty(selector) and selector_matches(selector, labels) is False:
        errs.append(invalid(child(path, "metadata.labels"), go_string_map(labels),
                            "`selector` does not match template `labels`"))
    errs += validate_labels(labels, child(path, "labels"))
    errs += validate_annotations(meta.get("annotations"), child(path, "annotations"))
    pod_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    errs += validate_pod_spec(pod_spec_with_claims(pod_spec, claim_names), child(path, "spec"))
    policy = pod_spec.get("restartPolicy")
    if policy not in (None, "", "Always"):   # left out, defaulting sets Always (as validation_apps reads it)
        errs.append(not_supported(child(path, "spec.restartPolicy"), policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(child(path, "spec.activeDeadlineSeconds"),
                              "activeDeadlineSeconds in StatefulSet is not Supported"))


def pod_spec_with_claims(pod_spec: dict, claim_names: list[str]) -> dict:
    """The template's pod spec plus a claim volume per template not already
    a volume: what a StatefulSet pod gets (the claim's own name is the
    controller's to choose; any valid one will do for the check)."""
    volumes = pod_spec.get("volumes")
    if not isinstance(volumes, list):
        return pod_spec if volumes is not None or not claim_names else {
            **pod_spec, "volumes": [_claim_volume(name) for name in claim_names]}
    have = {v.get("name") for v in volumes if isinstance(v, dict)}
    return {**pod_spec, "volumes": volumes + [_claim_volume(n) for n in claim_names if n not in have]}


def _claim_volume(name: str) -> dict:
    return {"name": name, "persistentVolumeClaim": {"claimName": f"{name}-0"}}


def validate_stateful_set_update(new: dict, old: dict) -> list[FieldError]:
    """Only the fields in UPDATABLE may change."""
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}

    def fixed(spec: dict) -> dict:
        return {k: v for k, v in spec.items() if k not in UPDATABLE}
    if fixed(new_spec) != fixed(old_spec):
        return [forbidden("spec", UPDATE_FORBIDDEN)]
    return []


STATUS_COUNTS = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                 "observedGeneration", "collisionCount")


def validate_stateful_set_status(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status")
    if status is None:
        return errs
    nonnegative(errs, status, STATUS_COUNTS, "status")
    replicas = status.get("replicas") if isinstance(status.get("replicas"), int) else None
    for field in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        value = status.get(field)
        if replicas is not None and isinstance(value, int) and value > replicas:
            errs.append(invalid(child("status", field), value, "cannot be greater than status.replicas"))
    return errs


# ------------------------------------------------------------ ControllerRevision

def validate_controller_revision(obj: dict) -> list[FieldError]:
    """A snapshot of a template: its data is required and, once written, never changes."""
    errs: list[FieldError] = []
    if obj.get("data") is None:
        errs.append(required("data"))
    revision = obj.get("revision")
    if revision is None:
        errs.append(required("revision"))
    else:
        nonnegative(errs, obj, ("revision",), "")
    return errs


def validate_controller_revision_update(new: dict, old: dict) -> list[FieldError]:
    if new.get("data") != old.get("data"):
        return [invalid("data", "", "field is immutable")]
    return []



__all__ = ["validate_stateful_set", "validate_stateful_set_update", "validate_stateful_set_status",
           "validate_controller_revision", "validate_controller_revision_update", "pod_spec_with_claims"]
