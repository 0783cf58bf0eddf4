"""validate_object for every served kind: Kubernetes' paths and wording, updates, no crashes.

As in test_validation.py (whose docstring says how each was checked), every
expected message is in one group that says whose words it is:
KUBERNETES_CASES are Kubernetes 1.32's, byte for byte, with the function they
come from; OUR_TYPE_ERRORS are our own wording for wrongly typed fields, which
Kubernetes refuses while decoding JSON, before any validation; OUR_OWN_CASES
are where we differ on purpose, each saying what Kubernetes prints instead.
The update and status tables mark their few messages of our own in place.
"""

import copy
import random

import pytest

from common.model.defaults import apply_defaults
from common.model.field_errors import FieldError
from common.model.validate import KINDS, validate_object, validate_status_update
from test_validation import DELETE, with_changes  # one copy of the path-editing helper

PORT_RANGE = "must be between 1 and 65535, inclusive"
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
IMMUTABLE = "field is immutable"
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*"
    r"[a-z0-9])?)*')")
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}


def valid(kind):
    """A valid object of each kind, using most of what its rules check."""
    objects = {
        "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}],
                         "activeDeadlineSeconds": 100,
                         "tolerations": [{"key": "a", "operator": "Exists"}]}},
        "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"},
                      "spec": {"finalizers": ["kubernetes", "example.com/cleanup"]}},
        "Node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1.example"},
                 "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"],
                          "taints": [{"key": "dedicated", "value": "gpu",
                                      "effect": "NoSchedule"}]},
                 "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        "Service": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                    "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                             "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                                       {"name": "dns", "port": 53, "protocol": "UDP",
                                        "targetPort": 5353}]}},
        "Endpoints": {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                      "subsets": [{"addresses": [{"ip": "172.17.0.2", "nodeName": "node-1"}],
                                   "notReadyAddresses": [{"ip": "172.17.0.3"}],
                                   "ports": [{"port": 80, "protocol": "TCP"}]}]},
        "Event": {"apiVersion": "v1", "kind": "Event",
                  "metadata": {"name": "web.17a8", "namespace": "shop"},
                  "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web"},
                  "reason": "Scheduled", "message": "assigned", "type": "Normal", "count": 1},
        "ConfigMap": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                      "data": {"app.conf": "x=1"}, "binaryData": {"logo.png": "iVBORw0K"}},
        "ServiceAccount": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"},
                           "automountServiceAccountToken": False, "imagePullSecrets": [{"name": "registry"}]},
        "Secret": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"},
                   "type": "kubernetes.io/tls",
                   "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}},
        "ReplicaSet": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                "template": copy.deepcopy(TEMPLATE)}},
        "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"replicas": 3,
                                "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [
                                    {"key": "app", "operator": "In", "values": ["web"]}]},
                                "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                                    "maxUnavailable": "25%", "maxSurge": 1}},
                                "template": copy.deepcopy(TEMPLATE)}},
        "DaemonSet": {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "proxy"},
                      "spec": {"selector": {"matchLabels": {"app": "web"}},
                               "updateStrategy": {"type": "RollingUpdate",
                                                  "rollingUpdate": {"maxUnavailable": 1}},
                               "template": copy.deepcopy(TEMPLATE)}},
        "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
                        "spec": {"serviceName": "nginx", "replicas": 3, "podManagementPolicy": "Parallel",
                                 "selector": {"matchLabels": {"app": "web"}},
                                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
                                 "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete",
                                                                          "whenScaled": "Retain"},
                                 "template": copy.deepcopy(TEMPLATE),
                                 "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                                     "accessModes": ["ReadWriteOnce"],
                                     "resources": {"requests": {"storage": "1Gi"}}}}]}},
        "ControllerRevision": {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                               "metadata": {"name": "web-6b9c7d5f8"}, "revision": 2,
                               "data": {"spec": {"template": {"$patch": "replace"}}}},
        "Job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
                "spec": {"completions": 3, "parallelism": 2, "backoffLimit": 4,
                         "template": {"spec": {"restartPolicy": "Never", "containers": [
                             {"name": "pi", "image": "perl:5.34"}]}}}},
        "ReplicationController": {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                                  "spec": {"replicas": 3, "selector": {"app": "web"},
                                           "template": copy.deepcopy(TEMPLATE)}},
        "CronJob": {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
                    "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid",
                             "startingDeadlineSeconds": 60, "successfulJobsHistoryLimit": 3,
                             "failedJobsHistoryLimit": 1, "timeZone": "Europe/Paris",
                             "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                                                                            "containers": [{"name": "hello",
                                                                                            "image": "busybox"}]}}}}}},
        "EndpointSlice": {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                          "metadata": {"name": "web-x7k2p", "labels": {"kubernetes.io/service-name": "web"}},
                          "addressType": "IPv4",
                          "endpoints": [{"addresses": ["10.244.1.5"], "nodeName": "node-1", "hostname": "web-0",
                                         "conditions": {"ready": True, "serving": True, "terminating": False},
                                         "targetRef": {"kind": "Pod", "name": "web-0"}}],
                          "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}]},
        "Lease": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
                  "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
                           "acquireTime": "2026-11-22T08:30:00.000000Z",
                           "renewTime": "2026-11-22T08:36:33.123456Z", "leaseTransitions": 0}},
        "Ingress": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
                    "spec": {"ingressClassName": "groundup",
                             "defaultBackend": {"service": {"name": "fallback", "port": {"name": "http"}}},
                             "tls": [{"hosts": ["shop.example.com", "*.example.com"], "secretName": "shop-tls"}],
                             "rules": [{"host": "*.example.com", "http": {"paths": [
                                 {"path": "/api", "pathType": "Prefix",
                                  "backend": {"service": {"name": "api", "port": {"number": 8080}}}},
                                 {"path": "/", "pathType": "Exact",
                                  "backend": {"resource": {"apiGroup": "example.com", "kind": "Bucket",
                                                           "name": "static"}}}]}}]},
                    "status": {"loadBalancer": {"ingress": [{"ip": "192.168.56.11"}]}}},
        "IngressClass": {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                         "metadata": {"name": "groundup",
                                      "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                         "spec": {"controller": "groundup.dev/ingress-controller",
                                  "parameters": {"kind": "ConfigMap", "name": "ingress", "scope": "Namespace",
                                                 "namespace": "kube-system"}}},
        "PersistentVolume": {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk-1"},
                             "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                                      "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "local",
                                      "local": {"path": "/mnt/disk-1"},
                                      "claimRef": {"namespace": "default", "name": "data"},
                                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                          {"key": "kubernetes.io/hostname", "operator": "In",
                                           "values": ["node-1"]}]}]}}}},
        "PersistentVolumeClaim": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                  "metadata": {"name": "data", "namespace": "default"},
                                  "spec": {"accessModes": ["ReadWriteOncePod"], "storageClassName": "local",
                                           "selector": {"matchLabels": {"tier": "db"}},
                                           "resources": {"requests": {"storage": "5Gi"}}}},
        "StorageClass": {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                         "metadata": {"name": "local-path"}, "provisioner": "groundup.local/local-path",
                         "parameters": {"root": "/var/lib/groundup/volumes"}, "reclaimPolicy": "Retain",
                         "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": False,
                         "mountOptions": ["noatime"]},
        "Role": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                 "metadata": {"name": "pod-reader", "namespace": "team-a"},
                 "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
                           {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"],
                            "verbs": ["get", "patch"]}]},
        "ClusterRole": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "system:node-reader"},
                        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                                  {"nonResourceURLs": ["/healthz", "/metrics*"], "verbs": ["get"]}]},
        "RoleBinding": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                        "metadata": {"name": "read-pods", "namespace": "team-a"},
                        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                                     {"kind": "ServiceAccount", "name": "robot", "namespace": "team-a"}],
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}},
        "ClusterRoleBinding": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                               "metadata": {"name": "system:node-readers"},
                               "subjects": [{"kind": "Group", "name": "system:nodes",
                                             "apiGroup": "rbac.authorization.k8s.io"}],
                               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                           "name": "system:node-reader"}},
    }
    return objects[kind]


GROUPS = {kind: group for group, kind in KINDS}
ALL_KINDS = sorted(GROUPS)


def check(kind, obj, old=None):
    return [str(e) for e in validate_object(GROUPS[kind], kind, obj, old)]




@pytest.mark.parametrize("kind", ALL_KINDS)
def test_valid_example_passes(kind):
    assert check(kind, valid(kind)) == []


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_defaulted_valid_example_passes(kind):
    assert check(kind, apply_defaults(GROUPS[kind], kind, valid(kind))) == []


IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"

# (kind, id, changes to valid(kind), every error expected, as printed)
# Each line is what Kubernetes 1.32 prints for the same object, byte for byte.
# "K8S f" is f in kubernetes v1.32.3 pkg/apis/core/validation/validation.go,
# "AM" a file of k8s.io/apimachinery v0.32.0; apps and batch rules are from
# kubernetes pkg/apis/{apps,batch}/validation/validation.go, read in a stored
# 1.3x copy (the messages below have not changed in years; see test_validation.py).
KUBERNETES_CASES = [
    # --- metadata every kind shares (details in test_validation.py): AM pkg/api/validation/objectmeta.go
    ("ConfigMap", "finalizer-bad-name", {"metadata.finalizers": ["Not A Valid/Name!!"]},
     ['metadata.finalizers: Invalid value: "Not A Valid/Name!!": prefix part ' + SUBDOMAIN_MSG,
      'metadata.finalizers: Invalid value: "Not A Valid/Name!!": ' + NAME_PART_MSG]),
    ("Node", "owner-ref-without-uid", {"metadata.ownerReferences": [
        {"apiVersion": "v1", "kind": "Namespace", "name": "shop"}]},
     ['metadata.ownerReferences.uid: Invalid value: "": uid must not be empty']),
    # --- templates get the pod's rules: K8S ValidateTolerations
    ("Deployment", "template-toleration-bogus-operator",
     {"spec.template.spec.tolerations": [{"key": "a", "operator": "Bogus"}]},
     ['spec.template.spec.tolerations[0].operator: Unsupported value: "Bogus": '
      'supported values: "Equal", "Exists"']),
    # --- Service: K8S ValidateService, validateServicePort, ValidateNonSpecialIP,
    # ValidateServiceClusterIPsRelatedFields, validateServiceExternalTrafficPolicy
    ("Service", "external-ip-invalid", {"spec.externalIPs": ["999.1.1.1"]},
     [f'spec.externalIPs[0]: Invalid value: "999.1.1.1": {IP_MSG}']),
    ("Service", "external-ip-zone", {"spec.externalIPs": ["fe80::1%eth0"]},
     [f'spec.externalIPs[0]: Invalid value: "fe80::1%eth0": {IP_MSG}']),
    ("Service", "external-ips-special",
     {"spec.externalIPs": ["0.0.0.0", "127.0.0.1", "::ffff:127.0.0.2", "169.254.1.1",
                           "224.0.0.5", "ff02::1"]},
     ['spec.externalIPs[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
      'spec.externalIPs[1]: Invalid value: "127.0.0.1": may not be in the loopback range '
      "(127.0.0.0/8, ::1/128)",
      'spec.externalIPs[2]: Invalid value: "::ffff:127.0.0.2": may not be in the loopback '
      "range (127.0.0.0/8, ::1/128)",
      'spec.externalIPs[3]: Invalid value: "169.254.1.1": may not be in the link-local range '
      "(169.254.0.0/16, fe80::/10)",
      'spec.externalIPs[4]: Invalid value: "224.0.0.5": may not be in the link-local '
      "multicast range (224.0.0.0/24, ff02::/10)",
      'spec.externalIPs[5]: Invalid value: "ff02::1": may not be in the link-local '
      "multicast range (224.0.0.0/24, ff02::/10)"]),
    ("Service", "external-ips-ok", {"spec.externalIPs": ["203.0.113.7", "2001:db8::1"]}, []),
    ("Service", "external-name-ignored-on-cluster-ip", {"spec.externalName": "db.example.com"},
     []),
    # --- names: K8S ValidateNamespace (AM NameIsDNSLabel), ValidateServiceName (AM NameIsDNS1035Label)
    ("Namespace", "namespace-name-is-label", {"metadata.name": "a.b"},
     ['metadata.name: Invalid value: "a.b": must not contain dots']),
    ("Service", "service-name-is-dns1035", {"metadata.name": "1web"},
     [f'metadata.name: Invalid value: "1web": {DNS1035_MSG}']),
    # Kubernetes' words, though its API server clears the namespace of a
    # cluster-scoped object before validating, so they are rarely seen there.
    ("Node", "cluster-scoped", {"metadata.namespace": "default"},
     ["metadata.namespace: Forbidden: not allowed on this type"]),
    ("ConfigMap", "subdomain-name-ok", {"metadata.name": "a.b"}, []),
    # --- Namespace: K8S ValidateNamespace, validateKubeFinalizerName
    ("Namespace", "bad-finalizer", {"spec.finalizers": ["mine"]},
     ['spec.finalizers: Invalid value: "mine": name is neither a standard finalizer name '
      'nor is it fully qualified']),
    # --- Node: K8S ValidateNode (AM IsValidCIDR), ValidateNodeResources (its path is
    # status.capacity.cpu: Child, not Key)
    ("Node", "bad-pod-cidr", {"spec.podCIDRs": ["10.0.0.0/33"]},
     ['spec.podCIDRs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, '
      '(e.g. 10.9.8.0/24 or 2001:db8::/64)']),
    ("Node", "negative-capacity", {"status.capacity.cpu": "-1"},
     ['status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0']),
    # --- Service
    ("Service", "no-ports", {"spec.ports": []}, ["spec.ports: Required value"]),
    ("Service", "headless-needs-no-ports", {"spec.ports": [], "spec.clusterIP": "None"}, []),
    ("Service", "port-out-of-range", {"spec.ports[0].port": 70000},
     [f"spec.ports[0].port: Invalid value: 70000: {PORT_RANGE}"]),
    ("Service", "unnamed-of-two", {"spec.ports[0].name": DELETE},
     ["spec.ports[0].name: Required value"]),
    ("Service", "duplicate-port-name", {"spec.ports[1].name": "http"},
     ['spec.ports[1].name: Duplicate value: "http"']),
    ("Service", "duplicate-port", {"spec.ports[1].port": 80, "spec.ports[1].protocol": "TCP"},
     ['spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", '
      'AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, '
      'StrVal:""}, NodePort:0}']),
    ("Service", "bad-protocol", {"spec.ports[0].protocol": "HTTP"},
     ['spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", '
      '"UDP"']),
    ("Service", "bad-target-port-name", {"spec.ports[0].targetPort": "HTTP"},
     ['spec.ports[0].targetPort: Invalid value: "HTTP": must contain only alpha-numeric '
      'characters (a-z, 0-9), and hyphens (-)',
      'spec.ports[0].targetPort: Invalid value: "HTTP": must contain at least one letter '
      '(a-z)']),
    ("Service", "bad-type", {"spec.type": "Internal"},
     ['spec.type: Unsupported value: "Internal": supported values: "ClusterIP", '
      '"ExternalName", "LoadBalancer", "NodePort"']),
    ("Service", "bad-cluster-ip", {"spec.clusterIP": "10.96.0.300"},
     ['spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, '
      '(e.g. 10.9.8.7 or 2001:db8::ffff)']),
    ("Service", "node-port-on-cluster-ip", {"spec.ports[0].nodePort": 30080},
     ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]),
    ("Service", "node-port-ok", {"spec.type": "NodePort", "spec.ports[0].nodePort": 30080}, []),
    ("Service", "bad-affinity", {"spec.sessionAffinity": "Sticky"},
     ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", '
      '"None"']),
    ("Service", "external-policy-on-cluster-ip", {"spec.externalTrafficPolicy": "Local"},
     ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for '
      'externally-accessible services']),
    ("Service", "bad-ip-family-policy", {"spec.ipFamilyPolicy": "Dual"},
     ['spec.ipFamilyPolicy: Unsupported value: "Dual": supported values: "PreferDualStack", '
      '"RequireDualStack", "SingleStack"']),
    ("Service", "external-name-missing",
     {"spec.type": "ExternalName", "spec.clusterIP": DELETE},
     ["spec.externalName: Required value"]),
    ("Service", "external-name-ok",
     {"spec.type": "ExternalName", "spec.clusterIP": DELETE, "spec.ports": DELETE,
      "spec.externalName": "db.example.com."}, []),
    ("Service", "external-name-with-cluster-ip",
     {"spec.type": "ExternalName", "spec.externalName": "db.example.com"},
     ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"]),
    ("Service", "bad-selector", {"spec.selector": {"app": "a b"}},
     ['spec.selector: Invalid value: "a b": a valid label must be an empty string or consist '
      "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
      "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
    # --- Endpoints: K8S validateEndpointSubsets, validateEndpointAddress (an IP that
    # does not parse fails IsValidIP and then ValidateNonSpecialIP), validateEndpointPort
    ("Endpoints", "bad-ip", {"subsets[0].addresses[0].ip": "web"},
     ['subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address, '
      '(e.g. 10.9.8.7 or 2001:db8::ffff)',
      'subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address']),
    ("Endpoints", "loopback-ip", {"subsets[0].addresses[0].ip": "127.0.0.1"},
     ['subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback '
      'range (127.0.0.0/8, ::1/128)']),
    ("Endpoints", "port-zero", {"subsets[0].ports[0].port": 0},
     [f"subsets[0].ports[0].port: Invalid value: 0: {PORT_RANGE}"]),
    ("Endpoints", "unnamed-of-two", {"subsets[0].ports": [{"port": 80}, {"port": 81}]},
     ["subsets[0].ports[0].name: Required value", "subsets[0].ports[1].name: Required value"]),
    # --- Event: pkg/apis/core/validation/events.go legacyValidateEvent
    ("Event", "namespace-mismatch", {"involvedObject.namespace": "other"},
     ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']),
    ("Event", "new-event-needs-reporter", {"eventTime": "2024-01-01T00:00:00.000000Z"},
     ["reportingComponent: Required value",
      'reportingComponent: Invalid value: "": name part must be non-empty',
      'reportingComponent: Invalid value: "": ' + NAME_PART_MSG,
      "reportingInstance: Required value", "action: Required value"]),
    # --- ConfigMap, Secret: K8S ValidateConfigMap (a key in both bags is reported
    # once, on the data side), ValidateSecret
    ("ConfigMap", "bad-key", {"data": {"a b": "x"}},
     ["data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric "
      "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
      "used for validation is '[-._a-zA-Z0-9]+')"]),
    ("ConfigMap", "key-in-both", {"binaryData": {"app.conf": "eA=="}},
     ['data[app.conf]: Invalid value: "app.conf": duplicate of key present in binaryData']),
    ("ServiceAccount", "automount-not-bool", {"automountServiceAccountToken": "no"},
     ['automountServiceAccountToken: Invalid value: "no": must be a boolean (true or false)']),
    ("Secret", "tls-missing-key", {"data": {"tls.crt": "Y2VydA=="}},
     ["data[tls.key]: Required value"]),
    ("Secret", "basic-auth-empty", {"type": "kubernetes.io/basic-auth", "data": {}},
     ["data[username]: Required value", "data[password]: Required value"]),
    ("Secret", "sa-token-needs-annotation",
     {"type": "kubernetes.io/service-account-token", "data": {}},
     ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]),
    ("Secret", "string-data-ok", {"type": "Opaque", "data": DELETE,
                                  "stringData": {"password": "hunter2!"}}, []),
    # --- ReplicaSet / Deployment / DaemonSet: kubernetes v1.32 pkg/apis/apps/validation/
    # validation.go ValidateReplicaSetSpec, ValidatePodTemplateSpecForReplicaSet,
    # ValidateDeploymentSpec, ValidateDeploymentStrategy, ValidateRollingUpdateDeployment,
    # ValidatePositiveIntOrPercent, IsNotMoreThan100Percent, ValidateDaemonSetSpec,
    # ValidateRollingUpdateDaemonSet; AM pkg/apis/meta/v1/validation
    # ValidateLabelSelectorRequirement. A ReplicaSet's empty selector is "invalid
    # for deployment" there too.
    ("ReplicaSet", "no-selector", {"spec.selector": DELETE}, ["spec.selector: Required value"]),
    ("ReplicaSet", "selector-mismatch", {"spec.template.metadata.labels": {"app": "api"}},
     ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"api"}: '
      "`selector` does not match template `labels`"]),
    ("ReplicaSet", "template-without-labels", {"spec.template.metadata": DELETE},
     ["spec.template.metadata.labels: Invalid value: map[string]string(nil): "
      "`selector` does not match template `labels`"]),
    ("ReplicaSet", "negative-replicas", {"spec.replicas": -1},
     ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ("ReplicaSet", "empty-selector", {"spec.selector": {}},
     ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for "
      "deployment"]),
    ("ReplicaSet", "restart-never", {"spec.template.spec.restartPolicy": "Never"},
     ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
      '"Always"']),
    ("ReplicaSet", "no-containers", {"spec.template.spec.containers": []},
     ["spec.template.spec.containers: Required value"]),
    ("ReplicaSet", "container-without-image", {"spec.template.spec.containers[0].image": DELETE},
     ["spec.template.spec.containers[0].image: Required value"]),
    ("Deployment", "bad-operator",
     {"spec.selector.matchExpressions[0].operator": "Is"},
     ['spec.selector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector '
      'operator']),
    ("Deployment", "in-without-values",
     {"spec.selector.matchExpressions[0].values": []},
     ["spec.selector.matchExpressions[0].values: Required value: must be specified when "
      "`operator` is 'In' or 'NotIn'"]),
    ("Deployment", "recreate-with-rolling",
     {"spec.strategy.type": "Recreate"},
     ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
      "'Recreate'"]),
    ("Deployment", "both-zero",
     {"spec.strategy.rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}},
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, '
      'IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0']),
    ("Deployment", "over-100-percent", {"spec.strategy.rollingUpdate.maxUnavailable": "110%"},
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, '
      'IntVal:0, StrVal:"110%"}: must not be greater than 100%']),
    ("Deployment", "bad-percent", {"spec.strategy.rollingUpdate.maxSurge": "5"},
     ['spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, '
      "IntVal:0, StrVal:\"5\"}: a valid percent string must be a numeric string followed by "
      "an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]),
    ("Deployment", "deadline-not-above-min-ready",
     {"spec.minReadySeconds": 30, "spec.progressDeadlineSeconds": 30},
     ["spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds"]),
    ("DaemonSet", "surge-and-unavailable",
     {"spec.updateStrategy.rollingUpdate.maxSurge": 1},
     ['spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, '
      'IntVal:1, StrVal:""}: may not be set when maxUnavailable is non-zero']),
    ("DaemonSet", "deadline-forbidden", {"spec.template.spec.activeDeadlineSeconds": 10},
     ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
      "DaemonSet is not Supported"]),
    # `matchLabels: {}` decodes to an empty Go map, which %#v prints as map[string]string{}.
    ("DaemonSet", "empty-selector", {"spec.selector": {"matchLabels": {}}},
     ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for "
      "daemonset"]),
    # --- Job: pkg/apis/batch/validation/validation.go validateJobSpec, ValidateJobSpec
    # (unset and Always get one message; completion modes in its own order)
    ("Job", "restart-always", {"spec.template.spec.restartPolicy": "Always"},
     ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
      '"Never"']),
    ("Job", "restart-unset", {"spec.template.spec.restartPolicy": DELETE},
     ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
      '"Never"']),
    ("Job", "restart-unsupported", {"spec.template.spec.restartPolicy": "Sometimes"},
     ['spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
      '"Always", "OnFailure", "Never"',
      'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
      '"OnFailure", "Never"']),
    ("Job", "negative-backoff", {"spec.backoffLimit": -1},
     ["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"]),
    ("Job", "bad-completion-mode", {"spec.completionMode": "Sometimes"},
     ['spec.completionMode: Unsupported value: "Sometimes": supported values: '
      '"NonIndexed", "Indexed"']),
    ("Job", "indexed-needs-completions", {"spec.completionMode": "Indexed",
                                          "spec.completions": DELETE},
     ["spec.completions: Required value: when completion mode is Indexed"]),
    ("Job", "manual-selector-needs-selector", {"spec.manualSelector": True},
     ["spec.selector: Required value"]),
]

# Our own wording: wrongly typed fields, which Kubernetes' JSON decoder refuses
# before any validation (400 Bad Request, "json: cannot unmarshal ..."; see
# test_validation.py's docstring). Ours say what to write instead.
OUR_TYPE_ERRORS = [
    ("Deployment", "finalizers-object", {"metadata.finalizers": {"a": 1}},
     ['metadata.finalizers: Invalid value: {"a": 1}: must be a list of strings']),
    ("Secret", "managed-fields-string", {"metadata.managedFields": "abc"},
     ['metadata.managedFields: Invalid value: "abc": must be a list of managed fields entries']),
    # Integers are integers: a whole float is refused, not stored as 3.0 (Go's
    # decoder refuses 3.0 for an int32 too: "cannot unmarshal number 3.0 into Go
    # struct field DeploymentSpec.spec.replicas of type int32").
    ("Deployment", "replicas-whole-float", {"spec.replicas": 3.0},
     ["spec.replicas: Invalid value: 3.0: must be an integer"]),
    ("ReplicaSet", "replicas-bool", {"spec.replicas": True},
     ["spec.replicas: Invalid value: true: must be an integer"]),
    ("Service", "port-whole-float", {"spec.ports[0].port": 80.0},
     ["spec.ports[0].port: Invalid value: 80.0: must be an integer"]),
    ("Service", "target-port-whole-float", {"spec.ports[1].targetPort": 5353.0},
     ["spec.ports[1].targetPort: Invalid value: 5353.0: must be a port number or a port name"]),
    ("Job", "completions-whole-float", {"spec.completions": 3.0},
     ["spec.completions: Invalid value: 3.0: must be an integer"]),
    ("Deployment", "max-surge-whole-float", {"spec.strategy.rollingUpdate.maxSurge": 1.0},
     ["spec.strategy.rollingUpdate.maxSurge: Invalid value: 1.0: "
      "must be an integer or percentage (e.g '5%')"]),
    ("Deployment", "replicas-too-long-to-print", {"spec.replicas": 10**5000},
     ["spec.replicas: Invalid value: <an integer of 5001 digits>: "
      "must be less than or equal to 2147483647"]),
    ("Deployment", "huge-label-value-in-selector",
     {"spec.selector.matchLabels": {"app": 10**5000}},
     ["spec.selector.matchLabels[app]: Invalid value: <an integer of 5001 digits>: "
      "must be a string (put it in quotes)"]),
    ("Job", "template-toleration-wrong-types",
     {"spec.template.spec.tolerations": [1, {"key": {"a": 1}}]},
     ["spec.template.spec.tolerations[0]: Invalid value: 1: must be an object",
      'spec.template.spec.tolerations[1].key: Invalid value: {"a": 1}: must be a string']),
    ("Service", "external-ips-string", {"spec.externalIPs": "x"},
     ['spec.externalIPs: Invalid value: "x": must be a list of strings']),
    ("Service", "external-ip-number", {"spec.externalIPs": ["203.0.113.7", 5]},
     ["spec.externalIPs[1]: Invalid value: 5: must be a string (put it in quotes)"]),
    ("Service", "external-name-number-on-cluster-ip", {"spec.externalName": 5},
     ["spec.externalName: Invalid value: 5: must be a string (put it in quotes)"]),
]

# Where we differ from Kubernetes on purpose; each says what Kubernetes prints.
OUR_OWN_CASES = [
    # Kubernetes takes apiVersion from the URL; a body that says otherwise gets
    # 400 `the API version in the data (v1) does not match the expected API version (apps/v1)`.
    ("Deployment", "wrong-apiVersion", {"apiVersion": "v1"},
     ['apiVersion: Unsupported value: "v1": supported values: "apps/v1"']),
    # Kubernetes' details, but it reports taints at metadata.taints[i] (ValidateNode
    # hands validateNodeTaints the metadata path); we report them where they are.
    ("Node", "taint-no-effect", {"spec.taints[0].effect": DELETE},
     ["spec.taints[0].effect: Required value"]),
    ("Node", "taint-bad-effect", {"spec.taints[0].effect": "Never"},
     ['spec.taints[0].effect: Unsupported value: "Never": supported values: "NoSchedule", '
      '"PreferNoSchedule", "NoExecute"']),
    # Besides, Kubernetes prints a taint's nil TimeAdded as (*v1.Time)(nil), as here.
    ("Node", "duplicate-taint", {"spec.taints": [{"key": "k", "effect": "NoSchedule"}] * 2},
     ['spec.taints[1]: Duplicate value: core.Taint{Key:"k", Value:"", Effect:"NoSchedule", '
      'TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair']),
    # Kubernetes prints an error about the whole object with an empty path
    # before the colon (": Too long: ..."); we leave the colon out.
    ("ConfigMap", "too-big", {"data": {"big": "x" * (1024 * 1024 + 1)}},
     ["Too long: may not be more than 1048576 bytes"]),
    # A value that is not base64 is a decode error in Kubernetes (400: "illegal
    # base64 data at input byte 6"); the redaction is Kubernetes' own habit.
    ("Secret", "not-base64", {"type": "Opaque", "data": {"password": "hunter2!"}},
     ['data[password]: Invalid value: "<secret contents redacted>": must be base64-encoded '
      "(e.g. the output of `base64 -w0`)"]),
    # Kubernetes reports an unsupported strategy at spec.strategy (and
    # spec.updateStrategy), showing the whole Go struct as the value:
    # `Unsupported value: apps.DeploymentStrategy{Type:"BlueGreen", RollingUpdate:
    # (*apps.RollingUpdateDeployment)(nil)}`; we point at the type that is wrong.
    # The supported values are Kubernetes', in its order.
    ("Deployment", "bad-strategy", {"spec.strategy": {"type": "BlueGreen"}},
     ['spec.strategy.type: Unsupported value: "BlueGreen": supported values: "Recreate", '
      '"RollingUpdate"']),
    ("DaemonSet", "bad-update-strategy", {"spec.updateStrategy.type": "Always"},
     ['spec.updateStrategy.type: Unsupported value: "Always": supported values: '
      '"RollingUpdate", "OnDelete"']),
    # Kubernetes first adds its generated labels (controller-uid, job-name) to the
    # template and the selector, and then also says "`selector` not auto-generated".
    ("Job", "selector-must-match",
     {"spec.selector": {"matchLabels": {"job": "pi"}}},
     ["spec.template.metadata.labels: Invalid value: map[string]string(nil): "
      "`selector` does not match template `labels`"]),
]


def _cases(table):
    return [pytest.param(k, c, e, id=f"{k}-{i}") for k, i, c, e in table]


@pytest.mark.parametrize("kind, changes, expected", _cases(KUBERNETES_CASES))
def test_kubernetes_wording(kind, changes, expected):
    assert check(kind, with_changes(valid(kind), changes)) == expected


@pytest.mark.parametrize("kind, changes, expected", _cases(OUR_TYPE_ERRORS))
def test_our_own_wording_for_type_errors(kind, changes, expected):
    assert check(kind, with_changes(valid(kind), changes)) == expected


@pytest.mark.parametrize("kind, changes, expected", _cases(OUR_OWN_CASES))
def test_where_we_differ_from_kubernetes(kind, changes, expected):
    assert check(kind, with_changes(valid(kind), changes)) == expected


# ----------------------------------------------------------------- updates

# AM pkg/api/validation/objectmeta.go ValidateObjectMetaAccessorUpdate, and the
# kinds' update rules: K8S ValidatePodUpdate, ValidateServiceUpdate,
# ValidateNodeUpdate, ValidateSecretUpdate; pkg/registry/apps/{deployment,
# daemonset}/strategy.go ValidateUpdate (the selector); batch ValidateJobSpecUpdate.
UPDATES = [
    ("ConfigMap", "rename", {"metadata.name": "other"},
     ['metadata.name: Invalid value: "other": field is immutable']),
    ("ConfigMap", "move-namespace", {"metadata.namespace": "b"},
     ['metadata.namespace: Invalid value: "b": field is immutable']),
    ("ConfigMap", "new-uid", {"metadata.uid": "u2"},
     ['metadata.uid: Invalid value: "u2": field is immutable']),
    ("ConfigMap", "uid-left-out-is-kept", {"metadata.uid": DELETE}, []),
    # The value is ours: Kubernetes prints a metav1.Time through its String(),
    # `Invalid value: 2030-01-01 00:00:00 +0000 UTC: field is immutable`.
    ("ConfigMap", "new-creation-time", {"metadata.creationTimestamp": "2030-01-01T00:00:00Z"},
     ['metadata.creationTimestamp: Invalid value: "2030-01-01T00:00:00Z": field is immutable']),
    ("ConfigMap", "labels-may-change", {"metadata.labels": {"tier": "a"}}, []),
    ("Pod", "image-may-change", {"spec.containers[0].image": "nginx:1.26"}, []),
    ("Pod", "add-toleration", {"spec.tolerations": [{"key": "a", "operator": "Exists"},
                                                    {"key": "b", "operator": "Exists"}]}, []),
    ("Pod", "lower-deadline", {"spec.activeDeadlineSeconds": 50}, []),
    ("Pod", "raise-deadline", {"spec.activeDeadlineSeconds": 200},
     ["spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to "
      "previous value"]),
    # The first line is Kubernetes'; the list of changes after it is ours
    # (Kubernetes prints a go-cmp diff of the two pod specs).
    ("Pod", "change-restart-policy", {"spec.restartPolicy": "Never"},
     ["spec: Forbidden: pod updates may not change fields other than "
      "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
      "`spec.tolerations` (only additions to existing tolerations),"
      "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
      'negative)\n  spec.restartPolicy: null -> "Never"']),
    # K8S validateOnlyAddedTolerations
    ("Pod", "remove-toleration", {"spec.tolerations": []},
     ["spec.tolerations: Forbidden: existing toleration can not be modified except its "
      "tolerationSeconds"]),
    ("Service", "cluster-ip-moves", {"spec.clusterIP": "10.96.0.11"},
     ['spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not change once set']),
    ("Service", "cluster-ip-left-out", {"spec.clusterIP": DELETE}, []),
    ("Service", "ports-may-change", {"spec.ports[0].port": 8080}, []),
    ("Node", "pod-cidr-moves", {"spec.podCIDR": "10.244.2.0/24",
                                "spec.podCIDRs": ["10.244.2.0/24"]},
     ['spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid']),
    ("Secret", "type-changes", {"type": "Opaque"},
     ['type: Invalid value: "Opaque": field is immutable']),
    ("Deployment", "selector-changes", {"spec.selector": {"matchLabels": {"app": "web"}}},
     ['spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":'
      '"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable']),
    ("Deployment", "template-may-change", {"spec.template.spec.containers[0].image": "x:2"}, []),
    ("ReplicaSet", "replicas-may-change", {"spec.replicas": 0}, []),
    ("DaemonSet", "selector-changes", {"spec.selector.matchLabels": {"app": "web", "x": "y"},
                                       "spec.template.metadata.labels": {"app": "web", "x": "y"}},
     ['spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":'
      '"web", "x":"y"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
      "field is immutable"]),
    # Given by its start: Kubernetes prints the whole core.PodTemplateSpec (%#v)
    # as the value, we print short JSON.
    ("Job", "template-changes", {"spec.template.spec.containers[0].image": "perl:5.36"},
     ["spec.template: Invalid value: "]),
    ("Job", "parallelism-may-change", {"spec.parallelism": 5}, []),
    ("Pod", "add-bad-toleration", {"spec.tolerations": [{"key": "a", "operator": "Exists"},
                                                        {"key": "b", "operator": "Bogus"}]},
     ['spec.tolerations[1].operator: Unsupported value: "Bogus": supported values: '
      '"Equal", "Exists"']),
    ("ConfigMap", "finalizer-added", {"metadata.finalizers": ["example.com/y"]}, []),
    # Ours: a type error (see OUR_TYPE_ERRORS).
    ("ReplicaSet", "replicas-whole-float", {"spec.replicas": 5.0},
     ["spec.replicas: Invalid value: 5.0: must be an integer"]),
]

# Once deletion has begun (deletionTimestamp is set), finalizers may only go
# (AM objectmeta.go ValidateNoNewFinalizers: the new ones sorted, as %#v prints them).
DELETING = {"metadata.deletionTimestamp": "2030-01-01T00:00:00Z",
            "metadata.finalizers": ["example.com/x"]}
DELETING_UPDATES = [
    ("remove-finalizer", {"metadata.finalizers": []}, []),
    ("keep-finalizer", {}, []),
    ("add-finalizers", {"metadata.finalizers": ["example.com/x", "example.com/z",
                                                "example.com/y"]},
     ['metadata.finalizers: Forbidden: no new finalizers can be added if the object is being '
      'deleted, found new finalizers []string{"example.com/y", "example.com/z"}']),
    ("replace-finalizer", {"metadata.finalizers": ["example.com/y"]},
     ['metadata.finalizers: Forbidden: no new finalizers can be added if the object is being '
      'deleted, found new finalizers []string{"example.com/y"}']),
]


@pytest.mark.parametrize("changes, expected",
                         [pytest.param(c, e, id=i) for i, c, e in DELETING_UPDATES])
def test_no_new_finalizers_while_deleting(changes, expected):
    old = with_changes(_with_identity(valid("ConfigMap")), DELETING)
    assert check("ConfigMap", with_changes(old, changes), old) == expected


def _with_identity(obj):
    obj = copy.deepcopy(obj)
    obj["metadata"].update(namespace="a", uid="u1", creationTimestamp="2024-01-01T00:00:00Z")
    if not KINDS[(GROUPS[obj["kind"]], obj["kind"])].namespaced:                     # cluster-scoped
        del obj["metadata"]["namespace"]
    return obj


@pytest.mark.parametrize("kind, changes, expected",
                         [pytest.param(k, c, e, id=f"{k}-{i}") for k, i, c, e in UPDATES])
def test_update(kind, changes, expected):
    old = _with_identity(valid(kind))
    errors = check(kind, with_changes(old, changes), old)
    # A message may be given by its start (the Job's template is printed whole).
    assert len(errors) == len(expected)
    for error, want in zip(errors, expected):
        assert error == want or (want.endswith(" ") and error.startswith(want))


def test_immutable_config_map_and_secret():
    # K8S ValidateConfigMapUpdate, ValidateSecretUpdate
    old = dict(valid("ConfigMap"), immutable=True)
    new = dict(old, data={"app.conf": "x=2"}, immutable=False)
    assert check("ConfigMap", new, old) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set"]
    secret = dict(valid("Secret"), immutable=True)
    assert check("Secret", secret, secret) == []


def test_namespaced_is_the_callers_choice():
    obj = with_changes(valid("ConfigMap"), {"metadata.namespace": "x"})
    assert [str(e) for e in validate_object("", "ConfigMap", obj, namespaced=False)] == [
        "metadata.namespace: Forbidden: not allowed on this type"]


def test_unknown_kind_gets_type_meta_and_metadata_checks():
    obj = {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "Bad_Name"}}
    errors = [str(e) for e in validate_object("", "Widget", obj)]
    assert len(errors) == 1 and errors[0].startswith('metadata.name: Invalid value: "Bad_Name"')


# ------------------------------------------------------------------ status

# K8S ValidatePodStatusUpdate, ValidateNamespaceStatusUpdate; apps
# ValidateDeploymentStatus; AM ValidateObjectMetaAccessorUpdate.
STATUS = [
    # Ours: Kubernetes 1.32 does not check status.phase at all.
    ("Pod", {"status": {"phase": "Done"}},
     ['status.phase: Unsupported value: "Done": supported values: "Failed", "Pending", '
      '"Running", "Succeeded", "Unknown"']),
    ("Pod", {"status": {"phase": "Running", "podIP": "172.17.0.2",
                        "podIPs": [{"ip": "172.17.0.2"}]}}, []),
    # K8S validatePodIPs: a lone podIP becomes podIPs[0] (pkg/apis/core/v1/conversion.go).
    ("Pod", {"status": {"podIP": "x"}},
     ['status.podIPs[0]: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or '
      '2001:db8::ffff)']),
    ("Namespace", {"status": {"phase": "Terminating"}},
     ['status.Phase: Invalid value: "Terminating": may only be \'Active\' if '
      '`deletionTimestamp` is empty']),
    ("Deployment", {"status": {"replicas": -1}},
     ["status.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ("Job", {"status": {"active": 1, "succeeded": 2}}, []),
    ("ConfigMap", {"metadata": {"name": "renamed"}},
     ['metadata.name: Invalid value: "renamed": field is immutable']),
]


@pytest.mark.parametrize("kind, changes, expected",
                         [pytest.param(k, c, e, id=f"{k}-{i}") for i, (k, c, e)
                          in enumerate(STATUS)])
def test_status_update(kind, changes, expected):
    old = valid(kind)
    new = dict(old, **changes)
    errors = validate_status_update(GROUPS[kind], kind, new, old)
    assert [str(e) for e in errors] == expected


# ------------------------------------------------------------ hostile input

JUNK = [None, "x", "", 5, -1, 0, True, 1.5, 3.0, float("nan"), 10**30, 10**5000, [], [None],
        {}, {"a": []}, "\ud800", "a" * 300, "None", "10.0.0.1", "25%"]
# Metadata every kind may carry, so the fuzz reaches its rules too.
FUZZ_METADATA = {"finalizers": ["example.com/x"],
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                      "name": "web", "uid": "u0", "controller": True}],
                 "managedFields": [{"manager": "kubectl", "operation": "Apply",
                                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]}


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _mutate(obj, rng):
    """Replace, delete or wrap one random node of obj (a deep copy)."""
    obj = copy.deepcopy(obj)
    path = rng.choice([p for p in _paths(obj) if p])
    target = obj
    for k in path[:-1]:
        target = target[k]
    action = rng.random()
    if action < 0.6:
        target[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    elif action < 0.8 and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = [target[path[-1]]]
    return obj


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_fuzz_never_raises(kind):
    rng = random.Random(kind)
    group = GROUPS[kind]
    base = _with_identity(valid(kind))
    base["metadata"].update(copy.deepcopy(FUZZ_METADATA))
    assert not [e for e in validate_object(group, kind, base) if e.path.startswith("metadata")]
    for _ in range(300):
        obj = base
        for _ in range(rng.randint(1, 3)):
            obj = _mutate(obj, rng)
        for errors in (validate_object(group, kind, obj),
                       validate_object(group, kind, obj, base),
                       validate_object(group, kind, base, obj),
                       validate_status_update(group, kind, obj, base),
                       validate_object(group, kind, apply_defaults(group, kind, obj))):
            assert all(isinstance(e, FieldError) for e in errors)
            for error in errors:
                assert "set_int_max_str_digits" not in str(error)
        defaulted = apply_defaults(group, kind, obj)
        assert apply_defaults(group, kind, defaulted) == defaulted


HUGE = 10**5000  # Python refuses to print an int this long: str() raises


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_huge_integers_anywhere_are_reported_not_raised(kind):
    """Every field of the valid object, replaced by a huge int (alone, in a
    list, in a map): errors come back, and none of them leaks Python's
    "use sys.set_int_max_str_digits()" advice."""
    group = GROUPS[kind]
    base = _with_identity(valid(kind))
    base["metadata"].update(copy.deepcopy(FUZZ_METADATA))
    for path in [p for p in _paths(base) if p]:
        for junk in (HUGE, -HUGE, [HUGE], {"a": HUGE}):
            obj = copy.deepcopy(base)
            target = obj
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = junk
            for errors in (validate_object(group, kind, obj),
                           validate_object(group, kind, obj, base),
                           validate_status_update(group, kind, obj, base),
                           validate_object(group, kind, apply_defaults(group, kind, obj))):
                for error in errors:
                    assert "set_int_max_str_digits" not in str(error), path


@pytest.mark.parametrize("obj", [None, [], "Pod", 5, {"spec": []}, {"metadata": "x"}])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_non_objects_give_errors(kind, obj):
    errors = validate_object(GROUPS[kind], kind, obj)
    assert errors and all(isinstance(e, FieldError) for e in errors)
