"""securityContext on a real kubelet and real Docker containers.

What a container is allowed is checked from inside it (`id`, a write to /,
a chown, /proc/self/status), and Docker's HostConfig is the second check.
A runAsNonRoot container whose image runs as root is refused with the
kubelet's own message; the kubernetes.io example of the security context
page runs as that page shows. Pods that ask for what this kubelet refuses
(pod_fields.py) are refused with an event naming the field, both as static
pods and from the API server; and a privileged pod meets the API server's
--allow-privileged, through the real kubectl.
"""
from __future__ import annotations

import contextlib
import json
import textwrap
import uuid

import docker.errors
import pytest

from apiserver_harness import APIServer, Client, unique
from harness import Kubelet, container_status, pod_yaml, wait_for, wait_for_pod
from security_context import Node
from test_kubectl import Kubectl

# The example of "Configure a Security Context for a Pod or Container"
# (kubernetes.io/docs/tasks/configure-pod-container/security-context/),
# pods/security/security-context.yaml in kubernetes/website, unchanged.
SECURITY_CONTEXT_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: security-context-demo
spec:
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    fsGroup: 2000
    supplementalGroups: [4000]
  volumes:
  - name: sec-ctx-vol
    emptyDir: {}
  containers:
  - name: sec-ctx-demo
    image: busybox:1.28
    command: [ "sh", "-c", "sleep 1h" ]
    volumeMounts:
    - name: sec-ctx-vol
      mountPath: /data/demo
    securityContext:
      allowPrivilegeEscalation: false
"""


def run(container, command: str) -> tuple[int, str]:
    """Run a shell command in a Docker container: (exit code, output)."""
    result = container.exec_run(["sh", "-c", command])
    return result.exit_code, result.output.decode()


@contextlib.contextmanager
def image_tag(docker_client, source: str, target: str):
    """`docker tag source target` for the test; untagged after, unless it was there before."""
    try:
        docker_client.images.get(target)
        existed = True
    except docker.errors.ImageNotFound:
        existed = False
        repository, tag = target.rsplit(":", 1)
        docker_client.images.get(source).tag(repository, tag)
    try:
        yield target
    finally:
        if not existed:
            with contextlib.suppress(docker.errors.APIError):
                docker_client.images.remove(target, noprune=True)


@contextlib.contextmanager
def image_with_user(docker_client, user: str):
    """A copy of busybox:1.35 whose USER is `user` (a commit: no registry needed)."""
    base = docker_client.containers.create("busybox:1.35", ["true"])
    name = f"groundup-test/user-{uuid.uuid4().hex[:8]}:1"
    try:
        image = base.commit(*name.split(":"), conf={"User": user})
    finally:
        base.remove(force=True)
    try:
        yield name
    finally:
        with contextlib.suppress(docker.errors.APIError):
            docker_client.images.remove(image.id, force=True)


def waiting(pod: dict, name: str) -> dict:
    return container_status(pod, name)["state"].get("waiting") or {}


# --- the kubernetes.io example ------------------------------------------------------

def test_the_security_context_page_example_runs_as_the_page_shows(kubelet, docker_client):
    with image_tag(docker_client, "busybox:1.35", "busybox:1.28"):
        kubelet.write("security-context.yaml", SECURITY_CONTEXT_YAML)
        kubelet.wait_running("security-context-demo", timeout=60)
        demo = kubelet.container("security-context-demo", "sec-ctx-demo")
        # "uid=1000 gid=3000 groups=2000,3000,4000", as the page shows.
        assert run(demo, "id") == (0, "uid=1000 gid=3000 groups=2000,3000,4000\n")
        assert run(demo, "ps -o user,args | grep 'sleep 1h' | grep -v grep")[1].split()[0] == "1000"
        # The emptyDir belongs to group 2000 (fsGroup), with setgid: drwxrwsrwx ... root 2000 ... demo
        code, listing = run(demo, "ls -ld /data/demo")
        assert listing.split()[0] == "drwxrwsrwx" and listing.split()[2:4] == ["root", "2000"], listing
        # A file made there belongs to group 2000 too: -rw-r--r-- 1 1000 2000 6 ... testfile
        code, listing = run(demo, "cd /data/demo && echo hello > testfile && ls -ln testfile")
        assert code == 0 and listing.split()[0] == "-rw-r--r--" and listing.split()[2:5] == ["1000", "2000", "6"]
        assert "NoNewPrivs:\t1" in run(demo, "cat /proc/self/status")[1]       # allowPrivilegeEscalation: false
        config = docker_client.api.inspect_container(demo.id)
        assert config["Config"]["User"] == "1000:3000"
        assert config["HostConfig"]["GroupAdd"] == ["2000", "4000"]
        assert config["HostConfig"]["SecurityOpt"] == ["no-new-privileges"]


# --- what a container may do -----------------------------------------------------------

CONTAINERS = textwrap.indent(textwrap.dedent("""\
    - name: plain
      image: busybox:1.35
      command: ["sleep", "3600"]
    - name: read-only
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {readOnlyRootFilesystem: true}
    - name: no-chown
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {capabilities: {drop: [CHOWN]}}
    - name: only-chown
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {capabilities: {drop: [ALL], add: [CHOWN]}}
    - name: unconfined
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {seccompProfile: {type: Unconfined}}
    - name: as-2000
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {runAsUser: 2000}
    """), "  ")


def test_each_container_gets_what_its_context_asks(kubelet, docker_client):
    kubelet.write("rights.yaml", pod_yaml("rights", CONTAINERS, spec_extra=(
        "  securityContext:\n    runAsUser: 0\n    sysctls:\n"
        "    - {name: net.ipv4.ip_unprivileged_port_start, value: '80'}\n"
        "  shareProcessNamespace: true\n")))
    kubelet.wait_running("rights", timeout=60)

    def inside(name: str, command: str) -> tuple[int, str]:
        return run(kubelet.container("rights", name), command)

    def host_config(name: str) -> dict:
        return docker_client.api.inspect_container(kubelet.container("rights", name).id)["HostConfig"]

    # The plain container can do all of it: each refusal below is the context's doing.
    assert inside("plain", "touch /written && chown 1 /written && grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status") \
        == (0, "NoNewPrivs:\t0\nSeccomp:\t2\n")
    code, output = inside("read-only", "touch /written")
    assert code != 0 and "Read-only file system" in output
    assert host_config("read-only")["ReadonlyRootfs"] is True
    code, output = inside("no-chown", "touch /f && chown 1 /f")
    assert code != 0 and "Operation not permitted" in output
    assert host_config("no-chown")["CapDrop"] == ["CHOWN"]
    assert inside("only-chown", "touch /f && chown 1 /f")[0] == 0
    code, output = inside("only-chown", "mknod /dev/x c 1 3")          # MKNOD went with ALL
    assert code != 0 and "Operation not permitted" in output
    assert inside("unconfined", "grep '^Seccomp:' /proc/self/status")[1] == "Seccomp:\t0\n"
    assert host_config("unconfined")["SecurityOpt"] == ["seccomp=unconfined"]
    # runAsUser: the container's 2000 over the pod's 0.
    assert inside("as-2000", "id -u") == (0, "2000\n")
    assert inside("plain", "id -u") == (0, "0\n")
    # A safe sysctl, set on the pause container, in the network namespace they share.
    assert inside("plain", "cat /proc/sys/net/ipv4/ip_unprivileged_port_start") == (0, "80\n")
    # shareProcessNamespace: the pause container and the others are visible.
    # shareProcessNamespace: each container sees the others' processes (one sleep each).
    assert inside("plain", "ps -o args")[1].count("sleep 3600") >= 6


# --- runAsNonRoot --------------------------------------------------------------------

NON_ROOT = textwrap.indent(textwrap.dedent("""\
    - name: root
      image: busybox:1.35
      command: ["sleep", "3600"]
    - name: as-1000
      image: busybox:1.35
      command: ["sleep", "3600"]
      securityContext: {runAsUser: 1000}
    """), "  ")


def test_run_as_non_root_refuses_an_image_that_runs_as_root(kubelet, docker_client):
    kubelet.write("non-root.yaml", pod_yaml("non-root", NON_ROOT, spec_extra="  securityContext: {runAsNonRoot: true}\n"))
    pod = kubelet.wait_pod("non-root", lambda p: waiting(p, "root").get("reason") == "CreateContainerConfigError"
                           and "running" in container_status(p, "as-1000")["state"], 60, "root refused, as-1000 running")
    uid = pod["metadata"]["uid"]
    assert waiting(pod, "root")["message"] == (
        f'container has runAsNonRoot and image will run as root (pod: "non-root_default({uid})", container: root)')
    assert run(kubelet.container("non-root", "as-1000"), "id -u") == (0, "1000\n")
    assert not [c for c in kubelet.containers("non-root") if c.labels["io.kubernetes.container.name"] == "root"]


def test_run_as_non_root_with_a_named_or_numeric_image_user(kubelet, docker_client):
    with image_with_user(docker_client, "nobody") as named, image_with_user(docker_client, "1000") as numeric:
        containers = (f"  - {{name: named, image: {named}, command: [sleep, '3600'], imagePullPolicy: Never}}\n"
                      f"  - {{name: numeric, image: {numeric}, command: [sleep, '3600'], imagePullPolicy: Never}}\n")
        kubelet.write("users.yaml", pod_yaml("users", containers, spec_extra="  securityContext: {runAsNonRoot: true}\n"))
        pod = kubelet.wait_pod("users", lambda p: waiting(p, "named").get("reason") == "CreateContainerConfigError"
                               and "running" in container_status(p, "numeric")["state"], 60)
        assert waiting(pod, "named")["message"].startswith(
            "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: ")
        assert run(kubelet.container("users", "numeric"), "id -u") == (0, "1000\n")
        kubelet.remove("users.yaml")
        wait_for(lambda: not kubelet.containers("users"), 30, what="the pod's containers to go")


# --- what this node cannot do ----------------------------------------------------------

@pytest.mark.parametrize("spec_extra,context,message", [
    ("  securityContext:\n    sysctls: [{name: kernel.msgmax, value: '65536'}]\n", "{}",
     'spec.securityContext.sysctls[0].name: forbidden sysctl: "kernel.msgmax" not allowlisted'),
    ("", "{procMount: Unmasked}", "spec.containers[0].securityContext.procMount: only Default is supported"),
    ("", "{appArmorProfile: {type: RuntimeDefault}}",
     "spec.containers[0].securityContext.appArmorProfile: cannot enforce AppArmor: AppArmor is not enabled on the host"),
], ids=["unsafe-sysctl", "proc-mount-unmasked", "apparmor"])
def test_what_this_node_cannot_do_is_refused_naming_the_field(kubelet, spec_extra, context, message):
    if "appArmor" in context and Node.detect().apparmor:
        pytest.skip("this host has AppArmor: the profile is honoured, not refused (see test_security_context_options)")
    container = f"  - {{name: app, image: busybox:1.35, command: [sleep, '3600'], securityContext: {context}}}\n"
    kubelet.write("refused.yaml", pod_yaml("refused", container, spec_extra=spec_extra))
    pod = kubelet.wait_pod("refused", lambda p: waiting(p, "app").get("reason") == "CreateContainerConfigError", 60)
    assert waiting(pod, "app")["message"].startswith(message)
    assert [c.labels["io.kubernetes.container.name"] for c in kubelet.containers("refused")] == ["POD"]


def test_an_empty_dir_without_fs_group_is_writable_by_any_user(kubelet):
    """Kubernetes makes an emptyDir 0777 (Docker's own volumes are 0755 root)."""
    volumes = "  volumes:\n  - {name: disk, emptyDir: {}}\n  - {name: memory, emptyDir: {medium: Memory}}\n"
    container = ("  - name: app\n    image: busybox:1.35\n    command: [sleep, '3600']\n"
                 "    securityContext: {runAsUser: 1000}\n    volumeMounts:\n"
                 "    - {name: disk, mountPath: /disk}\n    - {name: memory, mountPath: /memory}\n")
    kubelet.write("scratch.yaml", pod_yaml("scratch", container, volumes=volumes))
    kubelet.wait_running("scratch", timeout=60)
    app = kubelet.container("scratch", "app")
    for path in ("/disk", "/memory"):
        code, listing = run(app, f"ls -ld {path} && touch {path}/mine && ls -ln {path}/mine")
        assert code == 0, listing
        assert listing.split()[0] == "drwxrwxrwx" and listing.split()[2:4] == ["root", "root"], listing
        assert listing.splitlines()[1].split()[2:4] == ["1000", "0"]


def test_a_static_pod_with_a_refused_field_is_skipped_naming_it(kubelet):
    kubelet.write("userns.yaml", pod_yaml("userns", "  - {name: app, image: busybox:1.35, command: [sleep, '3600']}\n",
                                          spec_extra="  hostUsers: false\n"))
    wait_for(lambda: "spec.hostUsers: this kubelet does not support it yet" in kubelet.log(), 20,
             what="the manifest skipped, naming spec.hostUsers")
    kubelet.wait_syncs()
    assert kubelet.pod("userns") is None and not kubelet.containers("userns")


# --- through the API server -------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path, docker_client, kubectl):
    """An API server without the DenyPrivileged plugin (so validation's own
    check speaks), one kubelet joined to it, and kubectl."""
    server = APIServer(tmp_path / "data", "--enable-admission-plugins", "NamespaceLifecycle,LimitRanger").start()
    kubelet = Kubelet(tmp_path, docker_client, unique("node"), "--apiserver", server.url,
                      "--node-status-update-frequency", "0.5")
    try:
        kubelet.start()
        yield server, kubelet, Kubectl(kubectl, server.url, "default", tmp_path)
    finally:
        kubelet.cleanup()
        server.stop()


def _pod(name: str, node: str, container_context: dict | None = None, **spec) -> dict:
    container = {"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}
    if container_context is not None:
        container["securityContext"] = container_context
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [container], **spec}}


def _events(api: Client, name: str) -> list[str]:
    items = api.get("/api/v1/namespaces/default/events").json()["items"]
    return [f"{e['reason']}: {e['message']}" for e in items if e["involvedObject"].get("name") == name]


def test_api_pods_refused_with_the_event_kubectl_shows(cluster):
    server, kubelet, k = cluster
    api = Client(server.url)
    for body in (_pod("userns", kubelet.node_name, hostUsers=False),
                 _pod("rootless", kubelet.node_name, securityContext={"runAsNonRoot": True})):
        assert api.post("/api/v1/namespaces/default/pods", body).status_code == 201
    for name, message in (("userns", "spec.hostUsers: this kubelet does not support it"),
                          ("rootless", "container has runAsNonRoot and image will run as root (pod: ")):
        wait_for_pod(lambda: api.get(f"/api/v1/namespaces/default/pods/{name}").json(), name,
                     lambda p: waiting(p, "app").get("reason") == "CreateContainerConfigError", 60,
                     "CreateContainerConfigError", kubelet.log)
        wait_for(lambda: any(e.startswith(f"Failed: Error: {message}") for e in _events(api, name)), 20,
                 what=f"the Failed event of {name}")
        assert f"Error: {message}" in k("describe", "pod", name)
        assert "CreateContainerConfigError" in k("get", "pod", name)
    # Nothing of the refused pod ran but its pause container.
    assert [c.labels["io.kubernetes.container.name"] for c in kubelet.containers("userns")] in ([], ["POD"])


PRIVILEGED = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: root
    spec:
      containers:
      - name: app
        image: busybox:1.35
        securityContext:
          privileged: true
    """)


def test_privileged_is_refused_without_allow_privileged(cluster, tmp_path):
    server, kubelet, k = cluster
    (tmp_path / "privileged.yaml").write_text(PRIVILEGED)
    assert k.fails("apply", "-f", str(tmp_path / "privileged.yaml")).strip().endswith(
        'The Pod "root" is invalid: spec.containers[0].securityContext.privileged: '
        "Forbidden: disallowed by cluster policy")
    response = Client(server.url).post("/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "root"},
        "spec": {"selector": {"matchLabels": {"app": "root"}}, "template": {
            "metadata": {"labels": {"app": "root"}}, "spec": {
                "containers": [{"name": "app", "image": "busybox:1.35", "securityContext": {"privileged": True}}]}}}})
    assert response.status_code == 422
    assert response.json()["details"]["causes"] == [{
        "reason": "FieldValueForbidden", "message": "Forbidden: disallowed by cluster policy",
        "field": "spec.template.spec.containers[0].securityContext.privileged"}]


def test_allow_privileged_lets_a_privileged_pod_run_privileged(tmp_path, docker_client):
    server = APIServer(tmp_path / "data", "--allow-privileged=true",
                       "--enable-admission-plugins", "NamespaceLifecycle").start()
    kubelet = Kubelet(tmp_path, docker_client, unique("node"), "--apiserver", server.url)
    try:
        kubelet.start()
        api = Client(server.url)
        body = _pod("root", kubelet.node_name, {"privileged": True})
        assert api.post("/api/v1/namespaces/default/pods", body).status_code == 201

        def started_or_failed(pod: dict) -> bool:
            status = container_status(pod, "app")
            return "running" in status["state"] or "terminated" in {**status["state"], **status["lastState"]}
        pod = wait_for_pod(lambda: api.get("/api/v1/namespaces/default/pods/root").json(), "root",
                           started_or_failed, 60, "app started, or failed to", kubelet.log)
        status = container_status(pod, "app")
        app_id = status["containerID"].removeprefix("docker://")
        assert docker_client.api.inspect_container(app_id)["HostConfig"]["Privileged"] is True
        # Whether it can start is the host's to say: a Docker engine that runs
        # without every capability itself (in a container, as on some CI
        # machines) cannot give them all ("unable to apply caps").
        if "running" not in status["state"]:
            failed = status["state"].get("terminated") or status["lastState"]["terminated"]
            assert "apply caps" in failed["message"], failed
            return
        # Every capability the kernel has: a mask of all ones (Docker's default set is 00000000a80425fb).
        mask = int(run(kubelet.container("root", "app"), "grep '^CapEff:' /proc/self/status")[1].split()[1], 16)
        assert mask > 0xa80425fb and mask & (mask + 1) == 0
    finally:
        kubelet.cleanup()
        server.stop()


def test_a_localhost_seccomp_profile_from_the_root_dir_is_enforced(make_kubelet, tmp_path):
    profiles = tmp_path / "kubelet-root" / "seccomp" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "no-mkdir.json").write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}))
    kubelet = make_kubelet("--root-dir", str(tmp_path / "kubelet-root"))
    containers = textwrap.indent(textwrap.dedent("""\
        - name: confined
          image: busybox:1.35
          command: ["sleep", "3600"]
          securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/no-mkdir.json}}
        - name: plain
          image: busybox:1.35
          command: ["sleep", "3600"]
        - name: missing
          image: busybox:1.35
          command: ["sleep", "3600"]
          securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/missing.json}}
        """), "  ")
    kubelet.write("seccomp.yaml", pod_yaml("seccomp", containers))
    pod = kubelet.wait_pod("seccomp", lambda p: waiting(p, "missing").get("reason") == "CreateContainerConfigError"
                           and all("running" in container_status(p, n)["state"] for n in ("confined", "plain")), 60)
    assert waiting(pod, "missing")["message"].startswith(
        "spec.containers[2].securityContext.seccompProfile.localhostProfile: cannot read ")
    code, output = run(kubelet.container("seccomp", "confined"), "mkdir /tmp/d")
    assert code != 0 and "Operation not permitted" in output
    assert run(kubelet.container("seccomp", "plain"), "mkdir /tmp/d") == (0, "")
