"""The kubelet's pure logic, table-driven: no Docker needed.

compute_pod_actions and pod_phase are functions of data (a pod spec and
ContainerInfo records as Docker would report them), so their rules are
checked here case by case; the Docker tests check that they hold for real.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

import pod_config as cfg
from common.client.backoff import Backoff
from docker_runtime import ContainerInfo
from pod_actions import ProbeResults, compute_pod_actions
from pod_status import Waiting, pod_phase, pod_status, qos_class

NOW = 1_000_000.0


def make_pod(policy="Always", containers=("app",), **container_extra):
    spec = {"restartPolicy": policy, "terminationGracePeriodSeconds": 30,
            "containers": [{"name": n, "image": "busybox:1.35", **container_extra} for n in containers]}
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec}


def info(pod, name, state="running", exit_code=0, restart_count=0, sandbox="sb", error="", finished=NOW - 100,
         hash_=None, id_=None):
    if name == cfg.SANDBOX_NAME:
        hash_ = hash_ or cfg.sandbox_hash(pod)
    elif hash_ is None:
        spec = next(c for c in pod["spec"]["containers"] if c["name"] == name)
        hash_ = cfg.container_hash(pod, spec)
    return ContainerInfo(id=id_ or (sandbox if name == cfg.SANDBOX_NAME else f"{name}-{restart_count}"),
                         name=name, pod_uid="u1", pod_namespace="default", pod_name="p", hash=hash_,
                         restart_count=restart_count, sandbox_id=sandbox, grace_period=30, state=state,
                         exit_code=exit_code, oom_killed=False, error=error,
                         started_at=NOW - 200, finished_at=None if state == "running" else finished,
                         created=NOW - 200 + restart_count, image="busybox:1.35", image_id="sha256:x", ip="10.0.0.2")


def plan(pod, containers, crash=None, failed_liveness=None):
    return compute_pod_actions(pod, containers, {}, ProbeResults(failed_liveness=failed_liveness or {}),
                               crash or Backoff(10, 300, clock=lambda: NOW), Backoff(10, 300, clock=lambda: NOW), NOW)


def summary(actions):
    return {"sandbox": actions.create_sandbox, "stop_sandbox": actions.stop_sandbox,
            "start": [(s.container["name"], s.restart_count) for s in actions.start],
            "kill": [c.name for c, _ in actions.kill], "remove": sorted(c.id for c in actions.remove),
            "waiting": {n: w.reason for n, w in actions.waiting.items()}}


def nothing(**changes):
    base = {"sandbox": False, "stop_sandbox": False, "start": [], "kill": [], "remove": [], "waiting": {}}
    return {**base, **changes}


POD = make_pod()
NEVER = make_pod("Never")
ONFAILURE = make_pod("OnFailure")
SB = info(POD, cfg.SANDBOX_NAME)


@pytest.mark.parametrize("pod, containers, expected", [
    pytest.param(POD, [], nothing(sandbox=True, start=[("app", 0)]), id="new pod: sandbox, then containers"),
    pytest.param(POD, [SB, info(POD, "app")], nothing(), id="running as specified: nothing to do"),
    pytest.param(POD, [SB, info(POD, "app", hash_="old")], nothing(kill=["app"], start=[("app", 1)]),
                 id="spec changed: replace that container"),
    pytest.param(POD, [SB, info(POD, "app", "exited", 1)], nothing(start=[("app", 1)]),
                 id="crashed, Always: restart"),
    pytest.param(POD, [SB, info(POD, "app", "exited", 0)], nothing(start=[("app", 1)]),
                 id="exited 0, Always: restart"),
    pytest.param(ONFAILURE, [info(ONFAILURE, cfg.SANDBOX_NAME), info(ONFAILURE, "app", "exited", 0)],
                 nothing(stop_sandbox=True), id="exited 0, OnFailure: done, release the sandbox"),
    pytest.param(ONFAILURE, [info(ONFAILURE, cfg.SANDBOX_NAME), info(ONFAILURE, "app", "exited", 2)],
                 nothing(start=[("app", 1)]), id="failed, OnFailure: restart"),
    pytest.param(NEVER, [info(NEVER, cfg.SANDBOX_NAME), info(NEVER, "app", "exited", 2)],
                 nothing(stop_sandbox=True), id="failed, Never: done"),
    pytest.param(NEVER, [info(NEVER, cfg.SANDBOX_NAME, "exited"), info(NEVER, "app", "exited", 2)],
                 nothing(), id="finished pod stays finished: no new sandbox"),
    pytest.param(POD, [SB, info(POD, "app", "created")], nothing(start=[("app", 0)], remove=["app-0"]),
                 id="created but never started (kubelet died): replace"),
    pytest.param(POD, [info(POD, cfg.SANDBOX_NAME, "exited"), info(POD, "app")],
                 nothing(sandbox=True, kill=["app"], start=[("app", 1)], remove=["sb"]),
                 id="sandbox died: new sandbox, containers restart in it"),
    pytest.param(POD, [SB, info(POD, "app", "exited", 1, 0), info(POD, "app", "exited", 1, 1),
                       info(POD, "app", "running", 0, 2)],
                 nothing(remove=["app-0"]), id="keep the current and previous container, remove older"),
    pytest.param(POD, [SB, info(POD, "app"), replace(info(POD, "app"), name="old", id="old-0")],
                 nothing(kill=["old"], remove=["old-0"]), id="container edited out of the spec"),
])
def test_compute_pod_actions(pod, containers, expected):
    assert summary(plan(pod, containers)) == expected


def finished(pod, phase):
    return {**pod, "status": {"phase": phase}}


SUCCEEDED = finished(ONFAILURE, "Succeeded")


@pytest.mark.parametrize("pod, containers, expected", [
    pytest.param(SUCCEEDED, [], nothing(), id="its containers removed: not run again (a Job's pod ran twice)"),
    pytest.param(finished(NEVER, "Failed"), [info(NEVER, cfg.SANDBOX_NAME)], nothing(stop_sandbox=True),
                 id="only its sandbox runs: stopped"),
    pytest.param(finished(POD, "Failed"), [SB, info(POD, "app")], nothing(kill=["app"], stop_sandbox=True),
                 id="failed by someone else (Always): stopped, not restarted"),
])
def test_a_pod_the_api_server_has_as_finished_never_runs_again(pod, containers, expected):
    assert summary(plan(pod, containers)) == expected


def test_a_finished_pods_status_stays_what_the_api_server_has_once_its_containers_go():
    api_status = {"phase": "Succeeded", "containerStatuses": [{"name": "app", "state": {"terminated": {"exitCode": 0}}}]}
    pod = {**ONFAILURE, "status": api_status}
    assert pod_status(pod, [], {}, {}, "", "10.0.0.1", NOW - 100, now=NOW) == api_status
    done = [info(ONFAILURE, "app", "exited", 0)]         # still there: reported as usual
    assert pod_status(pod, done, {}, {}, "", "10.0.0.1", NOW - 100, now=NOW)["phase"] == "Succeeded"


def test_crash_loop_back_off_waits_then_restarts():
    clock = [NOW]
    backoff = Backoff(10, 300, clock=lambda: clock[0])
    backoff.next(cfg.backoff_key(POD, POD["spec"]["containers"][0]))   # it crashed once before
    dead = info(POD, "app", "exited", 1, finished=NOW - 3)
    actions = compute_pod_actions(POD, [SB, dead], {}, ProbeResults(), backoff, Backoff(10, 300), NOW)
    assert summary(actions) == nothing(waiting={"app": "CrashLoopBackOff"})
    assert "back-off 10s restarting failed container=app pod=p_default(u1)" == actions.waiting["app"].message
    clock[0] = NOW + 8                               # 11 s after it died
    actions = compute_pod_actions(POD, [SB, dead], {}, ProbeResults(), backoff, Backoff(10, 300), NOW + 8)
    assert summary(actions) == nothing(start=[("app", 1)])


@pytest.mark.parametrize("pod, expected", [
    pytest.param(POD, nothing(kill=["app"], start=[("app", 1)]), id="Always: restart at once"),
    pytest.param(ONFAILURE, nothing(kill=["app"], start=[("app", 1)]), id="OnFailure: restart, whatever the exit code"),
    pytest.param(NEVER, nothing(kill=["app"]), id="Never: stopped for good"),
])
def test_liveness_failure_kills_and_restarts_unless_never(pod, expected):
    running = info(pod, "app")
    actions = plan(pod, [info(pod, cfg.SANDBOX_NAME), running], failed_liveness={running.id: "exit code 1"})
    assert summary(actions) == expected
    assert actions.kill[0][1].startswith("Liveness probe failed")


@pytest.mark.parametrize("pod", [POD, ONFAILURE, NEVER], ids=["Always", "OnFailure", "Never"])
def test_a_changed_spec_runs_whatever_the_restart_policy(pod):
    sandbox = info(pod, cfg.SANDBOX_NAME)
    assert summary(plan(pod, [sandbox, info(pod, "app", hash_="old")])) == nothing(kill=["app"], start=[("app", 1)])
    # Also when the old container had already stopped (exit 0: "finished").
    assert summary(plan(pod, [sandbox, info(pod, "app", "exited", 0, hash_="old")])) == nothing(start=[("app", 1)])


def test_a_failed_sandbox_is_retried_with_back_off():
    clock = [NOW]
    backoff = Backoff(10, 300, clock=lambda: clock[0])
    key = ("u1", cfg.SANDBOX_NAME, cfg.sandbox_hash(POD))
    backoff.next(key)
    failed = {cfg.SANDBOX_NAME: Waiting("FailedCreatePodSandBox", "port is already allocated", NOW - 1, key[2])}
    actions = compute_pod_actions(POD, [], failed, ProbeResults(), Backoff(10, 300), backoff, NOW)
    assert summary(actions) == nothing(waiting={"app": "ContainerCreating"})
    assert actions.waiting["app"].message == "port is already allocated"
    clock[0] = NOW + 11                              # the back-off has run out: try again
    later = compute_pod_actions(POD, [], failed, ProbeResults(), Backoff(10, 300), backoff, NOW + 11)
    assert summary(later) == nothing(sandbox=True, start=[("app", 0)])


def test_a_fixed_image_is_not_held_back_by_the_old_images_back_off():
    backoff = Backoff(10, 300, clock=lambda: NOW)
    old = {"app": Waiting("ErrImagePull", "no such image", NOW - 1, "hash-of-the-old-spec")}
    backoff.next(("u1", "app", "hash-of-the-old-spec"))
    actions = compute_pod_actions(POD, [SB], old, ProbeResults(), Backoff(10, 300), backoff, NOW)
    assert summary(actions) == nothing(start=[("app", 0)])
    same = {"app": Waiting("ErrImagePull", "no such image", NOW - 1, cfg.backoff_key(POD, POD["spec"]["containers"][0])[2])}
    backoff.next(cfg.backoff_key(POD, POD["spec"]["containers"][0]))
    assert summary(compute_pod_actions(POD, [SB], same, ProbeResults(), Backoff(10, 300), backoff, NOW)) == nothing(
        waiting={"app": "ImagePullBackOff"})


def test_backoff_doubles_to_the_maximum_and_resets():
    clock = [0.0]
    backoff = Backoff(10, 300, clock=lambda: clock[0])
    delays = [backoff.next("k") for _ in range(8)]
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]
    clock[0] = 601                                   # quiet for twice the maximum
    assert backoff.next("k") == 10


def status(state, last=None):
    return {"state": state, "lastState": last or {}}


RUNNING = {"running": {}}
WAITING = {"waiting": {"reason": "ContainerCreating"}}
OK = {"terminated": {"exitCode": 0}}
FAIL = {"terminated": {"exitCode": 1}}
BACKOFF = {"waiting": {"reason": "CrashLoopBackOff"}}


@pytest.mark.parametrize("policy, statuses, phase", [
    ("Always", [status(WAITING)], "Pending"),
    ("Always", [status(RUNNING), status(WAITING)], "Pending"),
    ("Always", [status(RUNNING), status(RUNNING)], "Running"),
    ("Always", [status(RUNNING), status(OK)], "Running"),
    ("Always", [status(BACKOFF, FAIL)], "Running"),
    ("Always", [status(OK)], "Running"),
    ("OnFailure", [status(OK), status(OK)], "Succeeded"),
    ("OnFailure", [status(FAIL)], "Running"),
    ("OnFailure", [status(BACKOFF, FAIL)], "Running"),
    ("Never", [status(OK), status(FAIL)], "Failed"),
    ("Never", [status(OK)], "Succeeded"),
    ("Never", [status(RUNNING), status(FAIL)], "Running"),
])
def test_pod_phase(policy, statuses, phase):
    assert pod_phase({"restartPolicy": policy}, statuses) == phase


@pytest.mark.parametrize("resources, qos", [
    ([{}], "BestEffort"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}], "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}], "Burstable"),
    ([{"requests": {"memory": "64Mi"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
])
def test_qos_class(resources, qos):
    assert qos_class({"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}) == qos


@pytest.mark.parametrize("text, env, expected", [
    ("$(A)", {"A": "x"}, "x"),
    ("$(A)-$(B)", {"A": "x"}, "x-$(B)"),
    ("$$(A)", {"A": "x"}, "$(A)"),
    ("$$$(A)", {"A": "x"}, "$x"),
    ("$A", {"A": "x"}, "$A"),
    ("$(A", {"A": "x"}, "$(A"),
    ("", {}, ""),
])
def test_env_expansion(text, env, expected):
    assert cfg.expand(text, env) == expected


@pytest.mark.parametrize("container, expected", [
    ({}, (None, None)),
    ({"command": ["sh", "-c"]}, (["sh", "-c"], None)),
    ({"args": ["echo", "$(X)"]}, (None, ["echo", "1"])),
    ({"command": ["a"], "args": ["b"]}, (["a"], ["b"])),
])
def test_command_and_args_keep_kubernetes_meaning(container, expected):
    assert cfg.command_line(container, {"X": "1"}) == expected


def test_hash_changes_with_the_container_and_its_volume_only():
    pod = make_pod(containers=("a", "b"))
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v"}]
    pod["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    a, b = (cfg.container_hash(pod, c) for c in pod["spec"]["containers"])
    pod["spec"]["volumes"][0]["emptyDir"] = {"medium": "Memory"}
    assert cfg.container_hash(pod, pod["spec"]["containers"][0]) != a
    assert cfg.container_hash(pod, pod["spec"]["containers"][1]) == b


# --- init containers and sidecars (computeInitContainerActions) -------------------

def init_pod(policy="Always", sidecar=False):
    pod = make_pod(policy)
    inits = [{"name": "first", "image": "busybox:1.35"}, {"name": "second", "image": "busybox:1.35"}]
    if sidecar:
        inits[0]["restartPolicy"] = "Always"
    pod["spec"]["initContainers"] = inits
    return pod


def init_info(pod, name, state="exited", exit_code=0, restart_count=0, sandbox="sb"):
    spec = next(c for c in pod["spec"]["initContainers"] if c["name"] == name)
    return info(pod, name, state, exit_code, restart_count, sandbox, hash_=cfg.container_hash(pod, spec))


INIT, INIT_NEVER, WITH_SIDECAR = init_pod(), init_pod("Never"), init_pod(sidecar=True)
ISB = info(INIT, cfg.SANDBOX_NAME)


@pytest.mark.parametrize("pod, containers, expected", [
    pytest.param(INIT, [], nothing(sandbox=True, start=[("first", 0)]), id="new pod: sandbox, first init only"),
    pytest.param(INIT, [ISB, init_info(INIT, "first", "running")], nothing(), id="first init running: wait"),
    pytest.param(INIT, [ISB, init_info(INIT, "first")], nothing(start=[("second", 0)]),
                 id="first succeeded: the second"),
    pytest.param(INIT, [ISB, init_info(INIT, "first"), init_info(INIT, "second")], nothing(start=[("app", 0)]),
                 id="all succeeded: the app containers"),
    pytest.param(INIT, [ISB, init_info(INIT, "first", exit_code=1)], nothing(start=[("first", 1)]),
                 id="failed, Always: restart it"),
    pytest.param(INIT_NEVER, [info(INIT_NEVER, cfg.SANDBOX_NAME), init_info(INIT_NEVER, "first", exit_code=1)],
                 nothing(stop_sandbox=True), id="failed, Never: the pod has failed"),
    pytest.param(INIT_NEVER, [info(INIT_NEVER, cfg.SANDBOX_NAME, "exited"),
                              init_info(INIT_NEVER, "first", exit_code=1)],
                 nothing(), id="failed pod stays failed: no new sandbox"),
    pytest.param(INIT, [info(INIT, cfg.SANDBOX_NAME, "exited"), init_info(INIT, "first"), init_info(INIT, "second"),
                        info(INIT, "app")],
                 nothing(sandbox=True, kill=["app"], start=[("first", 1)], remove=["sb"]),
                 id="sandbox died: init containers again, from the first"),
    pytest.param(INIT, [ISB, init_info(INIT, "first"), init_info(INIT, "second"), info(INIT, "app", "exited", 1)],
                 nothing(start=[("app", 1)]), id="initialized: an app crash does not redo initialization"),
    pytest.param(WITH_SIDECAR, [info(WITH_SIDECAR, cfg.SANDBOX_NAME), init_info(WITH_SIDECAR, "first", "running")],
                 nothing(start=[("second", 0)]), id="sidecar up: the next init container"),
    pytest.param(WITH_SIDECAR, [info(WITH_SIDECAR, cfg.SANDBOX_NAME), init_info(WITH_SIDECAR, "first", "exited", 0),
                                init_info(WITH_SIDECAR, "second"), info(WITH_SIDECAR, "app")],
                 nothing(start=[("first", 1)]), id="sidecar exited (even 0): restarted beside the app"),
])
def test_init_container_actions(pod, containers, expected):
    assert summary(plan(pod, containers)) == expected


def test_a_sidecar_not_yet_started_holds_back_the_next_init_container():
    sidecar = init_info(WITH_SIDECAR, "first", "running")
    actions = compute_pod_actions(WITH_SIDECAR, [info(WITH_SIDECAR, cfg.SANDBOX_NAME), sidecar], {},
                                  ProbeResults(not_started={sidecar.id}), Backoff(10, 300), Backoff(10, 300), NOW)
    assert summary(actions) == nothing()


def test_sidecars_do_not_keep_a_finished_pod_alive():
    pod = init_pod("Never", sidecar=True)
    sidecar = init_info(pod, "first", "running")
    containers = [info(pod, cfg.SANDBOX_NAME), sidecar, init_info(pod, "second"), info(pod, "app", "exited", 0)]
    assert summary(plan(pod, containers)) == nothing(kill=["first"], stop_sandbox=True)


def test_a_probes_own_grace_period_is_the_kills():
    pod = make_pod(livenessProbe={"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 2})
    running = info(pod, "app")
    actions = plan(pod, [info(pod, cfg.SANDBOX_NAME), running], failed_liveness={running.id: "exit code 1"})
    assert actions.kill_grace == {running.id: 2}
    assert plan(POD, [SB, info(POD, "app")], failed_liveness={"app-0": "exit code 1"}).kill_grace == {}


def test_init_containers_count_for_the_qos_class():
    limited = {"resources": {"limits": {"cpu": "100m", "memory": "16Mi"}}}
    spec = {"containers": [{"name": "app", **limited}], "initContainers": [{"name": "setup"}]}
    assert qos_class(spec) == "Burstable"          # the init container asks for nothing: not Guaranteed
    spec["initContainers"][0].update(limited)
    assert qos_class(spec) == "Guaranteed"
