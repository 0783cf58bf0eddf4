"""Every field of a Pod's spec, and what this kubelet does with it.

The API server accepts everything Kubernetes' Pod schema allows; the
kubelet must not then run a pod differently from what it asks without a
word. So each field of PodSpec, Container and the two security contexts is
classified here, and tests/kubelet/test_pod_fields.py fails when the
published 1.32 schema has a field this table does not classify:

- HONOURED: the kubelet does what the field asks (the module that does it
  is named);
- REFUSED: a pod that sets it (to anything but its default) is refused:
  each container waits with CreateContainerConfigError and a Failed event
  names the field; a static pod's manifest is skipped with a log line;
- IGNORED: Kubernetes' kubelet does nothing with it either, or it is for
  another component (the scheduler, an admission plugin); the reason says which.

Some HONOURED fields have values this node cannot give (AppArmor without
AppArmor, an unsafe sysctl): security_context.py refuses those the same way.
"""
from __future__ import annotations

from typing import NamedTuple

HONOURED, REFUSED, IGNORED = "honoured", "refused", "ignored"


class Field(NamedTuple):
    how: str                # HONOURED, REFUSED or IGNORED
    why: str                # where it is honoured, or why it is refused or ignored
    default: object = None  # REFUSED fields: the value that asks for nothing (the API server's default)


SCHEDULER = "the scheduler's to read: the pod is on this node because of it"

POD_SPEC = {
    "activeDeadlineSeconds": Field(REFUSED, "the kubelet would fail the pod when it runs longer; not built"),
    "affinity": Field(IGNORED, SCHEDULER + " (the real kubelet re-checks node affinity at admission; "
                      "ours trusts the binding)"),
    "automountServiceAccountToken": Field(IGNORED, "read by the API server's ServiceAccount admission, which "
                                          "adds the token volume (when it signs tokens) unless it is false"),
    "containers": Field(HONOURED, "kubelet.py, pod_actions.py, pod_worker.py"),
    "dnsConfig": Field(HONOURED, "service_discovery/pod_dns.py (with --cluster-dns)"),
    "dnsPolicy": Field(HONOURED, "service_discovery/pod_dns.py (with --cluster-dns)"),
    "enableServiceLinks": Field(HONOURED, "service_discovery/service_env.py (in a cluster)"),
    "ephemeralContainers": Field(REFUSED, "kubectl debug's containers; not built", []),
    "hostAliases": Field(REFUSED, "extra /etc/hosts lines; not built", []),
    "hostIPC": Field(REFUSED, "the pod shares the pause container's IPC namespace; the host's is not offered",
                     False),
    "hostNetwork": Field(HONOURED, "docker_runtime.run_sandbox"),
    "hostPID": Field(HONOURED, "security_context.docker_options (pid_mode host)"),
    "hostUsers": Field(REFUSED, "false asks for a user namespace per pod; Docker has one per daemon", True),
    "hostname": Field(HONOURED, "docker_runtime.run_sandbox"),
    "imagePullSecrets": Field(REFUSED, "pulls carry no credentials here; a private image would fail "
                              "for a reason the pod does not show", []),
    "initContainers": Field(HONOURED, "pod_actions.plan_init_containers (sidecars too), pod_status.py"),
    "nodeName": Field(HONOURED, "the API source watches the pods bound to this node"),
    "nodeSelector": Field(IGNORED, SCHEDULER),
    "os": Field(REFUSED, "this node runs Linux containers only", {"name": "linux"}),
    "overhead": Field(IGNORED, "sizes the pod-level cgroup, set with runtimeClassName (refused); "
                      "the scheduler counts it"),
    "preemptionPolicy": Field(IGNORED, SCHEDULER),
    "priority": Field(IGNORED, SCHEDULER + "; the real kubelet also orders evictions by it, and ours evicts nothing"),
    "priorityClassName": Field(IGNORED, "the Priority admission plugin turns it into priority"),
    "readinessGates": Field(REFUSED, "Ready would have to wait for their conditions; not built", []),
    "resourceClaims": Field(REFUSED, "dynamic resource allocation; not built", []),
    "resources": Field(REFUSED, "pod-level resources (alpha in 1.32); not built"),
    "restartPolicy": Field(HONOURED, "pod_actions.should_restart"),
    "runtimeClassName": Field(REFUSED, "one runtime here, Docker's runc"),
    "schedulerName": Field(IGNORED, SCHEDULER),
    "schedulingGates": Field(IGNORED, SCHEDULER),
    "securityContext": Field(HONOURED, "security_context.py; its fields below"),
    "serviceAccount": Field(IGNORED, "the deprecated alias of serviceAccountName"),
    "serviceAccountName": Field(HONOURED, "the account a projected serviceAccountToken is requested for "
                                "(api_volumes/api_objects.TokenCache); also the downward API's spec.serviceAccountName"),
    "setHostnameAsFQDN": Field(REFUSED, "the kernel hostname would be the FQDN; not built", False),
    "shareProcessNamespace": Field(HONOURED, "security_context.docker_options (pid_mode container:<pause>)"),
    "subdomain": Field(IGNORED, "chapter 05's DNS answers for hostname.subdomain; the real kubelet also "
                       "writes that FQDN into the pod's /etc/hosts, ours does not"),
    "terminationGracePeriodSeconds": Field(HONOURED, "pod_worker.stop_all (docker stop's timeout)"),
    "tolerations": Field(IGNORED, SCHEDULER + "; NoExecute evictions are the controller manager's"),
    "topologySpreadConstraints": Field(IGNORED, SCHEDULER),
    "volumes": Field(HONOURED, "docker_runtime.mounts (emptyDir, hostPath) and, in a cluster, api_volumes/ "
                     "(configMap, secret, downwardAPI, projected) and api_volumes/persistent.py (persistentVolumeClaim "
                     "bound to a hostPath or local volume); any other type fails with a FailedMount event naming it"),
}

CONTAINER = {
    "args": Field(HONOURED, "pod_config.command_line"),
    "command": Field(HONOURED, "pod_config.command_line"),
    "env": Field(HONOURED, "pod_config.container_env; valueFrom through api_volumes/api_objects.EnvResolver (one it "
                 "cannot resolve is a CreateContainerConfigError)"),
    "envFrom": Field(HONOURED, "api_volumes/api_objects.EnvResolver (ConfigMaps and Secrets from the API server)"),
    "image": Field(HONOURED, "docker_runtime.ensure_image"),
    "imagePullPolicy": Field(HONOURED, "docker_runtime.ensure_image"),
    "lifecycle": Field(HONOURED, "lifecycle_hooks.py (postStart, preStop: exec, httpGet, sleep)"),
    "livenessProbe": Field(HONOURED, "probes.py (a failure restarts the container)"),
    "name": Field(HONOURED, "the container's label"),
    "ports": Field(HONOURED, "pod_config.host_port_bindings (hostPort); the rest is information, "
                   "as in Kubernetes"),
    "readinessProbe": Field(HONOURED, "probes.py (the Ready condition)"),
    "resizePolicy": Field(IGNORED, "for in-place resize (alpha in 1.32): here any change of resources "
                          "restarts the container (its spec hash)"),
    "resources": Field(HONOURED, "pod_config.docker_resources"),
    "restartPolicy": Field(HONOURED, "an init container's Always makes it a sidecar (pod_actions.is_sidecar); "
                           "validation refuses any other use"),
    "securityContext": Field(HONOURED, "security_context.py; its fields below"),
    "startupProbe": Field(HONOURED, "probes.py (liveness and readiness wait for it)"),
    "stdin": Field(HONOURED, "docker_runtime.run_container (stdin_open)"),
    "stdinOnce": Field(IGNORED, "matters only to kubectl attach, which this kubelet does not serve"),
    "terminationMessagePath": Field(REFUSED, "no termination message is read; the default path is "
                                    "accepted, and a container's status shows no message",
                                    "/dev/termination-log"),
    "terminationMessagePolicy": Field(REFUSED, "no termination message is read (see terminationMessagePath)",
                                      "File"),
    "tty": Field(HONOURED, "docker_runtime.run_container"),
    "volumeDevices": Field(REFUSED, "raw block volumes; not built", []),
    "volumeMounts": Field(HONOURED, "docker_runtime.mounts"),
    "workingDir": Field(HONOURED, "docker_runtime.run_container"),
}

WINDOWS = ("ignored on Linux, as Kubernetes' Linux kubelet ignores it (only "
           "kuberuntime_container_windows.go reads it)")
SELINUX = ("honoured where SELinux is enabled (Docker's label= options); on a node without it, "
           "dropped as the CRI runtimes drop it (go-selinux InitLabels gives no label)")
APPARMOR = ("honoured where AppArmor is enabled (Docker's apparmor=); refused on a node "
            "without it, as the kubelet refuses")
SECCOMP = "security_context._seccomp (RuntimeDefault, Unconfined, Localhost: a file in <--root-dir>/seccomp)"

SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": Field(HONOURED, "false: Docker's no-new-privileges"),
    "appArmorProfile": Field(HONOURED, APPARMOR),
    "capabilities": Field(HONOURED, "Docker's cap_add and cap_drop"),
    "privileged": Field(HONOURED, "Docker's privileged (the API server refuses it without --allow-privileged)"),
    "procMount": Field(HONOURED, "Default; Unmasked is refused (it needs hostUsers: false)"),
    "readOnlyRootFilesystem": Field(HONOURED, "Docker's read_only"),
    "runAsGroup": Field(HONOURED, "Docker's user uid:gid"),
    "runAsNonRoot": Field(HONOURED, "security_context.verify_run_as_non_root"),
    "runAsUser": Field(HONOURED, "Docker's user"),
    "seLinuxOptions": Field(HONOURED, SELINUX),
    "seccompProfile": Field(HONOURED, SECCOMP),
    "windowsOptions": Field(IGNORED, WINDOWS),
}

POD_SECURITY_CONTEXT = {
    "appArmorProfile": Field(HONOURED, APPARMOR),
    "fsGroup": Field(HONOURED, "a supplementary group of every container, and the group of the pod's "
                     "emptyDir volumes (security_context.set_volume_ownership)"),
    "fsGroupChangePolicy": Field(HONOURED, "emptyDir volumes are new and empty when their ownership is "
                                 "set, where Always and OnRootMismatch do the same"),
    "runAsGroup": Field(HONOURED, "inherited by containers (security_context.effective)"),
    "runAsNonRoot": Field(HONOURED, "inherited by containers (security_context.effective)"),
    "runAsUser": Field(HONOURED, "inherited by containers (security_context.effective)"),
    "seLinuxChangePolicy": Field(IGNORED, "how volumes are relabelled for SELinux (alpha in 1.32); "
                                 "ours are not relabelled"),
    "seLinuxOptions": Field(HONOURED, SELINUX),
    "seccompProfile": Field(HONOURED, SECCOMP),
    "supplementalGroups": Field(HONOURED, "Docker's group_add"),
    "supplementalGroupsPolicy": Field(HONOURED, "Merge (Docker's way); Strict is refused"),
    "sysctls": Field(HONOURED, "the safe set, on the pause container; any other is refused"),
    "windowsOptions": Field(IGNORED, WINDOWS),
}

# The published schema's name for each table, for the test that walks it.
TABLES = {
    "io.k8s.api.core.v1.PodSpec": POD_SPEC,
    "io.k8s.api.core.v1.Container": CONTAINER,
    "io.k8s.api.core.v1.SecurityContext": SECURITY_CONTEXT,
    "io.k8s.api.core.v1.PodSecurityContext": POD_SECURITY_CONTEXT,
}


def _asks(value, entry: Field) -> bool:
    """Does this value ask for something? Unset does not, nor the default
    (when there is none: an empty value, or false)."""
    if value is None:
        return False
    if entry.default is not None:
        return value != entry.default
    return value not in ([], {}, "", False)


# [START refused-fields]
def refused(pod: dict) -> list[str]:
    """The field paths of a pod that ask for what this kubelet refuses."""
    spec = pod["spec"]
    found = [f"spec.{name}" for name, entry in POD_SPEC.items()
             if entry.how == REFUSED and _asks(spec.get(name), entry)]
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(kind) or []):
            found += [f"spec.{kind}[{index}].{name}" for name, entry in CONTAINER.items()
                      if entry.how == REFUSED and _asks(container.get(name), entry)]
    return found
# [END refused-fields]
