"""Chapter 01: reconcile, don't script. Manifests come and go, kubelets die
and come back, bad input arrives: the kubelet converges every time."""
from __future__ import annotations

import signal

import requests

from harness import all_running, container_status, free_port, pod_yaml, wait_for

SLEEPER = "[sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]"


def sleeper_pod(name: str, containers: int = 1, image: str = "busybox:1.35") -> str:
    body = "".join(f"  - name: c{i}\n    image: {image}\n    command: {SLEEPER}\n" for i in range(containers))
    return pod_yaml(name, body)


def ids(kubelet, pod: str) -> dict[str, str]:
    return {c.labels["io.kubernetes.container.name"]: c.id for c in kubelet.containers(pod, all=False)}


def scratch_pod(name: str, empty_dir: str) -> str:
    """One container with an emptyDir mounted at /scratch."""
    return pod_yaml(name, f"""\
  - name: app
    image: busybox:1.35
    command: {SLEEPER}
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
""", volumes=f"  volumes:\n  - name: scratch\n    emptyDir: {empty_dir}\n")


def test_removing_a_manifest_removes_every_container_and_volume(kubelet, docker_client):
    kubelet.write("gone.yaml", scratch_pod("gone", "{medium: Memory}"))
    kubelet.wait_running("gone")
    assert sorted(ids(kubelet, "gone")) == ["POD", "app"]
    volumes = docker_client.volumes.list(filters={"label": f"io.groundup.node-name={kubelet.node_name}"})
    assert len(volumes) == 1 and volumes[0].attrs["Options"]["type"] == "tmpfs"
    kubelet.remove("gone.yaml")
    wait_for(lambda: not kubelet.containers("gone"), 20, what="every container removed, pause included")
    wait_for(lambda: not docker_client.volumes.list(
        filters={"label": f"io.groundup.node-name={kubelet.node_name}"}), 10, what="emptyDir volume removed")
    wait_for(lambda: kubelet.pod("gone") is None, 5, what="pod gone from /pods")


def test_editing_a_container_replaces_that_container(kubelet):
    kubelet.write("edit.yaml", sleeper_pod("edit", containers=2))
    kubelet.wait_running("edit")
    before = ids(kubelet, "edit")
    kubelet.write("edit.yaml", sleeper_pod("edit", containers=2).replace(
        "- name: c1\n    image: busybox:1.35\n    command:", "- name: c1\n    image: busybox:1.35\n    workingDir: /tmp\n    command:"))
    wait_for(lambda: ids(kubelet, "edit").get("c1") not in (None, before["c1"]), 20, what="c1 replaced")
    after = kubelet.wait_running("edit")
    now = ids(kubelet, "edit")
    assert now["c0"] == before["c0"] and now["POD"] == before["POD"]   # untouched
    assert container_status(after, "c1")["restartCount"] == 1


def test_restarted_kubelet_adopts_running_containers(make_kubelet):
    kubelet = make_kubelet()
    kubelet.write("keep.yaml", sleeper_pod("keep", containers=2))
    kubelet.wait_running("keep")
    before = ids(kubelet, "keep")
    kubelet.stop(signal.SIGTERM)
    assert ids(kubelet, "keep") == before, "pods must keep running when the kubelet stops"
    kubelet.start()
    pod = kubelet.wait_running("keep")
    kubelet.wait_syncs(3)  # nothing may be restarted (asserting an absence)
    assert ids(kubelet, "keep") == before
    assert [s["restartCount"] for s in kubelet.pod("keep")["status"]["containerStatuses"]] == [0, 0]
    assert "container started" not in kubelet.log().split("kubelet started")[-1]
    assert pod["status"]["phase"] == "Running"


def test_kubelet_killed_mid_sync_converges_without_duplicates_or_orphans(make_kubelet):
    kubelet = make_kubelet("--parallel-pod-workers", "4")
    for i in range(6):
        kubelet.write(f"p{i}.yaml", sleeper_pod(f"p{i}", containers=2))
    # Kill it while it is creating containers: some pods have a sandbox and
    # no app containers, some have created-but-not-started ones.
    wait_for(lambda: len(kubelet.containers()) >= 4, 20, interval=0.02, what="sync under way")
    kubelet.stop(signal.SIGKILL)
    kubelet.start()
    for i in range(6):
        kubelet.wait_running(f"p{i}", 60)
    kubelet.wait_syncs(3)  # let any stray start show itself before counting
    running = kubelet.containers(all=False)
    per_pod: dict[str, list[str]] = {}
    for container in running:
        per_pod.setdefault(container.labels["io.kubernetes.pod.name"], []).append(
            container.labels["io.kubernetes.container.name"])
    assert {pod: sorted(names) for pod, names in per_pod.items()} == {
        f"p{i}": ["POD", "c0", "c1"] for i in range(6)}
    # Nothing left behind: every container, running or not, belongs to a pod's current set.
    assert len(kubelet.containers()) == len(running)


def test_missing_image_fails_that_pod_only(kubelet):
    kubelet.write("good.yaml", sleeper_pod("good"))
    kubelet.write("bad.yaml", sleeper_pod("bad", image="groundup-no-such-image:1.0"))
    kubelet.wait_running("good")
    kubelet.wait_pod("bad", lambda p: container_status(p, "c0")["state"].get("waiting", {}).get("reason")
                     in ("ErrImagePull", "ImagePullBackOff"), 30, "ErrImagePull")
    pod = kubelet.wait_pod("bad", lambda p: container_status(p, "c0")["state"]["waiting"]["reason"]
                           == "ImagePullBackOff", 30, "ImagePullBackOff")
    assert "groundup-no-such-image:1.0" in container_status(pod, "c0")["state"]["waiting"]["message"]
    assert pod["status"]["phase"] == "Pending"
    assert all_running(kubelet.pod("good"))


def test_bad_manifests_are_reported_and_skipped(kubelet):
    kubelet.write("good.yaml", sleeper_pod("good"))
    kubelet.write("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\n  labels: [oops\n")
    kubelet.write("invalid.yaml", sleeper_pod("invalid").replace("    command:", "    ports:\n    - containerPort: 70000\n    command:"))
    kubelet.write("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n")
    kubelet.write("zz-duplicate.yaml", sleeper_pod("good"))
    kubelet.wait_running("good")
    log = wait_for(lambda: (text := kubelet.log()) and "zz-duplicate.yaml" in text and text, 10,
                   what="the duplicate reported")
    assert "broken.yaml:5" in log or "broken.yaml:6" in log
    assert "invalid.yaml:11" in log and "spec.containers[0].ports[0].containerPort: Invalid value: 70000" in log
    assert "'Deployment'" in log and "is not a v1 Pod" in log
    assert "pod default/good is already defined in" in log
    assert [p["metadata"]["name"] for p in kubelet.pods()] == ["good"]
    kubelet.wait_syncs(3)  # each problem was reported once, not every sync
    assert kubelet.log().count("70000") == 1


def test_read_only_port_serves_pods_and_logs(kubelet):
    kubelet.write("talk.yaml", pod_yaml("talk", """\
  - name: talker
    image: busybox:1.35
    command: [sh, -c, "for i in 1 2 3 4 5; do echo line $i; done; exit 1"]
"""))
    kubelet.wait_pod("talk", lambda p: container_status(p, "talker")["restartCount"] >= 1, 30, "a restart")
    assert requests.get(kubelet.url("/healthz")).text == "ok\n"
    pods = requests.get(kubelet.url("/pods")).json()
    assert (pods["kind"], pods["apiVersion"]) == ("PodList", "v1")
    pod = pods["items"][0]
    assert pod["metadata"]["uid"] and pod["spec"]["nodeName"] == kubelet.node_name
    assert {c["type"] for c in pod["status"]["conditions"]} == {"PodScheduled", "Initialized", "ContainersReady", "Ready"}
    base = kubelet.url("/containerLogs/default/talk/talker")
    assert requests.get(base).text == "".join(f"line {i}\n" for i in range(1, 6))
    assert requests.get(base, params={"tailLines": 2}).text == "line 4\nline 5\n"
    assert requests.get(base, params={"previous": "true"}).text.startswith("line 1\n")
    missing = requests.get(kubelet.url("/containerLogs/default/nope/talker"))
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
    assert requests.get(kubelet.url("/containerLogs/default/talk/nope")).status_code == 400
    assert requests.get(base, params={"tailLines": "-3"}).status_code == 400


def test_two_kubelets_on_one_docker_keep_to_their_own(make_kubelet):
    one, two = make_kubelet(), make_kubelet()
    for kubelet in (one, two):
        kubelet.write("same.yaml", sleeper_pod("same"))
    one.wait_running("same")
    two.wait_running("same")
    theirs = ids(two, "same")
    assert set(ids(one, "same").values()).isdisjoint(theirs.values())
    one.remove("same.yaml")
    wait_for(lambda: not one.containers("same"), 20, what="node one's pod removed")
    one.wait_syncs(3)
    two.wait_syncs(3)
    assert ids(two, "same") == theirs


def test_graceful_stop_sends_sigterm_first(kubelet, tmp_path):
    marker = tmp_path / "signals"
    marker.mkdir()
    kubelet.write("grace.yaml", pod_yaml("grace", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "trap 'echo got-TERM > /out/term; exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: out, mountPath: /out}]
""", volumes=f"  volumes:\n  - name: out\n    hostPath: {{path: {marker}, type: Directory}}\n"))
    kubelet.wait_running("grace")
    kubelet.remove("grace.yaml")
    wait_for(lambda: not kubelet.containers("grace"), 20, what="pod removed")
    assert (marker / "term").read_text() == "got-TERM\n"


def test_container_logs_follow_streams_new_lines(kubelet):
    kubelet.write("ticker.yaml", pod_yaml("ticker", """\
  - name: tick
    image: busybox:1.35
    command: [sh, -c, "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.3 & wait; done"]
"""))
    kubelet.wait_running("ticker")
    with requests.get(kubelet.url("/containerLogs/default/ticker/tick"), params={"follow": "true", "tailLines": 0},
                      stream=True, timeout=10) as response:
        lines = response.iter_lines()
        first, second = next(lines), next(lines)
    number = int(first.split()[1])
    assert first.startswith(b"tick ") and second == f"tick {number + 1}".encode()


def test_what_cannot_be_honoured_is_refused_not_ignored(kubelet):
    # A startup probe and a preStop hook run (test_startup_probe.py,
    # test_hooks.py); on a regular init container, which runs once to
    # completion, they could never run, so the pod is refused by field.
    kubelet.write("good.yaml", sleeper_pod("good").replace(
        "    command:", "    startupProbe: {exec: {command: ['true']}}\n    command:"))
    kubelet.write("hook.yaml", sleeper_pod("hook").replace(
        "  containers:", "  initContainers:\n  - name: setup\n    image: busybox:1.35\n"
        "    lifecycle: {preStop: {exec: {command: ['true']}}}\n  containers:"))
    kubelet.wait_running("good")
    log = wait_for(lambda: (text := kubelet.log()).count("may not be set for init containers") == 1 and text, 10,
                   what="the refusal logged")
    assert ("manifest skipped: spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers "
            "without restartPolicy=Always") in log
    assert [p["metadata"]["name"] for p in kubelet.pods()] == ["good"]


def test_a_taken_host_port_is_retried_with_back_off_not_in_a_loop(kubelet):
    port = free_port()
    for name in ("first", "second"):
        kubelet.write(f"{name}.yaml", sleeper_pod(name).replace(
            "    command:", f"    ports: [{{containerPort: 80, hostPort: {port}}}]\n    command:"))
        if name == "first":
            kubelet.wait_running("first")   # so that it is the one holding the port
    pod = kubelet.wait_pod("second", lambda p: "failed to create pod sandbox" in
                           container_status(p, "c0")["state"].get("waiting", {}).get("message", ""),
                           20, "sandbox failure reported")
    assert pod["status"]["phase"] == "Pending"
    # Without back-off every sync would try again; with a 1 s initial
    # back-off, six syncs (about 3 s at 0.5 s each) see a handful of tries.
    kubelet.wait_syncs(6)
    attempts = kubelet.log().count("sandbox not started")
    assert 1 <= attempts <= 4, attempts
    kubelet.remove("first.yaml")
    kubelet.wait_running("second", 30)


def test_a_memory_empty_dir_keeps_its_data_when_a_container_restarts(kubelet):
    kubelet.write("mem.yaml", scratch_pod("mem", "{medium: Memory, sizeLimit: 8Mi}"))
    kubelet.wait_running("mem")
    app = kubelet.container("mem", "app")
    assert app.exec_run(["sh", "-c", "echo kept > /scratch/data"]).exit_code == 0
    assert "tmpfs" in app.exec_run(["sh", "-c", "grep /scratch /proc/mounts"]).output.decode()
    app.kill()
    kubelet.wait_pod("mem", lambda p: container_status(p, "app")["restartCount"] == 1 and all_running(p), 20,
                     "restarted")
    again = kubelet.container("mem", "app")
    assert again.exec_run(["cat", "/scratch/data"]).output == b"kept\n"
