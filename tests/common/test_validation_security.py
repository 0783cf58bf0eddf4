"""securityContext validation, in Kubernetes' words (pkg/apis/core/validation/
validation.go, 1.32: ValidatePodSecurityContext, ValidateSecurityContext,
validateSeccompProfileField, validateSysctls; IsValidUserID and
IsValidGroupID in apimachinery). What the kubelet cannot honour on a node is
not validation's business: the kubelet refuses it (security_context.py)."""
from __future__ import annotations

import pytest

from common.model.defaults import apply_pod_defaults
from common.model.validation import validate_pod

RANGE = "must be between 0 and 2147483647, inclusive"
SYSCTL_REGEX = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"


def _errors(pod_context=None, container_context=None) -> list[str]:
    container = {"name": "app", "image": "busybox:1.35"}
    if container_context is not None:
        container["securityContext"] = container_context
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [container], **({"securityContext": pod_context} if pod_context else {})}}
    return [str(e) for e in validate_pod(apply_pod_defaults(pod))]


@pytest.mark.parametrize("pod_context,container_context,expected", [
    ({"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000],
      "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}],
      "seccompProfile": {"type": "RuntimeDefault"}},
     {"runAsUser": 0, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}, []),
    ({"runAsUser": -1}, None, [f"spec.securityContext.runAsUser: Invalid value: -1: {RANGE}"]),
    (None, {"runAsGroup": 2147483648}, [
        f"spec.containers[0].securityContext.runAsGroup: Invalid value: 2147483648: {RANGE}"]),
    ({"fsGroup": -5, "supplementalGroups": [1, -2]}, None, [
        f"spec.securityContext.fsGroup: Invalid value: -5: {RANGE}",
        f"spec.securityContext.supplementalGroups[1]: Invalid value: -2: {RANGE}"]),
    ({"seccompProfile": {"type": "Localhost"}}, None, [
        "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"]),
    (None, {"seccompProfile": {"type": "Unconfined", "localhostProfile": "p.json"}}, [
        'spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "p.json": '
        "can only be set when seccomp type is Localhost"]),
    (None, {"seccompProfile": {"type": "Strict"}}, [
        'spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Strict": '
        'supported values: "Localhost", "RuntimeDefault", "Unconfined"']),
    (None, {"procMount": "Hidden"}, [
        'spec.containers[0].securityContext.procMount: Unsupported value: "Hidden": supported values: "Default", "Unmasked"']),
    ({"fsGroupChangePolicy": "Sometimes"}, None, [
        'spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"']),
    ({"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "kernel.shm_rmid_forced", "value": "0"},
                  {"name": "Kernel Thing", "value": "1"}]}, None, [
        'spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shm_rmid_forced"',
        f'spec.securityContext.sysctls[2].name: Invalid value: "Kernel Thing": must have at most 253 characters '
        f"and match regex {SYSCTL_REGEX}"]),
], ids=["the-example-and-more", "negative-user", "group-too-big", "fs-and-supplemental-groups",
        "localhost-without-profile", "profile-without-localhost", "seccomp-type", "proc-mount",
        "fs-group-change-policy", "sysctl-duplicate-and-name"])
def test_security_context_validation(pod_context, container_context, expected):
    assert _errors(pod_context, container_context) == expected
