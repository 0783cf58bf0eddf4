"""startupProbe on a real kubelet and real Docker.

Until the startup probe succeeds the container is not "started" (status
started: false, not ready) and its liveness and readiness probes do not
run at all; failureThreshold failures kill it and the restartPolicy
restarts it. A sidecar with a startup probe holds back the next init
container until the probe succeeds.
"""
from __future__ import annotations

from harness import container_status, pod_yaml, wait_for

# Becomes healthy (writes /tmp/up) only after 4 s: a slow starter.
SLOW_STARTER = "[sh, -c, \"trap 'exit 0' TERM; sleep 4; touch /tmp/up; sleep 3600 & wait\"]"
IS_UP = "{exec: {command: [cat, /tmp/up]}, periodSeconds: 1"


def init_status(pod: dict, name: str) -> dict:
    return next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == name)


def test_the_startup_probe_holds_off_liveness_until_it_succeeds(kubelet):
    # The liveness probe alone would kill it at its first failure, in the
    # first second; behind the startup probe, it never fails.
    kubelet.write("slow.yaml", pod_yaml("slow", f"""\
  - name: app
    image: busybox:1.35
    command: {SLOW_STARTER}
    startupProbe: {IS_UP}, failureThreshold: 30}}
    livenessProbe: {IS_UP}, failureThreshold: 1}}
    readinessProbe: {IS_UP}}}
"""))
    pod = kubelet.wait_pod("slow", lambda p: "running" in container_status(p, "app")["state"], what="running")
    app = container_status(pod, "app")
    assert (app["started"], app["ready"]) == (False, False)
    pod = kubelet.wait_pod("slow", lambda p: container_status(p, "app")["started"], timeout=30, what="started")
    pod = kubelet.wait_pod("slow", lambda p: container_status(p, "app")["ready"], timeout=15, what="ready")
    kubelet.wait_syncs(4)                       # no restart comes after (an absence)
    assert container_status(kubelet.pod("slow"), "app")["restartCount"] == 0
    assert "Liveness probe failed" not in kubelet.log()


def test_a_startup_probe_that_keeps_failing_restarts_the_container(kubelet):
    kubelet.write("never-up.yaml", pod_yaml("never-up", f"""\
  - name: app
    image: busybox:1.35
    command: {SLOW_STARTER.replace("touch /tmp/up; ", "")}
    startupProbe: {IS_UP}, failureThreshold: 2}}
"""))
    pod = kubelet.wait_pod("never-up", lambda p: container_status(p, "app")["restartCount"] >= 1, timeout=60,
                           what="restarted after its startup probe failed twice")
    assert "Startup probe failed, container will be restarted" in kubelet.log()
    assert container_status(pod, "app")["started"] is False


def test_a_sidecars_startup_probe_holds_back_the_next_init_container(kubelet):
    kubelet.write("gated.yaml", pod_yaml("gated", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "sleep 3600"]
""", spec_extra=f"""\
  initContainers:
  - name: proxy
    image: busybox:1.35
    restartPolicy: Always
    command: {SLOW_STARTER}
    startupProbe: {IS_UP}, failureThreshold: 30}}
  - name: migrate
    image: busybox:1.35
    command: [sh, -c, "true"]
"""))
    pod = kubelet.wait_pod("gated", lambda p: "running" in init_status(p, "proxy")["state"], what="proxy running")
    assert init_status(pod, "proxy")["started"] is False
    assert init_status(pod, "migrate")["state"] == {"waiting": {"reason": "PodInitializing"}}
    import get_pods
    assert get_pods.status_column(pod) == "Init:0/2"
    pod = kubelet.wait_pod("gated", lambda p: "running" in container_status(p, "app")["state"], timeout=30,
                           what="the app running once proxy started and migrate finished")
    proxy, migrate = init_status(pod, "proxy"), init_status(pod, "migrate")
    assert proxy["started"] is True and migrate["state"]["terminated"]["reason"] == "Completed"
    # migrate began only after proxy had written /tmp/up (4 s after it started).
    started = proxy["state"]["running"]["startedAt"]
    assert migrate["state"]["terminated"]["startedAt"] > started
    wait_for(lambda: get_pods.status_column(kubelet.pod("gated")) == "Running", 10, what="STATUS Running")
    assert get_pods.ready(kubelet.pod("gated")) == "2/2"


def test_a_failed_probe_kills_within_its_own_grace_period(kubelet):
    """The probe's terminationGracePeriodSeconds (1 s) is the kill's, not
    the pod's (60 s): the container, which ignores SIGTERM, is restarted
    in seconds, not in a minute."""
    kubelet.write("stuck.yaml", pod_yaml("stuck", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "sleep 3600 & wait"]
    livenessProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 1,
                    terminationGracePeriodSeconds: 1}
""").replace("terminationGracePeriodSeconds: 1\n  containers", "terminationGracePeriodSeconds: 60\n  containers"))
    pod = kubelet.wait_pod("stuck", lambda p: container_status(p, "app")["restartCount"] >= 1, timeout=30,
                           what="restarted after its liveness probe failed (60 s grace would time this out)")
    assert container_status(pod, "app")["lastState"]["terminated"]["exitCode"] == 137
    assert "grace=1s" in kubelet.log()
