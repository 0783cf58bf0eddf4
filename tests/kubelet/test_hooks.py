"""Lifecycle hooks, postStart and preStop, on a real kubelet and real Docker.

postStart: the container is not started (its status still waits) until
the hook returns; a failing hook kills it and the restartPolicy decides.
preStop: runs before the SIGTERM, inside the grace period; a hook that
hangs is cut off when the grace period ends, and the container is killed
MINIMUM_GRACE (2 s) later, as kuberuntime_container.go's killContainer does.
"""
from __future__ import annotations

import time

import pytest

from harness import container_status, pod_yaml, wait_for
from lifecycle_hooks import MINIMUM_GRACE

IGNORES_TERM = "[sh, -c, 'sleep 3600 & wait']"      # PID 1 without a TERM trap: only SIGKILL ends it
STOPS_ON_TERM = "[sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]"


def hook_pod(name: str, lifecycle: str, command: str = STOPS_ON_TERM, grace: int = 1, mounts: str = "",
             volumes: str = "") -> str:
    return pod_yaml(name, f"""\
  - name: app
    image: busybox:1.35
    command: {command}
    lifecycle: {lifecycle}
{mounts}""", volumes=volumes).replace("terminationGracePeriodSeconds: 1", f"terminationGracePeriodSeconds: {grace}")


def shared_dir(tmp_path):
    """A host directory the container writes to, that outlives it."""
    path = tmp_path / "shared"
    path.mkdir()
    path.chmod(0o777)
    return path, ("    volumeMounts: [{name: shared, mountPath: /shared}]\n",
                  f"  volumes:\n  - name: shared\n    hostPath: {{path: {path}}}\n")


def test_a_container_is_not_started_until_its_post_start_hook_returns(kubelet):
    kubelet.write("slowhook.yaml", hook_pod(
        "slowhook", "{postStart: {exec: {command: [sh, -c, 'sleep 3; echo hooked > /tmp/hook']}}}"))
    # Docker runs it, but the hook has not returned: still "being created".
    wait_for(lambda: kubelet.containers("slowhook", all=False) and
             any(c.labels["io.kubernetes.container.name"] == "app" for c in kubelet.containers("slowhook", all=False)),
             30, what="the app container running in Docker")
    pod = kubelet.pod("slowhook")
    assert container_status(pod, "app")["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert container_status(pod, "app")["started"] is False
    # When the status first says running, the hook has done its work.
    pod = kubelet.wait_running("slowhook", timeout=30)
    assert container_status(pod, "app")["started"] is True
    assert kubelet.container("slowhook", "app").exec_run(["cat", "/tmp/hook"]).output == b"hooked\n"


@pytest.mark.parametrize("handler, message", [
    pytest.param("{exec: {command: [sh, -c, 'echo no good; exit 7']}}",
                 'Exec lifecycle hook ([sh -c echo no good; exit 7]) for Container "app" in Pod "failhook_default(',
                 id="exec exits 7"),
    pytest.param("{httpGet: {path: /started, port: 1}}",
                 'HTTP lifecycle hook (/started) for Container "app" in Pod "failhook_default(', id="httpGet refused"),
    pytest.param("{tcpSocket: {port: 80}}", "Cannot run handler: invalid handler:",
                 id="tcpSocket: accepted by the API, never a working hook"),
])
def test_a_failing_post_start_hook_kills_the_container_which_restarts(kubelet, handler, message):
    kubelet.write("failhook.yaml", hook_pod("failhook", f"{{postStart: {handler}}}"))
    pod = kubelet.wait_pod("failhook", lambda p: container_status(p, "app")["restartCount"] >= 1, timeout=60,
                           what="the container killed by its failing hook and restarted")
    log = kubelet.log()
    assert "PostStart hook failed" in log and message in log, log[-2000:]
    assert container_status(pod, "app")["started"] is False or "running" not in container_status(pod, "app")["state"]


def test_pre_stop_runs_before_the_sigterm(kubelet, tmp_path):
    path, (mounts, volumes) = shared_dir(tmp_path)
    kubelet.write("prestop.yaml", hook_pod(
        "prestop", "{preStop: {exec: {command: [sh, -c, 'echo preStop >> /shared/order']}}}",
        command="[sh, -c, \"trap 'echo SIGTERM >> /shared/order; exit 0' TERM; sleep 3600 & wait\"]",
        grace=10, mounts=mounts, volumes=volumes))
    kubelet.wait_running("prestop")
    kubelet.remove("prestop.yaml")
    wait_for(lambda: not kubelet.containers("prestop"), 30, what="the pod removed")
    assert (path / "order").read_text() == "preStop\nSIGTERM\n"


def test_a_pre_stop_hook_that_hangs_is_cut_off_at_the_grace_period(kubelet):
    grace = 3
    kubelet.write("hangs.yaml", hook_pod("hangs", "{preStop: {exec: {command: [sleep, '3600']}}}",
                                         command=IGNORES_TERM, grace=grace))
    kubelet.wait_running("hangs")
    began = time.monotonic()
    kubelet.remove("hangs.yaml")
    wait_for(lambda: not kubelet.containers("hangs", all=False), 60, interval=0.2, what="the container killed")
    took = time.monotonic() - began
    print(f"preStop hanging, grace {grace}s: container killed after {took:.1f}s")
    # The hook had the whole grace period, and the container the 2 s after
    # it (both wait in full: the hook hangs, the app ignores SIGTERM).
    assert took >= grace + MINIMUM_GRACE - 0.5, took
    # Not a speed assertion: without the cut-off it would run for an hour.
    # The margin (10 s) is for a loaded machine: a sync, Docker's stop.
    assert took <= grace + MINIMUM_GRACE + 10, took
    assert "PreStop hook not completed in grace period" in kubelet.log()


def test_an_http_pre_stop_hook_reaches_the_container_and_any_answer_will_do(kubelet):
    # busybox httpd logs each request (-v) to its stderr, which the old
    # container's log keeps when an edit of the manifest replaces it.
    server = "[sh, -c, \"trap 'exit 0' TERM; httpd -f -v -p 8080 & wait\"]"
    manifest = hook_pod("httphook", "{preStop: {httpGet: {path: /bye, port: 8080}}}", command=server, grace=5)
    kubelet.write("httphook.yaml", manifest)
    kubelet.wait_running("httphook")
    first = kubelet.container("httphook", "app")
    kubelet.write("httphook.yaml", manifest.replace("image: busybox:1.35", "image: busybox:1.35\n    workingDir: /tmp"))
    wait_for(lambda: any(c.id != first.id and c.labels["io.kubernetes.container.name"] == "app"
                         for c in kubelet.containers("httphook", all=False)), 30, what="the container replaced")
    # The request arrived (there is no /bye: 404), and a 404 does not fail
    # a hook: unlike a probe, the kubelet does not look at the status code.
    assert b"response:404" in first.logs(), first.logs()
    assert "PreStop hook failed" not in kubelet.log()
