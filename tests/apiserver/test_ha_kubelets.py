"""`make ha --kubelets 1` on free ports: the kubelet's node runs what the
scheduler binds, and Ctrl-C removes that node's containers."""
from __future__ import annotations

import signal
import subprocess
import sys
import uuid

from apiserver_harness import Client
from ha_control_plane import ROOT
from polling import free_port, wait_for
from test_ha import _free_pairs

PODS = "/api/v1/namespaces/default/pods"


def test_kubelets_run_pods_and_ctrl_c_removes_their_containers(etcd_binary, haproxy_binary, docker_client, tmp_path):
    """`--kubelets 1`: a node of its own name runs what the scheduler binds,
    and the teardown removes that node's containers (kubelet.py --cleanup)."""
    prefix = f"test-{uuid.uuid4().hex[:8]}-"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "02-apiserver" / "ha_control_plane.py"), "--dir", str(tmp_path), "--port", str(port),
         "--etcd-ports", ",".join(map(str, _free_pairs(3))),
         "--apiserver-ports", ",".join(str(free_port()) for _ in range(2)), "--kubelets", "1", "--node-prefix", prefix],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    node_label = {"label": f"io.groundup.node-name={prefix}1"}
    try:
        api = Client(f"http://127.0.0.1:{port}")
        wait_for(lambda: (tmp_path / "kubelet1.pid").exists(), timeout=90, what="the control plane")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-a-kubelet"},
               "spec": {"terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "app", "image": "busybox:1.35", "command": ["sleep", "3600"]}]}}
        wait_for(lambda: api.post(PODS, pod).status_code == 201, timeout=30, what="the pod created")
        wait_for(lambda: api.get(f"{PODS}/on-a-kubelet").json().get("status", {}).get("phase") == "Running",
                 timeout=60, what="the pod running on the kubelet's node")
        assert docker_client.containers.list(all=True, filters=node_label)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 0, output
        assert "and 1 kubelet:" in output and f"node {prefix}1" in output, output
        assert not docker_client.containers.list(all=True, filters=node_label)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        subprocess.run([sys.executable, str(ROOT / "01-kubelet" / "kubelet.py"), "--cleanup", "--node-name", f"{prefix}1"],
                       cwd=ROOT, capture_output=True)
