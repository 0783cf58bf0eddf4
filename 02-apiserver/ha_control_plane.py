"""A control plane that survives the loss of a member: `make ha`.

    python 02-apiserver/ha_control_plane.py [--port 8080] [--dir DIR]

On this one machine, as three machines would run it:

    kubectl ──────────► HAProxy :8080 ──┬──► API server :18081 ──┬──► etcd0 :12379
    scheduler1, 2 ────►  (/readyz)      └──► API server :18082 ──┼──► etcd1 :12381
    controller-manager1, 2 ─┘                                    └──► etcd2 :12383

Three etcd members keep the data (a write needs two of them: a majority);
two API servers on them answer the same, since neither keeps anything of
its own; HAProxy gives clients one address and sends them only to an API
server whose /readyz says it can reach etcd. Two schedulers and two
controller managers run with --leader-elect: one of each acts, the other
waits for its Lease to run out. `--kubelets N` adds N kubelets (Docker
needed), nodes ha-node1, ha-node2... It prints what runs where and tears it
all down on Ctrl-C, the kubelets' containers included. Kill any one process
(`kill PID`) and the cluster goes on; see part 8 of chapter 02's README.

The tests (tests/apiserver/test_ha.py, test_ha_leaders.py) and the
benchmarks (bench_etcd.py, bench_ha.py) use its pieces too.
"""
from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from etcd_cluster import EtcdCluster, etcd_installed  # noqa: E402
from common.tooling.ports import free_port  # noqa: E402
from common.tooling.processes import LoggedProcess  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class APIServerProcess(LoggedProcess):
    """apiserver.py on the insecure port, its objects in etcd."""

    def __init__(self, name: str, port: int, etcd_servers: str, directory: Path, *flags: str):
        super().__init__(name, Path(directory) / f"{name}.log")
        self.port, self.etcd_servers = port, etcd_servers
        self.url = f"http://127.0.0.1:{port}"
        self.flags = list(flags)

    def start(self, timeout: float = 30) -> "APIServerProcess":
        self.spawn([sys.executable, str(HERE / "apiserver.py"), "--storage-backend", "etcd3",
                    "--etcd-servers", self.etcd_servers, "--port", str(self.port), *self.flags], cwd=ROOT)
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: see {self.log_path}")
            time.sleep(0.1)
        return self

    def ready(self) -> bool:
        try:
            return requests.get(self.url + "/readyz", timeout=2).status_code == 200
        except requests.RequestException:
            return False


# [START haproxy-config]
def haproxy_config(port: int, servers: dict[str, int], balance: str = "roundrobin") -> str:
    """One address for several API servers. TCP, so a watch is one long
    connection to one server; HTTP health checks of /readyz, so a server
    that cannot reach etcd gets no new clients; and a connection refused
    by a dead server is tried on the next one (redispatch) at once, before
    the checks have noticed."""
    lines = ["global", "    maxconn 4096",
             "defaults", "    mode tcp", "    timeout connect 1s",
             "    timeout client 1h", "    timeout server 1h",     # watches last up to an hour
             "    retries 3", "    option redispatch",
             "frontend apiserver", f"    bind 127.0.0.1:{port}", "    default_backend apiservers",
             "backend apiservers", f"    balance {balance}",
             "    option httpchk GET /readyz", "    http-check expect status 200",
             "    default-server inter 500ms fall 2 rise 2"]
    lines += [f"    server {name} 127.0.0.1:{server_port} check" for name, server_port in servers.items()]
    return "\n".join(lines) + "\n"
# [END haproxy-config]


class HAProxy(LoggedProcess):
    def __init__(self, port: int, servers: dict[str, int], directory: Path, balance: str = "roundrobin"):
        super().__init__("haproxy", Path(directory) / "haproxy.log")
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        self.config_path = Path(directory) / "haproxy.cfg"
        self.config_path.write_text(haproxy_config(port, servers, balance))

    def start(self, timeout: float = 15) -> "HAProxy":
        # -db: stay in the foreground, so this process is the one we stop.
        self.spawn(["haproxy", "-db", "-f", str(self.config_path)])
        deadline = time.monotonic() + timeout
        while True:
            try:
                if requests.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"HAProxy did not start: see {self.log_path}")
            time.sleep(0.1)


def haproxy_installed() -> bool:
    return shutil.which("haproxy") is not None


# Kubernetes' defaults are 15 s, 10 s and 2 s. On one machine we want to
# watch a handover in seconds. A standby reads the Lease every 1 to 2.2
# retry periods, so it notices a silent leader at most 4.4 retry periods
# (1.8 s) after the lease runs out; and the leader still gives up (renew
# deadline) before the lease does.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6.0, 4.0, 0.4
LEADER_ELECT = ("--leader-elect", "--leader-elect-lease-duration", f"{LEASE_DURATION:g}s",
                "--leader-elect-renew-deadline", f"{RENEW_DEADLINE:g}s",
                "--leader-elect-retry-period", f"{RETRY_PERIOD * 1000:g}ms")
ELECTED = [("scheduler", "03-scheduler/scheduler.py", "kube-scheduler"),
           ("controller-manager", "04-controllers/controller_manager.py", "kube-controller-manager")]
IDENTITY = re.compile(r"attempting to acquire leader lease .*identity=(\S+)")


class ElectedComponent(LoggedProcess):
    """One copy of the scheduler or the controller manager, with
    --leader-elect, talking to the API servers through HAProxy."""

    def __init__(self, name: str, script: str, lease: str, apiserver: str, directory: Path):
        super().__init__(name, Path(directory) / f"{name}.log")
        self.script, self.lease, self.apiserver = script, lease, apiserver
        self._log_start = 0                # where this run's part of the log begins

    def start(self) -> "ElectedComponent":
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.spawn([sys.executable, str(ROOT / self.script), "--apiserver", self.apiserver, *LEADER_ELECT], cwd=ROOT)
        return self

    def identity(self) -> str | None:
        """The identity it campaigns under (hostname_uuid), from its log: this run's part."""
        with open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            found = IDENTITY.search(log.read().decode(errors="replace"))
        return found.group(1) if found else None

    def leads(self) -> bool:
        identity = self.identity()
        return identity is not None and lease_holder(self.apiserver, self.lease) == identity


class Kubelet(LoggedProcess):
    """01-kubelet/kubelet.py for one node of our own naming, through HAProxy
    (`--kubelets N`); its read-only port on a free loopback port."""

    def __init__(self, number: int, node_prefix: str, apiserver: str, directory: Path):
        super().__init__(f"kubelet{number}", Path(directory) / f"kubelet{number}.log")
        self.node = f"{node_prefix}{number}"
        self.port, self.apiserver = free_port(), apiserver

    def start(self) -> "Kubelet":
        self.spawn([sys.executable, str(ROOT / "01-kubelet" / "kubelet.py"), "--node-name", self.node,
                    "--apiserver", self.apiserver, "--address", "127.0.0.1", "--read-only-port", str(self.port),
                    "--node-ip", "127.0.0.1"], cwd=ROOT)
        return self

    def remove_containers(self) -> None:
        """What this node ran goes with it (the kubelet's own --cleanup)."""
        subprocess.run([sys.executable, str(ROOT / "01-kubelet" / "kubelet.py"), "--cleanup", "--node-name", self.node],
                       cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:        # a daemon that does not answer is no Docker either
        return subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=15).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def lease_holder(apiserver: str, lease: str) -> str | None:
    """spec.holderIdentity of kube-system/LEASE, or None (no Lease, no holder, no answer)."""
    try:
        response = requests.get(f"{apiserver}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}",
                                timeout=2)
        return response.json()["spec"].get("holderIdentity") if response.ok else None
    except (requests.RequestException, ValueError, KeyError):
        return None


def wait_until_leading(components: list[ElectedComponent], timeout: float) -> None:
    """Until each holds its Lease. After a restart a Lease may still name a
    copy that died holding it: then the wait is a lease duration."""
    deadline = time.monotonic() + timeout
    while not all(c.leads() for c in components) and time.monotonic() < deadline:
        for component in components:
            if not component.running:
                raise RuntimeError(f"{component.name} exited: see {component.log_path}")
        time.sleep(0.2)


def stop_together(processes: list[subprocess.Popen], grace: float) -> None:
    """SIGTERM to all at once, so the leaders release their Leases side by
    side (each needs the API servers still up); SIGKILL whoever is late."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class ControlPlane:
    def __init__(self, directory: Path, port: int, etcd_ports: list[int], apiserver_ports: list[int],
                 kubelets: int = 0, node_prefix: str = "ha-node"):
        self.directory = Path(directory)
        self.etcd = EtcdCluster(self.directory / "etcd", size=len(etcd_ports),
                                client_ports=etcd_ports, peer_ports=[p + 1 for p in etcd_ports])
        self.apiservers = [APIServerProcess(f"apiserver{i + 1}", p, self.etcd.client_urls, self.directory)
                           for i, p in enumerate(apiserver_ports)]
        self.haproxy = HAProxy(port, {s.name: s.port for s in self.apiservers}, self.directory)
        self.components = [ElectedComponent(f"{name}{i}", script, lease, self.haproxy.url, self.directory)
                           for name, script, lease in ELECTED for i in (1, 2)]
        self.kubelets = [Kubelet(i + 1, node_prefix, self.haproxy.url, self.directory) for i in range(kubelets)]

    def start(self) -> "ControlPlane":
        self.etcd.start()
        for server in self.apiservers:
            server.start()
        self.haproxy.start()
        # The first copies first, until they lead: then the table says
        # scheduler1 and controller-manager1 lead, and the lesson knows whom to kill.
        firsts = [c for c in self.components if c.name.endswith("1")]
        seconds = [c for c in self.components if c not in firsts]
        for component in firsts:
            component.start()
        wait_until_leading(firsts, timeout=30 + LEASE_DURATION)
        for component in seconds + self.kubelets:
            component.start()
        for name, _, pid in self.processes():      # DIR/etcd1.pid: `kill $(cat ...)` one of them
            written = self.directory / f".{name}.pid.tmp"
            written.write_text(f"{pid}\n")
            written.replace(self.directory / f"{name}.pid")   # never seen empty, half-written
        return self

    def stop(self) -> None:
        stop_together([c.process for c in self.components + self.kubelets], grace=5)
        for kubelet in self.kubelets:
            kubelet.remove_containers()
        self.haproxy.stop()
        for server in self.apiservers:
            server.stop()
        self.etcd.stop()

    def processes(self) -> list[tuple[str, str, int]]:
        """(name, URL or role, process id) of everything running."""
        rows = [(m.name, m.client_url, m.process.pid) for m in self.etcd.members]
        rows += [(s.name, s.url, s.process.pid) for s in self.apiservers]
        rows += [("haproxy", self.haproxy.url, self.haproxy.process.pid)]
        rows += [(c.name, f"leads {c.lease}" if c.leads() else f"waits for {c.lease}", c.process.pid)
                 for c in self.components]
        return rows + [(k.name, f"node {k.node}, port {k.port}", k.process.pid) for k in self.kubelets]

    def describe(self) -> str:
        return "\n".join(f"  {name:<19}  {what:<33}  {self.directory / name}.pid"
                         for name, what, _ in self.processes())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Three etcd members, two API servers, HAProxy in front.")
    parser.add_argument("--port", type=int, default=8080, help="HAProxy's port: the address clients use")
    parser.add_argument("--etcd-ports", default="12379,12381,12383",
                        help="the members' client ports (each one's peer port is the next number)")
    parser.add_argument("--apiserver-ports", default="18081,18082")
    parser.add_argument("--kubelets", type=int, default=0,
                        help="also run this many kubelets, nodes ha-node1, ha-node2... (needs Docker)")
    parser.add_argument("--node-prefix", default="ha-node", help="the kubelets' node names: PREFIX1, PREFIX2...")
    parser.add_argument("--dir", help="where data and logs go (default: a new temporary directory, removed at the end)")
    args = parser.parse_args(argv)
    missing = [name for name, there in (("etcd", etcd_installed()), ("haproxy", haproxy_installed())) if not there]
    if missing:
        print(f"error: {' and '.join(missing)} not on PATH: `make setup` (as root) installs them", file=sys.stderr)
        return 1
    if args.kubelets and not docker_available():
        print(f"no Docker here: starting no kubelets (--kubelets {args.kubelets} asked for them)", flush=True)
        args.kubelets = 0
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="groundup-ha-"))
    plane = ControlPlane(directory, args.port, [int(p) for p in args.etcd_ports.split(",")],
                         [int(p) for p in args.apiserver_ports.split(",")], args.kubelets, args.node_prefix)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    try:
        plane.start()
        parts = [f"{len(plane.etcd.members)} etcd members", f"{len(plane.apiservers)} API servers",
                 "2 schedulers", "2 controller managers"]
        if plane.kubelets:
            parts.append("1 kubelet" if len(plane.kubelets) == 1 else f"{len(plane.kubelets)} kubelets")
        print(f"a control plane of {', '.join(parts[:-1])} and {parts[-1]}:")
        print(plane.describe())
        print(f"clients use {plane.haproxy.url} (logs in {directory}); Ctrl-C stops it all", flush=True)
        stopping.wait()
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        plane.stop()
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
