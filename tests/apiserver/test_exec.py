"""kubectl exec, attach, cp and port-forward: the real kubectl 1.32, through a
real API server, to a real kubelet, into containers on Docker.

One cluster for the module: an API server that presents a token to kubelets
(--kubelet-client-token-file) and one kubelet that asks for it
(--authentication-token-file), running `web`, a busybox httpd. Each test
makes what else it needs. The secure-port tests add a second API server
with users and a policy, pointing at the same kubelet.
"""
from __future__ import annotations

import concurrent.futures
import fcntl
import hashlib
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import websocket

from apiserver_harness import APIServer, Client, make_certs, unique
from harness import Kubelet
from polling import free_port, wait_for
from test_gauntlet import SecureServer, _tokens
from test_kubectl import Kubectl

KUBELET_TOKEN = "the-api-servers-token-for-kubelets"
WEB = {"name": "app", "image": "busybox:1.35",
       "command": ["sh", "-c", "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 80 -h /www"]}


@dataclass
class Cluster:
    server: APIServer
    api: Client
    kubelet: Kubelet
    k: Kubectl
    tmp: Path

    def logs(self) -> str:
        return f"--- kubelet ---\n{self.kubelet.log()[-3000:]}\n--- apiserver ---\n{self.server.log()[-3000:]}"


def running(api: Client, name: str) -> dict | None:
    pod = api.get(f"/api/v1/namespaces/default/pods/{name}").json()
    status = pod.get("status") or {}
    ok = status.get("phase") == "Running" and status.get("podIP") and all(
        "running" in s["state"] for s in status.get("containerStatuses") or [{"state": {}}])
    return pod if ok else None


def create_pod(cluster: Cluster, name: str, *containers: dict) -> dict:
    body = {"metadata": {"name": name}, "spec": {"nodeName": cluster.kubelet.node_name,
                                                 "terminationGracePeriodSeconds": 1, "containers": list(containers)}}
    assert cluster.api.post("/api/v1/namespaces/default/pods", body).status_code == 201
    return wait_for(lambda: running(cluster.api, name), 60, what=f"pod {name} running")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client, kubectl):
    tmp = tmp_path_factory.mktemp("exec")
    token = tmp / "kubelet-client.token"
    token.write_text(KUBELET_TOKEN + "\n")
    server = APIServer(tmp / "data", "--kubelet-client-token-file", str(token)).start()
    kubelet = Kubelet(tmp, docker_client, unique("node"), "--apiserver", server.url,
                      "--authentication-token-file", str(token), "--node-status-update-frequency", "0.5")
    try:
        kubelet.start()
        api = Client(server.url)
        wait_for(lambda: api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, 30,
                 what="the node to register")
        made = Cluster(server, api, kubelet, Kubectl(kubectl, server.url, "default", tmp), tmp)
        create_pod(made, "web", WEB)
        yield made
    finally:
        kubelet.cleanup()
        server.stop()


# --- exec ------------------------------------------------------------------------------

def test_exec_prints_the_commands_output_and_passes_on_its_exit_code(cluster):
    echoed = cluster.k.run("exec", "web", "--", "echo", "hi")
    assert (echoed.returncode, echoed.stdout, echoed.stderr) == (0, "hi\n", "")
    split = cluster.k.run("exec", "web", "--", "sh", "-c", "echo out; echo err >&2")
    assert (split.stdout, split.stderr) == ("out\n", "err\n")
    failed = cluster.k.run("exec", "web", "--", "sh", "-c", "exit 3")
    assert failed.returncode == 3
    assert failed.stderr == "command terminated with exit code 3\n"


def test_exec_i_reads_piped_stdin_to_its_end(cluster):
    """stdin's end travels: kubectl sends v5's close signal, the kubelet
    half-closes docker exec's stdin, and `cat` finishes."""
    text = "".join(f"line {i}\n" for i in range(2000))
    result = cluster.k.run("exec", "-i", "web", "--", "sh", "-c", "cat; echo done", stdin=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text + "done\n"


def test_exec_names_what_is_wrong(cluster):
    missing = cluster.k.run("exec", "web", "-c", "nope", "--", "true")
    assert missing.returncode == 1
    assert "container nope is not valid for pod web" in missing.stderr
    nowhere = cluster.k.run("exec", "no-such-pod", "--", "true")
    assert nowhere.stderr.strip() == 'Error from server (NotFound): pods "no-such-pod" not found'


class Terminal:
    """A program on a pseudo-terminal of a given size, as a person at a keyboard runs it."""

    def __init__(self, argv: list[str], env: dict, rows: int = 30, columns: int = 100):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:        # the child: kubectl, with the pty as its terminal
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.seen = b""

    def read_until(self, text: bytes, timeout: float = 20) -> bytes:
        def arrived():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 4096)
                except OSError:
                    pass
            return text in self.seen
        wait_for(arrived, timeout, what=f"{text!r} on the terminal; it shows {self.seen[-500:]!r}")
        return self.seen

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def exit_code(self, timeout: float = 20) -> int:
        def ended():
            self.read_until(b"", 0.2)                 # keep the pty drained
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            return os.waitstatus_to_exitcode(status) if pid else None
        code = wait_for(lambda: (code := ended()) is not None and (code,), timeout, what="kubectl to exit")[0]
        self._read_the_rest()        # its last words may have come after the last read, before it exited
        return code

    def _read_the_rest(self) -> None:
        """What the program wrote before it exited and no read took yet (EIO: nothing left)."""
        while select.select([self.fd], [], [], 0.1)[0]:
            try:
                more = os.read(self.fd, 4096)
            except OSError:
                return
            if not more:
                return
            self.seen += more

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def test_exec_it_is_an_interactive_shell_with_the_terminals_size(cluster):
    terminal = Terminal(cluster.k.argv("exec", "-it", "web", "--", "sh"), cluster.k.env)
    try:
        terminal.read_until(b"# ")
        terminal.type(b"echo $((6*7)); stty size\r")
        terminal.read_until(b"30 100")           # the resize reached docker exec's terminal
        assert b"42" in terminal.seen
        terminal.type(b"exit 5\r")
        assert terminal.exit_code() == 5
    finally:
        terminal.close()


def kubelet_resources(cluster: Cluster) -> tuple[int, int]:
    """(threads, open file descriptors) of the kubelet process."""
    pid = cluster.kubelet.process.pid
    threads = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("Threads:")))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def test_execs_that_end_or_are_abandoned_leave_nothing_behind_in_the_kubelet(cluster):
    """Each exec holds a thread and two sockets (kubectl's, Docker's) while it
    runs; they go when it ends, and when kubectl is killed halfway."""
    for _ in range(5):                                     # warm the kubelet's Docker connection pool
        cluster.k.run("exec", "web", "--", "true")
    # The kubelet's own threads come and go (syncs, probes, status updates):
    # its resting count is the fewest seen between execs. One reading, taken
    # while such a thread ran, once hid the abandoned exec's thread below.
    readings = [kubelet_resources(cluster)]
    for _ in range(15):
        assert cluster.k.run("exec", "web", "--", "true").returncode == 0
        readings.append(kubelet_resources(cluster))
    threads, fds = min(r[0] for r in readings), min(r[1] for r in readings)
    abandoned = subprocess.Popen(cluster.k.argv("exec", "web", "--", "sleep", "300"), env=cluster.k.env)
    wait_for(lambda: kubelet_resources(cluster)[0] > threads, 20, what="the exec to start in the kubelet")
    abandoned.kill()
    abandoned.wait()
    wait_for(lambda: (now := kubelet_resources(cluster))[0] <= threads and now[1] <= fds + 2, 20,
             what=f"the kubelet back to {threads} threads and about {fds} descriptors, not "
                  f"{kubelet_resources(cluster)}")


# --- cp (tar through exec) ---------------------------------------------------------------

def test_cp_carries_20_mb_both_ways_intact(cluster, tmp_path):
    data = os.urandom(20 * 1024 * 1024)
    local = tmp_path / "big.bin"
    local.write_bytes(data)
    up = cluster.k.run("cp", str(local), "web:/tmp/big.bin")
    assert up.returncode == 0, up.stderr
    in_pod = cluster.k.run("exec", "web", "--", "sha256sum", "/tmp/big.bin")
    assert in_pod.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    down = cluster.k.run("cp", "web:/tmp/big.bin", str(tmp_path / "back.bin"))
    assert down.returncode == 0, down.stderr
    assert hashlib.sha256((tmp_path / "back.bin").read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()


# --- attach ----------------------------------------------------------------------------

def test_kubectl_run_i_rm_attaches_to_the_new_containers_stdin_and_output(cluster):
    overrides = ('{"apiVersion": "v1", "spec": {"nodeName": "%s", "terminationGracePeriodSeconds": 1}}'
                 % cluster.kubelet.node_name)
    name = unique("run")
    result = cluster.k.run("run", "-i", "--rm", name, "--image=busybox:1.35", "--restart=Never",
                           f"--overrides={overrides}", "--", "sh", "-c", "read line; echo got: $line",
                           stdin="hello attach\n")
    assert result.returncode == 0, result.stderr + cluster.logs()
    assert "got: hello attach" in result.stdout
    assert f'pod "{name}" deleted' in result.stdout
    assert cluster.api.get(f"/api/v1/namespaces/default/pods/{name}").status_code in (200, 404)


def test_kubectl_run_it_rm_is_a_shell_that_goes_away(cluster):
    overrides = ('{"apiVersion": "v1", "spec": {"nodeName": "%s", "terminationGracePeriodSeconds": 1}}'
                 % cluster.kubelet.node_name)
    name = unique("shell")
    terminal = Terminal(cluster.k.argv("run", "-it", "--rm", name, "--image=busybox:1.35", "--restart=Never",
                                       f"--overrides={overrides}", "--", "sh"), cluster.k.env)
    try:
        terminal.read_until(b"If you don't see a command prompt, try pressing enter.")
        terminal.type(b"\r")
        terminal.read_until(b"# ")
        terminal.type(b"echo in-$((40+2))\r")
        terminal.read_until(b"in-42")
        terminal.type(b"exit\r")
        assert terminal.exit_code(timeout=40) == 0
    finally:
        terminal.close()
    assert f'pod "{name}" deleted'.encode() in terminal.seen


# --- port-forward ------------------------------------------------------------------------

class PortForward:
    def __init__(self, cluster: Cluster, remote: int, websockets: bool = True, target: str = "pod/web"):
        self.port = free_port()
        self.out = cluster.tmp / f"port-forward-{self.port}.log"
        env = {**cluster.k.env, "KUBECTL_PORT_FORWARD_WEBSOCKETS": "true" if websockets else "false"}
        self.process = subprocess.Popen(cluster.k.argv("port-forward", target, f"{self.port}:{remote}"),
                                        stdout=open(self.out, "wb"), stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: b"Forwarding from 127.0.0.1" in self.out.read_bytes() or self.process.poll() is not None,
                 30, what="kubectl port-forward to listen")
        assert self.process.poll() is None, self.out.read_text()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(timeout=10)
        return self.out.read_text()


@pytest.fixture(scope="module")
def big_file(cluster) -> str:
    """50 MB of random bytes in web's document root; its sha256."""
    made = cluster.k.run("exec", "web", "--", "sh", "-c",
                         "head -c 52428800 /dev/urandom > /www/big.bin && sha256sum /www/big.bin")
    assert made.returncode == 0, made.stderr
    return made.stdout.split()[0]


@pytest.mark.parametrize("websockets", [True, False], ids=["websocket-tunnel", "spdy"])
def test_port_forward_carries_concurrent_requests_and_50_mb(cluster, big_file, websockets):
    forward = PortForward(cluster, 80, websockets)
    try:
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(lambda _: requests.get(forward.url("/"), timeout=30), range(10)))
        assert [(a.status_code, a.text) for a in answers] == [(200, "hello\n")] * 10
        started = time.monotonic()
        big = requests.get(forward.url("/big.bin"), timeout=120)
        took = time.monotonic() - started
        assert big.status_code == 200 and len(big.content) == 52428800
        assert hashlib.sha256(big.content).hexdigest() == big_file, f"corrupted after {took:.1f}s"
    finally:
        printed = forward.stop()
    assert printed.count("Handling connection for") == 11


def test_port_forward_to_a_service_reaches_one_of_its_pods(cluster):
    """kubectl itself turns svc/NAME into a pod: it reads the Service, lists
    the pods its selector picks, and maps the Service's port to the
    container port (here 8080 to the named port `http`, 80)."""
    labelled = {**WEB, "ports": [{"name": "http", "containerPort": 80}]}
    body = {"metadata": {"name": "behind", "labels": {"app": "behind"}},
            "spec": {"nodeName": cluster.kubelet.node_name, "terminationGracePeriodSeconds": 1,
                     "containers": [labelled]}}
    assert cluster.api.post("/api/v1/namespaces/default/pods", body).status_code == 201
    wait_for(lambda: running(cluster.api, "behind"), 60, what="pod behind running")
    service = {"metadata": {"name": "front"}, "spec": {"selector": {"app": "behind"},
                                                       "ports": [{"port": 8080, "targetPort": "http"}]}}
    assert cluster.api.post("/api/v1/namespaces/default/services", service).status_code == 201
    forward = PortForward(cluster, 8080, target="svc/front")
    try:
        answer = requests.get(forward.url("/"), timeout=30)
        assert (answer.status_code, answer.text) == (200, "hello\n")
    finally:
        printed = forward.stop()
    assert f"Forwarding from 127.0.0.1:{forward.port} -> 80" in printed


def test_port_forward_to_a_closed_port_says_why(cluster):
    forward = PortForward(cluster, 81)
    try:
        with pytest.raises(requests.ConnectionError):
            requests.get(forward.url("/"), timeout=10)
        wait_for(lambda: b"connection refused" in forward.out.read_bytes().lower(), 20,
                 what="kubectl to print the kubelet's error")
    finally:
        printed = forward.stop()
    assert "error forwarding port 81 to pod web_default" in printed


# --- who may ------------------------------------------------------------------------------

def upgrade_headers(protocol: str) -> dict:
    return {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": protocol}


def test_the_kubelets_streaming_port_refuses_anyone_but_the_api_server(cluster):
    """Even from this machine: only the API server's token opens exec."""
    path = "/exec/default/web/app?command=true&output=1"
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = requests.get(cluster.kubelet.url(path), headers={**upgrade_headers("v5.channel.k8s.io"),
                                                                   **headers}, timeout=10)
        assert refused.status_code == 401, refused.text
    url = cluster.kubelet.url(path).replace("http://", "ws://")
    with pytest.raises(websocket.WebSocketBadStatusException, match="401"):
        websocket.create_connection(url, subprotocols=["v5.channel.k8s.io"], timeout=10)
    ws = websocket.create_connection(url, subprotocols=["v5.channel.k8s.io"], timeout=10,
                                     header=[f"Authorization: Bearer {KUBELET_TOKEN}"])
    try:
        assert ws.recv() == b'\x03{"metadata": {}, "status": "Success"}'
    finally:
        ws.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


def secure_server(cluster, certs, data: Path, *extra: str) -> SecureServer:
    """A secure-port server with tokens and a policy, knowing our kubelet and its `web`."""
    server = SecureServer(data, certs, "--kubelet-client-token-file", str(cluster.tmp / "kubelet-client.token"),
                          *extra).start()
    api = Client(server.url)          # the insecure port: the administrator
    node = {"metadata": {"name": cluster.kubelet.node_name},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": cluster.kubelet.port}}}}
    assert api.post("/api/v1/nodes", node).status_code == 201
    pod = {"metadata": {"name": "web"}, "spec": {"nodeName": cluster.kubelet.node_name, "containers": [WEB]}}
    assert api.post("/api/v1/namespaces/default/pods", pod).status_code == 201
    return server


@pytest.fixture(scope="module")
def secure(cluster, certs, tmp_path_factory):
    """With the ABAC policy (02-apiserver/policy.jsonl)."""
    server = secure_server(cluster, certs, tmp_path_factory.mktemp("secure") / "data")
    yield server, certs
    server.stop()


def kubectl_as(cluster, secure, user: str, *args: str) -> subprocess.CompletedProcess:
    server, certs = secure
    config = cluster.tmp / f"{user}.kubeconfig"
    config.write_text((certs / f"{user}.kubeconfig").read_text().replace("https://127.0.0.1:1", server.secure_url))
    return subprocess.run([cluster.k.binary, "--kubeconfig", str(config), "--cache-dir",
                           str(cluster.tmp / f"cache-{user}"), *args], capture_output=True, text=True, timeout=60)


def test_exec_over_https_is_authorized_as_create_and_audited(cluster, secure):
    server, certs = secure
    allowed = kubectl_as(cluster, secure, "admin", "exec", "web", "--", "echo", "over tls")
    assert (allowed.returncode, allowed.stdout) == (0, "over tls\n"), allowed.stderr
    # The viewer may get pods (and, by verb, pods/exec), but not create: no exec.
    assert kubectl_as(cluster, secure, "viewer", "get", "pod", "web").returncode == 0
    refused = kubectl_as(cluster, secure, "viewer", "exec", "web", "--", "true")
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        'pods "web" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" '
        'in the namespace "default": No policy matched.'), refused.stderr
    direct = requests.get(f"{server.secure_url}/api/v1/namespaces/default/pods/web/exec?command=true",
                          headers={**upgrade_headers("v5.channel.k8s.io"),
                                   "Authorization": f"Bearer {_tokens(certs)['viewer']}"},
                          verify=str(certs / "ca.crt"), timeout=10)
    assert direct.status_code == 403 and direct.json()["reason"] == "Forbidden"
    audit = [line for line in server.log().splitlines() if "audit" in line and "pods/exec" in line]
    assert any("user=admin" in line and "code=101" in line for line in audit), audit
    assert any("user=viewer" in line and "code=403" in line for line in audit), audit


def test_under_rbac_the_edit_role_may_exec_and_view_may_not(cluster, certs, tmp_path):
    server = secure_server(cluster, certs, tmp_path / "data", "--authorization-mode", "RBAC")
    try:
        refused = kubectl_as(cluster, (server, certs), "viewer", "exec", "web", "--", "true")   # bound to view
        assert refused.returncode == 1 and "Forbidden" in refused.stderr, refused.stderr
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "viewer-edits"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]}
        made = Client(server.url).post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding)
        assert made.status_code == 201, made.text
        allowed = kubectl_as(cluster, (server, certs), "viewer", "exec", "web", "--", "echo", "edit may")
        assert (allowed.returncode, allowed.stdout) == (0, "edit may\n"), allowed.stderr
    finally:
        server.stop()
