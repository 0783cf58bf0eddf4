"""Pod validation: every error at once, in Kubernetes' words where it has them.

Each expected message below is in one of three groups, and says so:

* KUBERNETES_WORDING: what Kubernetes 1.32 prints for the same pod, byte for
  byte, path included (`spec.containers[0].image: Required value`). Checked
  against the source: k8s.io/apimachinery v0.32.0 (pkg/util/validation/field
  errors.go for "Required value", "Invalid value: ...", "Unsupported value";
  pkg/util/validation/validation.go for the name and label messages;
  pkg/api/validation/objectmeta.go) and kubernetes v1.32.3
  pkg/apis/core/validation/validation.go (the nearest 1.32 tag at hand; its
  apimachinery has no change to these files since v0.32.0). Each case names
  the function it comes from: "K8S f" is f in that validation.go, "AM" a file
  of apimachinery v0.32.0.
* OUR_TYPE_ERRORS: our own wording. A wrongly typed field ("must be a string
  (put it in quotes)", "must be an object", "must be a list of ...") never
  reaches Kubernetes' validation: its JSON decoder fails first, and the API
  server answers 400 Bad Request, e.g. `Pod in version "v1" cannot be handled
  as a Pod: json: cannot unmarshal number into Go struct field
  ObjectMeta.metadata.name of type string`. We validate the plain dict, so a
  type error is one more field error, worded to say what to write instead
  (common/model/validation.py: _type_error).
* OUR_OWN_CHECKS: rules Kubernetes does not have, or answers otherwise; each
  says what Kubernetes does instead.
"""

import copy
import re

import pytest

from common.model.field_errors import go_string_slice
from common.model.names import mask_trailing_dash
from common.model.validation import (DUPLICATE, FORBIDDEN, INVALID, NOT_FOUND, NOT_SUPPORTED,
                               REQUIRED, TOO_LONG, FieldError, format_value,
                               is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
                               is_valid_label_value, is_valid_port_name, validate_annotations,
                               validate_labels, validate_object_meta, validate_pod)

# Kubernetes' wording (AM pkg/util/validation/validation.go, each through RegexError,
# whose " or " after "', " leaves the double space):
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*"
    r"[a-z0-9])?)*')")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
ENV_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  "
    "or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")
PORT_RANGE = "must be between 1 and 65535, inclusive"  # AM InclusiveRangeError
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1"}


def valid_pod():
    """A pod that uses most of what the validator checks, and passes."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop",
                     "labels": {"app": "web", "app.kubernetes.io/tier": "front"},
                     "annotations": {"example.com/Owner": "team-a"}},
        "spec": {
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "nodeName": "node-1",
            "volumes": [
                {"name": "data", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                {"name": "logs", "hostPath": {"path": "/var/log", "type": "Directory"}},
            ],
            "initContainers": [{"name": "init", "image": "busybox:1.35",
                                "command": ["sh", "-c", "true"]}],
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                    "env": [
                        {"name": "MODE", "value": "prod"},
                        {"name": "POD_NAME",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "APP_LABEL",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                        {"name": "PASSWORD",
                         "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                    ],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                     {"name": "logs", "mountPath": "/logs", "readOnly": True}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                                  "requests": {"cpu": "250m", "memory": "64Mi"}},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                      "periodSeconds": 5, "failureThreshold": 3},
                    "readinessProbe": {"tcpSocket": {"port": 80}, "successThreshold": 2},
                },
                {"name": "sidecar", "image": "busybox",
                 "args": ["sleep", "3600"],
                 "startupProbe": {"exec": {"command": ["true"]}}},
            ],
        },
    }


DELETE = object()
_PART = re.compile(r"\[([^\]]+)\]|([^.\[\]]+)")


def with_changes(obj, changes):
    """A copy of obj with {path: value} applied (DELETE removes the field)."""
    obj = copy.deepcopy(obj)
    for path, value in changes.items():
        keys = [(int(b) if b.isdigit() else b) if b else name
                for b, name in _PART.findall(path)]
        target = obj
        for k in keys[:-1]:
            target = target[k]
        if value is DELETE:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return obj


def test_the_valid_pod_is_valid():
    assert validate_pod(valid_pod()) == []


C0 = "spec.containers[0]"
DATA_MOUNT_GONE = f'{C0}.volumeMounts[0].name: Not found: "data"'
LOGS_MOUNT_GONE = f'{C0}.volumeMounts[1].name: Not found: "logs"'

# A volume with any error is left out of the volumes a mount may name, so
# its mount is reported too, as K8S ValidateVolumes does.

# (id, changes to valid_pod(), every error expected, as printed): each line
# is what Kubernetes 1.32 prints for the same pod, byte for byte.
KUBERNETES_WORDING = [
    # --- metadata: AM pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor,
    # names through generic.go NameIsDNSSubdomain / NameIsDNSLabel
    ("no-name", {"metadata.name": DELETE},
     ["metadata.name: Required value: name or generateName is required"]),
    ("generateName-instead", {"metadata.name": DELETE, "metadata.generateName": "web-"}, []),
    ("bad-generateName", {"metadata.name": DELETE, "metadata.generateName": "Web-"},
     [f'metadata.generateName: Invalid value: "Web-": {SUBDOMAIN_MSG}']),
    ("name-uppercase-underscore", {"metadata.name": "Web_1"},
     [f'metadata.name: Invalid value: "Web_1": {SUBDOMAIN_MSG}']),
    # AM pkg/util/validation/validation.go IsDNS1123Subdomain, MaxLenError
    ("name-254-chars", {"metadata.name": "a" * 254},
     [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters']),
    ("name-253-chars", {"metadata.name": "a" * 253}, []),
    ("name-cyrillic-e", {"metadata.name": "w\u0435b"},
     [f'metadata.name: Invalid value: "w\u0435b": {SUBDOMAIN_MSG}']),
    # AM IsDNS1123Label: a valid subdomain that is no label has only its dots wrong
    ("namespace-with-dot", {"metadata.namespace": "my.ns"},
     ['metadata.namespace: Invalid value: "my.ns": must not contain dots']),
    ("namespace-64-chars", {"metadata.namespace": "n" * 64},
     [f'metadata.namespace: Invalid value: "{"n" * 64}": must be no more than 63 characters']),
    # AM pkg/apis/meta/v1/validation ValidateLabels; objectmeta.go ValidateAnnotations
    ("label-key-space", {"metadata.labels": {"bad key": "x"}},
     [f'metadata.labels: Invalid value: "bad key": {NAME_PART_MSG}']),
    ("label-value-slash", {"metadata.labels": {"app": "a/b"}},
     [f'metadata.labels: Invalid value: "a/b": {LABEL_VALUE_MSG}']),
    ("annotation-key-bad-prefix", {"metadata.annotations": {"-x/y": "1"}},
     [f'metadata.annotations: Invalid value: "-x/y": prefix part {SUBDOMAIN_MSG}']),
    ("annotations-too-big", {"metadata.annotations": {"big": "x" * (256 * 1024)}},
     ["metadata.annotations: Too long: may not be more than 262144 bytes"]),
    # --- spec: K8S ValidatePodSpec, validateContainers, validateRestartPolicy,
    # validateDNSPolicy (its values in its own order, not sorted), validatePodDNSConfig
    ("no-containers", {"spec.containers": DELETE}, ["spec.containers: Required value"]),
    ("empty-containers", {"spec.containers": []}, ["spec.containers: Required value"]),
    ("restartPolicy-Sometimes", {"spec.restartPolicy": "Sometimes"},
     ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
      '"Always", "OnFailure", "Never"']),
    ("dnsPolicy-bad", {"spec.dnsPolicy": "Google"},
     ['spec.dnsPolicy: Unsupported value: "Google": supported values: '
      '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"']),
    ("dnsPolicy-None-without-config", {"spec.dnsPolicy": "None"},
     ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]),
    # --- tolerations: K8S ValidateTolerations (validateTaintEffect's order)
    ("toleration-bogus-operator", {"spec.tolerations": [{"key": "a", "operator": "Bogus"}]},
     ['spec.tolerations[0].operator: Unsupported value: "Bogus": supported values: '
      '"Equal", "Exists"']),
    ("toleration-empty-key-needs-exists", {"spec.tolerations": [{"operator": "Equal"}]},
     ['spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
      '`key` is empty, which means "match all values and all keys"']),
    ("toleration-match-everything-ok", {"spec.tolerations": [{"operator": "Exists"}]}, []),
    ("toleration-bad-key", {"spec.tolerations": [{"key": "a b", "operator": "Exists"}]},
     ['spec.tolerations[0].key: Invalid value: "a b": ' + NAME_PART_MSG]),
    # The value alone since kubernetes/kubernetes#128119 (in 1.32); 1.31 printed
    # the whole core.Toleration struct.
    ("toleration-exists-with-value",
     {"spec.tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]},
     ['spec.tolerations[0].operator: Invalid value: "x": '
      "value must be empty when `operator` is 'Exists'"]),
    ("toleration-bad-value", {"spec.tolerations": [{"key": "a", "value": "-x"}]},
     [f'spec.tolerations[0].operator: Invalid value: "-x": {LABEL_VALUE_MSG}']),
    ("toleration-bad-effect",
     {"spec.tolerations": [{"key": "a", "operator": "Exists", "effect": "Never"}]},
     ['spec.tolerations[0].effect: Unsupported value: "Never": supported values: '
      '"NoSchedule", "PreferNoSchedule", "NoExecute"']),
    ("toleration-seconds-need-no-execute",
     {"spec.tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule",
                            "tolerationSeconds": 60}]},
     ['spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be '
      "'NoExecute' when `tolerationSeconds` is set"]),
    ("toleration-no-execute-ok",
     {"spec.tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                            "effect": "NoExecute", "tolerationSeconds": -1},
                           {"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}, []),
    # --- K8S ValidatePodSpec (InclusiveRangeError, ValidateNodeName), validatePodHostNetworkDeps
    ("activeDeadline-zero", {"spec.activeDeadlineSeconds": 0},
     ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
      "inclusive"]),
    ("nodeName-bad", {"spec.nodeName": "Node_1"},
     [f'spec.nodeName: Invalid value: "Node_1": {SUBDOMAIN_MSG}']),
    ("hostNetwork-hostPort-mismatch",
     {"spec.hostNetwork": True, f"{C0}.ports[0].hostPort": 8080},
     [f"{C0}.ports[0].hostPort: Invalid value: 8080: "
      "must match `containerPort` when `hostNetwork` is true"]),
    ("hostNetwork-hostPort-equal", {"spec.hostNetwork": True, f"{C0}.ports[0].hostPort": 80},
     []),
    # --- containers: K8S validateContainerCommon, validateContainers, validateInitContainers,
    # validateContainerOnlyForPod, validatePullPolicy
    ("container-name-missing", {f"{C0}.name": DELETE}, [f"{C0}.name: Required value"]),
    ("container-name-cyrillic", {f"{C0}.name": "w\u0435b"},
     [f'{C0}.name: Invalid value: "w\u0435b": {LABEL_MSG}']),
    ("container-name-duplicate", {"spec.containers[1].name": "app"},
     ['spec.containers[1].name: Duplicate value: "app"']),
    ("init-container-name-clash", {"spec.initContainers[0].name": "app"},
     ['spec.initContainers[0].name: Duplicate value: "app"']),
    # --- K8S validateInitContainers / validateContainerRestartPolicy (sidecars)
    ("init-restart-policy", {"spec.initContainers[0].restartPolicy": "OnFailure"},
     ['spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']),
    ("app-restart-policy", {f"{C0}.restartPolicy": "Always"},
     [f"{C0}.restartPolicy: Forbidden: may not be set for non-init containers"]),
    ("init-probe", {"spec.initContainers[0].startupProbe": {"exec": {"command": ["true"]}}},
     ["spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without "
      "restartPolicy=Always"]),
    ("init-hook", {"spec.initContainers[0].lifecycle": {"preStop": {"exec": {"command": ["true"]}}}},
     ["spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without "
      "restartPolicy=Always"]),
    # --- K8S validateLifecycle / validateHandler / validateSleepAction
    ("hook-no-handler", {f"{C0}.lifecycle": {"postStart": {}}},
     [f"{C0}.lifecycle.postStart: Required value: must specify a handler type"]),
    ("hook-two-handlers", {f"{C0}.lifecycle": {"preStop": {"exec": {"command": ["true"]}, "sleep": {"seconds": 1}}}},
     [f"{C0}.lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type"]),
    ("hook-sleep-zero", {f"{C0}.lifecycle": {"preStop": {"sleep": {"seconds": 0}}}},
     [f"{C0}.lifecycle.preStop.sleep: Invalid value: 0: must be greater than 0 and less than "
      "terminationGracePeriodSeconds (30)"]),
    ("image-missing", {f"{C0}.image": DELETE}, [f"{C0}.image: Required value"]),
    ("image-empty", {f"{C0}.image": ""}, [f"{C0}.image: Required value"]),
    ("image-spaces", {f"{C0}.image": " nginx"},
     [f'{C0}.image: Invalid value: " nginx": must not have leading or trailing whitespace']),
    ("pull-policy", {f"{C0}.imagePullPolicy": "Sometimes"},
     [f'{C0}.imagePullPolicy: Unsupported value: "Sometimes": supported values: '
      '"Always", "IfNotPresent", "Never"']),
    # --- ports: K8S validateContainerPorts (AM IsValidPortNum, IsValidPortName)
    ("port-70000", {f"{C0}.ports[0].containerPort": 70000},
     [f"{C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}"]),
    ("port-negative", {f"{C0}.ports[0].containerPort": -80},
     [f"{C0}.ports[0].containerPort: Invalid value: -80: {PORT_RANGE}"]),
    ("port-missing", {f"{C0}.ports[0].containerPort": DELETE},
     [f"{C0}.ports[0].containerPort: Required value"]),
    ("hostPort-negative", {f"{C0}.ports[0].hostPort": -1},
     [f"{C0}.ports[0].hostPort: Invalid value: -1: {PORT_RANGE}"]),
    ("hostPort-zero-is-none", {f"{C0}.ports[0].hostPort": 0}, []),
    ("protocol-lowercase", {f"{C0}.ports[0].protocol": "tcp"},
     [f'{C0}.ports[0].protocol: Unsupported value: "tcp": supported values: '
      '"SCTP", "TCP", "UDP"']),
    ("port-name-too-long", {f"{C0}.ports[0].name": "a-very-long-port-name",
                            f"{C0}.livenessProbe.httpGet.port": 80},
     [f'{C0}.ports[0].name: Invalid value: "a-very-long-port-name": '
      "must be no more than 15 characters"]),
    ("port-name-digits-only", {f"{C0}.ports[0].name": "8080",
                               f"{C0}.livenessProbe.httpGet.port": 80},
     [f'{C0}.ports[0].name: Invalid value: "8080": must contain at least one letter (a-z)']),
    ("port-name-duplicate", {f"{C0}.ports": [{"name": "http", "containerPort": 80},
                                             {"name": "http", "containerPort": 81}]},
     [f'{C0}.ports[1].name: Duplicate value: "http"']),
    # --- env: K8S ValidateEnv, validateEnvVarValueFrom, validateObjectFieldSelector
    # (which converts the path first: pkg/apis/core/pods/helpers.go
    # ConvertDownwardAPIFieldLabel), validateSecretKeySelector
    ("env-name-digit", {f"{C0}.env[0].name": "1MODE"},
     [f'{C0}.env[0].name: Invalid value: "1MODE": {ENV_NAME_MSG}']),
    ("env-name-missing", {f"{C0}.env[0].name": DELETE}, [f"{C0}.env[0].name: Required value"]),
    ("env-value-and-valueFrom", {f"{C0}.env[1].value": "x"},
     [f'{C0}.env[1].valueFrom: Invalid value: "": '
      "may not be specified when `value` is not empty"]),
    ("env-valueFrom-empty", {f"{C0}.env[1].valueFrom": {}},
     [f'{C0}.env[1].valueFrom: Invalid value: "": must specify one of: `fieldRef`, '
      "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"]),
    ("env-valueFrom-two", {f"{C0}.env[1].valueFrom.configMapKeyRef": {"name": "c", "key": "k"}},
     [f'{C0}.env[1].valueFrom: Invalid value: "": '
      "may not have more than one field specified at a time"]),
    ("env-fieldPath-unknown", {f"{C0}.env[1].valueFrom.fieldRef.fieldPath": "spec.hostname"},
     [f'{C0}.env[1].valueFrom.fieldRef.fieldPath: Invalid value: "spec.hostname": '
      "error converting fieldPath: field label not supported: spec.hostname"]),
    ("env-fieldPath-not-for-env", {f"{C0}.env[1].valueFrom.fieldRef.fieldPath": "status.phase"},
     [f'{C0}.env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": '
      'supported values: "metadata.name", "metadata.namespace", "metadata.uid", '
      '"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", '
      '"status.podIP", "status.podIPs"']),
    ("env-fieldPath-bad-subscript",
     {f"{C0}.env[2].valueFrom.fieldRef.fieldPath": "spec.nodeName['x']"},
     [f"{C0}.env[2].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nodeName['x']\": "
      "error converting fieldPath: field label does not support subscript: spec.nodeName['x']"]),
    ("env-secret-key-missing", {f"{C0}.env[3].valueFrom.secretKeyRef.key": DELETE},
     [f"{C0}.env[3].valueFrom.secretKeyRef.key: Required value"]),
    # --- mounts: K8S ValidateVolumeMounts
    ("mount-unknown-volume", {f"{C0}.volumeMounts[0].name": "cache"},
     [f'{C0}.volumeMounts[0].name: Not found: "cache"']),
    ("mount-path-missing", {f"{C0}.volumeMounts[0].mountPath": DELETE},
     [f"{C0}.volumeMounts[0].mountPath: Required value"]),
    ("mount-path-twice", {f"{C0}.volumeMounts[1].mountPath": "/data"},
     [f'{C0}.volumeMounts[1].mountPath: Invalid value: "/data": must be unique']),
    # --- volumes: K8S ValidateVolumes, validateVolumeSource (which tries the
    # sources in a fixed order, emptyDir before hostPath), validateHostPathVolumeSource,
    # validateHostPathType
    ("volume-name-duplicate", {"spec.volumes[1].name": "data"},
     ['spec.volumes[1].name: Duplicate value: "data"', LOGS_MOUNT_GONE]),
    ("volume-name-bad", {"spec.volumes[0].name": "Data", f"{C0}.volumeMounts[0].name": "Data"},
     [f'spec.volumes[0].name: Invalid value: "Data": {LABEL_MSG}',
      f'{C0}.volumeMounts[0].name: Not found: "Data"']),
    ("volume-no-source", {"spec.volumes[0].emptyDir": DELETE},
     ["spec.volumes[0]: Required value: must specify a volume type", DATA_MOUNT_GONE]),
    ("volume-two-sources", {"spec.volumes[0].hostPath": {"path": "/x"}},
     ["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
      DATA_MOUNT_GONE]),
    ("volume-other-source", {"spec.volumes[0]": {"name": "data",
                                                 "persistentVolumeClaim": {"claimName": "c"}}},
     []),
    ("hostPath-no-path", {"spec.volumes[1].hostPath.path": DELETE},
     ["spec.volumes[1].hostPath.path: Required value", LOGS_MOUNT_GONE]),
    ("hostPath-type-bad", {"spec.volumes[1].hostPath.type": "Dir"},
     ['spec.volumes[1].hostPath.type: Unsupported value: "Dir": supported values: "", '
      '"BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", '
      '"FileOrCreate", "Socket"', LOGS_MOUNT_GONE]),
    # configMap and secret items: K8S validateKeyToPath, ValidateLocalNonReservedPath
    ("configMap-items-fine", {"spec.volumes[0]": {"name": "data", "configMap": {"name": "c", "items": [
        {"key": "a", "path": "conf/a.ini", "mode": 0o400}]}}}, []),
    ("configMap-item-escapes", {"spec.volumes[0]": {"name": "data", "configMap": {"name": "c", "items": [
        {"key": "a", "path": "../../etc/passwd"}, {"key": "b", "path": "/abs"}, {"key": "c", "path": "..data"},
        {"path": "x", "mode": 0o1777}]}}},
     ['spec.volumes[0].configMap.items[0].path: Invalid value: "../../etc/passwd": must not contain \'..\'',
      'spec.volumes[0].configMap.items[1].path: Invalid value: "/abs": must be a relative path',
      'spec.volumes[0].configMap.items[2].path: Invalid value: "..data": must not start with \'..\'',
      "spec.volumes[0].configMap.items[3].key: Required value",
      "spec.volumes[0].configMap.items[3].mode: Invalid value: 1023: "
      "must be a number between 0 and 0777 (octal), both inclusive", DATA_MOUNT_GONE]),
    ("secret-item-no-path", {"spec.volumes[0]": {"name": "data", "secret": {"secretName": "s", "items": [
        {"key": "tls.crt"}]}}},
     ["spec.volumes[0].secret.items[0].path: Required value", DATA_MOUNT_GONE]),
    # downwardAPI and projected volumes: K8S validateDownwardAPIVolumeFile,
    # validateProjectedVolumeSource (one kind per source, no two files at one path)
    ("downwardAPI-fine", {"spec.volumes[0]": {"name": "data", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
        {"path": "app", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}},
        {"path": "cpu", "resourceFieldRef": {"containerName": "app", "resource": "limits.cpu"}}]}}}, []),
    ("downwardAPI-bad-files", {"spec.volumes[0]": {"name": "data", "downwardAPI": {"defaultMode": 0o1000, "items": [
        {"path": "../node", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        {"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}},
        {"path": "both", "fieldRef": {"fieldPath": "metadata.name"}, "resourceFieldRef": {
            "containerName": "app", "resource": "limits.cpu"}},
        {"path": "neither"}]}}},
     ["spec.volumes[0].downwardAPI.defaultMode: Invalid value: 512: "
      "must be a number between 0 and 0777 (octal), both inclusive",
      'spec.volumes[0].downwardAPI.items[0].path: Invalid value: "../node": must not contain \'..\'',
      'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "spec.nodeName": '
      'supported values: "metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", '
      '"metadata.uid"',
      "spec.volumes[0].downwardAPI.items[1].resourceFieldRef.containerName: Required value",
      'spec.volumes[0].downwardAPI.items[2]: Invalid value: "resource": '
      "fieldRef and resourceFieldRef can not be specified simultaneously",
      "spec.volumes[0].downwardAPI.items[3]: Required value: one of fieldRef and resourceFieldRef is required",
      DATA_MOUNT_GONE]),
    ("projected-fine", {"spec.volumes[0]": {"name": "data", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}}},
     []),
    ("projected-bad-sources", {"spec.volumes[0]": {"name": "data", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 60}},
        {"secret": {"name": "s", "items": [{"key": "a", "path": "token"}]},
         "configMap": {"name": "c"}},
        {"serviceAccountToken": {"path": "/etc/token", "expirationSeconds": 2 ** 40}}]}}},
     ["spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: "
      "may not specify a duration less than 10 minutes",
      "spec.volumes[0].projected.sources[1]: Forbidden: may not specify more than 1 volume type per source",
      'spec.volumes[0].projected: Invalid value: "s": conflicting duplicate paths',
      "spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: "
      "1099511627776: may not specify a duration larger than 2^32 seconds",
      'spec.volumes[0].projected.sources[2].serviceAccountToken.path: Invalid value: "/etc/token": '
      "must be a relative path",
      DATA_MOUNT_GONE]),
    ("emptyDir-sizeLimit-negative", {"spec.volumes[0].emptyDir.sizeLimit": "-1Gi"},
     ["spec.volumes[0].emptyDir.sizeLimit: Forbidden: "
      "SizeLimit field must be a valid resource quantity", DATA_MOUNT_GONE]),
    # --- resources: K8S validateResourceRequirements, validateContainerResourceName
    # (a name without "/" that is no standard resource gets both of its messages),
    # ValidateResourceQuantityValue
    ("request-over-limit", {f"{C0}.resources.requests.cpu": "1"},
     [f'{C0}.resources.requests: Invalid value: "1": '
      "must be less than or equal to cpu limit of 500m"]),
    ("memory-negative", {f"{C0}.resources.limits.memory": "-128Mi"},
     [f'{C0}.resources.limits[memory]: Invalid value: "-128Mi": '
      "must be greater than or equal to 0"]),
    ("numbers-are-quantities", {f"{C0}.resources.limits.cpu": 1,
                                f"{C0}.resources.requests.cpu": 0.5}, []),
    ("unknown-resource", {f"{C0}.resources.limits.gpu": "1"},
     [f'{C0}.resources.limits[gpu]: Invalid value: "gpu": '
      "must be a standard resource type or fully qualified",
      f'{C0}.resources.limits[gpu]: Invalid value: "gpu": '
      "must be a standard resource for containers"]),
    ("extended-resource-unequal",
     {f"{C0}.resources.limits[example.com/gpu]": "2",
      f"{C0}.resources.requests[example.com/gpu]": "1"},
     [f'{C0}.resources.requests: Invalid value: "1": '
      "must be equal to example.com/gpu limit of 2"]),
    # --- probes: K8S validateProbe, validateHandler, validateLivenessProbe,
    # validateStartupProbe, validateExecAction, validateHTTPGetAction, ValidatePortNumOrName
    # (an unset port is the number 0 to Go)
    ("probe-no-handler", {f"{C0}.livenessProbe.httpGet": DELETE},
     [f"{C0}.livenessProbe: Required value: must specify a handler type"]),
    ("probe-two-handlers", {f"{C0}.livenessProbe.tcpSocket": {"port": 80}},
     [f"{C0}.livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"]),
    ("probe-port-missing", {f"{C0}.livenessProbe.httpGet.port": DELETE},
     [f"{C0}.livenessProbe.httpGet.port: Invalid value: 0: {PORT_RANGE}"]),
    ("probe-scheme", {f"{C0}.livenessProbe.httpGet.scheme": "FTP"},
     [f'{C0}.livenessProbe.httpGet.scheme: Unsupported value: "FTP": '
      'supported values: "HTTP", "HTTPS"']),
    ("probe-delay-negative", {f"{C0}.livenessProbe.initialDelaySeconds": -5},
     [f"{C0}.livenessProbe.initialDelaySeconds: Invalid value: -5: "
      "must be greater than or equal to 0"]),
    ("liveness-success-threshold", {f"{C0}.livenessProbe.successThreshold": 2},
     [f"{C0}.livenessProbe.successThreshold: Invalid value: 2: must be 1"]),
    ("startup-success-threshold", {"spec.containers[1].startupProbe.successThreshold": 3},
     ["spec.containers[1].startupProbe.successThreshold: Invalid value: 3: must be 1"]),
    ("exec-empty-command", {"spec.containers[1].startupProbe.exec.command": []},
     ["spec.containers[1].startupProbe.exec.command: Required value"]),
    # --- many problems at once: all are reported, metadata first, then the spec
    ("all-errors-at-once",
     {"metadata.name": "Web_1", f"{C0}.image": DELETE,
      f"{C0}.ports[0].containerPort": 70000, "spec.restartPolicy": "Sometimes"},
     [f'metadata.name: Invalid value: "Web_1": {SUBDOMAIN_MSG}',
      f"{C0}.image: Required value",
      f"{C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}",
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
      '"Always", "OnFailure", "Never"']),
]

# Our own wording: a wrongly typed field. Kubernetes never validates these:
# its JSON decoder fails first and the API server answers 400 Bad Request,
# e.g. `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal
# number into Go struct field Container.spec.containers.image of type string`
# (k8s.io/apiserver pkg/endpoints/handlers/rest.go transformDecodeError around
# sigs.k8s.io/json's UnmarshalTypeError). We check the plain dict, so each is
# one more field error, worded to say what to write instead: a learner's YAML
# reads `8080`, `true` or `2024-01-01` as a non-string, hence "(put it in quotes)".
# The same goes for numbers too big for the Go field (int32, int64), which the
# decoder refuses too ("cannot unmarshal number 1e30 ... of type int64").
OUR_TYPE_ERRORS = [
    ("name-number", {"metadata.name": 5},
     ["metadata.name: Invalid value: 5: must be a string (put it in quotes)"]),
    ("metadata-is-list", {"metadata": [{"name": "web"}]},
     ['metadata: Invalid value: [{"name": "web"}]: must be an object']),
    ("label-value-bool", {"metadata.labels": {"enabled": True}},
     ["metadata.labels[enabled]: Invalid value: true: must be a string (put it in quotes)"]),
    ("labels-is-string", {"metadata.labels": "app=web"},
     ['metadata.labels: Invalid value: "app=web": must be an object']),
    ("spec-is-list", {"spec": []}, ["spec: Invalid value: []: must be an object"]),
    ("containers-is-string", {"spec.containers": "web"},
     ['spec.containers: Invalid value: "web": must be a list of containers']),
    ("container-is-string", {"spec.containers[1]": "sidecar"},
     ['spec.containers[1]: Invalid value: "sidecar": must be an object']),
    # Kubernetes prints a Go nil as "null" in quotes; we print null bare (format_value).
    ("container-is-null", {"spec.containers[1]": None},
     ["spec.containers[1]: Invalid value: null: must be an object"]),
    ("grace-huge", {"spec.terminationGracePeriodSeconds": 10**30},
     ["spec.terminationGracePeriodSeconds: Invalid value: 1000000000000000000000000000000: "
      "must be less than or equal to 9223372036854775807"]),
    ("grace-fraction", {"spec.terminationGracePeriodSeconds": 1.5},
     ["spec.terminationGracePeriodSeconds: Invalid value: 1.5: must be an integer"]),
    # Go's JSON decoder refuses 30.0 for an int64; storing it would make every
    # reader of the field cope with a float.
    ("grace-whole-float", {"spec.terminationGracePeriodSeconds": 30.0},
     ["spec.terminationGracePeriodSeconds: Invalid value: 30.0: must be an integer"]),
    ("grace-bool", {"spec.terminationGracePeriodSeconds": True},
     ["spec.terminationGracePeriodSeconds: Invalid value: true: must be an integer"]),
    ("grace-too-long-to-print", {"spec.terminationGracePeriodSeconds": 10**5000},
     ["spec.terminationGracePeriodSeconds: Invalid value: <an integer of 5001 digits>: "
      "must be less than or equal to 9223372036854775807"]),
    ("port-whole-float", {"spec.containers[0].ports[0].containerPort": 80.0},
     ["spec.containers[0].ports[0].containerPort: Invalid value: 80.0: must be an integer"]),
    ("probe-port-whole-float", {"spec.containers[0].livenessProbe.httpGet.port": 8080.0},
     ["spec.containers[0].livenessProbe.httpGet.port: Invalid value: 8080.0: "
      "must be a port number or a port name"]),
    ("toleration-wrong-types", {"spec.tolerations": [1, {"key": {"a": 1}}]},
     ["spec.tolerations[0]: Invalid value: 1: must be an object",
      'spec.tolerations[1].key: Invalid value: {"a": 1}: must be a string']),
    ("tolerations-not-a-list", {"spec.tolerations": "all"},
     ['spec.tolerations: Invalid value: "all": must be a list of tolerations']),
    ("toleration-seconds-float",
     {"spec.tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 60.0}]},
     ["spec.tolerations[0].tolerationSeconds: Invalid value: 60.0: must be an integer"]),
    ("hostNetwork-string", {"spec.hostNetwork": "yes"},
     ['spec.hostNetwork: Invalid value: "yes": must be a boolean (true or false)']),
    ("image-number", {f"{C0}.image": 5},
     [f"{C0}.image: Invalid value: 5: must be a string (put it in quotes)"]),
    ("image-object", {f"{C0}.image": {"name": "nginx"}},
     [f'{C0}.image: Invalid value: {{"name": "nginx"}}: must be a string']),
    ("command-string", {"spec.initContainers[0].command": "sh -c true"},
     ['spec.initContainers[0].command: Invalid value: "sh -c true": '
      "must be a list of strings"]),
    ("args-item-number", {"spec.containers[1].args": ["sleep", 3600]},
     ["spec.containers[1].args[1]: Invalid value: 3600: must be a string (put it in quotes)"]),
    ("port-10e30", {f"{C0}.ports[0].containerPort": 10**30},
     [f"{C0}.ports[0].containerPort: Invalid value: 1000000000000000000000000000000: "
      f"{PORT_RANGE}"]),
    ("port-true", {f"{C0}.ports[0].containerPort": True},
     [f"{C0}.ports[0].containerPort: Invalid value: true: must be an integer"]),
    ("port-string", {f"{C0}.ports[0].containerPort": "80"},
     [f'{C0}.ports[0].containerPort: Invalid value: "80": must be an integer']),
    ("ports-is-mapping", {f"{C0}.ports": {"containerPort": 80}},
     [f'{C0}.ports: Invalid value: {{"containerPort": 80}}: must be a list of ports']),
    ("env-value-number", {f"{C0}.env[0].value": 5},
     [f"{C0}.env[0].value: Invalid value: 5: must be a string (put it in quotes)"]),
    ("env-is-mapping", {f"{C0}.env": {"MODE": "prod"}},
     [f'{C0}.env: Invalid value: {{"MODE": "prod"}}: must be a list of environment variables']),
    ("mount-readOnly-string", {f"{C0}.volumeMounts[1].readOnly": "true"},
     [f'{C0}.volumeMounts[1].readOnly: Invalid value: "true": '
      "must be a boolean (true or false)"]),
    ("volumes-is-string", {"spec.volumes": "data", f"{C0}.volumeMounts": DELETE},
     ['spec.volumes: Invalid value: "data": must be a list of volumes']),
    ("limits-is-list", {f"{C0}.resources.limits": ["cpu"],
                        f"{C0}.resources.requests": DELETE},
     [f'{C0}.resources.limits: Invalid value: ["cpu"]: must be an object']),
    ("cpu-bool", {f"{C0}.resources.requests.cpu": True},
     [f'{C0}.resources.requests[cpu]: Invalid value: true: '
      'must be a quantity such as "500m" or "128Mi"']),
    ("probe-port-huge", {f"{C0}.readinessProbe.tcpSocket.port": 10**30},
     [f"{C0}.readinessProbe.tcpSocket.port: Invalid value: "
      f"1000000000000000000000000000000: {PORT_RANGE}"]),
    ("probe-period-int32-overflow", {f"{C0}.livenessProbe.periodSeconds": 2**31},
     [f"{C0}.livenessProbe.periodSeconds: Invalid value: 2147483648: "
      "must be less than or equal to 2147483647"]),
    ("probe-is-list", {f"{C0}.livenessProbe": [{"httpGet": {"port": 80}}]},
     [f'{C0}.livenessProbe: Invalid value: [{{"httpGet": {{"port": 80}}}}]: '
      "must be an object"]),
]

# Our own checks: Kubernetes 1.32 accepts these pods (or answers with
# something other than a field error), so the rule and its words are ours.
OUR_OWN_CHECKS = [
    # Kubernetes takes apiVersion and kind from the URL when the body has
    # none, and answers a mismatch with 400 Bad Request: `the API version in
    # the data (apps/v1) does not match the expected API version (v1)`.
    ("no-apiVersion", {"apiVersion": DELETE}, ["apiVersion: Required value"]),
    ("wrong-apiVersion", {"apiVersion": "apps/v1"},
     ['apiVersion: Unsupported value: "apps/v1": supported values: "v1"']),
    ("wrong-kind", {"kind": "Deployment"},
     ['kind: Unsupported value: "Deployment": supported values: "Pod"']),
    # A Go struct is never missing: Kubernetes would report what the empty
    # spec lacks (spec.containers: Required value, ...).
    ("no-spec", {"spec": DELETE}, ["spec: Required value"]),
    # Kubernetes 1.32 accepts a negative grace period (and turns it into 1).
    ("grace-negative", {"spec.terminationGracePeriodSeconds": -1},
     ["spec.terminationGracePeriodSeconds: Invalid value: -1: "
      "must be greater than or equal to 0"]),
    # Kubernetes does not check hostIP's format, nor emptyDir.medium.
    ("hostIP-bad", {f"{C0}.ports[0].hostIP": "localhost"},
     [f'{C0}.ports[0].hostIP: Invalid value: "localhost": must be a valid IP address, '
      "(e.g. 10.9.8.7 or 2001:db8::ffff)"]),
    ("emptyDir-medium-bad", {"spec.volumes[0].emptyDir.medium": "Disk"},
     ['spec.volumes[0].emptyDir.medium: Unsupported value: "Disk": supported values: '
      '"", "HugePages", "Memory"', DATA_MOUNT_GONE]),
    # Kubernetes accepts a probe on a port name the container lacks; the
    # probe then fails on the node. We say so at once.
    ("probe-port-unknown-name", {f"{C0}.livenessProbe.httpGet.port": "metrics"},
     [f'{C0}.livenessProbe.httpGet.port: Not found: "metrics": '
      "no port of the container has this name"]),
    # Kubernetes defaults 0 to 10 and then allows it; we validate manifests
    # that may not have been defaulted, and a period of 0 would spin.
    ("probe-period-zero", {f"{C0}.livenessProbe.periodSeconds": 0},
     [f"{C0}.livenessProbe.periodSeconds: Invalid value: 0: "
      "must be greater than or equal to 1"]),
    # Unknown fields are kept and ignored. Kubernetes does so only with
    # fieldValidation=Ignore or Warn; kubectl asks for Strict, which answers
    # 400 `strict decoding error: unknown field "spec.futureField"`.
    ("unknown-fields-ignored", {"spec.futureField": {"x": 1}, f"{C0}.someFlag": True}, []),
]


def _cases(table):
    return [pytest.param(c, e, id=i) for i, c, e in table]


@pytest.mark.parametrize("changes, expected", _cases(KUBERNETES_WORDING))
def test_kubernetes_wording(changes, expected):
    errors = validate_pod(with_changes(valid_pod(), changes))
    assert [str(e) for e in errors] == expected
    assert all(isinstance(e, FieldError) for e in errors)


@pytest.mark.parametrize("changes, expected", _cases(OUR_TYPE_ERRORS))
def test_our_own_wording_for_type_errors(changes, expected):
    assert [str(e) for e in validate_pod(with_changes(valid_pod(), changes))] == expected


@pytest.mark.parametrize("changes, expected", _cases(OUR_OWN_CHECKS))
def test_our_own_checks(changes, expected):
    assert [str(e) for e in validate_pod(with_changes(valid_pod(), changes))] == expected


def test_error_fields_are_separate_values():
    changed = with_changes(valid_pod(), {f"{C0}.ports[0].containerPort": 70000})
    assert validate_pod(changed) == [
        FieldError(f"{C0}.ports[0].containerPort", INVALID, 70000, PORT_RANGE)]


# --------------------------------------------------------------- printing

@pytest.mark.parametrize("error, text", [
    pytest.param(FieldError("a.b", REQUIRED, None), "a.b: Required value", id="required"),
    pytest.param(FieldError("a.b", REQUIRED, None, "why"), "a.b: Required value: why",
                 id="required-detail"),
    pytest.param(FieldError("a", INVALID, "x", "bad"), 'a: Invalid value: "x": bad',
                 id="invalid-string"),
    pytest.param(FieldError("a", INVALID, 7, "bad"), "a: Invalid value: 7: bad",
                 id="invalid-number"),
    pytest.param(FieldError("a", INVALID, False, "bad"), "a: Invalid value: false: bad",
                 id="invalid-bool"),
    pytest.param(FieldError("a", INVALID, None, "bad"), "a: Invalid value: null: bad",
                 id="invalid-null"),
    pytest.param(FieldError("a", INVALID, 'say "hi"\n', "bad"),
                 'a: Invalid value: "say \\"hi\\"\\n": bad', id="invalid-escapes"),
    pytest.param(FieldError("a", NOT_SUPPORTED, "x", 'supported values: "y"'),
                 'a: Unsupported value: "x": supported values: "y"', id="unsupported"),
    pytest.param(FieldError("a", DUPLICATE, "x"), 'a: Duplicate value: "x"', id="duplicate"),
    pytest.param(FieldError("a", NOT_FOUND, "x"), 'a: Not found: "x"', id="not-found"),
    pytest.param(FieldError("a", TOO_LONG, "x" * 300, "may not be more than 253 bytes"),
                 "a: Too long: may not be more than 253 bytes", id="too-long"),
    pytest.param(FieldError("a", FORBIDDEN, None, "not allowed"), "a: Forbidden: not allowed",
                 id="forbidden"),
    # Ours: Kubernetes prints an error about the whole object with an empty
    # path before the colon (": Too long: ..."); we leave the colon out.
    pytest.param(FieldError("", INVALID, [], "must be an object"),
                 "Invalid value: []: must be an object", id="root"),
])
def test_field_error_str(error, text):
    assert str(error) == text


@pytest.mark.parametrize("value, text", [
    pytest.param(10**5000, "<an integer of 5001 digits>", id="int-too-big-to-print"),
    pytest.param(-(10**40), "<an integer of 41 digits>", id="int-too-long-negative"),
    pytest.param(10**39 - 1, "9" * 39, id="int-39-digits-printed"),
    pytest.param([10**5000], "[<an integer of 5001 digits>]", id="int-too-big-in-a-list"),
    pytest.param(1e30, "1e+30", id="float-exponent"),
    pytest.param(80.0, "80.0", id="whole-float"),
    pytest.param("\x01", '"\\x01"', id="control-char"),
    pytest.param({"a": "x" * 200}, '{"a": "' + "x" * 70 + "...", id="long-object-cut"),
])
def test_format_value(value, text):
    assert format_value(value) == text


# ------------------------------------------------------- names and labels

@pytest.mark.parametrize("check, value, valid", [
    pytest.param(is_dns1123_label, "my-name", True, id="label-ok"),
    pytest.param(is_dns1123_label, "123-abc", True, id="label-leading-digit"),
    pytest.param(is_dns1123_label, "-a", False, id="label-leading-dash"),
    pytest.param(is_dns1123_label, "a.b", False, id="label-dot"),
    pytest.param(is_dns1123_label, "a" * 64, False, id="label-64"),
    pytest.param(is_dns1123_label, "a\n", False, id="label-trailing-newline"),
    pytest.param(is_dns1123_subdomain, "example.com", True, id="subdomain-ok"),
    pytest.param(is_dns1123_subdomain, "a..b", False, id="subdomain-empty-part"),
    pytest.param(is_dns1123_subdomain, "w\u0435b", False, id="subdomain-cyrillic"),
    pytest.param(is_qualified_name, "example.com/MyName", True, id="qualified-prefixed"),
    pytest.param(is_qualified_name, "a/b/c", False, id="qualified-two-slashes"),
    pytest.param(is_qualified_name, "/x", False, id="qualified-empty-prefix"),
    pytest.param(is_qualified_name, "x" * 64, False, id="qualified-name-64"),
    pytest.param(is_valid_label_value, "", True, id="label-value-empty"),
    pytest.param(is_valid_label_value, "My_Value.1", True, id="label-value-ok"),
    pytest.param(is_valid_label_value, "v" * 64, False, id="label-value-64"),
    pytest.param(is_valid_port_name, "http-alt", True, id="port-name-ok"),
    pytest.param(is_valid_port_name, "a--b", False, id="port-name-double-dash"),
    pytest.param(is_valid_port_name, "HTTP", False, id="port-name-uppercase"),
])
def test_name_checks(check, value, valid):
    assert (check(value) == []) is valid


def test_name_messages_are_kubernetes():
    # AM IsDNS1123Label: a subdomain that is no label has only its dots wrong;
    # lengths count bytes, as Go's len() does.
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("е" * 32) == [
        "must be no more than 63 characters",
        LABEL_MSG]
    # AM pkg/api/validation/generic.go maskTrailingDash drops the character
    # before the dash too: "ab-" is checked as "aa".
    assert mask_trailing_dash("web-") == "wea" and mask_trailing_dash("-") == "-"


def test_qualified_name_reports_each_part():
    assert is_qualified_name("/" + "x" * 64) == [
        "prefix part must be non-empty", "name part must be no more than 63 characters"]


# AM pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor and the
# functions it calls; pkg/apis/meta/v1/validation ValidateManagedFields.
# Marked "ours" where the message is our type error or our rendering.
@pytest.mark.parametrize("meta, namespaced, expected", [
    pytest.param({"name": "a", "namespace": "b"}, True, [], id="namespaced-ok"),
    pytest.param({"name": "a"}, True, [], id="namespace-optional"),
    # Kubernetes' words, though its API server clears the namespace of a
    # cluster-scoped object before validating, so they are rarely seen there.
    pytest.param({"name": "node-1", "namespace": "x"}, False,
                 ["metadata.namespace: Forbidden: not allowed on this type"],
                 id="cluster-scoped-with-namespace"),
    pytest.param(None, True, ["metadata.name: Required value: name or generateName is required"],
                 id="missing"),
    pytest.param({"name": "a", "uid": 5}, True,  # ours: a type error
                 ["metadata.uid: Invalid value: 5: must be a string (put it in quotes)"],
                 id="uid-number"),
    # --- finalizers: qualified names, reported at the list's path (ValidateFinalizers)
    pytest.param({"name": "a", "finalizers": "abc"}, True,  # ours: type errors, to finalizer-number
                 ['metadata.finalizers: Invalid value: "abc": must be a list of strings'],
                 id="finalizers-string"),
    pytest.param({"name": "a", "finalizers": {"a": 1}}, True,
                 ['metadata.finalizers: Invalid value: {"a": 1}: must be a list of strings'],
                 id="finalizers-object"),
    pytest.param({"name": "a", "finalizers": [1]}, True,
                 ["metadata.finalizers[0]: Invalid value: 1: must be a string (put it in quotes)"],
                 id="finalizer-number"),
    pytest.param({"name": "a", "finalizers": ["example.com/x!"]}, True,
                 ['metadata.finalizers: Invalid value: "example.com/x!": ' + NAME_PART_MSG],
                 id="finalizer-bad-name"),
    pytest.param({"name": "a", "finalizers": [None]}, True,
                 ['metadata.finalizers: Invalid value: "": name part must be non-empty',
                  'metadata.finalizers: Invalid value: "": ' + NAME_PART_MSG],
                 id="finalizer-null-is-empty"),
    pytest.param({"name": "a", "finalizers": ["kubernetes", "example.com/a", "example.com/a",
                                              "no-slash"]}, True, [],
                 id="finalizers-duplicates-and-unqualified-pass"),
    pytest.param({"name": "a", "finalizers": ["orphan", "foregroundDeletion"]}, True,
                 ['metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: '
                  "finalizer orphan and foregroundDeletion cannot be both set"],
                 id="finalizers-orphan-and-foreground"),
    # --- ownerReferences: each names one object; one controller at most
    # (validateOwnerReference, ValidateOwnerReferences)
    pytest.param({"name": "a", "ownerReferences": "abc"}, True,  # ours: a type error
                 ['metadata.ownerReferences: Invalid value: "abc": '
                  "must be a list of owner references"], id="owner-refs-string"),
    pytest.param({"name": "a", "ownerReferences": [{}]}, True,
                 ['metadata.ownerReferences.apiVersion: Invalid value: "": '
                  "version must not be empty",
                  'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
                  'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
                  'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty'],
                 id="owner-ref-empty"),
    pytest.param({"name": "a", "ownerReferences": [dict(OWNER, uid=7, controller="yes")]},
                 True,  # ours: type errors
                 ["metadata.ownerReferences[0].uid: Invalid value: 7: "
                  "must be a string (put it in quotes)",
                  'metadata.ownerReferences[0].controller: Invalid value: "yes": '
                  "must be a boolean (true or false)"], id="owner-ref-types"),
    pytest.param({"name": "a", "ownerReferences": [dict(OWNER, apiVersion="a/b/c")]}, True,
                 ['metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": '
                  "version must not be empty"], id="owner-ref-bad-api-version"),
    # The detail is Kubernetes'; the value is ours: short JSON, where Kubernetes
    # prints the Go structs (%#v, with the addresses of their *bool fields).
    pytest.param({"name": "a", "ownerReferences": [
        dict(OWNER, controller=True), dict(OWNER, name="web-2", uid="u2", controller=True)]},
        True, ['metadata.ownerReferences: Invalid value: [{"apiVersion": "apps/v1", "kind": '
               '"ReplicaSet", "name": "web", "uid": "u1", ...: Only one reference can have '
               'Controller set to true. Found "true" in references for ReplicaSet/web and '
               "ReplicaSet/web-2"], id="owner-refs-two-controllers"),
    # Likewise: detail Kubernetes' (schema.GroupVersionKind.String), value ours.
    pytest.param({"name": "a", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]}, True,
        ['metadata.ownerReferences: Invalid value: {"apiVersion": "v1", "kind": "Event", '
         '"name": "e", "uid": "u"}: /v1, Kind=Event is disallowed from being an owner'],
        id="owner-ref-event"),
    pytest.param({"name": "a", "ownerReferences": [
        dict(OWNER, controller=True, blockOwnerDeletion=True), dict(OWNER, uid="u2")]},
        True, [], id="owner-refs-ok"),
    # --- managedFields: server-side apply's records
    pytest.param({"name": "a", "managedFields": "abc"}, True,  # ours: type errors, to managed-fields-types
                 ['metadata.managedFields: Invalid value: "abc": '
                  "must be a list of managed fields entries"], id="managed-fields-string"),
    pytest.param({"name": "a", "managedFields": [{"manager": 5, "operation": "Apply",
                                                  "fieldsV1": []}]}, True,
                 ["metadata.managedFields[0].manager: Invalid value: 5: "
                  "must be a string (put it in quotes)",
                  "metadata.managedFields[0].fieldsV1: Invalid value: []: must be an object"],
                 id="managed-fields-types"),
    pytest.param({"name": "a", "managedFields": [{"manager": "m" * 129, "operation": "Patch",
                                                  "fieldsType": "FieldsV2"}]}, True,
                 ['metadata.managedFields[0].operation: Invalid value: "Patch": '
                  "must be `Apply` or `Update`",
                  'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": '
                  "must be `FieldsV1`",
                  "metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"],
                 id="managed-fields-rules"),
    pytest.param({"name": "a", "managedFields": [
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
         "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {}}}]}, True, [], id="managed-fields-ok"),
])
def test_validate_object_meta(meta, namespaced, expected):
    assert [str(e) for e in validate_object_meta(meta, namespaced=namespaced)] == expected


def test_go_values_of_any_type_never_raise():
    # A huge int where a label value belongs once raised ValueError (Python
    # will not print it) while the selector was being shown.
    assert str(go_string_slice([10**5000, "a"])) == '[]string{"<an integer of 5001 digits>", "a"}'


def test_labels_and_annotations_helpers_take_a_path():
    assert [str(e) for e in validate_labels({"a": "-"}, "spec.nodeSelector")] == [
        f'spec.nodeSelector: Invalid value: "-": {LABEL_VALUE_MSG}']
    # Annotation keys may use capitals (they are checked in lower case).
    assert validate_annotations({"Example.COM/Key": "v"}) == []


# ------------------------------------------------------- hostile input

JUNK = [None, "x", "", 5, -1, 0, True, 1.5, float("nan"), float("inf"), 10**30, 10**5000,
        [], [None], [[[]]], {}, {"a": {"b": []}}, "w\u0435b", "\ud800", "\x00", "a" * 10000]


def _all_paths(value, path=()):
    """Every path into value (keys and list indexes)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _all_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _all_paths(v, path + (i,))


@pytest.mark.parametrize("junk", [pytest.param(j, id=f"junk{i}") for i, j in enumerate(JUNK)])
def test_junk_at_every_level_gives_errors_not_exceptions(junk):
    pod = valid_pod()
    rejected = 0
    for path in _all_paths(pod):
        if not path:
            continue
        broken = copy.deepcopy(pod)
        target = broken
        for k in path[:-1]:
            target = target[k]
        target[path[-1]] = junk
        errors = validate_pod(broken)
        assert all(isinstance(e, FieldError) for e in errors)
        for error in errors:
            str(error)  # printing never fails either
        rejected += bool(errors)
        if path == ("spec",):
            assert errors, f"a spec of {junk!r} was accepted"
    assert rejected, f"junk {junk!r} was accepted everywhere: all() over no errors proves nothing"


@pytest.mark.parametrize("obj", [
    pytest.param(None, id="null"), pytest.param([1, 2], id="list"),
    pytest.param("Pod", id="string"), pytest.param(10**30, id="huge-int"),
    pytest.param({"spec": {"containers": [[[[[]]]]]}}, id="nested-lists"),
    pytest.param({1: 2, None: "x", "spec": {"containers": [{1: 2}]}}, id="non-string-keys"),
])
def test_non_pod_values_give_errors(obj):
    errors = validate_pod(obj)
    assert errors and all(isinstance(e, FieldError) for e in errors)


def test_deeply_nested_unknown_field_is_harmless():
    deep = []
    for _ in range(10_000):
        deep = [deep]
    assert validate_pod(with_changes(valid_pod(), {"spec.junk": deep})) == []
