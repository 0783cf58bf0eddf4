"""One entry point: validate any served object, on create or update.

    errors = validate_object("apps", "Deployment", obj)            # create
    errors = validate_object("apps", "Deployment", obj, old=stored)  # update
    errors = validate_status_update("", "Pod", obj, old=stored)     # PUT .../status

The API server calls these after defaulting (common/model/defaults.py) and turns
a non-empty list into a 422 Invalid response. The order is Kubernetes':
type meta, metadata (with the kind's name rule), the kind's own rules,
then, on update, what may not change.

Whether the object is namespaced is the caller's knowledge (the resource
registry); pass it, or the table below decides for the kinds it knows. So
is filling metadata.namespace in from the URL: a namespaced object without
one is accepted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from common.model import validation_apps as apps
from common.model import validation_coordination as coordination
from common.model import validation_core as core
from common.model import validation_discovery as discovery
from common.model import validation_networking as networking
from common.model import validation_rbac as rbac
from common.model import validation_statefulset as statefulset
from common.model import validation_storage as storage
from common.model.field_errors import FieldError, child, forbidden, go_string_slice, invalid, required
from common.model.names import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain
from common.model.validation import (_type_error, validate_object_meta, validate_pod_spec,
                               validate_type_meta)
from common.model.validation_pod_update import validate_pod_status, validate_pod_update
from common.model.validation_shared import FIELD_IMMUTABLE

Check = Callable[[dict], list]
UpdateCheck = Callable[[dict, dict], list]


@dataclass(frozen=True)
class KindRules:
    api_version: str
    namespaced: bool
    validate: Check
    update: UpdateCheck | None = None
    status: Check | None = None
    # How the kind's names are checked: most are DNS subdomains; names that
    # become a DNS label or an environment variable are stricter.
    name_check: Callable[[str], list] = is_dns1123_subdomain


def _pod_spec(obj: dict) -> list[FieldError]:
    if obj.get("spec") is None:
        return [required("spec")]
    return validate_pod_spec(obj["spec"], "spec")


def _no_rules(obj: dict) -> list[FieldError]:
    return []


def _status_of(kind: str) -> Check:
    return lambda obj: apps.validate_workload_status(kind, obj)


# [START kind-rules]
KINDS: dict[tuple[str, str], KindRules] = {
    ("", "Pod"): KindRules("v1", True, _pod_spec, validate_pod_update, validate_pod_status),
    ("", "Namespace"): KindRules("v1", False, core.validate_namespace, None,
                                 core.validate_namespace_status, is_dns1123_label),
    ("", "Node"): KindRules("v1", False, core.validate_node, core.validate_node_update,
                            core.validate_node_status),
    ("", "Service"): KindRules("v1", True, core.validate_service, core.validate_service_update,
                               _no_rules, is_dns1035_label),
    ("", "Endpoints"): KindRules("v1", True, core.validate_endpoints),
    ("", "Event"): KindRules("v1", True, core.validate_event),
    ("", "ConfigMap"): KindRules("v1", True, core.validate_config_map,
                                 core.validate_config_map_update),
    ("", "Secret"): KindRules("v1", True, core.validate_secret, core.validate_secret_update),
    ("", "ReplicationController"): KindRules("v1", True, apps.validate_replication_controller, None,
                                             _status_of("ReplicationController")),
    ("apps", "ReplicaSet"): KindRules("apps/v1", True, apps.validate_replica_set,
                                      apps.validate_selector_update, _status_of("ReplicaSet")),
    ("apps", "Deployment"): KindRules("apps/v1", True, apps.validate_deployment,
                                      apps.validate_selector_update, _status_of("Deployment")),
    ("apps", "DaemonSet"): KindRules("apps/v1", True, apps.validate_daemon_set,
                                     apps.validate_selector_update, _status_of("DaemonSet")),
    ("batch", "Job"): KindRules("batch/v1", True, apps.validate_job, apps.validate_job_update,
                                _status_of("Job")),
    ("batch", "CronJob"): KindRules("batch/v1", True, apps.validate_cron_job, None, _no_rules),
    ("coordination.k8s.io", "Lease"): KindRules("coordination.k8s.io/v1", True,
                                                coordination.validate_lease),
    ("discovery.k8s.io", "EndpointSlice"): KindRules("discovery.k8s.io/v1", True,
                                                     discovery.validate_endpoint_slice,
                                                     discovery.validate_endpoint_slice_update),
}
# [END kind-rules]
KINDS[("", "ServiceAccount")] = KindRules("v1", True, core.validate_service_account)
# HTTP routing into the cluster (chapter 05's ingress controller serves them).
KINDS.update({
    ("networking.k8s.io", "Ingress"): KindRules("networking.k8s.io/v1", True, networking.validate_ingress_create,
                                                None, networking.validate_ingress_status),
    ("networking.k8s.io", "IngressClass"): KindRules("networking.k8s.io/v1", False,
                                                     networking.validate_ingress_class,
                                                     networking.validate_ingress_class_update),
})
# Pods with stable names and disks, and the template history their controller keeps.
KINDS.update({
    ("apps", "StatefulSet"): KindRules("apps/v1", True, statefulset.validate_stateful_set,
                                       statefulset.validate_stateful_set_update,
                                       statefulset.validate_stateful_set_status),
    ("apps", "ControllerRevision"): KindRules("apps/v1", True, statefulset.validate_controller_revision,
                                              statefulset.validate_controller_revision_update),
})
# Storage: volumes, the claims on them, and the classes that make them.
KINDS.update({
    ("", "PersistentVolume"): KindRules("v1", False, storage.validate_persistent_volume,
                                        storage.validate_persistent_volume_update,
                                        storage.validate_persistent_volume_status),
    ("", "PersistentVolumeClaim"): KindRules("v1", True, storage.validate_persistent_volume_claim,
                                             storage.validate_persistent_volume_claim_update,
                                             storage.validate_persistent_volume_claim_status),
    ("storage.k8s.io", "StorageClass"): KindRules("storage.k8s.io/v1", False, storage.validate_storage_class,
                                                  storage.validate_storage_class_update),
})
# Who may do what (RBAC); their names may hold ":", as in system:node.
KINDS.update({
    ("rbac.authorization.k8s.io", "Role"): KindRules("rbac.authorization.k8s.io/v1", True, rbac.validate_role,
                                                     name_check=rbac.is_path_segment_name),
    ("rbac.authorization.k8s.io", "ClusterRole"): KindRules("rbac.authorization.k8s.io/v1", False,
                                                            rbac.validate_cluster_role,
                                                            name_check=rbac.is_path_segment_name),
    ("rbac.authorization.k8s.io", "RoleBinding"): KindRules("rbac.authorization.k8s.io/v1", True,
                                                            rbac.validate_role_binding, rbac.validate_binding_update,
                                                            name_check=rbac.is_path_segment_name),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): KindRules("rbac.authorization.k8s.io/v1", False,
                                                                   rbac.validate_cluster_role_binding,
                                                                   rbac.validate_binding_update,
                                                                   name_check=rbac.is_path_segment_name),
})


# [START validate-object]
def validate_object(group: str, kind: str, obj, old=None, *,
                    namespaced: bool | None = None) -> list[FieldError]:
    """Every problem with obj as a (group, kind); with old, as an update of old."""
    rules = KINDS.get((group, kind))
    errs = _common_checks(group, kind, obj, rules, namespaced)
    if errs is None:
        return [_type_error("", obj, f"an object (a {kind} has apiVersion, kind, metadata, ...)")]
    if rules is not None:
        errs += rules.validate(obj)
    if isinstance(old, dict):
        errs += validate_metadata_update(obj, old)
        if rules is not None and rules.update is not None:
            errs += rules.update(obj, old)
    return errs
# [END validate-object]


def validate_status_update(group: str, kind: str, obj, old, *,
                           namespaced: bool | None = None) -> list[FieldError]:
    """PUT .../status: metadata as on any update, then the status rules.

    The caller keeps the stored spec (a status write may not change it),
    as Kubernetes' status strategies do.
    """
    rules = KINDS.get((group, kind))
    errs = _common_checks(group, kind, obj, rules, namespaced)
    if errs is None:
        return [_type_error("", obj, f"an object (a {kind} has apiVersion, kind, metadata, ...)")]
    if isinstance(old, dict):
        errs += validate_metadata_update(obj, old)
    if rules is not None and rules.status is not None:
        errs += rules.status(obj)
    return errs


def _common_checks(group, kind, obj, rules, namespaced) -> list[FieldError] | None:
    if not isinstance(obj, dict):
        return None
    api_version = rules.api_version if rules else (f"{group}/v1" if group else "v1")
    errs = validate_type_meta(obj, api_version, kind)
    if namespaced is None:
        namespaced = rules.namespaced if rules else True
    name_args = {"name_check": rules.name_check} if rules else {}
    errs += validate_object_meta(obj.get("metadata"), namespaced=namespaced, **name_args)
    return errs


IMMUTABLE_METADATA = ("name", "namespace", "uid", "creationTimestamp")


def validate_metadata_update(new: dict, old: dict) -> list[FieldError]:
    """The identity of an object: its name, namespace, uid and birth time;
    and no new finalizers once it is being deleted.

    An unset uid or creationTimestamp in the new object means "unchanged":
    the server copies them from the stored object, as Kubernetes does.
    """
    errs: list[FieldError] = []
    new_meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
    old_meta = old.get("metadata") if isinstance(old.get("metadata"), dict) else {}
    for field in IMMUTABLE_METADATA:
        new_value, old_value = new_meta.get(field), old_meta.get(field)
        if field in ("uid", "creationTimestamp") and new_value in (None, ""):
            continue
        if (new_value or "") != (old_value or ""):
            errs.append(invalid(child("metadata", field), new_value or "", FIELD_IMMUTABLE))
    if old_meta.get("deletionTimestamp"):
        # Deletion waits for the finalizers there were when it began; one
        # added now could keep the object forever (ValidateNoNewFinalizers).
        added = sorted(_strings(new_meta.get("finalizers")) - _strings(old_meta.get("finalizers")))
        if added:
            errs.append(forbidden(child("metadata", "finalizers"),
                                  "no new finalizers can be added if the object is being "
                                  f"deleted, found new finalizers {go_string_slice(added)}"))
    return errs


def _strings(value) -> set[str]:
    """The strings in a list (the rest is reported by validate_object_meta)."""
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def served_kinds() -> list[tuple[str, str]]:
    return list(KINDS)
