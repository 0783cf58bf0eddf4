"""Validate objects the way the Kubernetes API server does; errors are values.

This module holds the Pod's rules and the helpers every kind uses; the
other kinds live in validation_core.py (core/v1) and validation_apps.py
(apps/v1, batch/v1), and common/model/validate.py is the one entry point the
API server calls: validate_object(group, kind, obj, old=None).

    errors = validate_pod(obj)
    for err in errors:
        print(err)   # spec.containers[0].image: Required value

Every check appends a FieldError and carries on, so one call reports every
problem in the object, as Kubernetes' ValidatePod does. Where Kubernetes 1.32
has a message for the same problem, ours is its wording, byte for byte
(k8s.io/apimachinery v0.32.0 pkg/util/validation and pkg/api/validation;
kubernetes v1.32 pkg/apis/core/validation/validation.go), so a learner can
search for it. tests/common/test_validation.py says, case by case, which
messages are Kubernetes' and which are ours.

Two differences from Kubernetes run through the whole module:

* Kubernetes decodes JSON into Go structs before it validates, so a wrong
  type (`image: 5`, `containers: web`) never reaches validation: the request
  fails with a decode error (400 Bad Request), worded by Go's JSON decoder:
  `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal
  number into Go struct field Container.spec.containers.image of type string`.
  We validate the plain dict, so a wrong type is one more FieldError in our
  own words, which say what to write instead (_type_error below):
  `spec.containers[0].image: Invalid value: 5: must be a string (put it in quotes)`.
  `null` counts as "not set", as it does for Kubernetes.
* Kubernetes validates after defaulting. Fields that defaulting fills in
  (protocol, imagePullPolicy, restartPolicy, probe periods, ...) may be left
  out or empty here; when given, they are checked.

Unknown fields are not errors: they are kept and ignored.
"""

from __future__ import annotations

import ipaddress
import re

from common.model.field_errors import (DUPLICATE, FORBIDDEN, INVALID, NOT_FOUND, NOT_SUPPORTED,  # noqa: F401
                                 REQUIRED, TOO_LONG, FieldError, GoValue, child, duplicate,
                                 forbidden, format_value, go_string_slice, index, invalid, key,
                                 not_found, not_supported, required, too_long)
from common.model.names import (DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, TOTAL_ANNOTATION_SIZE_MAX,  # noqa: F401
                          _matches, _regex_error, is_config_map_key, is_dns1123_label,
                          is_dns1123_subdomain, is_env_var_name, mask_trailing_dash,
                          is_qualified_name, is_valid_label_value, is_valid_port_name)
from common.model.quantity import QuantityError, parse_quantity

# --------------------------------------------------------- typed reading
# Each helper checks one field's JSON type, records an error if it is wrong
# and returns the value (or None, meaning "not usable; skip its checks").

def _type_error(path: str, value, expected: str) -> FieldError:
    """A wrongly typed field, in our own words (Kubernetes answers these with
    a JSON decode error before validation, see the module docstring)."""
    detail = f"must be {expected}"
    if expected == "a string" and (isinstance(value, (bool, int, float))
                                   or type(value).__name__ in ("date", "datetime")):
        # YAML read `true`, `8080` or `2024-01-01` as a non-string.
        detail += " (put it in quotes)"
    return invalid(path, value, detail)


def _get_dict(errs, value, path, expected="an object"):
    if value is None or isinstance(value, dict):
        return value
    errs.append(_type_error(path, value, expected))
    return None


def _get_list(errs, value, path, expected="a list"):
    if value is None or isinstance(value, list):
        return value
    errs.append(_type_error(path, value, expected))
    return None


def _get_str(errs, value, path):
    if value is None or isinstance(value, str):
        return value
    errs.append(_type_error(path, value, "a string"))
    return None


def _required_str(errs, value, path):
    """A string that must be set: the string, or None once the error is noted."""
    if value is None or value == "":
        errs.append(required(path))
        return None
    return _get_str(errs, value, path)


def _get_bool(errs, value, path):
    if value is None or isinstance(value, bool):
        return value
    errs.append(_type_error(path, value, "a boolean (true or false)"))
    return None


def _as_int(value):
    """value if it is an integer, else None.

    A float is refused even when whole (3.0): Kubernetes decodes JSON into
    int32/int64 fields, and Go's decoder rejects `3.0` there. Accepting it
    would also store 3.0, which every reader of the field would then have
    to cope with. A bool is refused too, although Python counts it as an int.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _get_int(errs, value, path, minimum=0, maximum=INT32_MAX, range_msg=None):
    """An integer field; range_msg replaces the default bound messages."""
    if value is None:
        return None
    number = _as_int(value)
    if number is None:
        errs.append(_type_error(path, value, "an integer"))
        return None
    if minimum <= number <= maximum:
        return number
    if range_msg:
        errs.append(invalid(path, number, range_msg))
    elif number < minimum:
        errs.append(invalid(path, number, f"must be greater than or equal to {minimum}"))
    else:
        errs.append(invalid(path, number, f"must be less than or equal to {maximum}"))
    return None


def _check_enum(errs, value, path, supported):
    """An enum field that defaulting fills in: unset or "" is fine."""
    value = _get_str(errs, value, path)
    if value and value not in supported:
        errs.append(not_supported(path, value, supported))


def _items(errs, value, path, expected):
    """(index, path, dict) for each object in a list field, skipping bad ones."""
    for i, item in enumerate(_get_list(errs, value, path, f"a list of {expected}") or ()):
        item_path = index(path, i)
        if item is None:  # a `-` with nothing after it
            errs.append(_type_error(item_path, item, "an object"))
        item = _get_dict(errs, item, item_path)
        if item is not None:
            yield i, item_path, item


def _string_list(errs, value, path):
    for i, item in enumerate(_get_list(errs, value, path, "a list of strings") or ()):
        _get_str(errs, item, index(path, i))


# ------------------------------------------------------------ object meta

def _name_errors(errs, value, path, check):
    """A name checked by one of the Is* checks of common/model/names.py (length
    included: "must be no more than 253 characters" is an Invalid value in
    Kubernetes, not a Too long)."""
    errs += [invalid(path, value, msg) for msg in check(value)]


def validate_labels(labels, path: str = "metadata.labels") -> list[FieldError]:
    """Label keys are qualified names, values short label values."""
    errs: list[FieldError] = []
    labels = _get_dict(errs, labels, path)
    for k, v in (labels or {}).items():
        if not isinstance(k, str):
            errs.append(_type_error(path, k, "a string"))
            continue
        errs += [invalid(path, k, msg) for msg in is_qualified_name(k)]
        v = _get_str(errs, v, key(path, k))
        if v is not None:
            errs += [invalid(path, v, msg) for msg in is_valid_label_value(v)]
    return errs


def validate_annotations(annotations, path: str = "metadata.annotations") -> list[FieldError]:
    """Annotation keys are qualified names (any case); all of them <= 256 KiB."""
    errs: list[FieldError] = []
    annotations = _get_dict(errs, annotations, path)
    total = 0
    for k, v in (annotations or {}).items():
        if not isinstance(k, str):
            errs.append(_type_error(path, k, "a string"))
            continue
        errs += [invalid(path, k, msg) for msg in is_qualified_name(k.lower())]
        v = _get_str(errs, v, key(path, k))
        total += len(k.encode("utf-8", "surrogatepass"))
        total += len((v or "").encode("utf-8", "surrogatepass"))
    if total > TOTAL_ANNOTATION_SIZE_MAX:
        errs.append(too_long(path, "", TOTAL_ANNOTATION_SIZE_MAX))
    return errs


def validate_object_meta(meta, namespaced: bool = True, path: str = "metadata",
                         name_check=is_dns1123_subdomain) -> list[FieldError]:
    """name (or generateName), namespace, labels and annotations.

    Most kinds take a DNS-1123 subdomain as a name; a few (Namespace,
    Service) something stricter, which the caller passes as name_check
    (a check returning the reasons a name is wrong).
    ownerReferences, finalizers and managedFields get Kubernetes' rules
    (ValidateObjectMetaAccessor); uid and resourceVersion are only
    type-checked.
    """
    errs: list[FieldError] = []
    meta = _get_dict(errs, meta, path)
    if meta is None:
        if not errs:
            errs.append(required(child(path, "name"), "name or generateName is required"))
        return errs
    name = _get_str(errs, meta.get("name"), child(path, "name"))
    generate_name = _get_str(errs, meta.get("generateName"), child(path, "generateName"))
    if name:
        _name_errors(errs, name, child(path, "name"), name_check)
    elif generate_name:
        # A prefix may end in "-" (the server appends random characters), so
        # Kubernetes checks it with the dash masked, and shows it unchanged.
        gen_path = child(path, "generateName")
        errs += [invalid(gen_path, generate_name, msg)
                 for msg in name_check(mask_trailing_dash(generate_name))]
    elif meta.get("name") in (None, "") and meta.get("generateName") in (None, ""):
        errs.append(required(child(path, "name"), "name or generateName is required"))
    namespace = _get_str(errs, meta.get("namespace"), child(path, "namespace"))
    if namespace and not namespaced:
        errs.append(forbidden(child(path, "namespace"), "not allowed on this type"))
    elif namespace:
        _name_errors(errs, namespace, child(path, "namespace"), is_dns1123_label)
    for field in ("uid", "resourceVersion"):
        _get_str(errs, meta.get(field), child(path, field))
    errs += validate_labels(meta.get("labels"), child(path, "labels"))
    errs += validate_annotations(meta.get("annotations"), child(path, "annotations"))
    _validate_owner_references(errs, meta.get("ownerReferences"), child(path, "ownerReferences"))
    validate_finalizers(errs, meta.get("finalizers"), child(path, "finalizers"))
    _validate_managed_fields(errs, meta.get("managedFields"), child(path, "managedFields"))
    return errs


# The garbage collector never deletes these owners' dependents: an Event is
# itself collected on a timer, so it may not own anything (BannedOwners).
BANNED_OWNERS = (("", "v1", "Event"),)


def _group_version(api_version: str) -> tuple[str, str]:
    """("apps", "v1") from "apps/v1"; ("", "") when it cannot be read, as
    schema.ParseGroupVersion's error is ignored by FromAPIVersionAndKind."""
    parts = api_version.split("/")
    if api_version == "/" or len(parts) > 2:
        return "", ""
    return ("", parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def _validate_owner_references(errs, refs, path: str) -> None:
    """Who owns this object, for the garbage collector: each reference names
    one object exactly, and at most one owner is the controller.

    Kubernetes reports these at the list's path, without the index
    (`metadata.ownerReferences.uid`); a wrong JSON type, which Kubernetes
    reports while decoding, is ours and names the index.
    """
    first_controller = ""
    for _, ref_path, ref in _items(errs, refs, path, "owner references"):
        fields = {f: _get_str(errs, ref.get(f), child(ref_path, f))
                  for f in ("apiVersion", "kind", "name", "uid")}
        typed = {f: v for f, v in fields.items() if v is not None or ref.get(f) is None}
        group, version = _group_version(typed.get("apiVersion") or "")
        if "apiVersion" in typed and not version:
            errs.append(invalid(child(path, "apiVersion"), typed["apiVersion"] or "",
                                "version must not be empty"))
        for field in ("kind", "name", "uid"):
            if field in typed and not typed[field]:
                errs.append(invalid(child(path, field), "", f"{field} must not be empty"))
        owner_kind = fields["kind"] or ""
        if (group, version, owner_kind) in BANNED_OWNERS:
            errs.append(invalid(path, ref, f"{group}/{version}, Kind={owner_kind} "
                                "is disallowed from being an owner"))
        for field in ("controller", "blockOwnerDeletion"):
            _get_bool(errs, ref.get(field), child(ref_path, field))
        if ref.get("controller") is True:
            current = f"{owner_kind}/{fields['name'] or ''}"
            if first_controller:
                errs.append(invalid(path, refs, "Only one reference can have Controller set "
                                    f'to true. Found "true" in references for '
                                    f"{first_controller} and {current}"))
            else:
                first_controller = current


def validate_finalizers(errs, finalizers, path: str) -> None:
    """Each finalizer names the controller that must act before the object
    goes: a qualified name, reported at the list's path as Kubernetes does.

    A name without a "/" other than Kubernetes' own (kubernetes, orphan,
    foregroundDeletion) only draws a warning in Kubernetes; we have no
    warnings, so it passes. Duplicates pass too, as in Kubernetes.
    """
    names = []
    for i, name in enumerate(_get_list(errs, finalizers, path, "a list of strings") or ()):
        # Go decodes a null in a []string as "", which then fails the check.
        name = "" if name is None else _get_str(errs, name, index(path, i))
        if name is None:
            continue
        errs += [invalid(path, name, msg) for msg in is_qualified_name(name)]
        names.append(name)
    # One asks the collector to keep the dependents, the other to delete them.
    if "orphan" in names and "foregroundDeletion" in names:
        errs.append(invalid(path, go_string_slice(names),
                            "finalizer orphan and foregroundDeletion cannot be both set"))


MANAGED_FIELDS_OPERATIONS = ("Apply", "Update")
FIELD_MANAGER_MAX = 128
SUBRESOURCE_MAX = 256


def _validate_managed_fields(errs, entries, path: str) -> None:
    """Server-side apply's record of who set which field (ValidateManagedFields)."""
    for _, entry_path, entry in _items(errs, entries, path, "managed fields entries"):
        text = {f: _get_str(errs, entry.get(f), child(entry_path, f))
                for f in ("manager", "operation", "apiVersion", "time", "fieldsType",
                          "subresource")}
        _get_dict(errs, entry.get("fieldsV1"), child(entry_path, "fieldsV1"))
        operation = text["operation"]
        if operation not in MANAGED_FIELDS_OPERATIONS and (
                operation is not None or entry.get("operation") is None):
            errs.append(invalid(child(entry_path, "operation"), operation or "",
                                "must be `Apply` or `Update`"))
        if text["fieldsType"] and text["fieldsType"] != "FieldsV1":
            errs.append(invalid(child(entry_path, "fieldsType"), text["fieldsType"],
                                "must be `FieldsV1`"))
        for field, limit in (("manager", FIELD_MANAGER_MAX), ("subresource", SUBRESOURCE_MAX)):
            if text[field] and len(text[field].encode("utf-8", "surrogatepass")) > limit:
                errs.append(too_long(child(entry_path, field), text[field], limit))


def validate_type_meta(obj: dict, api_version: str, kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for field, want in (("apiVersion", api_version), ("kind", kind)):
        value = _required_str(errs, obj.get(field), field)
        if value and value != want:
            errs.append(not_supported(field, value, [want]))
    return errs


# -------------------------------------------------------------------- pod

# Each enum lists its values in the order Kubernetes prints them in
# "supported values: ..." (sorted where it passes sets.List(...)).
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")


# [START validate-pod]
def validate_pod(obj) -> list[FieldError]:
    """Every problem with a Pod object, in one list (empty: it is valid)."""
    if not isinstance(obj, dict):
        return [_type_error("", obj, "an object (a Pod has apiVersion, kind, "
                            "metadata and spec)")]
    errs = validate_type_meta(obj, "v1", "Pod")
    errs += validate_object_meta(obj.get("metadata"), namespaced=True)
    spec = obj.get("spec")
    if spec is None:
        errs.append(required("spec"))
    else:
        errs += validate_pod_spec(spec, "spec")
    return errs
# [END validate-pod]


def validate_pod_spec(spec, path: str = "spec") -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _get_dict(errs, spec, path)
    if spec is None:
        return errs
    volumes = _validate_volumes(errs, spec.get("volumes"), child(path, "volumes"))

    containers_path = child(path, "containers")
    if not spec.get("containers"):  # missing, null or []
        if isinstance(spec.get("containers"), (list, type(None))):
            errs.append(required(containers_path))
    names: set[str] = set()
    host_network = _get_bool(errs, spec.get("hostNetwork"), child(path, "hostNetwork"))
    # Containers first, so a clash is reported on the init container, as
    # Kubernetes does.
    for field in ("containers", "initContainers"):
        for _, item_path, ctr in _items(errs, spec.get(field), child(path, field), "containers"):
            _validate_container(errs, ctr, item_path, names, volumes, bool(host_network))
            _validate_container_restart_policy(errs, ctr, item_path, init=field == "initContainers")
            _validate_lifecycle(errs, ctr.get("lifecycle"), child(item_path, "lifecycle"),
                                _as_int(spec.get("terminationGracePeriodSeconds")))

    _check_enum(errs, spec.get("restartPolicy"), child(path, "restartPolicy"), RESTART_POLICIES)
    _check_enum(errs, spec.get("dnsPolicy"), child(path, "dnsPolicy"), DNS_POLICIES)
    if spec.get("dnsPolicy") == "None" and spec.get("dnsConfig") is None:
        errs.append(required(child(path, "dnsConfig"),
                             "must provide `dnsConfig` when `dnsPolicy` is None"))
    _get_dict(errs, spec.get("dnsConfig"), child(path, "dnsConfig"))
    _get_int(errs, spec.get("terminationGracePeriodSeconds"),
             child(path, "terminationGracePeriodSeconds"), 0, INT64_MAX)
    _get_int(errs, spec.get("activeDeadlineSeconds"), child(path, "activeDeadlineSeconds"),
             1, INT32_MAX, f"must be between 1 and {INT32_MAX}, inclusive")
    for field in ("nodeName", "serviceAccountName"):
        value = _get_str(errs, spec.get(field), child(path, field))
        if value:
            _name_errors(errs, value, child(path, field), is_dns1123_subdomain)
    for field in ("hostPID", "hostIPC", "enableServiceLinks", "automountServiceAccountToken"):
        _get_bool(errs, spec.get(field), child(path, field))
    _get_str(errs, spec.get("schedulerName"), child(path, "schedulerName"))
    _validate_security_context(errs, spec.get("securityContext"), child(path, "securityContext"), pod_level=True)
    if spec.get("nodeSelector") is not None:
        errs += validate_labels(spec.get("nodeSelector"), child(path, "nodeSelector"))
    validate_tolerations(errs, spec.get("tolerations"), child(path, "tolerations"))
    return errs


# ------------------------------------------------------------ tolerations

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
INT64_MIN = -(2**63)


def validate_tolerations(errs, tolerations, path: str) -> None:
    """Which node taints a pod accepts (ValidateTolerations).

    The scheduler and the taint manager match these against taints, so a
    toleration that cannot match anything (operator "Bogus", a value with
    Exists) is refused rather than silently ignored.
    """
    for _, tol_path, tol in _items(errs, tolerations, path, "tolerations"):
        fields = {f: _get_str(errs, tol.get(f), child(tol_path, f))
                  for f in ("key", "operator", "value", "effect")}
        seconds = tol.get("tolerationSeconds")
        # Negative means "evict at once", as 0 does; any int64 is allowed.
        _get_int(errs, seconds, child(tol_path, "tolerationSeconds"), INT64_MIN, INT64_MAX)
        if any(fields[f] is None and tol.get(f) is not None for f in fields):
            continue  # a wrong type is reported; the rules below need strings
        tol_key, operator, value, effect = (fields[f] or "" for f in fields)
        if tol_key:
            errs += [invalid(child(tol_path, "key"), tol_key, msg)
                     for msg in is_qualified_name(tol_key)]
        elif operator != "Exists":
            errs.append(invalid(child(tol_path, "operator"), operator,
                                "operator must be Exists when `key` is empty, which means "
                                '"match all values and all keys"'))
        if seconds is not None and effect != "NoExecute":
            errs.append(invalid(child(tol_path, "effect"), effect,
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        # Kubernetes reports a bad value at .operator, so we do too.
        if operator in ("", "Equal"):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(child(tol_path, "operator"), value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(invalid(child(tol_path, "operator"), value,
                                    "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(child(tol_path, "operator"), operator,
                                      TOLERATION_OPERATORS))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(child(tol_path, "effect"), effect, TAINT_EFFECTS))


# -------------------------------------------------------------- volumes

# Every source a Volume may name; exactly one must be set. In the order
# validateVolumeSource tries them: the second one found is the one reported.
VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore",
    "secret", "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd",
    "cinder", "cephfs", "quobyte", "downwardAPI", "fc", "flexVolume", "configMap",
    "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk",
    "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                   "FileOrCreate", "Socket")
# Kubernetes 1.32 does not check emptyDir.medium; this check is ours.
STORAGE_MEDIA = ("", "HugePages", "Memory")
_FILE_MODE_MSG = "must be a number between 0 and 0777 (octal), both inclusive"


def _validate_volumes(errs, volumes, path) -> set[str]:
    """Check spec.volumes; return the names a volumeMount may use.

    As in Kubernetes' ValidateVolumes: the source first, then the name; and
    a volume with any error is left out of the names, so a mount of it is
    reported too (Not found).
    """
    names: set[str] = set()
    for _, vol_path, vol in _items(errs, volumes, path, "volumes"):
        vol_errs: list[FieldError] = []
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if sources:
            source_path = child(vol_path, sources[0])
            source = _get_dict(vol_errs, vol[sources[0]], source_path)
            if source is not None:
                _validate_volume_source(vol_errs, sources[0], source, source_path)
        else:
            vol_errs.append(required(vol_path, "must specify a volume type"))
        for extra in sources[1:]:
            vol_errs.append(forbidden(child(vol_path, extra),
                                      "may not specify more than 1 volume type"))
        name_path = child(vol_path, "name")
        name = _required_str(vol_errs, vol.get("name"), name_path)
        if name:
            _name_errors(vol_errs, name, name_path, is_dns1123_label)
        if name in names:
            vol_errs.append(duplicate(name_path, name))
        if not vol_errs and name:
            names.add(name)
        errs += vol_errs
    return names


def _validate_volume_source(errs, kind: str, source: dict, path: str) -> None:
    if kind == "hostPath":
        host_path = _required_str(errs, source.get("path"), child(path, "path"))
        if host_path and ".." in host_path.split("/"):
            errs.append(invalid(child(path, "path"), host_path, "must not contain '..'"))
        _check_enum(errs, source.get("type"), child(path, "type"), HOST_PATH_TYPES)
    elif kind == "emptyDir":
        medium = _get_str(errs, source.get("medium"), child(path, "medium"))
        if medium and medium not in STORAGE_MEDIA and not medium.startswith("HugePages-"):
            errs.append(not_supported(child(path, "medium"), medium, STORAGE_MEDIA))
        limit = source.get("sizeLimit")
        if limit is not None:
            quantity = _check_quantity(errs, limit, child(path, "sizeLimit"), allow_negative=True)
            if quantity is not None and quantity.sign() < 0:
                errs.append(forbidden(child(path, "sizeLimit"),
                                      "SizeLimit field must be a valid resource quantity"))
    elif kind in _NAMED_SOURCES:
        name_field, flag = _NAMED_SOURCES[kind]
        _required_str(errs, source.get(name_field), child(path, name_field))
        _get_bool(errs, source.get(flag), child(path, flag))
        if kind != "persistentVolumeClaim":
            _get_int(errs, source.get("defaultMode"), child(path, "defaultMode"),
                     0, 0o777, _FILE_MODE_MSG)
            for _, item_path, item in _items(errs, source.get("items"), child(path, "items"), "items"):
                _validate_key_to_path(errs, item, item_path)
    elif kind == "downwardAPI":
        _get_int(errs, source.get("defaultMode"), child(path, "defaultMode"), 0, 0o777, _FILE_MODE_MSG)
        for _, item_path, item in _items(errs, source.get("items"), child(path, "items"), "items"):
            _validate_downward_api_file(errs, item, item_path)
    elif kind == "projected":
        _get_int(errs, source.get("defaultMode"), child(path, "defaultMode"), 0, 0o777, _FILE_MODE_MSG)
        _validate_projections(errs, source, path)


def _validate_local_path(errs, target: str, path: str) -> None:
    """A file's path inside its volume (ValidateLocalNonReservedPath): relative,
    never climbing out with '..', never starting with the '..' the kubelet's
    atomic writer keeps for itself (`..data`)."""
    if target.startswith("/"):
        errs.append(invalid(path, target, "must be a relative path"))
    if ".." in target.split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))
    elif target.startswith(".."):
        errs.append(invalid(path, target, "must not start with '..'"))


def _validate_key_to_path(errs, item: dict, path: str) -> None:
    """One of a configMap or secret volume's items: a key, the relative path
    the kubelet writes it to inside the volume, a mode (K8S validateKeyToPath
    and ValidateLocalNonReservedPath, pkg/apis/core/validation/validation.go):
    a path may not climb out of the volume, nor start with the `..` the
    kubelet's atomic writer keeps for itself (`..data`)."""
    if item.get("key") in (None, ""):
        errs.append(required(child(path, "key"), ""))
    _get_str(errs, item.get("key"), child(path, "key"))
    target = _get_str(errs, item.get("path"), child(path, "path"))
    if item.get("path") in (None, ""):
        errs.append(required(child(path, "path"), ""))
    elif target:
        _validate_local_path(errs, target, child(path, "path"))
    _get_int(errs, item.get("mode"), child(path, "mode"), 0, 0o777, _FILE_MODE_MSG)


# What a downwardAPI volume file may hold (validVolumeDownwardAPIFieldPathExpressions):
# fields known when the pod is created; an env var may read more (ENV_FIELD_PATHS).
VOLUME_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations",
                      "metadata.uid")


def _validate_downward_api_file(errs, item: dict, path: str) -> None:
    """One file of a downwardAPI volume (validateDownwardAPIVolumeFile)."""
    target = _get_str(errs, item.get("path"), child(path, "path"))
    if not target:
        errs.append(required(child(path, "path"), ""))
    else:
        _validate_local_path(errs, target, child(path, "path"))
    field_ref = _get_dict(errs, item.get("fieldRef"), child(path, "fieldRef"))
    resource_ref = _get_dict(errs, item.get("resourceFieldRef"), child(path, "resourceFieldRef"))
    if field_ref is not None:
        _validate_field_ref(errs, field_ref, child(path, "fieldRef"), VOLUME_FIELD_PATHS)
        if resource_ref is not None:
            errs.append(invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif resource_ref is not None:
        ref_path = child(path, "resourceFieldRef")
        if not resource_ref.get("containerName"):        # a volume belongs to no one container
            errs.append(required(child(ref_path, "containerName"), ""))
        _validate_resource_field_ref(errs, resource_ref, ref_path)
    else:
        errs.append(required(path, "one of fieldRef and resourceFieldRef is required"))
    _get_int(errs, item.get("mode"), child(path, "mode"), 0, 0o777, _FILE_MODE_MSG)


PROJECTION_SOURCES = ("secret", "configMap", "downwardAPI", "serviceAccountToken", "clusterTrustBundle")
_TEN_MINUTES, _TOKEN_MAX = 600, 2 ** 32


def _validate_projections(errs, source: dict, path: str) -> None:
    """A projected volume's sources (validateProjectedVolumeSource): one kind
    each, their files checked as in their own volumes, and no two files
    at the same path, since they all land in one directory."""
    paths: set[str] = set()
    for _, source_path, projection in _items(errs, source.get("sources"), child(path, "sources"), "sources"):
        kinds = [k for k in PROJECTION_SOURCES if projection.get(k) is not None]
        if len(kinds) > 1:
            errs.append(forbidden(source_path, "may not specify more than 1 volume type per source"))
        for kind in kinds:
            kind_path = child(source_path, kind)
            part = _get_dict(errs, projection[kind], kind_path)
            if part is None:
                continue
            if kind in ("secret", "configMap"):
                if not part.get("name"):
                    errs.append(required(child(kind_path, "name"), ""))
                files = _items(errs, part.get("items"), child(kind_path, "items"), "items")
                check = _validate_key_to_path
            elif kind == "downwardAPI":
                files = _items(errs, part.get("items"), child(kind_path, "items"), "items")
                check = _validate_downward_api_file
            elif kind == "serviceAccountToken":
                seconds = _get_int(errs, part.get("expirationSeconds"), child(kind_path, "expirationSeconds"),
                                   -2 ** 63, 2 ** 63 - 1)
                if seconds is not None and seconds < _TEN_MINUTES:
                    errs.append(invalid(child(kind_path, "expirationSeconds"), seconds,
                                        "may not specify a duration less than 10 minutes"))
                elif seconds is not None and seconds > _TOKEN_MAX:
                    errs.append(invalid(child(kind_path, "expirationSeconds"), seconds,
                                        "may not specify a duration larger than 2^32 seconds"))
                files, check = [(0, kind_path, part)], None
                if not part.get("path"):
                    errs.append(required(child(kind_path, "path"), ""))
                elif isinstance(part["path"], str):
                    _validate_local_path(errs, part["path"], child(kind_path, "path"))
            else:
                continue
            for _, item_path, item in files:
                if check:
                    check(errs, item, item_path)
                target = item.get("path")
                if isinstance(target, str) and target:
                    if target in paths:
                        errs.append(invalid(path, part.get("name", kind), "conflicting duplicate paths"))
                    paths.add(target)


# Sources that point at another object: (its name field, its boolean flag).
_NAMED_SOURCES = {"configMap": ("name", "optional"), "secret": ("secretName", "optional"),
                  "persistentVolumeClaim": ("claimName", "readOnly")}


# ------------------------------------------------------------ security contexts

_ID_RANGE = f"must be between 0 and {INT32_MAX}, inclusive"       # IsValidUserID, IsValidGroupID
SYSCTL_FORMAT = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"   # SysctlContainSlashFmt
SECCOMP_PROFILE_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")


def _validate_security_context(errs, context, path: str, pod_level: bool) -> None:
    """A PodSecurityContext (pod_level) or a container's SecurityContext, as
    ValidatePodSecurityContext and ValidateSecurityContext check them; a
    value the kubelet cannot honour is its to refuse (security_context.py)."""
    context = _get_dict(errs, context, path)
    if context is None:
        return
    for field in ("runAsUser", "runAsGroup") + (("fsGroup",) if pod_level else ()):
        _get_int(errs, context.get(field), child(path, field), 0, INT32_MAX, _ID_RANGE)
    for field in ("runAsNonRoot",) + (() if pod_level else ("privileged", "readOnlyRootFilesystem",
                                                              "allowPrivilegeEscalation")):
        _get_bool(errs, context.get(field), child(path, field))
    profile = _get_dict(errs, context.get("seccompProfile"), child(path, "seccompProfile"))
    if profile is not None:
        profile_path = child(path, "seccompProfile")
        kind = _required_str(errs, profile.get("type"), child(profile_path, "type"))
        if kind and kind not in SECCOMP_PROFILE_TYPES:
            errs.append(not_supported(child(profile_path, "type"), kind, SECCOMP_PROFILE_TYPES))
        localhost = _get_str(errs, profile.get("localhostProfile"), child(profile_path, "localhostProfile"))
        if kind == "Localhost" and not localhost:
            errs.append(required(child(profile_path, "localhostProfile"), "must be set when seccomp type is Localhost"))
        elif kind and kind != "Localhost" and localhost is not None:
            errs.append(invalid(child(profile_path, "localhostProfile"), localhost,
                                "can only be set when seccomp type is Localhost"))
    if pod_level:
        for i, group in enumerate(_get_list(errs, context.get("supplementalGroups"),
                                            child(path, "supplementalGroups"), "a list of integers") or ()):
            _get_int(errs, group, index(child(path, "supplementalGroups"), i), 0, INT32_MAX, _ID_RANGE)
        _check_enum(errs, context.get("fsGroupChangePolicy"), child(path, "fsGroupChangePolicy"),
                    ("Always", "OnRootMismatch"))
        _check_enum(errs, context.get("supplementalGroupsPolicy"), child(path, "supplementalGroupsPolicy"),
                    ("Merge", "Strict"))
        _validate_sysctls(errs, context.get("sysctls"), child(path, "sysctls"))
    else:
        _check_enum(errs, context.get("procMount"), child(path, "procMount"), ("Default", "Unmasked"))
        capabilities = _get_dict(errs, context.get("capabilities"), child(path, "capabilities"))
        for field in ("add", "drop"):
            _string_list(errs, (capabilities or {}).get(field), child(child(path, "capabilities"), field))


def _validate_sysctls(errs, sysctls, path: str) -> None:
    seen: set[str] = set()
    for _, item_path, sysctl in _items(errs, sysctls, path, "sysctls"):
        name_path = child(item_path, "name")
        name = _required_str(errs, sysctl.get("name"), name_path)
        if not name:
            continue
        if len(name) > 253 or not re.fullmatch(SYSCTL_FORMAT, name):
            errs.append(invalid(name_path, name, f"must have at most 253 characters and match regex {SYSCTL_FORMAT}"))
        elif name in seen:
            errs.append(duplicate(name_path, name))
        seen.add(name)


# ------------------------------------------------------------ containers

def _validate_container(errs, ctr: dict, path: str, names: set[str],
                        volumes: set[str], host_network: bool) -> None:
    name_path = child(path, "name")
    name = _required_str(errs, ctr.get("name"), name_path)
    if name:
        _name_errors(errs, name, name_path, is_dns1123_label)
        if name in names:
            errs.append(duplicate(name_path, name))
        names.add(name)

    image_path = child(path, "image")
    image = _required_str(errs, ctr.get("image"), image_path)
    if image and image != image.strip():
        errs.append(invalid(image_path, image, "must not have leading or trailing whitespace"))
    _check_enum(errs, ctr.get("imagePullPolicy"), child(path, "imagePullPolicy"), PULL_POLICIES)
    _check_enum(errs, ctr.get("terminationMessagePolicy"),
                child(path, "terminationMessagePolicy"), TERMINATION_MESSAGE_POLICIES)
    for field in ("command", "args"):
        _string_list(errs, ctr.get(field), child(path, field))
    for field in ("workingDir", "terminationMessagePath"):
        _get_str(errs, ctr.get(field), child(path, field))
    for field in ("stdin", "stdinOnce", "tty"):
        _get_bool(errs, ctr.get(field), child(path, field))
    _validate_security_context(errs, ctr.get("securityContext"), child(path, "securityContext"), pod_level=False)

    port_names = _validate_ports(errs, ctr.get("ports"), child(path, "ports"), host_network)
    _validate_env(errs, ctr.get("env"), child(path, "env"))
    _validate_env_from(errs, ctr.get("envFrom"), child(path, "envFrom"))
    _validate_volume_mounts(errs, ctr.get("volumeMounts"), child(path, "volumeMounts"), volumes)
    if ctr.get("resources") is not None:
        _validate_resources(errs, ctr["resources"], child(path, "resources"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if ctr.get(probe) is not None:
            _validate_probe(errs, ctr[probe], child(path, probe), port_names,
                            success_must_be_one=probe != "readinessProbe")


def _validate_container_restart_policy(errs, ctr: dict, path: str, init: bool) -> None:
    """Only an init container may set restartPolicy, and only to Always (a
    sidecar, kept running beside the app). A regular init container runs
    once to completion: probes and hooks, which watch a running container,
    are forbidden on it, rather than silently never run."""
    policy = ctr.get("restartPolicy")
    if not init:
        if policy is not None:
            errs.append(forbidden(child(path, "restartPolicy"), "may not be set for non-init containers"))
        return
    if policy is not None and policy != "Always":
        errs.append(not_supported(child(path, "restartPolicy"), policy, ("Always",)))
    if policy != "Always":
        for field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if ctr.get(field) is not None:
                errs.append(forbidden(child(path, field),
                                      "may not be set for init containers without restartPolicy=Always"))


LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")


def _validate_lifecycle(errs, lifecycle, path: str, grace: int | None) -> None:
    """postStart and preStop: one handler each, as for a probe; a sleep
    must fit in the grace period (validateSleepAction). tcpSocket passes,
    as in Kubernetes, and fails when the kubelet runs it."""
    lifecycle = _get_dict(errs, lifecycle, path)
    for hook in ("postStart", "preStop"):
        handler_set = _get_dict(errs, (lifecycle or {}).get(hook), child(path, hook))
        if handler_set is None:
            continue
        hook_path = child(path, hook)
        handlers = [h for h in LIFECYCLE_HANDLERS if handler_set.get(h) is not None]
        if not handlers:
            errs.append(required(hook_path, "must specify a handler type"))
        for extra in handlers[1:]:
            errs.append(forbidden(child(hook_path, extra), "may not specify more than 1 handler type"))
        if not handlers:
            continue
        handler_path = child(hook_path, handlers[0])
        handler = _get_dict(errs, handler_set[handlers[0]], handler_path)
        if handler is None:
            continue
        if handlers[0] != "sleep":
            _PROBE_HANDLER_CHECKS[handlers[0]](errs, handler, handler_path, None)
            continue
        seconds = _as_int(handler.get("seconds"))
        grace = 30 if grace is None else grace
        if seconds is None or not 0 < seconds <= grace:
            errs.append(invalid(handler_path, handler.get("seconds"),
                                f"must be greater than 0 and less than terminationGracePeriodSeconds ({grace})"))


def _validate_ports(errs, ports, path: str, host_network: bool) -> set[str] | None:
    """Check a container's ports; return their names, valid or not, for the
    probes to refer to (None when ports is unusable: nothing to check against)."""
    if ports is not None and not isinstance(ports, list):
        _get_list(errs, ports, path, "a list of ports")
        return None
    names: set[str] = set()
    for _, port_path, port in _items(errs, ports, path, "ports"):
        name = _get_str(errs, port.get("name"), child(port_path, "name"))
        if name:
            msgs = is_valid_port_name(name)
            errs += [invalid(child(port_path, "name"), name, m) for m in msgs]
            if not msgs and name in names:
                errs.append(duplicate(child(port_path, "name"), name))
            names.add(name)  # even if invalid: a probe naming it is not the problem
        container_port = port.get("containerPort")
        if container_port is None or _as_int(container_port) == 0:
            errs.append(required(child(port_path, "containerPort")))
            container_port = None
        else:
            container_port = _get_int(errs, container_port, child(port_path, "containerPort"),
                                      1, 65535, "must be between 1 and 65535, inclusive")
        host_port = port.get("hostPort")
        if _as_int(host_port) != 0:  # 0 means "no host port"
            host_port = _get_int(errs, host_port, child(port_path, "hostPort"),
                                 1, 65535, "must be between 1 and 65535, inclusive")
            # With hostNetwork the container *is* on the host's ports.
            if host_network and host_port and container_port and host_port != container_port:
                errs.append(invalid(child(port_path, "hostPort"), host_port,
                                    "must match `containerPort` when `hostNetwork` is true"))
        _check_enum(errs, port.get("protocol"), child(port_path, "protocol"), PROTOCOLS)
        host_ip = _get_str(errs, port.get("hostIP"), child(port_path, "hostIP"))
        if host_ip and not is_ip(host_ip):
            errs.append(invalid(child(port_path, "hostIP"), host_ip,
                                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
    return names


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


# ----------------------------------------------------------------- env

# What an env var may read from the pod through fieldRef.
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid",
                   "spec.nodeName", "spec.serviceAccountName", "status.hostIP",
                   "status.hostIPs", "status.podIP", "status.podIPs")
ENV_RESOURCE_FIELDS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory",
                       "requests.cpu", "requests.ephemeral-storage", "requests.memory")
_VALUE_FROM_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")


def _validate_env(errs, env, path: str) -> None:
    for _, var_path, var in _items(errs, env, path, "environment variables"):
        name = _required_str(errs, var.get("name"), child(var_path, "name"))
        if name:
            errs += [invalid(child(var_path, "name"), name, m) for m in is_env_var_name(name)]
        value = _get_str(errs, var.get("value"), child(var_path, "value"))
        from_path = child(var_path, "valueFrom")
        value_from = _get_dict(errs, var.get("valueFrom"), from_path)
        if value_from is None:
            continue
        sources = [s for s in _VALUE_FROM_SOURCES if value_from.get(s) is not None]
        # Kubernetes' own wording, including the "" it prints as the value.
        if not sources:
            errs.append(invalid(from_path, "", "must specify one of: `fieldRef`, "
                                "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
        elif value:
            errs.append(invalid(from_path, "", "may not be specified when `value` is not empty"))
        elif len(sources) > 1:
            errs.append(invalid(from_path, "", "may not have more than one field "
                                "specified at a time"))
        for source in sources:
            source_path = child(from_path, source)
            ref = _get_dict(errs, value_from[source], source_path)
            if ref is not None:
                _ENV_SOURCE_CHECKS[source](errs, ref, source_path)


# Every pod field a downward-API fieldPath may name at all
# (ConvertDownwardAPIFieldLabel, pkg/apis/core/pods/helpers.go); an env var
# may read only ENV_FIELD_PATHS of them.
DOWNWARD_API_FIELD_LABELS = (
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
    "metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
    "spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs", "spec.host")


def _split_subscript(field_path: str):
    """("metadata.labels", "app") from "metadata.labels['app']", else None
    (fieldpath.SplitMaybeSubscriptedPath)."""
    if not field_path.endswith("']"):
        return None
    base, sep, subscript = field_path[:-2].partition("['")
    return (base, subscript) if sep and base else None


def _convert_field_label(api_version: str, field_path: str) -> str:
    """Why Kubernetes cannot read this fieldPath, or "" if it can."""
    if api_version != "v1":
        return f"unsupported pod version: {api_version}"
    split = _split_subscript(field_path)
    if split:
        if split[0] in ("metadata.annotations", "metadata.labels"):
            return ""
        return f"field label does not support subscript: {field_path}"
    if field_path not in DOWNWARD_API_FIELD_LABELS:
        return f"field label not supported: {field_path}"
    return ""


def _validate_field_ref(errs, ref: dict, path: str, allowed: tuple[str, ...] = ENV_FIELD_PATHS) -> None:
    # Defaulting sets apiVersion to "v1"; unset here means "not defaulted yet".
    api_version = _get_str(errs, ref.get("apiVersion"), child(path, "apiVersion"))
    field_path = _required_str(errs, ref.get("fieldPath"), child(path, "fieldPath"))
    if not field_path:
        return
    problem = _convert_field_label(api_version or "v1", field_path)
    if problem:
        errs.append(invalid(child(path, "fieldPath"), field_path,
                            f"error converting fieldPath: {problem}"))
        return
    field_path = "spec.nodeName" if field_path == "spec.host" else field_path
    split = _split_subscript(field_path)
    if split:
        base, subscript = split
        if base == "metadata.annotations":
            subscript = subscript.lower()
        errs += [invalid(path, subscript, m) for m in is_qualified_name(subscript)]
    elif field_path not in allowed:
        errs.append(not_supported(child(path, "fieldPath"), field_path, allowed))


def _validate_resource_field_ref(errs, ref: dict, path: str) -> None:
    _get_str(errs, ref.get("containerName"), child(path, "containerName"))
    resource = _required_str(errs, ref.get("resource"), child(path, "resource"))
    if resource and resource not in ENV_RESOURCE_FIELDS and not resource.startswith(
            ("limits.hugepages-", "requests.hugepages-")):
        errs.append(not_supported(child(path, "resource"), resource, ENV_RESOURCE_FIELDS))
    if ref.get("divisor") is not None:
        _check_quantity(errs, ref["divisor"], child(path, "divisor"))


def _validate_key_ref(errs, ref: dict, path: str) -> None:
    """configMapKeyRef and secretKeyRef: which object, which key."""
    # Kubernetes checks the name even when empty: "" is no DNS subdomain.
    name = _get_str(errs, ref.get("name"), child(path, "name"))
    if name is not None or ref.get("name") is None:
        _name_errors(errs, name or "", child(path, "name"), is_dns1123_subdomain)
    k = _required_str(errs, ref.get("key"), child(path, "key"))
    if k:
        errs += [invalid(child(path, "key"), k, m) for m in is_config_map_key(k)]
    _get_bool(errs, ref.get("optional"), child(path, "optional"))


_ENV_SOURCE_CHECKS = {
    "fieldRef": _validate_field_ref,
    "resourceFieldRef": _validate_resource_field_ref,
    "configMapKeyRef": _validate_key_ref,
    "secretKeyRef": _validate_key_ref,
}


def _validate_env_from(errs, env_from, path: str) -> None:
    for _, item_path, item in _items(errs, env_from, path, "envFrom sources"):
        prefix = _get_str(errs, item.get("prefix"), child(item_path, "prefix"))
        if prefix:
            errs += [invalid(child(item_path, "prefix"), prefix, m)
                     for m in is_env_var_name(prefix)]
        refs = [r for r in ("configMapRef", "secretRef") if item.get(r) is not None]
        for ref_name in refs:
            ref = _get_dict(errs, item[ref_name], child(item_path, ref_name))
            if ref is None:
                continue
            name_path = child(child(item_path, ref_name), "name")
            name = _required_str(errs, ref.get("name"), name_path)
            if name:
                _name_errors(errs, name, name_path,
                             lambda n: is_dns1123_subdomain(mask_trailing_dash(n)))
        # Kubernetes reports these at the envFrom list's path, not the item's.
        if not refs:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` "
                                "or `secretRef`"))
        elif len(refs) > 1:
            errs.append(invalid(path, "", "may not have more than one field "
                                "specified at a time"))


# --------------------------------------------------------- volume mounts

def _validate_volume_mounts(errs, mounts, path: str, volumes: set[str]) -> None:
    mount_paths: set[str] = set()
    for _, mount_path, mount in _items(errs, mounts, path, "volume mounts"):
        name = _required_str(errs, mount.get("name"), child(mount_path, "name"))
        if (name or mount.get("name") in (None, "")) and (name or "") not in volumes:
            errs.append(not_found(child(mount_path, "name"), name or ""))
        target = _required_str(errs, mount.get("mountPath"), child(mount_path, "mountPath"))
        if target in mount_paths:
            errs.append(invalid(child(mount_path, "mountPath"), target, "must be unique"))
        elif target:
            mount_paths.add(target)
        _get_bool(errs, mount.get("readOnly"), child(mount_path, "readOnly"))
        sub_path = _get_str(errs, mount.get("subPath"), child(mount_path, "subPath"))
        if sub_path:
            if sub_path.startswith("/"):
                errs.append(invalid(child(mount_path, "subPath"), sub_path,
                                    "must be a relative path"))
            elif ".." in sub_path.split("/"):
                errs.append(invalid(child(mount_path, "subPath"), sub_path,
                                    "must not contain '..'"))


# ------------------------------------------------------------- resources

STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _check_quantity(errs, value, path: str, allow_negative: bool = False):
    """A quantity field: parsed, non-negative. Returns the Quantity or None.

    A value that is no quantity at all is a decode error in Kubernetes, so
    those messages are ours (common/model/quantity.py)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        errs.append(_type_error(path, value, 'a quantity such as "500m" or "128Mi"'))
        return None
    try:
        quantity = parse_quantity(value)
    except QuantityError as err:
        errs.append(invalid(path, value, str(err)))
        return None
    if quantity.sign() < 0 and not allow_negative:
        errs.append(invalid(path, str(quantity), "must be greater than or equal to 0"))
        return None
    return quantity


# helper.IsStandardResourceName (pkg/apis/core/helper/helpers.go): every name
# Kubernetes calls standard. validateResourceName checks a name without "/"
# against these first, then validateContainerResourceName against
# STANDARD_CONTAINER_RESOURCES.
STANDARD_RESOURCES = (
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers")


def _resource_name_errors(name: str) -> list[str]:
    """validateContainerResourceName: a name without a "/" gets both
    messages when it is no standard resource ("gpu")."""
    msgs = is_qualified_name(name)
    if msgs:
        return msgs
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not name.startswith(
                ("hugepages-", "requests.hugepages-")):
            msgs.append("must be a standard resource type or fully qualified")
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            msgs.append("must be a standard resource for containers")
    elif "kubernetes.io/" not in name and (
            name.startswith("requests.") or is_qualified_name("requests." + name)):
        msgs.append("doesn't follow extended resource name standard")
    return msgs


def _overcommit_allowed(name: str) -> bool:
    """Requests may be below limits only for native, non-hugepage resources;
    for extended resources (example.com/gpu) they must be equal."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _quantity_map(errs, value, path: str) -> dict:
    quantities = {}
    for name, amount in (_get_dict(errs, value, path) or {}).items():
        if not isinstance(name, str):
            errs.append(_type_error(path, name, "a string"))
            continue
        name_path = key(path, name)
        msgs = _resource_name_errors(name)
        errs += [invalid(name_path, name, m) for m in msgs]
        quantity = _check_quantity(errs, amount, name_path)
        if quantity is not None and not msgs:
            quantities[name] = quantity
    return quantities


def _validate_resources(errs, resources, path: str) -> None:
    resources = _get_dict(errs, resources, path)
    if resources is None:
        return
    limits_path, requests_path = child(path, "limits"), child(path, "requests")
    limits = _quantity_map(errs, resources.get("limits"), limits_path)
    requests = _quantity_map(errs, resources.get("requests"), requests_path)
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is None:
            if not _overcommit_allowed(name):
                errs.append(required(limits_path, "Limit must be set for non "
                                     "overcommitable resources"))
        elif not _overcommit_allowed(name) and (request < limit or request > limit):
            errs.append(invalid(requests_path, str(request),
                                f"must be equal to {name} limit of {limit}"))
        elif request > limit:
            errs.append(invalid(requests_path, str(request),
                                f"must be less than or equal to {name} limit of {limit}"))


# ---------------------------------------------------------------- probes

PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
HTTP_SCHEMES = ("HTTP", "HTTPS")


def _validate_probe(errs, probe, path: str, port_names: set[str] | None,
                    success_must_be_one: bool) -> None:
    probe = _get_dict(errs, probe, path)
    if probe is None:
        return
    handlers = [h for h in PROBE_HANDLERS if probe.get(h) is not None]
    if not handlers:
        errs.append(required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        errs.append(forbidden(child(path, extra), "may not specify more than 1 handler type"))
    if handlers:
        handler_path = child(path, handlers[0])
        handler = _get_dict(errs, probe[handlers[0]], handler_path)
        if handler is not None:
            _PROBE_HANDLER_CHECKS[handlers[0]](errs, handler, handler_path, port_names)
    _get_int(errs, probe.get("initialDelaySeconds"), child(path, "initialDelaySeconds"), 0)
    # 0 would be replaced by a default in Kubernetes; we ask for >= 1 when given.
    for field in ("timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        _get_int(errs, probe.get(field), child(path, field), 1)
    _get_int(errs, probe.get("terminationGracePeriodSeconds"),
             child(path, "terminationGracePeriodSeconds"), 1, INT64_MAX,
             "must be greater than 0")
    success = _as_int(probe.get("successThreshold"))
    if success_must_be_one and success is not None and 1 < success <= INT32_MAX:
        errs.append(invalid(child(path, "successThreshold"), success, "must be 1"))


def _check_exec(errs, handler: dict, path: str, port_names) -> None:
    command = handler.get("command")
    if not command and isinstance(command, (list, type(None))):
        errs.append(required(child(path, "command")))
    _string_list(errs, command, child(path, "command"))


def _check_port(errs, port, path: str, port_names: set[str] | None) -> None:
    """A port given as a number or as the name of one of the container's ports."""
    if port is None:
        # An unset IntOrString is the number 0 to Kubernetes.
        errs.append(invalid(path, 0, "must be between 1 and 65535, inclusive"))
    elif isinstance(port, str):
        msgs = is_valid_port_name(port)
        errs += [invalid(path, port, m) for m in msgs]
        if not msgs and port_names is not None and port not in port_names:
            errs.append(not_found(path, port, "no port of the container has this name"))
    elif _as_int(port) is None:
        errs.append(_type_error(path, port, "a port number or a port name"))
    else:
        _get_int(errs, port, path, 1, 65535, "must be between 1 and 65535, inclusive")


def _check_http_get(errs, handler: dict, path: str, port_names) -> None:
    _check_port(errs, handler.get("port"), child(path, "port"), port_names)
    _get_str(errs, handler.get("path"), child(path, "path"))
    _get_str(errs, handler.get("host"), child(path, "host"))
    _check_enum(errs, handler.get("scheme"), child(path, "scheme"), HTTP_SCHEMES)
    headers_path = child(path, "httpHeaders")
    for _, header_path, header in _items(errs, handler.get("httpHeaders"), headers_path,
                                         "headers"):
        name = _required_str(errs, header.get("name"), child(header_path, "name"))
        if name and not _matches("[-A-Za-z0-9]+", name):
            errs.append(invalid(headers_path, name, _regex_error(
                "a valid HTTP header must consist of alphanumeric characters or '-'",
                "[-A-Za-z0-9]+", "X-Header-Name")))
        _get_str(errs, header.get("value"), child(header_path, "value"))


def _check_tcp_socket(errs, handler: dict, path: str, port_names) -> None:
    _check_port(errs, handler.get("port"), child(path, "port"), port_names)
    _get_str(errs, handler.get("host"), child(path, "host"))


def _check_grpc(errs, handler: dict, path: str, port_names) -> None:
    port_path = child(path, "port")
    if handler.get("port") is None:
        errs.append(invalid(port_path, 0, "must be between 1 and 65535, inclusive"))
    else:  # gRPC probes take a number only
        _get_int(errs, handler["port"], port_path, 1, 65535,
                 "must be between 1 and 65535, inclusive")
    _get_str(errs, handler.get("service"), child(path, "service"))


_PROBE_HANDLER_CHECKS = {
    "exec": _check_exec,
    "httpGet": _check_http_get,
    "tcpSocket": _check_tcp_socket,
    "grpc": _check_grpc,
}
