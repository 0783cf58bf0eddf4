"""Who may read a kubelet's port (--authentication-token-file): the API
server, with its token, and the node itself over loopback; nobody else,
not even a pod on that node. /healthz stays open.

"Another machine" is a network namespace the test makes (tests/netns.py);
"a pod" is a real pod the kubelet runs, trying its own node's port.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

import netns
from harness import KUBELET, pod_yaml

HOST_IP, REMOTE_IP = "10.213.78.1", "10.213.78.2"
TOKEN = "the-api-servers-token-for-this-test"
PROTECTED = ["/pods", "/metrics", "/containerLogs/default/talker/app", "/stats/summary", "/metrics/resource"]

# GET a URL from the other machine: prints {"code": ..., "body": ...}.
REMOTE_GET = """
import json, sys, urllib.error, urllib.request
url, header = sys.argv[1], sys.argv[2]
request = urllib.request.Request(url, headers={"Authorization": header} if header else {})
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        print(json.dumps({"code": response.status, "body": response.read().decode()}))
except urllib.error.HTTPError as error:
    print(json.dumps({"code": error.code, "body": error.read().decode()}))
"""


@pytest.fixture
def remote_machine():
    with netns.remote_machine(HOST_IP, REMOTE_IP) as namespace:
        yield namespace


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "kubelet-client.token"
    path.write_text(TOKEN + "\n")
    return path


def remote_get(namespace: str, url: str, authorization: str = "") -> tuple[int, str]:
    result = netns.run_in(namespace, sys.executable, "-c", REMOTE_GET, url, authorization)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return answer["code"], answer["body"]


def start_talker(kubelet) -> None:
    kubelet.write("talker.yaml", pod_yaml("talker", "  - name: app\n    image: busybox:1.35\n"
                                                    "    command: ['sh', '-c', 'echo hello; sleep 3600']\n"))
    kubelet.wait_running("talker")


def test_another_machine_needs_the_api_servers_token(remote_machine, make_kubelet, token_file):
    kubelet = make_kubelet("--address", "0.0.0.0", "--authentication-token-file", str(token_file))
    assert "read-only port listening authentication=token" in kubelet.log()
    start_talker(kubelet)
    remote = f"http://{HOST_IP}:{kubelet.port}"
    assert remote_get(remote_machine, f"{remote}/healthz") == (200, "ok\n")
    for path in PROTECTED:
        for authorization in ("", "Bearer wrong-token", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN):
            code, body = remote_get(remote_machine, remote + path, authorization)
            assert code == 401, (path, authorization, body)
            assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    code, body = remote_get(remote_machine, f"{remote}/pods", f"Bearer {TOKEN}")
    assert code == 200 and [p["metadata"]["name"] for p in json.loads(body)["items"]] == ["talker"]
    assert remote_get(remote_machine, f"{remote}/containerLogs/default/talker/app", f"bearer {TOKEN}") == (
        200, "hello\n")
    code, body = remote_get(remote_machine, f"{remote}/metrics", f"Bearer {TOKEN}")
    assert code == 200 and "kubelet_sync_loops_total" in body


def test_the_node_itself_reads_over_loopback_and_only_there(remote_machine, make_kubelet, token_file):
    kubelet = make_kubelet("--address", "0.0.0.0", "--authentication-token-file", str(token_file))
    start_talker(kubelet)
    for path in PROTECTED:
        assert requests.get(kubelet.url(path), timeout=5).status_code == 200, path
    # This machine at a non-loopback address of its own is not loopback:
    # the kernel gives the connection that address as its source.
    refused = requests.get(f"http://{HOST_IP}:{kubelet.port}/pods", timeout=5)
    assert refused.status_code == 401 and refused.json()["reason"] == "Unauthorized"


def test_without_a_token_file_the_port_is_open_as_in_chapter_01(remote_machine, make_kubelet):
    kubelet = make_kubelet("--address", "0.0.0.0")
    assert "authentication=" not in kubelet.log()
    code, body = remote_get(remote_machine, f"http://{HOST_IP}:{kubelet.port}/pods")
    assert code == 200 and json.loads(body)["kind"] == "PodList"


def test_a_pod_on_the_node_cannot_read_its_kubelet(make_kubelet, token_file):
    """The threat itself: a pod reaches its node at the Docker bridge's
    gateway (its default route) and asks for every pod and log there."""
    kubelet = make_kubelet("--address", "0.0.0.0", "--authentication-token-file", str(token_file))
    start_talker(kubelet)
    script = (f"node=$(ip route | awk '/^default/ {{print $3}}'); echo node=$node; "
              f"for path in /healthz {' '.join(PROTECTED)}; do "
              f"echo $path: $(wget -q -O - http://$node:{kubelet.port}$path 2>&1 | head -c 200); done")
    kubelet.write("snoop.yaml", pod_yaml("snoop", f"  - name: app\n    image: busybox:1.35\n"
                                                  f"    command: ['sh', '-c', {json.dumps(script)}]\n",
                                         spec_extra="  restartPolicy: Never\n"))
    kubelet.wait_phase("snoop", "Succeeded")
    printed = requests.get(kubelet.url("/containerLogs/default/snoop/app"), timeout=5).text
    lines = dict(line.split(": ", 1) for line in printed.splitlines() if ": " in line)
    assert lines["/healthz"] == "ok", printed            # the node is reachable from the pod...
    for path in PROTECTED:                               # ...and refuses it the rest
        assert "401 UNAUTHORIZED" in lines[path].upper(), printed
    assert "PodList" not in printed and "hello" not in printed


@pytest.mark.parametrize("content, problem", [
    (None, "cannot read token file"),
    ("", "should hold exactly one token"),
    ("two tokens\n", "should hold exactly one token"),
])
def test_an_unusable_token_file_stops_the_kubelet_with_the_reason(docker_client, tmp_path, content, problem):
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    result = subprocess.run([sys.executable, str(KUBELET), "--node-name", "test-token-file", "--manifests",
                             str(tmp_path), "--read-only-port", "0", "--authentication-token-file", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and problem in result.stdout + result.stderr
