"""Chapter 01's kubelet stands alone: what later chapters add to it lives
in subfolders of 01-kubelet/ (joining the API server, API volumes, stats,
streaming, the pod network, service discovery), and kubelet.py imports
each only when one of its flags asks for it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from harness import KUBELET, Kubelet, pod_yaml, wait_for

CHAPTER = KUBELET.parent
# The folders of code a later chapter teaches (not the starter, not data).
SUBFOLDERS = sorted(p.name for p in CHAPTER.iterdir()
                    if p.is_dir() and any(p.glob("*.py")) and p.name != "build-it-yourself")
SLEEPER = pod_yaml("alone", "  - name: app\n    image: busybox:1.35\n    command: [sleep, '3600']\n")


def test_the_chapters_later_parts_are_in_these_folders():
    assert SUBFOLDERS == ["api_volumes", "apiserver_join", "pod_network", "service_discovery", "stats",
                          "streaming"]


def test_the_top_level_alone_runs_a_pod(tmp_path, docker_client):
    """Only the chapter's top-level files, copied where no subfolder is:
    with the read-only port off (whose routes stats/ adds to), a manifest's
    pod runs all the same."""
    alone = tmp_path / "01-kubelet"
    alone.mkdir()
    for path in CHAPTER.glob("*.py"):
        shutil.copy(path, alone)
    kubelet = Kubelet(tmp_path, docker_client)
    kubelet.write("alone.yaml", SLEEPER)
    kubelet.process = subprocess.Popen(
        [sys.executable, str(alone / "kubelet.py"), "--node-name", kubelet.node_name, "--manifests",
         str(kubelet.dir), "--read-only-port", "0", "--node-ip", "127.0.0.1", "--sync-frequency", "0.5s"],
        stdout=open(kubelet.log_path, "ab"), stderr=subprocess.STDOUT, env={**os.environ, "GROUNDUP_LOG_LEVEL": "INFO"})
    try:
        def running() -> bool:
            if kubelet.process.poll() is not None:
                raise AssertionError(f"the kubelet exited with {kubelet.process.returncode}:\n{kubelet.log()}")
            return "default/alone: pod running" in kubelet.log()
        wait_for(running, 60, what="the kubelet to log pod alone running")
        assert [c.labels["io.kubernetes.container.name"] for c in kubelet.containers("alone", all=False)
                if c.labels["io.kubernetes.container.name"] != "POD"] == ["app"]
        assert "Traceback" not in kubelet.log()
    finally:
        kubelet.cleanup()


@pytest.mark.parametrize("flags, loaded", [
    ([], ["stats"]),                                         # the port's /metrics and /stats/summary
    (["--authentication-token-file", "{token}"], ["stats", "streaming"]),   # exec, for the API server only
    (["--cluster-dns", "10.96.0.10"], ["service_discovery", "stats"]),      # pods' resolv.conf
])
def test_a_subfolder_loads_only_for_its_flag(tmp_path, docker_client, flags, loaded):
    token = tmp_path / "token"
    token.write_text("a-token-of-sixteen-characters-or-more\n")
    kubelet = Kubelet(tmp_path, docker_client, None, *[f.format(token=token) for f in flags])
    kubelet.python_options = ["-X", "importtime"]      # every module imported, on stderr (into its log)
    kubelet.write("alone.yaml", SLEEPER)
    kubelet.start()
    try:
        kubelet.wait_running("alone")
        imported = {line.rsplit("|", 1)[1].strip() for line in kubelet.log().splitlines()
                    if line.startswith("import time:") and "|" in line}
        assert sorted({name.split(".")[0] for name in imported} & set(SUBFOLDERS)) == loaded
        assert requests.get(kubelet.url("/pods"), timeout=5).ok
    finally:
        kubelet.cleanup()
