"""Validate storage: v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1 StorageClass.

A PersistentVolume is a piece of storage that exists in the cluster (a
directory on one node, here); a PersistentVolumeClaim is a namespaced
request for one ("5Gi I can write to from one node"); a StorageClass names a
kind of storage and the provisioner that makes volumes of it on demand.
Messages and paths follow k8s.io/kubernetes pkg/apis/core/validation
(ValidatePersistentVolumeSpec, ValidatePersistentVolumeClaimSpec and their
updates) and pkg/apis/storage/validation; the type checks stand in for the
errors Kubernetes gives while decoding (see common/model/validation.py).

Of the many volume sources a PV may name, Kubernetes checks each in its own
way; we check the two our kubelet mounts (`hostPath` and `local`) fully,
and take any other on trust as an object (nothing here could mount it).
"""

from __future__ import annotations

import posixpath

from common.model.field_errors import FieldError, child, forbidden, index, invalid, key, not_supported, required
from common.model.names import is_dns1123_subdomain, is_qualified_name
from common.model.validation import (HOST_PATH_TYPES, _check_enum, _check_quantity, _get_bool, _get_dict,
                                     _get_list, _get_str, _items, _required_str, _string_list)
from common.model.validation_shared import FIELD_IMMUTABLE, check_immutable, validate_label_selector

# Sorted, as Kubernetes prints them (sets.List).
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")       # a class may not ask for the deprecated Recycle
VOLUME_MODES = ("Block", "Filesystem")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
PV_PHASES = ("Available", "Bound", "Failed", "Pending", "Released")
CLAIM_PHASES = ("Bound", "Lost", "Pending")
NODE_SELECTOR_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
# Every source a PersistentVolume may name, in the order Kubernetes tries them.
PV_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs",
              "rbd", "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile",
              "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO",
              "local", "storageos", "csi")
MAX_CLASS_PARAMETERS = 512
SPEC = "spec"


# --------------------------------------------------------- shared pieces

def _access_modes(errs: list, spec: dict, path: str, required_detail: str) -> list[str]:
    """At least one known mode; ReadWriteOncePod (one pod, ever) stands alone."""
    modes_path = child(path, "accessModes")
    modes = [m for m in _get_list(errs, spec.get("accessModes"), modes_path, "a list of access modes") or ()]
    if not modes:
        errs.append(required(modes_path, required_detail))
    for i, mode in enumerate(modes):
        mode = _get_str(errs, mode, index(modes_path, i))
        if mode is not None and mode not in ACCESS_MODES:
            errs.append(not_supported(modes_path, mode, ACCESS_MODES))
    known = [m for m in modes if m in ACCESS_MODES]
    if "ReadWriteOncePod" in known and any(m != "ReadWriteOncePod" for m in known):
        errs.append(forbidden(modes_path, "may not use ReadWriteOncePod with other access modes"))
    return known


def _class_name(errs: list, value, path: str) -> None:
    name = _get_str(errs, value, path)
    if name:
        errs += [invalid(path, name, msg) for msg in is_dns1123_subdomain(name)]


def _positive_quantity(errs: list, value, path: str) -> None:
    quantity = _check_quantity(errs, value, path)
    if quantity is not None and quantity.sign() <= 0:
        errs.append(invalid(path, str(quantity), "must be greater than zero"))


def _absolute_path_without_backsteps(errs: list, value, path: str, must_be_absolute: bool) -> None:
    text = _required_str(errs, value, path)
    if text is None:
        return
    if must_be_absolute and not text.startswith("/"):
        errs.append(invalid(path, text, "must be an absolute path"))
    if ".." in text.split("/"):
        errs.append(invalid(path, text, "must not contain '..'"))


# [START node-affinity-validation]
def validate_node_selector(errs: list, selector, path: str) -> None:
    """A NodeSelector: terms ORed, each an AND of requirements on node labels
    (matchExpressions) or on the node's name (matchFields, key metadata.name)."""
    selector = _get_dict(errs, selector, path)
    if selector is None:
        return
    terms_path = child(path, "nodeSelectorTerms")
    terms = list(_items(errs, selector.get("nodeSelectorTerms"), terms_path, "node selector terms"))
    if not terms and not selector.get("nodeSelectorTerms"):
        errs.append(required(terms_path, "must have at least one node selector term"))
    for _, term_path, term in terms:
        for _, req_path, req in _items(errs, term.get("matchExpressions"), child(term_path, "matchExpressions"),
                                       "node selector requirements"):
            _node_selector_requirement(errs, req, req_path)
            key_value = _get_str(errs, req.get("key"), child(req_path, "key"))
            errs += [invalid(child(req_path, "key"), key_value or "", m) for m in is_qualified_name(key_value or "")]
        for _, req_path, req in _items(errs, term.get("matchFields"), child(term_path, "matchFields"),
                                       "node selector requirements"):
            field = _get_str(errs, req.get("key"), child(req_path, "key"))
            if field != "metadata.name":
                errs.append(invalid(child(req_path, "key"), field or "", "not a valid field selector key"))
            values = _get_list(errs, req.get("values"), child(req_path, "values")) or []
            if req.get("operator") in ("In", "NotIn") and len(values) != 1:
                errs.append(required(child(req_path, "values"), "must be only one value when `operator` is "
                                     "'In' or 'NotIn' for node field selector"))
            elif req.get("operator") not in ("In", "NotIn"):
                errs.append(invalid(child(req_path, "operator"), req.get("operator") or "",
                                    "not a valid selector operator"))


def _node_selector_requirement(errs: list, req: dict, path: str) -> None:
    operator = _get_str(errs, req.get("operator"), child(path, "operator"))
    values_path = child(path, "values")
    values = _get_list(errs, req.get("values"), values_path, "a list of strings") or []
    _string_list(errs, values, values_path)
    if operator in ("In", "NotIn") and not values:
        errs.append(required(values_path, "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errs.append(forbidden(values_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt") and len(values) != 1:
        errs.append(required(values_path, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    elif operator not in NODE_SELECTOR_OPERATORS:
        errs.append(invalid(child(path, "operator"), operator or "", "not a valid selector operator"))
# [END node-affinity-validation]


# ------------------------------------------------------ PersistentVolume

def validate_persistent_volume(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), SPEC)
    if spec is None:
        return errs + ([required(SPEC)] if obj.get("spec") is None else [])
    _access_modes(errs, spec, SPEC, "")
    _capacity(errs, spec.get("capacity"), child(SPEC, "capacity"))
    reclaim = _get_str(errs, spec.get("persistentVolumeReclaimPolicy"), child(SPEC, "persistentVolumeReclaimPolicy"))
    if reclaim and reclaim not in PV_RECLAIM_POLICIES:
        errs.append(not_supported(child(SPEC, "persistentVolumeReclaimPolicy"), reclaim, PV_RECLAIM_POLICIES))
    affinity_given = _volume_node_affinity(errs, spec.get("nodeAffinity"), child(SPEC, "nodeAffinity"))
    sources = [s for s in PV_SOURCES if spec.get(s) is not None]
    for extra in sources[1:]:
        errs.append(forbidden(child(SPEC, extra), "may not specify more than 1 volume type"))
    if not sources:
        errs.append(required(SPEC, "must specify a volume type"))
    else:
        _pv_source(errs, spec, sources[0], affinity_given)
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and isinstance(host_path.get("path"), str) and reclaim == "Recycle" \
            and posixpath.normpath(host_path["path"]) == "/":
        errs.append(forbidden(child(SPEC, "persistentVolumeReclaimPolicy"),
                              "may not be 'recycle' for a hostPath mount of '/'"))
    _class_name(errs, spec.get("storageClassName"), child(SPEC, "storageClassName"))
    _check_enum(errs, spec.get("volumeMode"), child(SPEC, "volumeMode"), VOLUME_MODES)
    _claim_ref(errs, spec.get("claimRef"), child(SPEC, "claimRef"))
    return errs


def _capacity(errs: list, capacity, path: str) -> None:
    capacity = _get_dict(errs, capacity, path)
    if not capacity:
        errs.append(required(path))
    if not capacity or "storage" not in capacity or len(capacity) > 1:
        errs.append(not_supported(path, capacity or {}, ("storage",)))
    for name, amount in (capacity or {}).items():
        _positive_quantity(errs, amount, key(path, name))


def _volume_node_affinity(errs: list, affinity, path: str) -> bool:
    """True if the volume says which nodes can reach it (checked or not)."""
    affinity = _get_dict(errs, affinity, path)
    if affinity is None:
        return False
    if affinity.get("required") is None:
        errs.append(required(child(path, "required"), "must specify required node constraints"))
    else:
        validate_node_selector(errs, affinity["required"], child(path, "required"))
    return True


def _pv_source(errs: list, spec: dict, source_name: str, affinity_given: bool) -> None:
    path = child(SPEC, source_name)
    source = _get_dict(errs, spec[source_name], path)
    if source is None:
        return
    if source_name == "hostPath":
        _absolute_path_without_backsteps(errs, source.get("path"), child(path, "path"), must_be_absolute=False)
        _check_enum(errs, source.get("type"), child(path, "type"), HOST_PATH_TYPES)
    elif source_name == "local":
        # A local volume is a disk or directory on one node: without saying
        # which node, no scheduler could put its pods where it is.
        _absolute_path_without_backsteps(errs, source.get("path"), child(path, "path"), must_be_absolute=True)
        _get_str(errs, source.get("fsType"), child(path, "fsType"))
        if not affinity_given:
            errs.append(required(child(SPEC, "nodeAffinity"), "Local volume requires node affinity"))


def _claim_ref(errs: list, ref, path: str) -> None:
    ref = _get_dict(errs, ref, path)
    for field in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion"):
        _get_str(errs, (ref or {}).get(field), child(path, field))


def validate_persistent_volume_update(new: dict, old: dict) -> list[FieldError]:
    """Where the data is (its source) never changes; nor does how it is
    presented (volumeMode), nor, once set, which nodes reach it."""
    errs: list[FieldError] = []
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    new_source = {s: new_spec.get(s) for s in PV_SOURCES if new_spec.get(s) is not None}
    old_source = {s: old_spec.get(s) for s in PV_SOURCES if old_spec.get(s) is not None}
    if new_source != old_source:
        errs.append(forbidden(child(SPEC, "persistentvolumesource"),
                              "spec.persistentvolumesource is immutable after creation"))
    check_immutable(errs, new_spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode")
    if old_spec.get("nodeAffinity") is not None:
        check_immutable(errs, new_spec.get("nodeAffinity"), old_spec.get("nodeAffinity"), "nodeAffinity")
    return errs


def validate_persistent_volume_status(obj: dict) -> list[FieldError]:
    return _phase(obj, PV_PHASES)


def _phase(obj: dict, phases: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    status = _get_dict(errs, obj.get("status"), "status") or {}
    _check_enum(errs, status.get("phase"), child("status", "phase"), phases)
    return errs


# ------------------------------------------------- PersistentVolumeClaim

def validate_persistent_volume_claim(obj: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, obj.get("spec"), SPEC)
    if spec is None:
        return errs + ([required(SPEC)] if obj.get("spec") is None else [])
    validate_claim_spec(errs, spec, SPEC)
    return errs


# [START claim-validation]
def validate_claim_spec(errs: list, spec: dict, path: str) -> None:
    """A claim's spec; a StatefulSet's volumeClaimTemplates reuse it."""
    _access_modes(errs, spec, path, "at least 1 access mode is required")
    if spec.get("selector") is not None:
        validate_label_selector(errs, spec["selector"], child(path, "selector"))
    resources = _get_dict(errs, spec.get("resources"), child(path, "resources")) or {}
    requests = _get_dict(errs, resources.get("requests"), child(child(path, "resources"), "requests")) or {}
    storage_path = key(child(path, "resources"), "storage")
    if requests.get("storage") is None:
        errs.append(required(storage_path))
    else:
        _positive_quantity(errs, requests["storage"], storage_path)
    _class_name(errs, spec.get("storageClassName"), child(path, "storageClassName"))
    _check_enum(errs, spec.get("volumeMode"), child(path, "volumeMode"), VOLUME_MODES)
    _get_str(errs, spec.get("volumeName"), child(path, "volumeName"))
# [END claim-validation]


def validate_persistent_volume_claim_update(new: dict, old: dict) -> list[FieldError]:
    """A claim is fixed once made, so quotas and limits cannot be gamed; the
    binder may fill in volumeName once, and admission a missing class."""
    errs: list[FieldError] = []
    new_spec = dict(new.get("spec")) if isinstance(new.get("spec"), dict) else {}
    old_spec = dict(old.get("spec")) if isinstance(old.get("spec"), dict) else {}
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    if old_spec.get("storageClassName") is None:
        old_spec["storageClassName"] = new_spec.get("storageClassName")
    for spec in (new_spec, old_spec):   # defaulted fields: unset and empty are the same
        for field in [f for f, v in spec.items() if v in (None, "", [], {})]:
            del spec[field]
    if new_spec != old_spec:
        errs.append(forbidden(SPEC, "spec is immutable after creation except resources.requests and "
                                    "volumeAttributesClassName for bound claims"))
    return errs


def validate_persistent_volume_claim_status(obj: dict) -> list[FieldError]:
    return _phase(obj, CLAIM_PHASES)


# ---------------------------------------------------------- StorageClass

# [START storage-class-validation]
def validate_storage_class(obj: dict) -> list[FieldError]:
    """A StorageClass has no spec: its fields sit at the top of the object."""
    errs: list[FieldError] = []
    provisioner = _get_str(errs, obj.get("provisioner"), "provisioner")
    if not provisioner and obj.get("provisioner") in (None, ""):
        errs.append(required("provisioner"))
    elif provisioner:
        errs += [invalid("provisioner", provisioner, m) for m in is_qualified_name(provisioner.lower())]
    parameters = _get_dict(errs, obj.get("parameters"), "parameters") or {}
    if len(parameters) > MAX_CLASS_PARAMETERS:
        errs.append(invalid("parameters", len(parameters),
                            f"Provisioner Parameters exceeded max allowed ({MAX_CLASS_PARAMETERS})"))
    for name, value in parameters.items():
        _get_str(errs, value, key("parameters", name))
    _check_enum(errs, obj.get("reclaimPolicy"), "reclaimPolicy", CLASS_RECLAIM_POLICIES)
    mode = _get_str(errs, obj.get("volumeBindingMode"), "volumeBindingMode")
    if not mode and obj.get("volumeBindingMode") in (None, ""):
        errs.append(required("volumeBindingMode"))    # defaulting fills it in: only a cleared one lands here
    elif mode and mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    _get_bool(errs, obj.get("allowVolumeExpansion"), "allowVolumeExpansion")
    _string_list(errs, obj.get("mountOptions"), "mountOptions")
    _get_list(errs, obj.get("allowedTopologies"), "allowedTopologies")
    return errs
# [END storage-class-validation]


def validate_storage_class_update(new: dict, old: dict) -> list[FieldError]:
    """Volumes already made from a class were made by its rules: they stay."""
    errs: list[FieldError] = []
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    check_immutable(errs, new.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode")
    return errs


__all__ = ["ACCESS_MODES", "FIELD_IMMUTABLE", "validate_claim_spec", "validate_node_selector",
           "validate_persistent_volume", "validate_persistent_volume_claim",
           "validate_persistent_volume_claim_status", "validate_persistent_volume_claim_update",
           "validate_persistent_volume_status", "validate_persistent_volume_update",
           "validate_storage_class", "validate_storage_class_update"]
