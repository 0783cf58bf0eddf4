"""--allow-privileged: may a pod's containers run privileged?

kube-apiserver's flag (default false) is checked where a pod spec is
validated, wherever that spec sits: in a Pod, or in the template of a
Deployment, a Job, a CronJob... A privileged container is refused there
with a 422, in Kubernetes' words (ValidateSecurityContext in
pkg/apis/core/validation/validation.go, 1.32):

    spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy

(The DenyPrivileged admission plugin, admission.py, says no first when it is
enabled, with a 403 of its own: it is the chapter's example of a refusing
plugin. This check is Kubernetes' own, and holds with any plugin list.)
"""
from __future__ import annotations

from common.model.field_errors import FieldError, forbidden

# Where each kind keeps its pod spec.
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


# [START privileged-check]
def privileged_errors(kind: str, obj: dict) -> list[FieldError]:
    """One Forbidden error per privileged container in the object's pod spec."""
    spec = obj
    for step in POD_SPEC_PATHS.get(kind, ("-",)):
        spec = spec.get(step) if isinstance(spec, dict) else None
    if not isinstance(spec, dict):
        return []                       # not a kind with pods, or validation reports the shape
    prefix = ".".join(POD_SPEC_PATHS[kind])
    errors = []
    for field in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(field)
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            context = container.get("securityContext") if isinstance(container, dict) else None
            if isinstance(context, dict) and context.get("privileged") is True:
                errors.append(forbidden(f"{prefix}.{field}[{index}].securityContext.privileged",
                                        "disallowed by cluster policy"))
    return errors
# [END privileged-check]
