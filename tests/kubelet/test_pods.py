"""Chapter 01: pods on real Docker, as Kubernetes makes them."""
from __future__ import annotations

import requests

from harness import condition, container_status, free_port, pod_yaml, wait_for

SLEEPER = "    command: [sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]\n"


def test_two_containers_share_localhost_one_ip_and_an_empty_dir(kubelet):
    kubelet.write("pair.yaml", pod_yaml("pair", f"""\
  - name: web
    image: busybox:1.35
    command: [sh, -c, "trap 'exit 0' TERM; httpd -f -p 8081 -h /data & wait"]
    volumeMounts: [{{name: data, mountPath: /data}}]
  - name: client
    image: busybox:1.35
{SLEEPER}    volumeMounts: [{{name: data, mountPath: /shared}}]
""", volumes="  volumes:\n  - name: data\n    emptyDir: {}\n"))
    pod = kubelet.wait_running("pair")
    web, client = kubelet.container("pair", "web"), kubelet.container("pair", "client")
    # The emptyDir: written by one container, seen by the other.
    assert client.exec_run(["sh", "-c", "echo shared-data > /shared/page"]).exit_code == 0
    assert web.exec_run(["cat", "/data/page"]).output == b"shared-data\n"
    # localhost: the client reaches the web server inside the other container.
    fetched = client.exec_run(["wget", "-q", "-O", "-", "http://localhost:8081/page"])
    assert (fetched.exit_code, fetched.output) == (0, b"shared-data\n")
    # One IP: both see the pause container's address, the pod IP.
    addresses = [c.exec_run(["hostname", "-i"]).output.decode().split() for c in (web, client)]
    assert addresses[0] == addresses[1] == [pod["status"]["podIP"]]
    # The pause container is there too, holding the namespace.
    names = sorted(c.labels["io.kubernetes.container.name"] for c in kubelet.containers("pair"))
    assert names == ["POD", "client", "web"]


def test_host_port_answers_from_the_node(kubelet):
    port = free_port()
    kubelet.write("web.yaml", pod_yaml("web", f"""\
  - name: httpd
    image: busybox:1.35
    command: [sh, -c, "trap 'exit 0' TERM; mkdir /www; echo hello-hostport > /www/index.html; httpd -f -p 80 -h /www & wait"]
    ports: [{{containerPort: 80, hostPort: {port}}}]
"""))
    kubelet.wait_running("web")
    body = wait_for(lambda: requests.get(f"http://127.0.0.1:{port}/", timeout=2).text, 15, what="hostPort")
    assert body == "hello-hostport\n"


def test_env_expansion_command_args_working_dir_and_limits(kubelet):
    kubelet.write("env.yaml", pod_yaml("env", """\
  - name: show
    image: busybox:1.35
    workingDir: /tmp
    env:
    - {name: FIRST, value: one}
    - {name: BOTH, value: "$(FIRST)-two-$(LATER)-$$(FIRST)"}
    - {name: LATER, value: three}
    - name: MY_POD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    command: [sh, -c]
    args: ["echo $BOTH $MY_POD $(pwd) $(FIRST); sleep 3600"]
    resources:
      limits: {cpu: 500m, memory: 64Mi}
      requests: {cpu: 250m}
"""))
    kubelet.wait_running("env")
    logs = wait_for(lambda: requests.get(kubelet.url("/containerLogs/default/env/show"), timeout=5).text,
                    10, what="log output")
    # $(LATER) is defined after BOTH, so it stays as written, like Kubernetes;
    # $$ escapes; $(FIRST) in args is expanded by the kubelet, not the shell.
    assert logs == "one-two-$(LATER)-$(FIRST) env /tmp one\n"
    config = kubelet.container("env", "show").attrs["HostConfig"]
    assert (config["Memory"], config["NanoCpus"], config["CpuShares"]) == (64 * 2**20, 500_000_000, 256)


def test_crashing_container_restarts_with_backoff(kubelet):
    kubelet.write("crash.yaml", pod_yaml("crash", """\
  - name: crash
    image: busybox:1.35
    command: [sh, -c, "exit 3"]
"""))
    pod = kubelet.wait_pod("crash", lambda p: container_status(p, "crash")["restartCount"] >= 2,
                           40, "restartCount >= 2")
    pod = kubelet.wait_pod("crash", lambda p: container_status(p, "crash")["state"].get("waiting", {})
                           .get("reason") == "CrashLoopBackOff", 20, "CrashLoopBackOff")
    status = container_status(pod, "crash")
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert pod["status"]["phase"] == "Running"   # restartPolicy Always: it will run again
    assert "back-off" in status["state"]["waiting"]["message"]


def test_restart_policy_never_ends_failed_and_on_failure_ends_succeeded(kubelet):
    kubelet.write("never.yaml", pod_yaml("never", "  - {name: fail, image: 'busybox:1.35', command: [sh, -c, 'exit 7']}\n",
                                         spec_extra="  restartPolicy: Never\n"))
    kubelet.write("onfailure.yaml", pod_yaml("onfailure", "  - {name: ok, image: 'busybox:1.35', command: ['true']}\n",
                                             spec_extra="  restartPolicy: OnFailure\n"))
    never = kubelet.wait_phase("never", "Failed")
    terminated = container_status(never, "fail")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (7, "Error")
    assert container_status(never, "fail")["restartCount"] == 0
    assert never["status"]["podIP"]   # a finished pod keeps its IP in status, as in Kubernetes
    done = kubelet.wait_phase("onfailure", "Succeeded")
    assert container_status(done, "ok")["state"]["terminated"]["reason"] == "Completed"
    assert condition(done, "Ready") == "False"
    # A finished pod releases its network: the pause container stops.
    wait_for(lambda: not [c for c in kubelet.containers("onfailure", all=False)], 15, what="sandbox stopped")


def test_failing_liveness_probe_restarts_the_container(kubelet):
    kubelet.write("live.yaml", pod_yaml("live", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "touch /tmp/healthy; sleep 2; rm /tmp/healthy; trap 'exit 0' TERM; sleep 3600 & wait"]
    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 1
      failureThreshold: 2
"""))
    kubelet.wait_pod("live", lambda p: container_status(p, "app")["restartCount"] >= 1, 40,
                           "restart after liveness failure")
    assert "Liveness probe failed" in kubelet.log()


def test_failing_readiness_probe_clears_ready(kubelet):
    kubelet.write("ready.yaml", pod_yaml("ready", """\
  - name: app
    image: busybox:1.35
    command: [sh, -c, "touch /tmp/ready; trap 'exit 0' TERM; sleep 3600 & wait"]
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
      failureThreshold: 1
"""))
    kubelet.wait_pod("ready", lambda p: condition(p, "Ready") == "True", 30, "Ready")
    kubelet.container("ready", "app").exec_run(["rm", "/tmp/ready"])
    pod = kubelet.wait_pod("ready", lambda p: condition(p, "Ready") == "False", 30, "not Ready")
    assert container_status(pod, "app")["ready"] is False
    assert container_status(pod, "app")["restartCount"] == 0   # readiness never restarts
    assert pod["status"]["phase"] == "Running"


def test_tcp_and_http_probes(kubelet):
    kubelet.write("probes.yaml", pod_yaml("probes", """\
  - name: web
    image: busybox:1.35
    command: [sh, -c, "trap 'exit 0' TERM; mkdir /w; echo ok > /w/healthz; httpd -f -p 8080 -h /w & wait"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 1}
    livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
"""))
    kubelet.wait_pod("probes", lambda p: condition(p, "Ready") == "True", 30, "Ready through httpGet")
    assert container_status(kubelet.pod("probes"), "web")["restartCount"] == 0
