"""securityContext to Docker options, without Docker: the merge of pod and
container level, the runAsNonRoot refusals in the kubelet's words, and what
each field asks of Docker. test_security_context.py checks the same things
inside real containers."""
from __future__ import annotations

import pytest

import security_context as sc
from pod_config import ConfigError

NODE = sc.Node(apparmor=False, selinux=False, seccomp_root="/nonexistent")


def _pod(pod_level: dict | None = None, container_level: dict | None = None, **spec) -> dict:
    container = {"name": "app", "image": "busybox:1.35"}
    if container_level is not None:
        container["securityContext"] = container_level
    return {"metadata": {"name": "web", "namespace": "default", "uid": "1234"},
            "spec": {"securityContext": pod_level or {}, "containers": [container], **spec}}


def _options(pod: dict, image_user: str = "") -> sc.DockerSecurity:
    return sc.docker_options(pod, pod["spec"]["containers"][0], image_user, "sandbox-id", NODE)


def test_the_container_wins_field_by_field():
    pod = _pod({"runAsUser": 1000, "runAsGroup": 3000, "runAsNonRoot": True, "fsGroup": 2000},
               {"runAsUser": 2000, "readOnlyRootFilesystem": True})
    assert sc.effective(pod, pod["spec"]["containers"][0]) == {
        "runAsUser": 2000, "runAsGroup": 3000, "runAsNonRoot": True, "readOnlyRootFilesystem": True}


@pytest.mark.parametrize("config_user,expected", [
    ("", (0, "")), ("0", (0, "")), ("1000", (1000, "")), ("1000:50", (1000, "")),
    ("nginx", (None, "nginx")), ("nginx:www", (None, "nginx")),
])
def test_image_user(config_user, expected):
    assert sc.image_user(config_user) == expected


WHERE = '(pod: "web_default(1234)", container: app)'


@pytest.mark.parametrize("pod_level,container_level,image_user,message", [
    ({"runAsNonRoot": True}, None, "", f"container has runAsNonRoot and image will run as root {WHERE}"),
    ({"runAsNonRoot": True}, None, "0:0", f"container has runAsNonRoot and image will run as root {WHERE}"),
    (None, {"runAsNonRoot": True}, "nginx", "container has runAsNonRoot and image has non-numeric user (nginx), "
     f"cannot verify user is non-root {WHERE}"),
    ({"runAsNonRoot": True, "runAsUser": 0}, None, "1000", f"container's runAsUser breaks non-root policy {WHERE}"),
    ({"runAsNonRoot": True}, {"runAsUser": 1000}, "", None),   # the container's user is not root
    ({"runAsNonRoot": True}, None, "1000", None),              # nor the image's
    ({"runAsNonRoot": True}, {"runAsNonRoot": False}, "", None),  # the container opts out
    ({}, None, "", None),
], ids=["image-root", "image-0", "image-named", "run-as-0", "run-as-1000", "image-1000", "opt-out", "unset"])
def test_run_as_non_root(pod_level, container_level, image_user, message):
    pod = _pod(pod_level, container_level)
    if message is None:
        sc.verify_run_as_non_root(pod, pod["spec"]["containers"][0], *sc.image_user(image_user))
    else:
        with pytest.raises(ConfigError) as error:
            sc.verify_run_as_non_root(pod, pod["spec"]["containers"][0], *sc.image_user(image_user))
        assert str(error.value) == message


@pytest.mark.parametrize("pod_level,container_level,image_user,user", [
    ({}, None, "", None),
    ({"runAsUser": 1000}, None, "", "1000"),
    ({"runAsUser": 1000, "runAsGroup": 3000}, None, "", "1000:3000"),
    ({"runAsGroup": 3000}, None, "nginx:www", "nginx:3000"),     # a group alone keeps the image's user
    ({"runAsGroup": 3000}, None, "", "0:3000"),
    ({"runAsUser": 1000}, {"runAsUser": 2000}, "", "2000"),
])
def test_user(pod_level, container_level, image_user, user):
    assert _options(_pod(pod_level, container_level), image_user).user == user


def test_host_config():
    pod = _pod({"fsGroup": 2000, "supplementalGroups": [4000, 5000]},
               {"readOnlyRootFilesystem": True, "privileged": False, "allowPrivilegeEscalation": False,
                "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}, "seccompProfile": {"type": "Unconfined"}},
               shareProcessNamespace=True)
    assert _options(pod).host_config == {
        "group_add": ["2000", "4000", "5000"], "read_only": True, "privileged": False,
        "cap_add": ["NET_ADMIN"], "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", "seccomp=unconfined"], "pid_mode": "container:sandbox-id"}


def test_a_localhost_seccomp_profile_is_read_from_the_root_dir(tmp_path):
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "audit.json").write_text('{"defaultAction": "SCMP_ACT_LOG"}')
    pod = _pod({"seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"}})
    node = sc.Node(seccomp_root=str(tmp_path))
    options = sc.docker_options(pod, pod["spec"]["containers"][0], "", "s", node)
    assert options.host_config["security_opt"] == ['seccomp={"defaultAction": "SCMP_ACT_LOG"}']


@pytest.mark.parametrize("pod_level,container_level,spec,message", [
    ({"seccompProfile": {"type": "Localhost", "localhostProfile": "missing.json"}}, None, {},
     "spec.securityContext.seccompProfile.localhostProfile: cannot read /nonexistent/missing.json"),
    (None, {"appArmorProfile": {"type": "RuntimeDefault"}}, {},
     "spec.containers[0].securityContext.appArmorProfile: cannot enforce AppArmor: AppArmor is not enabled"),
    (None, {"procMount": "Unmasked"}, {}, "spec.containers[0].securityContext.procMount: only Default"),
    ({"supplementalGroupsPolicy": "Strict"}, None, {}, "spec.securityContext.supplementalGroupsPolicy: only Merge"),
    ({"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "kernel.msgmax", "value": "1"}]},
     None, {}, 'spec.securityContext.sysctls[1].name: forbidden sysctl: "kernel.msgmax" not allowlisted'),
    ({"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]}, None, {"hostNetwork": True},
     'spec.securityContext.sysctls[0].name: forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net'),
], ids=["seccomp-localhost-missing", "apparmor-absent", "proc-mount-unmasked", "groups-strict",
        "unsafe-sysctl", "net-sysctl-host-network"])
def test_what_this_node_cannot_do_is_refused_naming_the_field(pod_level, container_level, spec, message):
    with pytest.raises(ConfigError) as error:
        _options(_pod(pod_level, container_level, **spec))
    assert str(error.value).startswith(message)


def test_the_legacy_apparmor_annotation_is_refused_too():
    pod = _pod()
    pod["metadata"]["annotations"] = {"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}
    with pytest.raises(ConfigError, match=r"metadata.annotations\[container.apparmor.security.beta.kubernetes.io/app\]"):
        _options(pod)


def test_apparmor_and_selinux_where_the_node_has_them():
    pod = _pod(None, {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-deny-write"},
                      "seLinuxOptions": {"level": "s0:c123,c456"}})
    node = sc.Node(apparmor=True, selinux=True)
    options = sc.docker_options(pod, pod["spec"]["containers"][0], "", "s", node)
    assert options.host_config["security_opt"] == ["apparmor=k8s-deny-write", "label=level:s0:c123,c456"]
    # Without SELinux the label is dropped, as the CRI runtimes drop it.
    assert "security_opt" not in _options(_pod(None, {"seLinuxOptions": {"level": "s0:c1"}})).host_config


def test_only_safe_sysctls_reach_the_sandbox():
    pod = _pod({"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"},
                            {"name": "kernel.msgmax", "value": "1"}]})
    assert sc.sandbox_sysctls(pod) == {"net.ipv4.ip_unprivileged_port_start": "0"}
    assert sc.sandbox_sysctls(_pod()) is None
