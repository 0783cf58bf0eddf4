"""The write path, request by request (`make bench-02-writes`): what does a
create, a binding and a status patch cost the API server, in CPU, against a
bare POST on the same HTTP server?

One run, on loopback, against a real API server process over the JSON files:

1. The floor: `bench.py`'s bare Flask route (parse the JSON body, answer it)
   takes the same number of POSTs from the same clients.
2. Creates: chapter 02's benchmark pod, each with a new name.
3. Bindings: POST pods/NAME/binding for every pod created, as the scheduler does.
4. Status patches: a merge patch of pods/NAME/status like the kubelet's
   first Running report (phase, conditions, pod IP, a container status).

Each row gives requests/s and, what moves less on a shared machine, the
server's CPU milliseconds per request (user + system, from /proc, the whole
process: HTTP, the write path, the fsyncs' system time), and both as ratios
of the floor's. `--profile DIR` samples the server with py-spy during each
phase (threads holding the GIL only: the Python time a request costs) and
prints the ten functions with the most samples, by their own time and with
what they call; the raw stacks stay in DIR for a flame graph
(https://www.speedscope.app reads them).
"""
from __future__ import annotations

import argparse
import collections
import http.client
import json
import multiprocessing
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from common.tooling.bench_tools import (call, cpu_seconds, machine, pod, pods_path, print_rows,  # noqa: E402
                                        start, start_apiserver)
from common.tooling.ports import free_port  # noqa: E402
from common.tooling.processes import stop_within  # noqa: E402

NAMESPACE = "bench"


def status_patch(name: str) -> dict:
    """What a kubelet sends once a pod's one container runs."""
    at = "2026-01-01T00:00:00Z"
    return {"status": {
        "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}],
        "startTime": at,
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": "httpd", "ready": True, "restartCount": 0, "started": True,
                               "image": "busybox:1.35", "imageID": "docker-pullable://busybox@sha256:0",
                               "containerID": f"docker://{name}", "state": {"running": {"startedAt": at}},
                               "lastState": {}}]}}


def request_for(phase: str, name: str) -> tuple[str, str, bytes, str]:
    """(method, path, body, content type) of one request of a phase."""
    if phase == "bare":
        return "POST", "/bare", json.dumps(pod(name, NAMESPACE)).encode(), "application/json"
    if phase == "create":
        return "POST", pods_path(NAMESPACE), json.dumps(pod(name, NAMESPACE)).encode(), "application/json"
    if phase == "bind":
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{hash(name) % 10}"}}
        return "POST", f"{pods_path(NAMESPACE)}/{name}/binding", json.dumps(binding).encode(), "application/json"
    if phase == "status":
        return ("PATCH", f"{pods_path(NAMESPACE)}/{name}/status", json.dumps(status_patch(name)).encode(),
                "application/merge-patch+json")
    raise ValueError(phase)


def client(port: int, phase: str, names: list[str], failures) -> None:
    """One keep-alive connection sending its share of the phase's requests."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    requests = [request_for(phase, name) for name in names]   # encoded before the clock starts
    failed = 0
    for method, path, body, content_type in requests:
        conn.request(method, path, body, {"Content-Type": content_type, "Accept": "application/json"})
        response = conn.getresponse()
        response.read()
        failed += response.status >= 300
    failures.put(failed)


def run_phase(port: int, pid: int, phase: str, names: list[str], clients: int,
              profile_dir: Path | None) -> dict:
    """Send every request of a phase from `clients` processes; rate and server CPU per request."""
    failures = multiprocessing.Queue()
    shares = [names[i::clients] for i in range(clients)]
    workers = [multiprocessing.Process(target=client, args=(port, phase, share, failures)) for share in shares]
    spy = start_py_spy(pid, profile_dir / f"{phase}.txt") if profile_dir else None
    cpu_before, began = cpu_seconds(pid), time.perf_counter()
    for worker in workers:
        worker.start()
    failed = sum(failures.get() for _ in workers)
    elapsed, cpu = time.perf_counter() - began, cpu_seconds(pid) - cpu_before
    for worker in workers:
        worker.join()
    if spy:
        spy.send_signal(signal.SIGINT)     # py-spy writes its file on SIGINT
        spy.wait(timeout=60)
    if failed:
        print(f"note: {failed} of {len(names)} {phase} requests failed", file=sys.stderr)
    return {"rate": len(names) / elapsed, "cpu_ms": cpu * 1000 / len(names), "failed": failed}


# ----- the profile -----

def py_spy() -> str | None:
    return shutil.which("py-spy") or (str(Path(sys.executable).with_name("py-spy"))
                                      if Path(sys.executable).with_name("py-spy").exists() else None)


def start_py_spy(pid: int, out: Path) -> subprocess.Popen:
    # --gil: only the thread holding the GIL, so the samples are Python's
    # CPU time, not threads asleep in a wait or an fsync. --nonblocking: the
    # server is not paused to be read (a few samples may be torn; no matter).
    argv = [py_spy(), "record", "--pid", str(pid), "--gil", "--nonblocking", "--rate", "500",
            "--format", "raw", "--output", str(out)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)                        # attached before the load starts
    return process


ROOT = HERE.parent.parent       # the repository


def _ours(where: str) -> bool:
    """Is this frame's file part of the repository (not Flask, not the standard library)?"""
    return (ROOT / "02-apiserver" / where).is_file() or (ROOT / where).is_file()


def top_costs(raw: Path, count: int = 10) -> tuple[list[tuple[str, float]], int]:
    """The functions of ours that the most samples fall in. A sample counts
    for the deepest function of ours on its stack, so a library call (a
    json.dumps, an fsync's Python side, Flask's dispatch) counts for the
    function of ours that made it: what a change to our code could save."""
    costs, samples, known = collections.Counter(), 0, {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        samples += int(n)
        for frame in reversed(stack.split(";")):
            function, _, where = frame.rpartition(" (")
            path = where.rsplit(":", 1)[0]
            if path not in known:
                known[path] = _ours(path)
            if known[path]:
                costs[f"{Path(path).name} {function}"] += int(n)
                break
        else:
            costs["(outside our code)"] += int(n)
    return [(name, n / samples) for name, n in costs.most_common(count)], samples


# ----- the run -----

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=3000, help="requests per phase (default 3000)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--profile", type=Path, metavar="DIR", help="sample the server with py-spy into DIR")
    args = parser.parse_args()
    if args.profile and not py_spy():
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    names = [f"w-{i}" for i in range(args.pods)]
    results, began = {}, time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-writes-") as workdir:
        workdir = Path(workdir)
        port = free_port()
        bare = start([str(HERE / "bench.py"), "--serve-bare", str(port)], port, workdir / "bare.log", "/bare")
        try:
            run_phase(port, bare.pid, "bare", names[:200], args.clients, None)       # warm-up
            results["bare"] = run_phase(port, bare.pid, "bare", names, args.clients, args.profile)
        finally:
            stop_within(bare, 10)
        server, port = start_apiserver(workdir, "data")
        try:
            call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            run_phase(port, server.pid, "create", [f"warm-{i}" for i in range(200)], args.clients, None)
            for phase in ("create", "bind", "status"):
                results[phase] = run_phase(port, server.pid, phase, names, args.clients, args.profile)
        finally:
            stop_within(server, 10)
    floor = results["bare"]
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}, Python {platform.python_version()}; "
          f"{args.pods} requests per phase from {args.clients} client processes")
    print()
    rows = [("bare POST (the floor)", f"{floor['rate']:.0f}/s; {floor['cpu_ms']:.2f} ms CPU", "", "", "", None)]
    for phase, label in (("create", "durable creates"), ("bind", "bindings"), ("status", "status patches")):
        figures = results[phase]
        rows.append((f"{label}, {args.clients} clients", f"{figures['rate']:.0f}/s; {figures['cpu_ms']:.2f} ms CPU",
                     f"bare POST {floor['rate']:.0f}/s; {floor['cpu_ms']:.2f} ms CPU",
                     f"{figures['rate'] / floor['rate']:.2f} of POST; CPU {figures['cpu_ms'] / floor['cpu_ms']:.1f}x",
                     "CPU ≤ 0.5 ms" if phase == "create" else "", figures["cpu_ms"] <= 0.5 if phase == "create" else None))
    print_rows(rows, "API server")
    if args.profile:
        for phase in ("create", "bind", "status"):
            costs, samples = top_costs(args.profile / f"{phase}.txt")
            print(f"\n{phase}: the top ten costs ({samples} samples of the thread holding the GIL)")
            print("| # | function (with the library calls it makes) | share of samples |\n|---|---|---|")
            for i, (name, share) in enumerate(costs, 1):
                print(f"| {i} | {name} | {share:.1%} |")
    print(f"\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
