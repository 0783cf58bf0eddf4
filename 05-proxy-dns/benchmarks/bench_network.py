"""Chapter 05 benchmark: the pod network against the machines' own network.

    make bench-05        (as root: it makes machines of its own, and removes them)

A cluster on four namespace machines (master, node1, node2, node3), as the
tests make it. Measured, in the same run:

- throughput and round-trip latency from a pod on node1 to a pod on node2,
  against node1 to node2 (the floor: the same program, the machines' own
  addresses). Both ends run one small Python program, entered into the
  pod's network namespace with nsenter, so only the path differs: the pods'
  adds a bridge and a veth pair at each end and a routing decision, and no
  userspace hop. Target: pod-to-pod at ≥ 0.9 of node-to-node;
- how long after a node gets its pod range every other machine has the
  route to it (the route agents' reaction: from then on every pod reaches
  the new node's pods), over three joins.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "05-proxy-dns"))   # the chapter's modules

from machines import Machines  # noqa: E402
from common.tooling.polling import wait_for  # noqa: E402
from machine_cluster import Cluster, free_subnet, ready  # noqa: E402

# One program, both ends: a server that counts bytes (throughput) or echoes
# one byte (latency), and a client that prints its measurement as JSON.
PROGRAM = textwrap.dedent("""
    import json, socket, sys, time
    role, mode, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if role == "server":
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port)); s.listen()
        print("listening", flush=True)
        while True:
            c, _ = s.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if mode == "stream":
                while c.recv(1 << 20): pass
            else:
                while (b := c.recv(1)): c.sendall(b)
            c.close()
    c = socket.create_connection((host, port), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "stream":
        chunk, total, start = b"x" * (1 << 20), int(sys.argv[5]), time.perf_counter()
        for _ in range(total >> 20): c.sendall(chunk)
        c.shutdown(socket.SHUT_WR); c.recv(1)
        print(json.dumps({"seconds": time.perf_counter() - start, "bytes": total}))
    else:
        times = []
        for _ in range(int(sys.argv[5])):
            start = time.perf_counter(); c.sendall(b"."); c.recv(1); times.append(time.perf_counter() - start)
        times.sort()
        print(json.dumps({"median": times[len(times) // 2], "p99": times[int(len(times) * 0.99)]}))
""")
PAUSE_FILTER = "label=io.kubernetes.container.name=POD"
# Run on a node: the iptables mode's full write for N made-up Services of
# three endpoints each, timed as the proxy does it (one iptables-restore),
# then the chains removed again.
FULL_SYNC = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[1])   # the chapter's folder (common/ comes from the venv)
    import iptables_proxy
    from proxy import Shape
    times = {}
    for count in (1, 100, 1000):
        ports = {f"bench/svc-{i}:80": (Shape(f"10.100.{i // 250}.{i % 250 + 1}", 80, None, None),
                                       [(f"10.244.9.{j + 2}", 8080) for j in range(3)]) for i in range(count)}
        nat, filter_ = iptables_proxy.rules_for(ports)
        start = time.perf_counter()
        done = iptables_proxy.restore(nat, filter_, [])
        times[count] = (time.perf_counter() - start, done.returncode, len(nat) + len(filter_))
        iptables_proxy.cleanup()
    print(json.dumps(times))
""")


def netns_of_pod(cluster: Cluster, node: str, pod: str) -> list[str]:
    """nsenter into a pod's network namespace (its pause container's), from its node."""
    ids = cluster.machines.run(node, "docker", "ps", "-q", "--filter", PAUSE_FILTER,
                               "--filter", f"label=io.kubernetes.pod.name={pod}").stdout.split()
    pid = cluster.machines.run(node, "docker", "inspect", "-f", "{{.State.Pid}}", ids[0]).stdout.strip()
    return ["nsenter", f"--net=/proc/{pid}/ns/net"]


def measure(cluster: Cluster, client: tuple[str, list[str]], server: tuple[str, list[str]], address: str,
            program: Path, megabytes: int, round_trips: int) -> dict:
    """Throughput (MB/s) and latency (median, p99 in µs) from client to server."""
    results = {}
    for mode, port, arg in (("stream", 5201, str(megabytes << 20)), ("echo", 5202, str(round_trips))):
        listener = cluster.machines.popen(server[0], server[1] + [sys.executable, str(program), "server", mode,
                                                                  "0.0.0.0", str(port)],
                                          stdout=subprocess.PIPE, text=True)
        try:
            assert listener.stdout.readline().strip() == "listening"
            done = cluster.machines.run(client[0], *client[1], sys.executable, str(program), "client", mode,
                                        address, str(port), arg, timeout=300)
            results[mode] = json.loads(done.stdout)
        finally:
            listener.kill()
            listener.wait()
    return {"MB/s": results["stream"]["bytes"] / results["stream"]["seconds"] / 1e6,
            "median µs": results["echo"]["median"] * 1e6, "p99 µs": results["echo"]["p99"] * 1e6}


def join_times(cluster: Cluster, runs: int) -> list[dict]:
    """Seconds from node3's podCIDR to a route to it on every other machine."""
    results = []
    others = ("master", "node1", "node2")
    for _ in range(runs):
        cluster.join("node3")
        cidr = wait_for(lambda: (cluster.node("node3").get("spec") or {}).get("podCIDR"), 60,
                        interval=0.02, what="node3's podCIDR")
        given = time.monotonic()
        address = cluster.machines.address("node3")
        wait_for(lambda: all(cluster.routes(m).get(cidr) == address for m in others), 30, interval=0.02,
                 what="routes to node3 everywhere")
        routed = time.monotonic() - given
        wait_for(lambda: ready(cluster.node("node3")), 60, what="node3 Ready")
        results.append({"routes everywhere s": routed, "podCIDR": cidr})
        cluster.leave("node3")
        cluster.request("DELETE", "/api/v1/nodes/node3")
        wait_for(lambda: all(cidr not in cluster.routes(m) for m in others), 30, what="node3's routes gone")
        cluster.machines.run("node3", "sh", "-c", "docker rm -f $(docker ps -aq) 2>/dev/null; "
                             "docker network rm kubenet", check=False)
    return results


def start_cluster(workdir: Path) -> Cluster:
    machines = Machines(prefix=f"gb{os.getpid() % 10000:04d}", subnet=free_subnet(),
                        names=("master", "node1", "node2", "node3"))
    machines.up()
    cluster = Cluster(machines, workdir)
    cluster.bring_up("--controllers", "nodeipam,endpoints")
    return cluster


def programming_latency(cluster: Cluster, count: int) -> list[float]:
    """Seconds from each Service's create to its rule on both nodes (iptables
    mode, which the proxies are in by now), one Service at a time."""
    seconds = []
    for i in range(count):
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"prog-{i}"},
                   "spec": {"selector": {"bench": "node2"}, "ports": [{"port": 7000 + i}]}}
        started = time.monotonic()
        ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
        wait_for(lambda: all(f"-d {ip}/32" in cluster.machines.run(n, "iptables", "-t", "nat", "-S").stdout
                             for n in ("node1", "node2")), 30, interval=0.01, what=f"prog-{i}'s rules")
        seconds.append(time.monotonic() - started)
    return sorted(seconds)


def make_bench_service(cluster: Cluster) -> str:
    """A Service for the pod on node2, on the benchmark's two ports; its cluster IP."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bench"},
               "spec": {"selector": {"bench": "node2"}, "ports": [{"name": "stream", "port": 5201},
                                                                   {"name": "echo", "port": 5202}]}}
    ip = cluster.request("POST", "/api/v1/namespaces/default/services", service).json()["spec"]["clusterIP"]
    wait_for(lambda: cluster.get("/api/v1/namespaces/default/endpoints/bench").get("subsets"), 30,
             what="the bench Service's endpoints")
    return ip


def use_proxy_mode(cluster: Cluster, mode: str, service_ip: str) -> None:
    """Restart both proxies in that mode, and wait until each says it works
    (its log is appended to across restarts: count the lines)."""
    for node in ("node1", "node2"):
        before = cluster.log(f"proxy-{node}").count(f"proxying mode={mode}")
        cluster.stop(f"proxy-{node}")
        cluster.start(f"proxy-{node}", node, "05-proxy-dns/proxy.py", "--apiserver", cluster.api, "--proxy-mode", mode)
        wait_for(lambda: cluster.log(f"proxy-{node}").count(f"proxying mode={mode}") > before, 30,
                 what=f"the {mode} proxy on {node}")
    rules = cluster.machines.run("node1", "iptables", "-t", "nat", "-S").stdout
    assert f"-d {service_ip}/32" in rules, rules


def run_pod(cluster: Cluster, name: str, node: str) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"bench": node}},
           "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox:1.35",
                                                      "command": ["sleep", "3600"]}]}}
    cluster.request("POST", "/api/v1/namespaces/default/pods", pod)
    return wait_for(lambda: (p := cluster.get(f"/api/v1/namespaces/default/pods/{name}"))["status"].get("podIP")
                    and p["status"].get("phase") == "Running" and p, 60, what=f"pod {name} running")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=1000, help="sent per throughput run (default 1000)")
    parser.add_argument("--round-trips", type=int, default=5000, help="per latency run (default 5000)")
    parser.add_argument("--runs", type=int, default=3, help="repetitions of each measurement (default 3)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench-05 makes machines from namespaces: run it as root", file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="groundup-bench-", dir="/var/tmp"))
    program = workdir / "netbench.py"
    program.write_text(PROGRAM)
    cluster = None
    try:
        cluster = start_cluster(workdir)
        pods = {node: run_pod(cluster, f"bench-{node}", node) for node in ("node1", "node2")}
        client_pod = ("node1", netns_of_pod(cluster, "node1", "bench-node1"))
        server_pod = ("node2", netns_of_pod(cluster, "node2", "bench-node2"))
        paths = {
            "node1 → node2 (floor)": (("node1", []), ("node2", []), cluster.machines.address("node2")),
            "pod on node1 → pod on node2": (client_pod, server_pod, pods["node2"]["status"]["podIP"]),
        }
        rows = {name: [measure(cluster, client, server, address, program, args.megabytes, args.round_trips)
                       for _ in range(args.runs)] for name, (client, server, address) in paths.items()}
        # The same pods through a Service: its cluster IP, in each proxy mode.
        service_ip = make_bench_service(cluster)
        for mode in ("userspace", "iptables"):
            use_proxy_mode(cluster, mode, service_ip)
            rows[f"pod → cluster IP → pod ({mode})"] = [
                measure(cluster, client_pod, server_pod, service_ip, program, args.megabytes, args.round_trips)
                for _ in range(args.runs)]
        joins = join_times(cluster, args.runs)
        programming = programming_latency(cluster, 100)
        full_sync = json.loads(cluster.machines.run("node1", sys.executable, "-c", FULL_SYNC,
                                                    str(ROOT / "05-proxy-dns"), timeout=300).stdout)
    finally:
        if cluster is not None:
            cluster.tear_down()
            cluster.machines.down()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {args.runs} runs each, medians\n")
    print("| path | MB/s | latency median µs | p99 µs |\n|---|---|---|---|")
    medians = {}
    for name, runs in rows.items():
        medians[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        m = medians[name]
        print(f"| {name} | {m['MB/s']:.0f} | {m['median µs']:.0f} | {m['p99 µs']:.0f} |")
    floor, pods_row = medians["node1 → node2 (floor)"], medians["pod on node1 → pod on node2"]
    ratio = pods_row["MB/s"] / floor["MB/s"]
    print(f"\npod-to-pod throughput / node-to-node: {ratio:.2f} (target ≥ 0.90: {'met' if ratio >= 0.9 else 'NOT met'})")
    print(f"pod-to-pod latency / node-to-node: {pods_row['median µs'] / floor['median µs']:.2f}")
    for mode in ("userspace", "iptables"):
        row = medians[f"pod → cluster IP → pod ({mode})"]
        print(f"{mode} Service vs pod-to-pod direct: throughput {row['MB/s'] / pods_row['MB/s']:.2f}, "
              f"latency {row['median µs'] / pods_row['median µs']:.2f}x"
              + (" (target ≤ 1.10x)" if mode == "iptables" else ""))
    p50, p99 = programming[len(programming) // 2], programming[int(len(programming) * 0.99)]
    print(f"\nService programming, create to rules on both nodes (iptables mode, {len(programming)} Services): "
          f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms (target p99 ≤ 1 s: {'met' if p99 <= 1 else 'NOT met'})")
    print("\n| Services (3 endpoints each) | rule lines | one iptables-restore |\n|---|---|---|")
    for count, (elapsed, code, lines) in full_sync.items():
        print(f"| {count} | {lines} | {elapsed * 1000:.0f} ms{'' if code == 0 else ' (FAILED)'} |")
    print("\n| join | podCIDR | routes on every other machine after |\n|---|---|---|")
    for i, join in enumerate(joins, 1):
        print(f"| {i} | {join['podCIDR']} | {join['routes everywhere s'] * 1000:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
