"""Chapter 03 benchmark (`make bench-03`): how fast does the scheduler place
pods on 1,000 nodes, and is it the scheduler or the API server that sets
the pace?

One run, on this machine, against a real API server process (its data in a
temporary directory):

1. Register 1,000 Node objects through the API. No kubelet: each Node is
   posted with the status a kubelet would report (allocatable cpu, memory
   and pods; Ready=True). That is all the scheduler reads.
2. The floor, in the same run, on the same server: how fast it creates the
   same pods (chapter 02's benchmark pod) with the same number of clients,
   how fast it takes bindings when nothing decides anything (this script
   POSTs pods/binding for those pods, as many at once as the scheduler's
   binder threads), and Events like the scheduler's Scheduled one. A
   scheduled pod costs the server all three writes, so together they give
   the most pods/s this server could schedule, whatever the scheduler.
3. Start `03-scheduler/scheduler.py --apiserver URL` as its own process,
   as in a real cluster, create 3,000 pods, and watch them get bound: pods
   per second from the first create to the last binding seen on a watch,
   bindings per second, and each pod's wait from created to bound.
4. The scheduling cycle per pod (filter + score + tie-break, not the
   binding): scheduler.py logs no per-pod timing, so a second, shorter run
   hosts the same Scheduler class in a process of its own (this file with
   --probe) and times `framework.schedule` around each call. `--profile`
   also runs that probe's scheduling loop under cProfile and prints where
   the time goes.

It prints a Markdown table for 03-scheduler/README.md, with this machine's
cores, memory and Python. `--nodes 100 --pods 300` is a quick look.
Everything it starts is stopped, and the temporary directory removed, at
the end and on Ctrl-C.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import platform
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import aiohttp

from common.client.client import APIClient, APIConnectionError
from common.client.kubeconfig import Connection
from common.tooling.bench_tools import call, cpu_seconds, percentile, populate, print_rows, start_apiserver
from common.tooling.bench_tools import machine as processor_and_cores
from common.tooling.processes import stop_within

HERE = Path(__file__).resolve().parent
SCHEDULER = HERE / "scheduler.py"
BIND_CLIENTS = 16          # the scheduler's default --bind-workers: bindings in flight at once


# ----- objects -----

def node(name: str) -> dict:
    """A Node as a kubelet registers it: room for 40 of the benchmark's pods
    (common/tooling/bench_tools.py's pod()) by cpu, 110 by count."""
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
            "spec": {},
            "status": {"capacity": dict(allocatable), "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def scheduled_event(pod_name: str, namespace: str, node_name: str) -> dict:
    """The Event the scheduler records for each pod it binds (what kubectl describe shows)."""
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod_name}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": pod_name},
            "type": "Normal", "reason": "Scheduled",
            "message": f"Successfully assigned {namespace}/{pod_name} to {node_name}",
            "source": {"component": "default-scheduler"}, "count": 1}


async def post_all(port: int, requests: list[tuple[str, dict]], concurrency: int) -> None:
    """POST each (path, body), `concurrency` at a time; every answer must be a 201."""
    todo = iter(requests)

    async def client(session) -> None:
        for path, body in todo:
            async with session.post(f"http://127.0.0.1:{port}{path}", json=body) as response:
                text = await response.text()
                assert response.status == 201, (path, response.status, text[:300])

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(client(session) for _ in range(concurrency)))


def timed_populate(port: int, namespace: str, count: int, concurrency: int) -> tuple[float, float]:
    """Create pod-0..pod-(count-1) with common/tooling/bench_tools.py's populate(); (start, end) in monotonic time."""
    began = time.monotonic()
    asyncio.run(populate(port, namespace, 0, count, concurrency))
    return began, time.monotonic()


# ----- watching pods get bound -----

class BindWatch:
    """A watch on one namespace's pods (the shared client's, on a thread of
    its own): when each pod was first seen, and when and where it was bound."""

    def __init__(self, url: str, namespace: str, expected: int):
        self.client = APIClient(Connection(url), user_agent="bench-03/watch")
        self.namespace, self.expected = namespace, expected
        rv = self.client.list("v1", "pods", namespace, limit=1)["metadata"]["resourceVersion"]
        self.watch = self.client.watch("v1", "pods", namespace, resource_version=rv, allow_bookmarks=False)
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.node_of: dict[str, str] = {}
        self.error: str | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True, name=f"watch {namespace}")
        self.thread.start()

    def _read(self) -> None:
        try:
            for kind, obj in self.watch:
                at = time.monotonic()
                name = obj["metadata"]["name"]
                self.added.setdefault(name, at)
                node_name = obj["spec"].get("nodeName")
                if node_name and name not in self.bound:
                    self.bound[name], self.node_of[name] = at, node_name
                    if len(self.bound) >= self.expected:
                        break
        except APIConnectionError as error:
            self.error = str(error)
        finally:
            self.done.set()

    def wait(self, timeout: float, alive) -> bool:
        """True once every expected pod is bound; False on timeout or if alive() turns False."""
        deadline = time.monotonic() + timeout
        while not self.done.wait(0.5):
            if time.monotonic() > deadline or not alive():
                return False
        return len(self.bound) >= self.expected

    def close(self) -> None:
        self.watch.close()
        self.client.close()


# ----- CPU used by a process, to see who is busy -----

class CPUMeter:
    """Cores each process used between start() and stop(): 1.0 is one core busy throughout."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids

    def start(self) -> "CPUMeter":
        self.began, self.before = time.monotonic(), {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        return self

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self.began
        return {name: (cpu_seconds(pid) - self.before[name]) / wall for name, pid in self.pids.items()}


# ----- processes this run starts, stopped whatever happens -----

class Processes:
    def __init__(self):
        self.running: list[subprocess.Popen] = []

    def start(self, argv: list, log_path: Path) -> subprocess.Popen:
        # A session of its own: Ctrl-C reaches only this script, which then
        # stops each process in turn (SIGTERM, then SIGKILL after 20 s).
        with open(log_path, "ab") as log:
            process = subprocess.Popen([sys.executable, *map(str, argv)], stdout=log, stderr=subprocess.STDOUT,
                                       cwd=HERE.parent, start_new_session=True,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1", "GROUNDUP_LOG_LEVEL": "INFO"})
        self.running.append(process)
        return process

    def adopt(self, process: subprocess.Popen) -> subprocess.Popen:
        self.running.append(process)
        return process

    def stop(self, process: subprocess.Popen) -> None:
        if process in self.running:
            self.running.remove(process)
            stop_within(process, 20)

    def stop_all(self) -> None:
        while self.running:
            self.stop(self.running[-1])


def wait_for_line(process: subprocess.Popen, log_path: Path, marker: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while marker not in log_path.read_text(errors="replace"):
        if process.poll() is not None:
            raise SystemExit(f"{process.args[1]} exited with code {process.returncode}; see {log_path}:\n"
                             + log_path.read_text(errors="replace")[-2000:])
        if time.monotonic() > deadline:
            raise SystemExit(f"{process.args[1]} did not start scheduling within {timeout:.0f} s; see {log_path}")
        time.sleep(0.05)


# ----- one scheduling run: start a scheduler, create pods, watch them bound -----

class Outcome:
    def __init__(self, watch: BindWatch, count: int, began: float, created_until: float, cpu: dict[str, float]):
        self.count, self.bound, self.began = count, len(watch.bound), began
        self.complete = self.bound >= count
        bound_at = sorted(watch.bound.values())
        self.first_bound, self.last_bound = (bound_at[0], bound_at[-1]) if bound_at else (began, began)
        self.end_to_end = self.bound / (self.last_bound - began) if bound_at else 0.0
        self.bind_rate = self.bound / max(self.last_bound - self.first_bound, 1e-9) if bound_at else 0.0
        self.create_rate = count / (created_until - began)
        # Pods still pending when the last create came back: a scheduler that
        # keeps up with the arrivals leaves only the few in flight.
        self.backlog = count - sum(1 for at in bound_at if at <= created_until)
        self.tail = self.last_bound - created_until
        self.waits = [max(0.0, watch.bound[name] - watch.added[name]) for name in watch.bound if name in watch.added]
        self.per_node = Counter(watch.node_of.values())
        self.cpu = cpu


def scheduling_run(processes: Processes, port: int, url: str, namespace: str, count: int, clients: int,
                   argv: list, log_path: Path, apiserver_pid: int) -> tuple[Outcome, subprocess.Popen]:
    """Start the scheduler (argv), create `count` pods in namespace, wait until all are bound."""
    call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    scheduler = processes.start(argv, log_path)
    wait_for_line(scheduler, log_path, " INFO scheduling ", 120)
    watch = BindWatch(url, namespace, count)
    try:
        meter = CPUMeter({"API server": apiserver_pid, "scheduler": scheduler.pid, "this script": os.getpid()}).start()
        began, created_until = timed_populate(port, namespace, count, clients)
        watch.wait(max(120.0, count / 10), alive=lambda: scheduler.poll() is None)
        cpu = meter.stop()
    finally:
        watch.close()
    outcome = Outcome(watch, count, began, created_until, cpu)
    if not outcome.complete:
        print(f"note: only {outcome.bound} of {count} pods in {namespace} were bound; see {log_path}"
              + (f" (watch: {watch.error})" if watch.error else ""), file=sys.stderr)
    return outcome, scheduler


# ----- the probe: the same Scheduler, in a process of its own, timed per cycle -----

def probe(url: str, out: Path, profile: Path | None) -> int:
    """Run scheduler.py's Scheduler as its main() does, timing each call of
    framework.schedule (filter + score + pick; the binding is handed to a
    thread pool and is not in it) and each whole schedule_one. Writes the
    timings as JSON to `out` when stopped (SIGTERM)."""
    sys.path.insert(0, str(HERE))
    from common.client.events import EventRecorder
    from common.log import get_logger
    from scheduler import Scheduler

    log = get_logger("scheduler")
    client = APIClient(Connection(url), user_agent="scheduler/default-scheduler")
    events = EventRecorder(client, "default-scheduler", log=log, queue_size=10_000, writers=4).start()
    scheduler = Scheduler(client, events=events, log=log)
    cycles: list[tuple[int, int]] = []           # (wall ns, this thread's CPU ns)
    whole: list[int] = []                        # schedule_one, wall ns
    schedule, schedule_one = scheduler.framework.schedule, scheduler.schedule_one

    def timed_schedule(pod_info, nodes):
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        decision = schedule(pod_info, nodes)
        cycles.append((time.perf_counter_ns() - wall, time.thread_time_ns() - cpu))
        return decision

    def timed_schedule_one(queued):
        wall = time.perf_counter_ns()
        schedule_one(queued)
        whole.append(time.perf_counter_ns() - wall)

    scheduler.framework.schedule, scheduler.schedule_one = timed_schedule, timed_schedule_one
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: threading.Thread(target=scheduler.stop, name="stop").start())
    profiler = cProfile.Profile() if profile else None
    if scheduler.start():
        if profiler:
            profiler.enable()                    # this thread only: the scheduling loop
        scheduler.run()
        if profiler:
            profiler.disable()
            profiler.dump_stats(profile)
    scheduler.stopped.wait(20)
    out.write_text(json.dumps({"cycles": cycles, "whole": whole, "bound": scheduler.bound,
                               "events": {"written": events.written, "dropped": events.dropped,
                                          "left": events.queued()}}))
    os._exit(0)


def top_functions(path: Path, count: int = 14) -> str:
    """The profile's functions by own time, with cumulative time beside."""
    text = io.StringIO()
    stats = pstats.Stats(str(path), stream=text)
    stats.strip_dirs().sort_stats("tottime").print_stats(count)
    return "\n".join(line for line in text.getvalue().splitlines()[3:] if line.strip())


# ----- the run -----

def machine() -> str:
    memory = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    return f"{processor_and_cores()}, {int(memory.group(1)) / 1024 ** 2:.0f} GB RAM, Python {platform.python_version()}"


def p50_p99(values: list, unit: float, digits: int = 1) -> str:
    """"p50 / p99 ms" of values in units of `unit` seconds (1e-9: nanoseconds)."""
    if not values:
        return "-"
    return " / ".join(f"{percentile(values, f) * unit * 1000:.{digits}f}" for f in (0.5, 0.99)) + " ms"


class Floors(NamedTuple):
    create: float       # pods created/s
    bind: float         # bindings/s
    event: float        # events created/s
    cpu_ms: dict        # the server's CPU ms per create, binding and event (its own CPU time, from /proc)

    @property
    def ceiling(self) -> float:
        """A pod costs the server a create, a binding and an event: at best this many pods/s."""
        return 1 / (1 / self.create + 1 / self.bind + 1 / self.event)


def measure_floors(port: int, pid: int, nodes: list[str], count: int, clients: int) -> Floors:
    """The server's own rates in this run, for the same pods, with nothing deciding anything;
    and its CPU per request, which moves less than a rate when the machine is busy."""
    call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "floor"}})
    cpu = {"create": cpu_seconds(pid)}
    began, ended = timed_populate(port, "floor", count, clients)
    create = count / (ended - began)
    cpu["bind"] = cpu_seconds(pid)
    # Bind them ourselves, as many at once as the scheduler's binder threads.
    # (Bound, they are ordinary running pods to the scheduler started later.)
    bindings = [(f"/api/v1/namespaces/floor/pods/pod-{i}/binding",
                 {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"pod-{i}", "namespace": "floor"},
                  "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]}})
                for i in range(count)]
    began = time.monotonic()
    asyncio.run(post_all(port, bindings, BIND_CLIENTS))
    bind = count / (time.monotonic() - began)
    cpu["event"] = cpu_seconds(pid)
    # The scheduler's third write per pod: its Scheduled event.
    events = [("/api/v1/namespaces/floor/events", scheduled_event(f"pod-{i}", "floor", nodes[i % len(nodes)]))
              for i in range(count)]
    began = time.monotonic()
    asyncio.run(post_all(port, events, clients))
    cpu["end"] = cpu_seconds(pid)
    steps = ("create", "bind", "event", "end")
    cpu_ms = {step: (cpu[after] - cpu[step]) * 1000 / count for step, after in zip(steps, steps[1:])}
    return Floors(create, bind, count / (time.monotonic() - began), cpu_ms)


def run(args: argparse.Namespace, workdir: Path, processes: Processes) -> list[tuple]:
    server, port = start_apiserver(workdir, "data")
    processes.adopt(server)
    url = f"http://127.0.0.1:{port}"

    began = time.monotonic()
    nodes = [f"node-{i:04d}" for i in range(args.nodes)]
    asyncio.run(post_all(port, [("/api/v1/nodes", node(name)) for name in nodes], args.clients))
    register_rate = args.nodes / (time.monotonic() - began)
    floors = measure_floors(port, server.pid, nodes, args.pods, args.clients)

    # The real thing: scheduler.py in its own process.
    real, scheduler = scheduling_run(processes, port, url, "bench", args.pods, args.clients,
                                     [SCHEDULER, "--apiserver", url], workdir / "scheduler.log", server.pid)
    processes.stop(scheduler)                    # which flushes its events, for 5 s at most
    _, body = call(port, "GET", "/api/v1/namespaces/bench/events")
    recorded = sum(1 for e in json.loads(body)["items"] if e.get("reason") == "Scheduled")
    # What it did not write, it counted: its stop line says how many (none: no field).
    stop_line = [line for line in (workdir / "scheduler.log").read_text().splitlines() if " stopped " in line]
    dropped = re.search(r"events_dropped=(\d+)", stop_line[-1]) if stop_line else None
    recorded = (recorded, int(dropped.group(1)) if dropped else 0 if stop_line else None)

    # The probe: the same Scheduler, timed per cycle, on fewer pods.
    probe_out, profile = workdir / "probe.json", workdir / "probe.prof" if args.profile else None
    argv = [Path(__file__), "--probe", url, "--probe-out", probe_out] + (["--profile-out", profile] if profile else [])
    probed, prober = scheduling_run(processes, port, url, "probe", args.probe_pods, args.clients, argv,
                                    workdir / "probe.log", server.pid)
    processes.stop(prober)
    timings = json.loads(probe_out.read_text())
    if profile:
        print(f"\ncProfile of the probe's scheduling loop ({len(timings['cycles'])} pods, {args.nodes} nodes; "
              "own time first):")
        print(top_functions(profile))
    return table(args, floors, real, recorded, probed, timings) + [
        (f"(registering {args.nodes:,} nodes through the API, {args.clients} clients)",
         f"{register_rate:.0f} nodes/s", "", "", "", None)]


def table(args, floors: Floors, real: Outcome, recorded: tuple, probed: Outcome, timings: dict) -> list[tuple]:
    """Rows of (measure, scheduler, floor, ratio, target, met: True/False/None)."""
    cycles = [wall for wall, _ in timings["cycles"]]
    cycle_cpu = [cpu for _, cpu in timings["cycles"]]
    whole = timings["whole"]
    busy = sum(whole) / 1e9 / max(probed.last_bound - probed.began, 1e-9)   # share of the probe run spent deciding
    events = timings["events"]
    # The scheduler keeps up if, when the last pod has been created, only the
    # few being bound are still pending: then the API server, which also
    # took the creates, set the pace.
    kept_up = real.complete and real.backlog <= max(0.05 * real.count, BIND_CLIENTS)
    spread = f"{min(real.per_node.values())}-{max(real.per_node.values())}" if real.per_node else "-"
    cores = "cores (this machine has 2)" if os.cpu_count() == 2 else f"cores (of {os.cpu_count()})"
    return [
        (f"pods scheduled/s end to end, first create to last bound ({args.pods:,} pods, {args.nodes:,} nodes)",
         f"{real.end_to_end:.0f}" + ("" if real.complete else f" ({real.bound:,} bound)"),
         f"creates/s, {args.clients} clients: {floors.create:.0f} ({floors.cpu_ms['create']:.2f} ms of server CPU "
         "per create)",
         f"{real.end_to_end / floors.create:.2f}", "≥ 100 pods/s", real.complete and real.end_to_end >= 100),
        ("bindings/s (first to last bound) / creates/s meanwhile",
         f"{real.bind_rate:.0f} / {real.create_rate:.0f}",
         f"bindings/s, {BIND_CLIENTS} clients, nothing deciding: {floors.bind:.0f} "
         f"({floors.cpu_ms['bind']:.2f} ms CPU each)",
         f"{real.bind_rate / floors.bind:.2f} of bindings; {real.create_rate / floors.create:.2f} of creates", "", None),
        ("pods/s end to end vs the API server's ceiling for a create + a binding + an event per pod",
         f"{real.end_to_end:.0f}", f"≈ {floors.ceiling:.0f} (events/s, {args.clients} clients: {floors.event:.0f}; "
         f"{floors.cpu_ms['event']:.2f} ms CPU each)",
         f"{real.end_to_end / floors.ceiling:.2f}", "", None),
        ("pods still pending when the last create returned; the last bound after it",
         f"{real.backlog:,}; {real.tail * 1000:,.0f} ms", "", "",
         "binds limited by the API server (backlog ≤ 5%)", kept_up),
        (f"CPU used during the run, {cores}", f"scheduler {real.cpu['scheduler']:.2f}",
         f"API server {real.cpu['API server']:.2f}; this script {real.cpu['this script']:.2f}", "", "", None),
        ("wait per pod, created to bound (both seen on the watch), p50 / p99", p50_p99(real.waits, 1, 0),
         "", "", "", None),
        ("pods per node afterwards (this run's), min-max; Scheduled events written; counted as dropped",
         f"{spread}; {recorded[0]:,} of {real.bound:,}; "
         + (f"{recorded[1]:,}" if recorded[1] is not None else "? (the scheduler left no stop line)"),
         "", "", "every event written or counted",
         recorded[1] is not None and recorded[0] + recorded[1] >= real.bound),
        (f"scheduling cycle per pod, filter + score ({len(cycles):,} pods, {args.nodes:,} nodes), p50 / p99",
         p50_p99(cycles, 1e-9), "", "", "p99 ≤ 20 ms", bool(cycles) and percentile(cycles, 0.99) <= 20e6),
        ("  the same cycles in CPU time (the rest: waiting for the GIL or a core), p50 / p99", p50_p99(cycle_cpu, 1e-9),
         "", "", "", None),
        ("  whole schedule_one (cycle + cache lock + assume + hand-off), p50 / p99", p50_p99(whole, 1e-9),
         "", "", "", None),
        ("  probe run: pods/s end to end; scheduling loop busy; Scheduled events written / lost",
         f"{probed.end_to_end:.0f}; {busy:.0%}; {events['written']:,} / {events['dropped'] + events['left']:,}",
         "", "", "", None),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000, help="Node objects to register (default 1000)")
    parser.add_argument("--pods", type=int, default=3000, help="pods to schedule (default 3000)")
    parser.add_argument("--probe-pods", type=int, help="pods for the timed probe run (default: a third of --pods)")
    parser.add_argument("--clients", type=int, default=8, help="clients creating pods at once (default 8)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, data) afterwards")
    parser.add_argument("--profile", action="store_true", help="run the probe's scheduling loop under cProfile")
    parser.add_argument("--probe", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--probe-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        return probe(args.probe, args.probe_out, args.profile_out)
    args.probe_pods = args.probe_pods or max(1, args.pods // 3)

    # Ctrl-C (even if we were started with it ignored) and SIGTERM both end
    # in the finally below, which stops everything. SIGTERM goes through
    # SIGINT so that, inside asyncio.run, the runner's own handler ends it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    began = time.monotonic()
    processes = Processes()
    workdir = Path(tempfile.mkdtemp(prefix="bench-03-"))
    try:
        fs = subprocess.run(["df", "--output=fstype", workdir], capture_output=True, text=True).stdout.split()[-1]
        rows = run(args, workdir, processes)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping what this run started", file=sys.stderr)
        return 130
    finally:
        processes.stop_all()
        if args.keep:
            print(f"logs and data kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}, data dir on {fs}; {args.nodes:,} nodes, "
          f"{args.pods:,} pods (10m cpu, 16Mi each), created by {args.clients} clients (aiohttp); "
          f"the scheduler: 03-scheduler/scheduler.py in its own process")
    print()
    print_rows(rows, "scheduler")
    print(f"\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
