"""Init containers and sidecars, on a real kubelet and real Docker (static pods).

Kubernetes' rules (kuberuntime_manager.go, computeInitContainerActions):
init containers run one at a time, in order, each to success before the
next and before any app container; a failed one is restarted with back-off
(restartPolicy Always or OnFailure) or fails the pod (Never); a new sandbox
runs them all again. A sidecar (an init container with restartPolicy
Always) is started in order, kept running, restarted when it exits, does
not keep a finished pod alive, and is stopped after the app containers.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import docker.errors

import get_pods
from harness import condition, container_status, pod_yaml, wait_for

SLEEPER = "[sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]"


def init_status(pod: dict, name: str) -> dict:
    return next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == name)


def names_in_docker(kubelet, pod: str) -> list[str]:
    return sorted(c.labels["io.kubernetes.container.name"] for c in kubelet.containers(pod))


def seconds(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def test_init_containers_run_in_order_each_to_success_before_the_app(kubelet):
    # The second reads what the first wrote in the shared emptyDir; the app
    # reads what both wrote. Each sleeps a little so that "in order" shows
    # in the times too, not only in the file.
    kubelet.write("ordered.yaml", pod_yaml("ordered", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "cat /work/log; trap 'exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: work, mountPath: /work}]
""", spec_extra="""\
  initContainers:
  - name: first
    image: busybox:1.35
    command: [sh, -c, "sleep 1; echo first >> /work/log"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: busybox:1.35
    command: [sh, -c, "grep -q first /work/log && sleep 1 && echo second saw first >> /work/log"]
    volumeMounts: [{name: work, mountPath: /work}]
""", volumes="  volumes:\n  - name: work\n    emptyDir: {}\n"))
    pod = kubelet.wait_running("ordered", timeout=60)
    first, second = init_status(pod, "first"), init_status(pod, "second")
    for status in (first, second):
        assert status["state"]["terminated"]["reason"] == "Completed", status
        assert status["ready"] is True and status["restartCount"] == 0
    assert seconds(second["state"]["terminated"]["startedAt"]) >= seconds(first["state"]["terminated"]["finishedAt"])
    app_started = container_status(pod, "app")["state"]["running"]["startedAt"]
    assert seconds(app_started) >= seconds(second["state"]["terminated"]["finishedAt"])
    assert condition(pod, "Initialized") == "True"
    app = kubelet.container("ordered", "app")
    wait_for(lambda: app.logs() == b"first\nsecond saw first\n", 10, what="the app read both init containers' lines")


def test_a_pod_waits_in_its_init_container(kubelet):
    kubelet.write("waits.yaml", pod_yaml("waits", f"""\
  - name: app
    image: busybox:1.35
    command: {SLEEPER}
""", spec_extra=f"""\
  initContainers:
  - name: slow
    image: busybox:1.35
    command: {SLEEPER}
"""))
    pod = kubelet.wait_pod("waits", lambda p: "running" in init_status(p, "slow")["state"], what="init running")
    kubelet.wait_syncs(3)                          # nothing else may start meanwhile (an absence)
    pod = kubelet.pod("waits")
    assert names_in_docker(kubelet, "waits") == ["POD", "slow"]
    assert pod["status"]["phase"] == "Pending"
    assert container_status(pod, "app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    initialized = next(c for c in pod["status"]["conditions"] if c["type"] == "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "ContainersNotInitialized")
    assert initialized["message"] == "containers with incomplete status: [slow]"


def test_a_failing_init_container_restarts_with_back_off_and_the_app_never_starts(kubelet):
    kubelet.write("initfail.yaml", pod_yaml("initfail", f"""\
  - name: app
    image: busybox:1.35
    command: {SLEEPER}
""", spec_extra="""\
  initContainers:
  - name: setup
    image: busybox:1.35
    command: [sh, -c, "exit 3"]
"""))
    pod = kubelet.wait_pod("initfail", lambda p: init_status(p, "setup")["restartCount"] >= 2
                           and init_status(p, "setup")["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff",
                           timeout=60, what="setup restarted twice, now in CrashLoopBackOff")
    setup = init_status(pod, "setup")
    assert setup["lastState"]["terminated"]["exitCode"] == 3
    assert pod["status"]["phase"] == "Pending"
    assert "app" not in names_in_docker(kubelet, "initfail")


def test_a_failing_init_container_fails_the_pod_under_restart_policy_never(kubelet):
    kubelet.write("never.yaml", pod_yaml("never", f"""\
  - name: app
    image: busybox:1.35
    command: {SLEEPER}
""", spec_extra=f"""\
  restartPolicy: Never
  initContainers:
  - name: helper
    image: busybox:1.35
    restartPolicy: Always
    command: {SLEEPER}
  - name: setup
    image: busybox:1.35
    command: [sh, -c, "exit 3"]
"""))
    pod = kubelet.wait_phase("never", "Failed", timeout=60)
    assert init_status(pod, "setup")["state"]["terminated"]["exitCode"] == 3
    assert init_status(pod, "setup")["restartCount"] == 0
    kubelet.wait_syncs(3)                          # and it stays so: no restart, no app (an absence)
    assert "app" not in names_in_docker(kubelet, "never")
    assert init_status(kubelet.pod("never"), "setup")["restartCount"] == 0
    # The sidecar does not keep a failed pod alive.
    wait_for(lambda: not kubelet.containers("never", all=False), 20, what="sidecar and sandbox stopped")


def test_a_new_sandbox_runs_the_init_containers_again(kubelet, docker_client):
    kubelet.write("again.yaml", pod_yaml("again", f"""\
  - name: app
    image: busybox:1.35
    command: {SLEEPER}
""", spec_extra="""\
  initContainers:
  - name: setup
    image: busybox:1.35
    command: [sh, -c, "true"]
"""))
    kubelet.wait_running("again", timeout=60)
    kubelet.container("again", "POD").kill()      # the pod's network namespace is gone
    pod = kubelet.wait_pod("again", lambda p: init_status(p, "setup")["restartCount"] == 1
                           and "running" in container_status(p, "app")["state"]
                           and container_status(p, "app")["restartCount"] == 1,
                           timeout=60, what="setup ran again in the new sandbox, then the app")
    assert init_status(pod, "setup")["state"]["terminated"]["reason"] == "Completed"


# --- sidecars ---------------------------------------------------------------

SIDECAR_POD = """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "trap 'echo app stopping >> /work/order; exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: work, mountPath: /work}]
""", """\
  initContainers:
  - name: logger
    image: busybox:1.35
    restartPolicy: Always
    command: [sh, -c, "trap 'sleep 1; echo logger stopping >> /work/order; exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: after-logger
    image: busybox:1.35
    command: [sh, -c, "true"]
"""


def test_a_sidecar_runs_beside_the_app_is_restarted_and_is_stopped_last(make_kubelet, tmp_path):
    kubelet = make_kubelet()
    body, extra = SIDECAR_POD
    host_dir = tmp_path / "order"
    host_dir.mkdir()
    host_dir.chmod(0o777)
    kubelet.write("sidecar.yaml", pod_yaml("sidecar", body, spec_extra=extra, volumes=(
        f"  volumes:\n  - name: work\n    hostPath: {{path: {host_dir}}}\n")).replace(
        "terminationGracePeriodSeconds: 1", "terminationGracePeriodSeconds: 10"))
    pod = kubelet.wait_running("sidecar", timeout=60)
    logger = init_status(pod, "logger")
    assert "running" in logger["state"] and logger["started"] is True and logger["ready"] is True
    assert init_status(pod, "after-logger")["state"]["terminated"]["reason"] == "Completed"
    assert pod["spec"]["containers"][0]["name"] == "app" and pod["status"]["phase"] == "Running"

    # A sidecar that dies is restarted, while the app keeps running.
    app_id = kubelet.container("sidecar", "app").id
    kubelet.container("sidecar", "logger").kill()
    pod = kubelet.wait_pod("sidecar", lambda p: init_status(p, "logger")["restartCount"] == 1
                           and "running" in init_status(p, "logger")["state"], timeout=30, what="logger restarted")
    assert kubelet.container("sidecar", "app").id == app_id
    assert init_status(pod, "after-logger")["restartCount"] == 0      # initialization is not redone

    # Removing the pod stops the app first, the sidecar after it.
    kubelet.remove("sidecar.yaml")
    wait_for(lambda: not kubelet.containers("sidecar"), 30, what="the pod's containers removed")
    assert (host_dir / "order").read_text() == "app stopping\nlogger stopping\n", kubelet.log()[-3000:]


def test_a_sidecar_does_not_keep_a_finished_pod_alive(kubelet):
    kubelet.write("job.yaml", pod_yaml("job", """\
  - name: work
    image: busybox:1.35
    command: [sh, -c, "sleep 1"]
""", spec_extra=f"""\
  restartPolicy: Never
  initContainers:
  - name: proxy
    image: busybox:1.35
    restartPolicy: Always
    command: {SLEEPER}
"""))
    pod = kubelet.wait_phase("job", "Succeeded", timeout=60)
    assert container_status(pod, "work")["state"]["terminated"]["reason"] == "Completed"
    assert "terminated" in init_status(pod, "proxy")["state"]
    assert next(c for c in pod["status"]["conditions"] if c["type"] == "Initialized").get("reason") == "PodCompleted"
    wait_for(lambda: not kubelet.containers("job", all=False), 20, what="sidecar and sandbox stopped")
    kubelet.wait_syncs(3)
    assert init_status(kubelet.pod("job"), "proxy")["restartCount"] == 0     # and not restarted


EXAMPLES = Path(__file__).parent / "examples"


@contextlib.contextmanager
def busybox_named(docker_client, name: str):
    """The offline busybox:1.35 under the name a kubernetes.io example uses,
    for the duration of a test. A name that is already there is left alone
    (it is not ours to remove)."""
    try:
        docker_client.images.get(name)
        yield
        return
    except docker.errors.ImageNotFound:
        pass
    repository, _, tag = name.partition(":")
    docker_client.images.get("busybox:1.35").tag(repository, tag or "latest")
    try:
        yield
    finally:
        with contextlib.suppress(docker.errors.APIError):
            docker_client.images.remove(name, noprune=True)


def test_the_init_containers_concept_pages_pod_waits_in_init_0_of_2(kubelet, docker_client):
    """myapp.yaml of the "Init Containers" page: its init containers wait for
    the DNS names myservice and mydb, which no cluster here has; the page
    shows it as Init:0/2 until the Services exist, and so do we."""
    with busybox_named(docker_client, "busybox:1.28"):
        kubelet.write("myapp.yaml", (EXAMPLES / "myapp.yaml").read_text())
        pod = kubelet.wait_pod("myapp-pod", lambda p: "running" in init_status(p, "init-myservice")["state"],
                               timeout=60, what="the first init container waiting for myservice")
        container = kubelet.container("myapp-pod", "init-myservice")
        wait_for(lambda: b"waiting for myservice" in container.logs(), 20, what="it says it waits")
        pod = kubelet.pod("myapp-pod")
        assert init_status(pod, "init-mydb")["state"] == {"waiting": {"reason": "PodInitializing"}}
        assert pod["status"]["phase"] == "Pending"
        assert get_pods.status_column(pod) == "Init:0/2" and get_pods.ready(pod) == "0/1"
        # Its shell ignores SIGTERM, so a graceful removal would wait out the
        # default 30 s grace, which other tests grade: remove it at once,
        # while its image's name still exists.
        kubelet.cleanup()


def test_the_configure_pod_initialization_example_fails_offline_in_its_init_container(kubelet, docker_client):
    """pods/init-containers.yaml (init-demo): its init container fetches
    http://info.cern.ch, which this offline machine cannot reach, so it
    fails and restarts with back-off, and nginx (not here) is never asked
    for: the app container waits for initialization, as it should."""
    with busybox_named(docker_client, "busybox:latest"):
        kubelet.write("init-demo.yaml", (EXAMPLES / "init-containers.yaml").read_text())
        pod = kubelet.wait_pod("init-demo", lambda p: init_status(p, "install")["restartCount"] >= 1,
                               timeout=60, what="install failed and was restarted")
        assert init_status(pod, "install")["lastState"]["terminated"]["exitCode"] != 0
        assert "nginx" not in names_in_docker(kubelet, "init-demo")
        assert container_status(pod, "nginx")["state"] == {"waiting": {"reason": "PodInitializing"}}
        assert get_pods.status_column(pod) in ("Init:Error", "Init:CrashLoopBackOff", "Init:0/1")
        kubelet.remove("init-demo.yaml")
        wait_for(lambda: not kubelet.containers("init-demo"), 30, what="example pod removed")
