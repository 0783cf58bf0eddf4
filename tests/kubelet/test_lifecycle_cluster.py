"""Init containers, hooks and grace periods through the API server, read by the real kubectl.

One API server process and one kubelet joined to it (module scope); each
test makes its own pods. What is checked is what a learner reads:
`kubectl get pods`' READY and STATUS for each init state (Init:0/2,
Init:1/2, PodInitializing, Init:Error, Init:CrashLoopBackOff, and
Init:ExitCode:N / Init:Signal:N, which only a runtime that reports no
reason produces, so their statuses are written through the API), the hook
Events of `kubectl describe`, and `kubectl delete --grace-period`.
"""
from __future__ import annotations

import time

import pytest

from apiserver_harness import APIServer, Client, unique
from harness import Kubelet
from lifecycle_hooks import MINIMUM_GRACE
from polling import wait_for
from test_cluster import container, create_pod, get_pod, join, pod_row, wait_events
from test_kubectl import Kubectl


class Cluster:
    def __init__(self, server: APIServer, kubelet: Kubelet, k: Kubectl):
        self.server, self.kubelet, self.k = server, kubelet, k
        self.api = Client(server.url)

    def logs(self) -> str:
        return f"--- kubelet ---\n{self.kubelet.log()[-3000:]}\n--- apiserver ---\n{self.server.log()[-1500:]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client, kubectl):
    tmp = tmp_path_factory.mktemp("lifecycle")
    server = APIServer(tmp / "data").start()
    kubelet = None
    try:
        kubelet = join(tmp, docker_client, server, unique("node"))
        api = Client(server.url)
        wait_for(lambda: api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, 30, what="node registered")
        yield Cluster(server, kubelet, Kubectl(kubectl, server.url, "default", tmp))
    finally:
        if kubelet:
            kubelet.cleanup()
        server.stop()


def wait_row(cluster: Cluster, name: str, status: str, ready: str | None = None, timeout: float = 30) -> dict:
    """Wait until `kubectl get pod NAME` shows that STATUS (and READY)."""
    def probe():
        row = pod_row(cluster.k, name)
        return row if row["STATUS"] == status and ready in (None, row["READY"]) else None
    try:
        return wait_for(probe, timeout, interval=0.3, what=f"pod {name}: STATUS {status} READY {ready}")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{cluster.logs()}") from None


def gate(path: str) -> list[str]:
    """A command that waits until a file appears in the shared host folder."""
    return ["sh", "-c", f"until [ -e /gate/{path} ]; do sleep 0.2; done"]


def test_init_states_read_as_kubectl_prints_them(cluster, tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    mount = {"volumeMounts": [{"name": "gate", "mountPath": "/gate"}]}
    name = unique("init")
    create_pod(cluster.api, name, cluster.kubelet.node_name,
               [container("app", "trap 'exit 0' TERM; sleep 3600 & wait", **mount,
                          lifecycle={"postStart": {"exec": {"command": gate("app")}}})],
               initContainers=[{"name": "one", "image": "busybox:1.35", "command": gate("one"), **mount},
                               {"name": "two", "image": "busybox:1.35", "command": gate("two"), **mount}],
               volumes=[{"name": "gate", "hostPath": {"path": str(gates)}}])
    wait_row(cluster, name, "Init:0/2", "0/1")
    (gates / "one").touch()
    wait_row(cluster, name, "Init:1/2", "0/1")
    (gates / "two").touch()
    # Initialized, but the app's postStart hook has not returned.
    wait_row(cluster, name, "PodInitializing", "0/1")
    pod = get_pod(cluster.api, name)
    assert next(c for c in pod["status"]["conditions"] if c["type"] == "Initialized")["status"] == "True"
    (gates / "app").touch()
    wait_row(cluster, name, "Running", "1/1")


def test_a_failing_init_container_reads_init_error_then_init_crash_loop_back_off(cluster):
    never, always = unique("never"), unique("always")
    for name, policy in ((never, "Never"), (always, "Always")):
        create_pod(cluster.api, name, cluster.kubelet.node_name, [container("app", "sleep 3600")],
                   restartPolicy=policy, initContainers=[container("setup", "exit 3")])
    row = wait_row(cluster, never, "Init:Error", "0/1")
    assert get_pod(cluster.api, never)["status"]["phase"] == "Failed"
    row = wait_row(cluster, always, "Init:CrashLoopBackOff", "0/1", timeout=60)
    assert int(row["RESTARTS"].split()[0]) >= 1
    assert get_pod(cluster.api, always)["status"]["phase"] == "Pending"


@pytest.mark.parametrize("terminated, shown", [
    ({"exitCode": 3}, "Init:ExitCode:3"),
    ({"exitCode": 137, "signal": 9}, "Init:Signal:9"),
    ({"exitCode": 1, "reason": "Error"}, "Init:Error"),
])
def test_init_exit_codes_and_signals_without_a_reason(cluster, terminated, shown):
    """Docker always gives a reason, so our kubelet never leaves it empty;
    other runtimes may. The status is written as such a kubelet would."""
    name = unique("written")
    create_pod(cluster.api, name, "nowhere", [container("app", "true")],
               initContainers=[container("setup", "true"), container("second", "true")])
    status = {"phase": "Pending", "initContainerStatuses": [
        {"name": "setup", "image": "busybox:1.35", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": terminated}, "lastState": {}},
        {"name": "second", "image": "busybox:1.35", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"waiting": {"reason": "PodInitializing"}}, "lastState": {}}]}
    response = cluster.api.patch(f"/api/v1/namespaces/default/pods/{name}/status", {"status": status})
    assert response.status_code == 200, response.text
    assert pod_row(cluster.k, name)["STATUS"] == shown


def events_of(cluster: Cluster, name: str) -> list[tuple[str, str, str]]:
    items = cluster.api.get(f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name={name}").json()
    return [(e["type"], e["reason"], e["message"]) for e in items["items"]]


def test_hook_failures_are_events_without_the_hooks_output(cluster):
    name = unique("hooks")
    create_pod(cluster.api, name, cluster.kubelet.node_name,
               [container("app", "trap 'exit 0' TERM; sleep 3600 & wait",
                          lifecycle={"postStart": {"exec": {"command": ["sh", "-c", "echo secret; exit 1"]}}})])
    rows = wait_events(cluster, name, {("Warning", "FailedPostStartHook"), ("Normal", "Killing")})
    assert {(r["Reason"], r["Message"]) for r in rows} >= {("FailedPostStartHook", "PostStartHook failed"),
                                                            ("Killing", "FailedPostStartHook")}
    assert all("secret" not in r["Message"] for r in rows)

    stopping = unique("prestop")
    create_pod(cluster.api, stopping, cluster.kubelet.node_name,
               [container("app", "trap 'exit 0' TERM; sleep 3600 & wait",
                          lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "exit 1"]}}})])
    wait_row(cluster, stopping, "Running", "1/1")
    cluster.k("delete", "pod", stopping, "--wait=false")
    wait_for(lambda: ("Warning", "FailedPreStopHook", "PreStopHook failed") in events_of(cluster, stopping), 30,
             what="the FailedPreStopHook event")


def test_kubectl_delete_grace_period_reaches_the_container(cluster):
    """The pod's own grace period is a minute and its container ignores
    SIGTERM; `kubectl delete --grace-period=3` must end it in 3 s (+ the
    2 s minimum after SIGTERM), not 60."""
    name = unique("grace")
    create_pod(cluster.api, name, cluster.kubelet.node_name, [container("app", "sleep 3600 & wait")],
               terminationGracePeriodSeconds=60)
    wait_row(cluster, name, "Running", "1/1")
    began = time.monotonic()
    cluster.k("delete", "pod", name, "--grace-period=3", "--wait=false")
    assert get_pod(cluster.api, name)["metadata"]["deletionGracePeriodSeconds"] == 3
    wait_for(lambda: get_pod(cluster.api, name) is None, 60, interval=0.2, what="pod gone from the API")
    took = time.monotonic() - began
    print(f"kubectl delete --grace-period=3 of a pod whose own is 60s: gone after {took:.1f}s")
    # Not a speed test: with the pod's own 60 s it would take a minute. The
    # 10 s margin is for a loaded machine (a sync, Docker's stop, the delete).
    assert 3 <= took <= 3 + MINIMUM_GRACE + 10, took
    assert "grace=3s" in cluster.kubelet.log()
