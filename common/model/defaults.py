"""Fill in the fields Kubernetes fills in when an object is created.

    pod = apply_pod_defaults(manifest.obj)   # a new dict; the input is untouched
    obj = apply_defaults("apps", "Deployment", body)   # any served kind

The API server defaults an object before it validates and stores it, so a
three-line manifest comes back from `kubectl get -o yaml` with restartPolicy,
dnsPolicy, imagePullPolicy and a dozen more fields set. These are the values
of Kubernetes' SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container
and friends (pkg/apis/core/v1/defaults.go) that our components rely on;
apply_defaults adds those of the other served kinds (Service, Secret,
Namespace, Node, Endpoints, and the workloads of pkg/apis/apps/v1 and
pkg/apis/batch/v1, whose pod templates get the Pod defaults).

Defaulting runs before validation, so the input may be wrong in any way. A
default is applied only where the shape allows it (spec is an object,
containers is a list of objects, ...); everything else is left exactly as
it was for validation to report. This function never raises.
"""

from __future__ import annotations

import base64

from common.model.quantity import QuantityError, parse_quantity
from common.model.validation import VOLUME_SOURCES


# [START apply-pod-defaults]
def apply_pod_defaults(obj) -> dict:
    """A deep copy of obj with Kubernetes' Pod defaults filled in."""
    pod = _copy(obj)
    if not isinstance(pod, dict):
        return pod
    metadata = _object_at(pod, "metadata", create=True)
    if metadata is not None and not metadata.get("namespace"):
        # Strictly the API server does this, from the request's namespace.
        metadata["namespace"] = "default"
    spec = _object_at(pod, "spec")
    if spec is not None:
        _default_pod_spec(spec)
    return pod
# [END apply-pod-defaults]


def _default_pod_spec(spec: dict, default_restart_policy: bool = True) -> None:
    if default_restart_policy:
        _set_default(spec, "restartPolicy", "Always")
    _set_default(spec, "terminationGracePeriodSeconds", 30)
    _set_default(spec, "dnsPolicy", "ClusterFirst")
    _set_default(spec, "schedulerName", "default-scheduler")
    _set_default(spec, "securityContext", {})
    # Service environment variables (DB_SERVICE_HOST, ...) are on by default.
    _set_default(spec, "enableServiceLinks", True)
    host_network = spec.get("hostNetwork") is True
    for field in ("initContainers", "containers"):
        for container in _objects_in(spec, field):
            _default_container(container, host_network)
    for volume in _objects_in(spec, "volumes"):
        _default_volume(volume)


def _default_container(container: dict, host_network: bool) -> None:
    if not container.get("imagePullPolicy") and isinstance(container.get("image"), str):
        container["imagePullPolicy"] = default_pull_policy(container["image"])
    _set_default(container, "terminationMessagePath", "/dev/termination-log")
    _set_default(container, "terminationMessagePolicy", "File")
    for port in _objects_in(container, "ports"):
        _set_default(port, "protocol", "TCP")
        # On the host's network the container listens on the host's port.
        container_port = port.get("containerPort")
        if host_network and not port.get("hostPort") and type(container_port) is int:
            port["hostPort"] = container_port
    for var in _objects_in(container, "env"):
        value_from = _object_at(var, "valueFrom")
        field_ref = _object_at(value_from, "fieldRef") if value_from is not None else None
        if field_ref is not None:
            _set_default(field_ref, "apiVersion", "v1")
    _default_requests_from_limits(container)
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _object_at(container, probe_name)
        if probe is not None:
            _default_probe(probe)


def default_pull_policy(image: str) -> str:
    """Always for an untagged or :latest image (it may change under the same
    name), IfNotPresent for a pinned tag or digest."""
    name, _, digest = image.partition("@")
    last_part = name.rsplit("/", 1)[-1]   # a registry port (host:5000/app) is no tag
    tag = last_part.partition(":")[2]
    if tag == "latest" or (not tag and not digest):
        return "Always"
    return "IfNotPresent"


def _is_quantity(value) -> bool:
    try:
        parse_quantity(value)
        return True
    except (QuantityError, TypeError, ValueError):
        return False


def _default_requests_from_limits(container: dict) -> None:
    """A resource with a limit but no request requests its limit."""
    resources = _object_at(container, "resources")
    if resources is None or not isinstance(resources.get("limits"), dict):
        return
    limits = resources["limits"]
    if not limits:
        return
    requests = _object_at(resources, "requests", create=True)
    if requests is None:
        return
    for name, amount in limits.items():
        # An unreadable limit is reported once, where it was written; copied
        # into requests it would be reported again on a line nobody wrote.
        if name not in requests and _is_quantity(amount):
            requests[name] = amount


def _default_probe(probe: dict) -> None:
    # Plain int32 fields in Kubernetes, so 0 means "not set" there.
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                         ("successThreshold", 1), ("failureThreshold", 3)):
        _set_default(probe, field, value, zero_is_unset=True)
    http_get = _object_at(probe, "httpGet")
    if http_get is not None:
        _set_default(http_get, "path", "/")
        _set_default(http_get, "scheme", "HTTP")


_VOLUME_SOURCES_WITH_MODE = ("configMap", "secret", "downwardAPI", "projected")


def _default_volume(volume: dict) -> None:
    if all(volume.get(source) is None for source in VOLUME_SOURCES):
        # Kubernetes: a volume that names no source is an emptyDir.
        volume["emptyDir"] = {}
    host_path = _object_at(volume, "hostPath")
    if host_path is not None:
        _set_default(host_path, "type", "")
    for source in _VOLUME_SOURCES_WITH_MODE:
        mode_holder = _object_at(volume, source)
        if mode_holder is not None:
            _set_default(mode_holder, "defaultMode", 0o644)


# ------------------------------------------------------------ every kind

# [START apply-defaults]
def apply_defaults(group: str, kind: str, obj) -> dict:
    """A deep copy of obj with the defaults Kubernetes fills in for its kind.

    Idempotent: defaulting a defaulted object changes nothing. Unknown kinds
    get only the null-label rule below. metadata.namespace is left to the
    caller (the API server takes it from the URL).
    """
    result = _copy(obj)
    if isinstance(result, dict):
        _null_label_values_to_empty(result)
        defaulter = _DEFAULTERS.get((group, kind))
        if defaulter is not None:
            defaulter(result)
    return result
# [END apply-defaults]


def _null_label_values_to_empty(obj: dict) -> None:
    """`labels: {tier: null}` is stored as `tier: ""`, in every kind.

    Kubernetes decodes labels and annotations into map[string]string, where
    a JSON null can only become "", so that is what it stores and what
    selectors then match. Doing the same here (rather than refusing null)
    keeps a manifest that works against Kubernetes working against us, and
    spares every reader of labels a None check. The pod template of a
    workload is metadata too.
    """
    spec = _object_at(obj, "spec")
    template = _object_at(spec, "template") if spec is not None else None
    for owner in (obj, template):
        metadata = _object_at(owner, "metadata") if owner is not None else None
        for field in ("labels", "annotations"):
            values = _object_at(metadata, field) if metadata is not None else None
            for k, v in (values or {}).items():
                if v is None:
                    values[k] = ""


def _default_pod(pod: dict) -> None:
    spec = _object_at(pod, "spec")
    if spec is not None:
        _default_pod_spec(spec)


def _default_template(spec: dict, default_restart_policy: bool = True) -> None:
    """The pod template inside a workload gets the Pod's own defaults."""
    template = _object_at(spec, "template")
    pod_spec = _object_at(template, "spec") if template is not None else None
    if pod_spec is not None:
        _default_pod_spec(pod_spec, default_restart_policy)


def _default_namespace(ns: dict) -> None:
    metadata = _object_at(ns, "metadata", create=True)
    name = metadata.get("name") if metadata is not None else None
    if isinstance(name, str) and name:
        labels = _object_at(metadata, "labels", create=True)
        if labels is not None:
            # Always the name, so `kubernetes.io/metadata.name=x` in a
            # namespaceSelector picks exactly namespace x.
            labels["kubernetes.io/metadata.name"] = name
    status = _object_at(ns, "status", create=True)
    if status is not None:
        _set_default(status, "phase", "Active")


def _default_node(node: dict) -> None:
    status = _object_at(node, "status")
    # A node that reports only capacity may use all of it.
    if status is not None and status.get("allocatable") is None \
            and isinstance(status.get("capacity"), dict):
        status["allocatable"] = _copy(status["capacity"])


def _default_service(svc: dict) -> None:
    spec = _object_at(svc, "spec")
    if spec is None:
        return
    _set_default(spec, "type", "ClusterIP")
    _set_default(spec, "sessionAffinity", "None")
    if spec.get("sessionAffinity") == "ClientIP":
        config = _object_at(spec, "sessionAffinityConfig", create=True)
        client_ip = _object_at(config, "clientIP", create=True) if config is not None else None
        if client_ip is not None:
            _set_default(client_ip, "timeoutSeconds", 10800)  # three hours
    svc_type = spec.get("type")
    if svc_type in ("NodePort", "LoadBalancer"):
        _set_default(spec, "externalTrafficPolicy", "Cluster")
    if svc_type in ("ClusterIP", "NodePort", "LoadBalancer"):
        _set_default(spec, "internalTrafficPolicy", "Cluster")
        _set_default(spec, "ipFamilyPolicy", "SingleStack")
    if svc_type == "LoadBalancer":
        _set_default(spec, "allocateLoadBalancerNodePorts", True)
    # clusterIPs is the list form of clusterIP (dual stack); keep them in step.
    if isinstance(spec.get("clusterIP"), str) and spec["clusterIP"] and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    for port in _objects_in(spec, "ports"):
        _set_default(port, "protocol", "TCP")
        # Without a targetPort, traffic goes to the same port on the pod.
        if port.get("targetPort") in (None, "", 0) and type(port.get("port")) is int:
            port["targetPort"] = port["port"]


def _default_endpoints(endpoints: dict) -> None:
    for subset in _objects_in(endpoints, "subsets"):
        for port in _objects_in(subset, "ports"):
            _set_default(port, "protocol", "TCP")


def _default_secret(secret: dict) -> None:
    _set_default(secret, "type", "Opaque")
    # stringData is a write-only convenience: the server merges it into data
    # (base64, as JSON carries bytes) and never stores it.
    string_data = secret.get("stringData")
    data = {} if secret.get("data") is None else secret["data"]
    if isinstance(string_data, dict) and isinstance(data, dict) \
            and all(isinstance(v, str) for v in string_data.values()):
        for k, v in string_data.items():
            data[k] = base64.b64encode(v.encode("utf-8", "surrogatepass")).decode("ascii")
        secret["data"] = data
        del secret["stringData"]


def _default_replica_set(rs: dict) -> None:
    spec = _object_at(rs, "spec")
    if spec is None:
        return
    _set_default(spec, "replicas", 1)
    _default_template(spec)


def _default_replication_controller(rc: dict) -> None:
    """An RC without a selector or labels takes its template's labels for
    both, as Kubernetes' core/v1 defaulting does (a ReplicaSet must say)."""
    spec = _object_at(rc, "spec")
    if spec is None:
        return
    template = _object_at(spec, "template")
    template_meta = _object_at(template, "metadata") if template is not None else None
    template_labels = template_meta.get("labels") if template_meta is not None else None
    if isinstance(template_labels, dict) and template_labels:
        if not spec.get("selector"):
            spec["selector"] = _copy(template_labels)
        metadata = _object_at(rc, "metadata", create=True)
        if metadata is not None and not metadata.get("labels"):
            metadata["labels"] = _copy(template_labels)
    _set_default(spec, "replicas", 1)
    _default_template(spec)


def _default_deployment(deployment: dict) -> None:
    spec = _object_at(deployment, "spec")
    if spec is None:
        return
    _set_default(spec, "replicas", 1)
    strategy = _object_at(spec, "strategy", create=True)
    if strategy is not None:
        _set_default(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _object_at(strategy, "rollingUpdate", create=True)
            if rolling is not None:
                _set_default(rolling, "maxUnavailable", "25%")
                _set_default(rolling, "maxSurge", "25%")
    _set_default(spec, "revisionHistoryLimit", 10)
    _set_default(spec, "progressDeadlineSeconds", 600)
    _default_template(spec)


def _default_daemon_set(ds: dict) -> None:
    spec = _object_at(ds, "spec")
    if spec is None:
        return
    strategy = _object_at(spec, "updateStrategy", create=True)
    if strategy is not None:
        _set_default(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _object_at(strategy, "rollingUpdate", create=True)
            if rolling is not None:
                # One node at a time, stopping the old pod before the new starts.
                _set_default(rolling, "maxUnavailable", 1)
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = 0
    _set_default(spec, "revisionHistoryLimit", 10)
    _default_template(spec)


def _default_stateful_set(sts: dict) -> None:
    """Kubernetes' apps/v1 defaults: pods one after another, rolling updates
    with no partition, claims kept whatever happens to the pods."""
    spec = _object_at(sts, "spec")
    if spec is None:
        return
    _set_default(spec, "podManagementPolicy", "OrderedReady")
    strategy = _object_at(spec, "updateStrategy", create=True)
    if strategy is not None:
        _set_default(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _object_at(strategy, "rollingUpdate", create=True)
            if rolling is not None:
                _set_default(rolling, "partition", 0)
    policy = _object_at(spec, "persistentVolumeClaimRetentionPolicy", create=True)
    if policy is not None:
        _set_default(policy, "whenDeleted", "Retain")
        _set_default(policy, "whenScaled", "Retain")
    _set_default(spec, "replicas", 1)
    _set_default(spec, "revisionHistoryLimit", 10)
    for claim in _objects_in(spec, "volumeClaimTemplates"):
        # Each template is defaulted as the claim it will become.
        claim_spec = _object_at(claim, "spec")
        if claim_spec is not None:
            _set_default(claim_spec, "volumeMode", "Filesystem")
        claim_status = _object_at(claim, "status", create=True)
        if claim_status is not None:
            _set_default(claim_status, "phase", "Pending")
    _default_template(spec)


def _default_job(job: dict) -> None:
    spec = _object_at(job, "spec")
    if spec is None:
        return
    # Neither set: one pod, run once. Only parallelism set: a work queue,
    # where completions stays unset (pods decide when the work is done).
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        # With a per-index limit, the job-wide one steps aside.
        spec["backoffLimit"] = 6 if spec.get("backoffLimitPerIndex") is None else 2**31 - 1
    _set_default(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    _set_default(spec, "podReplacementPolicy",
                 "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed")
    metadata = _object_at(job, "metadata", create=True)
    template = _object_at(spec, "template")
    template_meta = _object_at(template, "metadata") if template is not None else None
    if metadata is not None and template_meta is not None and not metadata.get("labels") \
            and isinstance(template_meta.get("labels"), dict) and template_meta["labels"]:
        metadata["labels"] = _copy(template_meta["labels"])
    # restartPolicy stays as the user wrote it: Always (the Pod default)
    # is the one value a Job may not use, so its absence is reported.
    _default_template(spec, default_restart_policy=False)


def _default_cron_job(cron_job: dict) -> None:
    spec = _object_at(cron_job, "spec")
    if spec is None:
        return
    _set_default(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    _set_default(spec, "successfulJobsHistoryLimit", 3)
    _set_default(spec, "failedJobsHistoryLimit", 1)
    # Kubernetes defaults the Job's fields when the Job is made, not in the
    # template; only the pod template inside gets the Pod's defaults now
    # (restartPolicy aside, as for a Job).
    job_template = _object_at(spec, "jobTemplate")
    job_spec = _object_at(job_template, "spec") if job_template is not None else None
    if job_spec is not None:
        _default_template(job_spec, default_restart_policy=False)


def _default_binding(binding: dict) -> None:
    """The role's and the users' and groups' API group, which every binding
    would otherwise repeat (a service account is in the core group, "")."""
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = "rbac.authorization.k8s.io"
    subjects = binding.get("subjects")
    for subject in subjects if isinstance(subjects, list) else ():     # validation reports a non-list
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"


# Storage (pkg/apis/core/v1 and pkg/apis/storage/v1 defaults.go). A new
# volume or claim is Pending until the binder looks at it; a volume the user
# made keeps its data when its claim goes (Retain), while a class, whose
# volumes were made for their claims, deletes them with it (Delete).
def _default_persistent_volume(pv: dict) -> None:
    spec = _object_at(pv, "spec")
    if spec is not None:
        _set_default(spec, "persistentVolumeReclaimPolicy", "Retain")
        _set_default(spec, "volumeMode", "Filesystem")
        host_path = _object_at(spec, "hostPath")
        if host_path is not None:
            _set_default(host_path, "type", "")
    status = _object_at(pv, "status", create=True)
    if status is not None:
        _set_default(status, "phase", "Pending")


def _default_persistent_volume_claim(pvc: dict) -> None:
    spec = _object_at(pvc, "spec")
    if spec is not None:
        _set_default(spec, "volumeMode", "Filesystem")
    status = _object_at(pvc, "status", create=True)
    if status is not None:
        _set_default(status, "phase", "Pending")


def _default_storage_class(storage_class: dict) -> None:
    _set_default(storage_class, "reclaimPolicy", "Delete")
    _set_default(storage_class, "volumeBindingMode", "Immediate")


_DEFAULTERS = {
    ("", "Pod"): _default_pod,
    ("", "Namespace"): _default_namespace,
    ("", "Node"): _default_node,
    ("", "Service"): _default_service,
    ("", "Endpoints"): _default_endpoints,
    ("", "Secret"): _default_secret,
    ("", "ReplicationController"): _default_replication_controller,
    ("apps", "ReplicaSet"): _default_replica_set,
    ("apps", "Deployment"): _default_deployment,
    ("apps", "DaemonSet"): _default_daemon_set,
    ("apps", "StatefulSet"): _default_stateful_set,
    ("batch", "Job"): _default_job,
    ("batch", "CronJob"): _default_cron_job,
    ("rbac.authorization.k8s.io", "RoleBinding"): _default_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _default_binding,
    ("", "PersistentVolume"): _default_persistent_volume,
    ("", "PersistentVolumeClaim"): _default_persistent_volume_claim,
    ("storage.k8s.io", "StorageClass"): _default_storage_class,
}


# ----------------------------------------------------------------- helpers

def _set_default(obj: dict, field: str, value, zero_is_unset: bool = False) -> None:
    """Set field unless it has a value. Kubernetes defaults typed structs, where
    an empty string is the same as unset; so is 0 for plain (non-pointer) ints."""
    current = obj.get(field)
    if current is None or current == "" or (
            zero_is_unset and type(current) is int and current == 0):
        obj[field] = value


def _object_at(obj: dict, field: str, create: bool = False):
    """obj[field] if it is an object; with create, {} when it is unset."""
    value = obj.get(field)
    if value is None and create:
        value = obj[field] = {}
    return value if isinstance(value, dict) else None


def _objects_in(obj: dict, field: str):
    """The objects in the list obj[field]; anything else yields nothing."""
    items = obj.get(field)
    if isinstance(items, list):
        return [item for item in items if isinstance(item, dict)]
    return []


def _copy(value):
    """Deep copy of JSON-like data without recursion (input may nest deeply).

    Anything that is not a dict or list (str, int, a date) is immutable in
    practice and shared. A cycle is copied as a cycle.
    """
    copies: dict[int, object] = {}

    def shell(item):
        if isinstance(item, dict):
            new = {}
        elif isinstance(item, list):
            new = []
        else:
            return item, False
        if id(item) in copies:
            return copies[id(item)], False
        copies[id(item)] = new
        return new, True

    root, fresh = shell(value)
    stack = [(value, root)] if fresh else []
    while stack:
        original, new = stack.pop()
        if isinstance(original, dict):
            for k, v in original.items():
                new[k], fresh = shell(v)
                if fresh:
                    stack.append((v, new[k]))
        else:
            for v in original:
                copied, fresh = shell(v)
                new.append(copied)
                if fresh:
                    stack.append((v, copied))
    return root
