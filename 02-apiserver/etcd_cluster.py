"""etcd members on this machine, started and stopped by us (never Debian's service).

The tests, the benchmark and `make ha` (ha_control_plane.py) all start etcd
through this: one member, or three that form one cluster, each with its
data in a directory of its own and its two ports on loopback:

    client  http://127.0.0.1:PORT   the API servers' --etcd-servers
    peer    http://127.0.0.1:PEER   the members' Raft traffic to each other

A member can be stopped and started again over its data, as a machine
that reboots; the cluster's majority decides whether writes go on.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import requests

from common.tooling.ports import free_port
from common.tooling.processes import LoggedProcess

ETCD = "etcd"


def etcd_installed() -> bool:
    return shutil.which(ETCD) is not None


class EtcdMember(LoggedProcess):
    def __init__(self, name: str, directory: Path, client_port: int = 0, peer_port: int = 0):
        super().__init__(name, Path(directory) / f"{name}.log")
        self.data_dir = Path(directory) / name
        self.client_port = client_port or free_port()
        self.peer_port = peer_port or free_port()

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self, initial_cluster: str) -> None:
        self.spawn(
            [ETCD, "--name", self.name, "--data-dir", str(self.data_dir),
             "--listen-client-urls", self.client_url, "--advertise-client-urls", self.client_url,
             "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
             "--initial-cluster", initial_cluster, "--initial-cluster-state", "new",
             # A learner's laptop, not a data centre: notice a dead leader in 0.5 s, not 1 s.
             "--heartbeat-interval", "50", "--election-timeout", "500",
             # Tell an idle watch every second how far etcd's revision has
             # come, so an API server whose keys did not change knows it is
             # current (Kubernetes asks on its open watch instead, which the
             # JSON gateway cannot; etcd's default is every 10 minutes).
             "--experimental-watch-progress-notify-interval", "1s"])

    def answers(self) -> bool:
        """It serves reads that need a majority (a linearizable range)."""
        try:
            response = requests.post(f"{self.client_url}/v3/kv/range", json={"key": "Lw=="}, timeout=2)
            return response.ok and "header" in response.json()
        except (requests.RequestException, ValueError):
            return False


class EtcdCluster:
    """`size` members that know each other from the start (--initial-cluster)."""

    def __init__(self, directory: Path, size: int = 1, client_ports: list[int] = (), peer_ports: list[int] = ()):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.members = [EtcdMember(f"etcd{index}", self.directory,
                                   client_ports[index] if client_ports else 0,
                                   peer_ports[index] if peer_ports else 0) for index in range(size)]
        self.initial_cluster = ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def client_urls(self) -> str:
        """--etcd-servers for an API server."""
        return ",".join(member.client_url for member in self.members)

    def start(self, timeout: float = 30) -> "EtcdCluster":
        for member in self.members:
            member.start(self.initial_cluster)
        self.wait_ready(timeout)
        return self

    def start_member(self, member: EtcdMember) -> None:
        member.start(self.initial_cluster)      # (over its data: the flag is read only the first time)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not all(m.answers() for m in self.members if m.running):
            for member in self.members:
                if member.process is not None and member.process.poll() is not None:
                    raise RuntimeError(f"etcd member {member.name} exited with {member.process.returncode}: "
                                       f"{member.log_path.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"etcd did not answer within {timeout} s (logs in {self.directory})")
            time.sleep(0.1)

    def stop(self) -> None:
        for member in self.members:
            member.stop()
