"""From a pod's securityContext to Docker's create options.

A pod says who its processes run as and what they may do twice: for the
whole pod (spec.securityContext, a PodSecurityContext) and for each
container (containers[i].securityContext, a SecurityContext). The
container's own setting wins, field by field, as in Kubernetes'
DetermineEffectiveSecurityContext (pkg/securitycontext/util.go, 1.32).

What Docker can do, this module asks of it: the user and groups, a read-only
root filesystem, capabilities, privileged, no-new-privileges, seccomp,
AppArmor, sysctls (on the pause container, whose namespaces the pod shares).
What this node cannot do is refused with a ConfigError that names the field;
the container then waits with CreateContainerConfigError, and the event
says why, as the kubelet's own verifyRunAsNonRoot refusals do.

Pure functions but two: image facts come in as arguments, and
set_volume_ownership asks Docker to change a volume's owner.
"""
from __future__ import annotations

import io
import os
import tarfile
import time
from dataclasses import dataclass, field

from pod_config import ConfigError

# What a pod-level setting gives every container unless the container sets
# its own (securityContextFromPodSecurityContext). The rest of the pod's
# fields (fsGroup, supplementalGroups, sysctls...) are the pod's alone.
INHERITED_FROM_POD = ("seLinuxOptions", "windowsOptions", "runAsUser", "runAsGroup", "runAsNonRoot",
                      "seccompProfile", "appArmorProfile")

# The sysctls Kubernetes 1.32 calls safe (pkg/kubelet/sysctl/safe_sysctls.go):
# namespaced, and unable to hurt the node or other pods. Any other needs the
# kubelet's --allowed-unsafe-sysctls, which this kubelet does not have.
SAFE_SYSCTLS = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
                "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")

# Where Localhost seccomp profiles live: <kubelet --root-dir>/seccomp.
DEFAULT_SECCOMP_ROOT = "/var/lib/kubelet/seccomp"


def effective(pod: dict, container: dict) -> dict:
    """The container's security context with the pod's filled in beneath it."""
    pod_level = pod["spec"].get("securityContext") or {}
    merged = {name: pod_level[name] for name in INHERITED_FROM_POD if pod_level.get(name) is not None}
    own = container.get("securityContext") or {}
    merged.update({name: value for name, value in own.items() if value is not None})
    return merged


def container_path(pod: dict, container: dict) -> str:
    """spec.containers[1], for messages that name a field."""
    for kind in ("containers", "initContainers"):
        for index, candidate in enumerate(pod["spec"].get(kind) or []):
            if candidate.get("name") == container["name"]:
                return f"spec.{kind}[{index}]"
    return f"spec.containers{{{container['name']}}}"


def field_path(pod: dict, container: dict, name: str) -> str:
    """Where an effective setting came from: the container's own, else the pod's."""
    if name in (container.get("securityContext") or {}):
        return f"{container_path(pod, container)}.securityContext.{name}"
    return f"spec.securityContext.{name}"


# [START run-as-non-root]
def image_user(config_user: str) -> tuple[int | None, str]:
    """The image's USER as (uid, name): "1000" or "1000:50" -> (1000, "");
    "nginx" -> (None, "nginx"); none at all -> (0, ""), root, as the
    runtime reports it to the kubelet."""
    user = (config_user or "").split(":", 1)[0]
    if not user:
        return 0, ""
    return (int(user), "") if user.isdigit() else (None, user)


def verify_run_as_non_root(pod: dict, container: dict, uid: int | None, username: str) -> None:
    """runAsNonRoot: refuse a container that would run as root, in the
    kubelet's words (verifyRunAsNonRoot, kuberuntime/security_context_others.go)."""
    context = effective(pod, container)
    if not context.get("runAsNonRoot"):
        return
    meta = pod["metadata"]
    where = f'(pod: "{meta["name"]}_{meta["namespace"]}({meta["uid"]})", container: {container["name"]})'
    if context.get("runAsUser") is not None:
        if context["runAsUser"] == 0:
            raise ConfigError(f"container's runAsUser breaks non-root policy {where}")
        return
    if uid is None and username:
        # A name could be anyone: only /etc/passwd inside the image knows.
        raise ConfigError(f"container has runAsNonRoot and image has non-numeric user ({username}), "
                          f"cannot verify user is non-root {where}")
    if uid == 0:
        raise ConfigError(f"container has runAsNonRoot and image will run as root {where}")
# [END run-as-non-root]


@dataclass
class DockerSecurity:
    """What create_container (user) and create_host_config (the rest) are given."""
    user: str | None = None
    host_config: dict = field(default_factory=dict)


@dataclass
class Node:
    """What this node's kernel offers, read once at start."""
    apparmor: bool = False
    selinux: bool = False
    seccomp_root: str = DEFAULT_SECCOMP_ROOT

    @classmethod
    def detect(cls, seccomp_root: str = DEFAULT_SECCOMP_ROOT) -> "Node":
        try:
            with open("/sys/module/apparmor/parameters/enabled") as flag:
                apparmor = flag.read().strip() == "Y"
        except OSError:
            apparmor = False
        return cls(apparmor=apparmor, selinux=os.path.exists("/sys/fs/selinux/enforce"), seccomp_root=seccomp_root)


# [START docker-security]
def docker_options(pod: dict, container: dict, config_user: str, sandbox_id: str, node: Node) -> DockerSecurity:
    """The Docker settings for one app container; ConfigError names what this node cannot do."""
    check_pod_settings(pod)
    uid, username = image_user(config_user)
    verify_run_as_non_root(pod, container, uid, username)
    context = effective(pod, container)
    options = DockerSecurity()
    options.user = _user(context, config_user)
    pod_level = pod["spec"].get("securityContext") or {}
    # Kubernetes' order: fsGroup first, then supplementalGroups. Docker also
    # adds the groups /etc/group in the image gives the user (the Merge policy).
    groups = ([pod_level["fsGroup"]] if pod_level.get("fsGroup") is not None else []) \
        + list(pod_level.get("supplementalGroups") or [])
    settings = options.host_config
    if groups:
        settings["group_add"] = [str(group) for group in groups]
    settings["read_only"] = bool(context.get("readOnlyRootFilesystem"))
    settings["privileged"] = bool(context.get("privileged"))
    capabilities = context.get("capabilities") or {}
    if capabilities.get("add"):
        settings["cap_add"] = list(capabilities["add"])      # Docker takes CHOWN, CAP_CHOWN and ALL alike
    if capabilities.get("drop"):
        settings["cap_drop"] = list(capabilities["drop"])
    security_opt = []
    if context.get("allowPrivilegeEscalation") is False:
        security_opt.append("no-new-privileges")
    security_opt += _seccomp(pod, container, context, node) + _apparmor(pod, container, context, node)
    security_opt += _selinux(context, node)
    if security_opt:
        settings["security_opt"] = security_opt
    if context.get("procMount", "Default") != "Default":
        raise ConfigError(f"{field_path(pod, container, 'procMount')}: only Default is supported "
                          "(Unmasked needs a user namespace of the pod's own, hostUsers: false)")
    if pod["spec"].get("hostPID"):
        settings["pid_mode"] = "host"
    elif pod["spec"].get("shareProcessNamespace"):
        settings["pid_mode"] = f"container:{sandbox_id}"   # the pause container is PID 1, as in Kubernetes
    return options
# [END docker-security]


def _user(context: dict, config_user: str) -> str | None:
    """Docker's --user: runAsUser[:runAsGroup]; a group alone keeps the image's user."""
    user, group = context.get("runAsUser"), context.get("runAsGroup")
    if user is None and group is None:
        return None                     # the image's own USER
    name = str(user) if user is not None else ((config_user or "").split(":", 1)[0] or "0")
    return f"{name}:{group}" if group is not None else name


def _seccomp(pod: dict, container: dict, context: dict, node: Node) -> list[str]:
    """Unset and RuntimeDefault: Docker's default profile. (Kubernetes' own
    default for an unset profile is Unconfined unless the kubelet runs with
    --seccomp-default; we behave as if it did: the safer of the two.)"""
    profile = context.get("seccompProfile") or {}
    kind = profile.get("type", "RuntimeDefault")
    if kind == "Unconfined":
        return ["seccomp=unconfined"]
    if kind == "Localhost":
        relative = profile.get("localhostProfile") or ""
        path = os.path.join(node.seccomp_root, relative)
        try:
            with open(path) as json_profile:
                return [f"seccomp={json_profile.read()}"]      # Docker takes the profile itself, not a path
        except OSError as error:
            raise ConfigError(f"{field_path(pod, container, 'seccompProfile')}.localhostProfile: "
                              f"cannot read {path}: {error.strerror}") from None
    return []


def _apparmor(pod: dict, container: dict, context: dict, node: Node) -> list[str]:
    """AppArmor, from the field or the annotation it replaced
    (container.apparmor.security.beta.kubernetes.io/<container>)."""
    profile = context.get("appArmorProfile")
    annotation = f"container.apparmor.security.beta.kubernetes.io/{container['name']}"
    legacy = (pod["metadata"].get("annotations") or {}).get(annotation)
    if profile is None and legacy is None:
        return []
    where = field_path(pod, container, "appArmorProfile") if profile else f"metadata.annotations[{annotation}]"
    if not node.apparmor:
        # The kubelet refuses such a pod too: "Cannot enforce AppArmor: AppArmor is not enabled on the host".
        raise ConfigError(f"{where}: cannot enforce AppArmor: AppArmor is not enabled on the host")
    if profile:
        kind = profile.get("type")
        name = {"RuntimeDefault": "docker-default", "Unconfined": "unconfined"}.get(kind) \
            or profile.get("localhostProfile", "")
    else:
        name = {"runtime/default": "docker-default", "unconfined": "unconfined"}.get(legacy) \
            or legacy.removeprefix("localhost/")
    return [f"apparmor={name}"]


def _selinux(context: dict, node: Node) -> list[str]:
    """On a node without SELinux the label is dropped, as the CRI runtimes
    drop it (go-selinux's InitLabels returns no label when SELinux is off):
    there is nothing to enforce it with, and Kubernetes runs the pod."""
    options = context.get("seLinuxOptions")
    if not options or not node.selinux:
        return []
    return [f"label={key}:{options[field]}" for key, field in
            (("user", "user"), ("role", "role"), ("type", "type"), ("level", "level")) if options.get(field)]


def check_pod_settings(pod: dict) -> None:
    """The pod-wide settings Docker cannot give one container at a time."""
    spec = pod["spec"]
    pod_level = spec.get("securityContext") or {}
    if pod_level.get("supplementalGroupsPolicy", "Merge") != "Merge":
        raise ConfigError("spec.securityContext.supplementalGroupsPolicy: only Merge is supported "
                          "(Docker always adds the groups /etc/group in the image gives the user)")
    for index, sysctl in enumerate(pod_level.get("sysctls") or []):
        name = sysctl.get("name", "")
        if name not in SAFE_SYSCTLS:
            raise ConfigError(f'spec.securityContext.sysctls[{index}].name: forbidden sysctl: "{name}" '
                              "not allowlisted")
        if spec.get("hostNetwork") and name.startswith("net."):
            raise ConfigError(f'spec.securityContext.sysctls[{index}].name: forbidden sysctl: "{name}" '
                              "not allowed with host net enabled")


def sandbox_sysctls(pod: dict) -> dict[str, str] | None:
    """The pod's safe sysctls, set on the pause container: the network and
    IPC namespaces they change are the ones the app containers join. An
    unsafe one is left out here and refused when a container starts."""
    spec = pod["spec"]
    wanted = {s.get("name"): str(s.get("value", "")) for s in (spec.get("securityContext") or {}).get("sysctls") or []}
    safe = {name: value for name, value in wanted.items() if name in SAFE_SYSCTLS
            and not (spec.get("hostNetwork") and name.startswith("net."))}
    return safe or None


# [START volume-ownership]
def set_volume_ownership(api, container_id: str, mount_path: str, fs_group: int | None) -> None:
    """Kubernetes' SetVolumeOwnership for a fresh volume: group fsGroup,
    rwxrwsrwx. The setgid bit makes every file created in it belong to
    fsGroup too. Without fsGroup, the 0777 of Kubernetes' emptyDir.

    Docker does the change, not us: the volume lives under /var/lib/docker,
    which a kubelet not running as root cannot touch. Docker unpacks a
    one-entry tar over the directory, in the container that mounts it, and
    an existing directory takes the entry's owner and mode."""
    parent, name = os.path.split(mount_path.rstrip("/"))
    entry = tarfile.TarInfo(name)
    entry.type = tarfile.DIRTYPE
    entry.mode = 0o2777 if fs_group is not None else 0o777
    entry.uid, entry.gid = 0, fs_group if fs_group is not None else 0
    entry.mtime = int(time.time())
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.addfile(entry)
    api.put_archive(container_id, parent or "/", archive.getvalue())
# [END volume-ownership]
