"""Chapter 02 benchmark (`make bench-02`): what does the API server cost on top
of the machine it runs on?

Every figure is measured against a floor taken in the same run, on loopback:

1. Throughput: durable creates/s and GETs/s with 1 and 8 clients, against a
   bare Flask route on the same WSGI server (parse the JSON body and answer
   it; answer a GET), and against fsync'd small-file writes (the store's
   atomic write: tmp file + fsync + rename + fsync of the directory).
2. Latency of a create at a steady 100 creates/s (open loop: requests leave on
   a schedule, and a slow answer does not delay the next one).
3. A list of all pods (JSON) at 1,000 and 10,000 pods.
4. Watch delivery: from a create's 201 to each watcher reading the event,
   with 1, 100 and 1,000 watchers, each on its own streaming connection.
5. The server's resident memory at 10,000 pods.

It prints a Markdown table for 02-apiserver/README.md. `--quick` runs every
part, shorter. The throughput load comes from `wrk` (C, so the client is not
what is measured); without it, from several Python processes.
"""
from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent   # the chapter folder, where apiserver.py lives
sys.path.insert(0, str(HERE))   # the chapter's modules (http_server), when run as a script

from common.tooling.bench_tools import (call, cpu_seconds, machine, percentile, pod, pods_path, populate,  # noqa: E402
                                        print_rows, start, start_apiserver)
from common.tooling.ports import free_port  # noqa: E402
from common.tooling.processes import stop_within  # noqa: E402


# ----- small helpers -----

def proc_status(pid: int, field: str) -> int:
    """A number from /proc/PID/status, e.g. VmRSS (kB) or Threads."""
    match = re.search(rf"^{field}:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1))


# ----- the servers under test -----

def serve_bare(port: int) -> None:
    """The floor: Flask on the same HTTP server as apiserver.py, with routes
    that do only the unavoidable work."""
    from flask import Flask, Response, request

    from http_server import APIHTTPServer
    app = Flask("bare")
    stored = pod("bare", "default")
    posts, lock = [0], threading.Lock()

    @app.post("/bare")
    def bare_post():
        with lock:
            posts[0] += 1
        return Response(json.dumps(request.get_json(), separators=(",", ":")), 201, mimetype="application/json")

    @app.get("/bare/posts")
    def bare_posts():
        """How many POSTs it has answered: CPU per request = CPU used / POSTs."""
        return Response(str(posts[0]), 200, mimetype="text/plain")

    @app.get("/bare")
    def bare_get():
        return Response(json.dumps(stored, separators=(",", ":")), 200, mimetype="application/json")

    APIHTTPServer(("127.0.0.1", port), app).serve_forever()


def stop(process: subprocess.Popen) -> None:
    stop_within(process, 10)


# ----- floors measured without any server -----

def atomic_write(directory: Path, name: str, data: bytes) -> None:
    """The same steps as file_store.write_file_atomically."""
    temporary = directory / f".{name}.tmp"
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, directory / name)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)


def fsync_floor(directory: Path, seconds: float, writers: int) -> tuple[float, list[float]]:
    """Atomic small-file writes/s and seconds per write. One writer is what a
    store that writes under one lock can reach; several writers show how much
    more the file system gives when their fsyncs share a journal commit."""
    directory.mkdir(parents=True, exist_ok=True)
    data = json.dumps(pod("x", "default"), indent=2).encode() * 2      # about a stored pod's size
    times: list[float] = []
    end = time.monotonic() + seconds

    def writer(number: int) -> None:
        i = 0
        while time.monotonic() < end:
            began = time.perf_counter()
            atomic_write(directory, f"pod-{number}-{i}.json", data)
            times.append(time.perf_counter() - began)
            i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(times) / seconds, times


# ----- throughput: wrk, or Python processes when wrk is missing -----

WRK_POST_LUA = """
-- One counter per wrk thread; setup() numbers the threads, so names never collide.
local counter = 0
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  prefix = args[1]
  headers = {["Content-Type"] = "application/json"}
end
function request()
  counter = counter + 1
  local name = prefix .. "-" .. id .. "-" .. counter
  return wrk.format("POST", nil, headers, BEFORE .. name .. AFTER)
end
"""


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def post_body_halves(namespace: str) -> tuple[str, str]:
    """The pod's JSON split around its name, so each request can carry a new one."""
    before, after = json.dumps(pod("NAME-HERE", namespace)).split("NAME-HERE")
    return before, after


def wrk_rate(port: int, path: str, clients: int, seconds: float, post_prefix: str | None,
             namespace: str, workdir: Path) -> float:
    argv = ["wrk", f"-t{min(clients, 2)}", f"-c{clients}", f"-d{seconds}s", "-H", "Accept: application/json"]
    if post_prefix:
        before, after = post_body_halves(namespace)
        script = workdir / "post.lua"
        script.write_text(f"BEFORE = {lua_string(before)}\nAFTER = {lua_string(after)}\n{WRK_POST_LUA}")
        argv += ["-s", str(script)]
    argv.append(f"http://127.0.0.1:{port}{path}")
    # A one-second warm-up first, discarded: the first second of a run on this
    # VM is reliably slower, and it would fall on whichever figure runs first.
    warm_up = [a if not a.startswith("-d") else "-d1s" for a in argv]
    subprocess.run(warm_up + (["--", post_prefix + "-warm"] if post_prefix else []), capture_output=True, check=True)
    if post_prefix:
        argv += ["--", post_prefix]
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: (.*)", output)
    if failed or errors:
        print(f"note: wrk {path} x{clients}: {failed.group(0) if failed else ''} {errors.group(0) if errors else ''}",
              file=sys.stderr)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))


def python_client(port: int, path: str, seconds: float, post_prefix: str | None, namespace: str, results) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    before, after = post_body_halves(namespace)
    done, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        if post_prefix:
            conn.request("POST", path, f"{before}{post_prefix}-{os.getpid()}-{done}{after}",
                         {"Content-Type": "application/json"})
        else:
            conn.request("GET", path, headers={"Accept": "application/json"})
        conn.getresponse().read()
        done += 1
    results.put(done)


def python_rate(port: int, path: str, clients: int, seconds: float, post_prefix: str | None,
                namespace: str, workdir: Path) -> float:
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=python_client, args=(port, path, seconds, post_prefix, namespace, results))
               for _ in range(clients)]
    for worker in workers:
        worker.start()
    total = sum(results.get() for _ in workers)
    for worker in workers:
        worker.join()
    return total / seconds


# ----- latency at a steady rate -----

async def paced_creates(port: int, namespace: str, rate: float, seconds: float) -> list[float]:
    """Open loop: request i leaves at start + i/rate whatever happened before,
    and its latency counts from that scheduled moment (no coordinated omission)."""
    import aiohttp
    url = f"http://127.0.0.1:{port}{pods_path(namespace)}"
    latencies: list[float] = []

    async def one(session, i: int, scheduled: float) -> None:
        async with session.post(url, json=pod(f"paced-{i}", namespace)) as response:
            await response.read()
            assert response.status == 201, response.status
        latencies.append(time.monotonic() - scheduled)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200)) as session:
        start_at, tasks = time.monotonic() + 0.1, []
        for i in range(int(rate * seconds)):
            scheduled = start_at + i / rate
            await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
            tasks.append(asyncio.create_task(one(session, i, scheduled)))
        await asyncio.gather(*tasks)
    return latencies


def list_latency(port: int, samples: int) -> tuple[list[float], bytes]:
    """Seconds from sending GET /api/v1/pods to holding the whole body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        conn.request("GET", "/api/v1/pods", headers={"Accept": "application/json"})
        body = conn.getresponse().read()
        times.append(time.perf_counter() - began)
    conn.close()
    return times, body


# ----- watch fan-out -----

def watcher_process(port: int, path: str, connections: int, expected: int, pipe) -> None:
    """Hold `connections` watches; report per connection {pod name: time read}.

    The hot loop only stamps the time and keeps the line: parsing waits until
    every event is in, so the client's own work does not delay the stamp."""
    import aiohttp

    async def watch(session, ready: asyncio.Event, opened: list, lines: list) -> None:
        async with session.get(f"http://127.0.0.1:{port}{path}") as response:
            assert response.status == 200, response.status
            opened.append(1)
            if len(opened) == connections:
                ready.set()
            while len(lines) < expected:
                line = await response.content.readline()
                if not line:
                    break
                lines.append((time.monotonic(), line))

    async def main() -> list[dict]:
        ready, opened = asyncio.Event(), []
        received = [[] for _ in range(connections)]
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
            tasks = [asyncio.create_task(watch(session, ready, opened, lines)) for lines in received]
            await ready.wait()
            pipe.send("ready")
            await asyncio.wait(tasks, timeout=expected * 2 + 30)
        return [{json.loads(line)["object"]["metadata"]["name"]: t for t, line in lines} for lines in received]

    pipe.send(asyncio.run(main()))


def watch_delivery(port: int, namespace: str, watchers: int, events: int, spacing: float) -> tuple[list[float], int]:
    """Latencies from each create's 201 to each watcher reading its event, and
    how many deliveries never came."""
    _, body = call(port, "GET", pods_path(namespace) + "?limit=1")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    path = f"{pods_path(namespace)}?watch=true&resourceVersion={rv}"
    # Several processes, so one client event loop does not stamp 1,000 sockets in turn.
    processes = min(4, watchers)
    shares = [watchers // processes + (1 if i < watchers % processes else 0) for i in range(processes)]
    pipes, workers = [], []
    for share in shares:
        parent, child = multiprocessing.Pipe()
        worker = multiprocessing.Process(target=watcher_process, args=(port, path, share, events, child))
        worker.start()
        pipes.append(parent)
        workers.append(worker)
    for parent in pipes:
        if not parent.poll(120) or parent.recv() != "ready":
            raise SystemExit(f"{watchers} watchers did not connect within 120 s")
    acked = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(events):
        name = f"watched-{watchers}-{i}"
        conn.request("POST", pods_path(namespace), json.dumps(pod(name, namespace)), {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        acked[name] = time.monotonic()
        assert response.status == 201, response.status
        time.sleep(spacing)
    conn.close()
    latencies = []
    for parent in pipes:
        for seen in parent.recv():
            # A watcher may read the event a hair before the writer reads its
            # 201 (the event is published before the response is sent): count 0.
            latencies += [max(0.0, seen[name] - at) for name, at in acked.items() if name in seen]
    for worker in workers:
        worker.join()
    return latencies, watchers * events - len(latencies)


def wait_watches_closed(pid: int, threads_before: int) -> None:
    """The server notices a closed watch at its next idle wake-up (1 s); wait
    for those threads to end so one round does not weigh on the next."""
    deadline = time.monotonic() + 60
    while proc_status(pid, "Threads") > threads_before + 2 and time.monotonic() < deadline:
        time.sleep(0.2)


# ----- the server's CPU per request -----

def served(port: int, bare: bool) -> int:
    """Requests done so far: the bare server's POST count, or the API
    server's resourceVersion (one per create, nothing else writes meanwhile)."""
    if bare:
        return int(call(port, "GET", "/bare/posts")[1])
    return int(json.loads(call(port, "GET", pods_path("bench") + "?limit=1")[1])["metadata"]["resourceVersion"])


def rate_and_cpu(rate, pid: int, bare: bool, port: int, *args) -> tuple[float, float]:
    """A throughput figure, and the server process's CPU ms per request
    during it (its warm-up included in both counts): the cost that does not
    move with the load on the machine the way a rate does."""
    cpu, done = cpu_seconds(pid), served(port, bare)
    figure = rate(port, *args)
    return figure, (cpu_seconds(pid) - cpu) * 1000 / max(1, served(port, bare) - done)


# ----- the run -----

def run(quick: bool, workdir: Path) -> tuple[list[tuple], bool]:
    seconds = 3 if quick else 10               # per throughput measurement
    paced_seconds = 5 if quick else 30         # at 100 creates/s
    watch_events = 5 if quick else 20
    rate = wrk_rate if shutil.which("wrk") else python_rate
    rows = []

    fsync_rate, fsync_times = fsync_floor(workdir / "fsync-floor-1", seconds, 1)
    fsync_rate_8, _ = fsync_floor(workdir / "fsync-floor-8", seconds, 8)

    port = free_port()
    bare = start([str(Path(__file__).resolve()), "--serve-bare", str(port)], port, workdir / "bare.log", "/bare")
    try:
        bare_post, bare_cpu = {}, {}
        for c in (1, 8):
            bare_post[c], bare_cpu[c] = rate_and_cpu(rate, bare.pid, True, port, "/bare", c, seconds, "bare",
                                                     "default", workdir)
        bare_get = {c: rate(port, "/bare", c, seconds, None, "default", workdir) for c in (1, 8)}
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("GET", "/bare")
        keep_alive = conn.getresponse().getheader("Connection", "").lower() != "close"
        conn.close()
    finally:
        stop(bare)

    # Server A: throughput and paced latency.
    server, port = start_apiserver(workdir, "data-throughput")
    try:
        call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
        call(port, "POST", pods_path("bench"), pod("get-me", "bench"))
        creates, create_cpu = {}, {}
        for c in (1, 8):
            creates[c], create_cpu[c] = rate_and_cpu(rate, server.pid, False, port, pods_path("bench"), c, seconds,
                                                     f"c{c}", "bench", workdir)
        gets = {c: rate(port, pods_path("bench") + "/get-me", c, seconds, None, "bench", workdir) for c in (1, 8)}
        paced = asyncio.run(paced_creates(port, "bench", 100, paced_seconds))
    finally:
        stop(server)
    for c in (1, 8):
        disk = fsync_rate if c == 1 else fsync_rate_8
        rows.append((f"durable creates/s, {c} client{'s' if c > 1 else ''} (server CPU per create)",
                     f"{creates[c]:.0f} ({create_cpu[c]:.2f} ms)",
                     f"bare POST {bare_post[c]:.0f} ({bare_cpu[c]:.2f} ms); fsync'd writes "
                     f"({c} writer{'s' if c > 1 else ''}) {disk:.0f}",
                     f"{creates[c] / bare_post[c]:.2f} of POST; {creates[c] / disk:.2f} of fsync; "
                     f"CPU {create_cpu[c] / bare_cpu[c]:.1f}x",
                     "≥ 0.60 of bare POST" if c == 8 else "", creates[c] / bare_post[c] >= 0.6 if c == 8 else None))
    for c in (1, 8):
        rows.append((f"GETs/s (one pod), {c} client{'s' if c > 1 else ''}", f"{gets[c]:.0f}", f"bare GET {bare_get[c]:.0f}",
                     f"{gets[c] / bare_get[c]:.2f}", "≥ 0.60 of bare GET", gets[c] / bare_get[c] >= 0.6))
    p99 = percentile(paced, 0.99)
    # The max shows the store's full garbage collections, which rarely reach the p99.
    rows.append((f"create latency at 100/s, p50 / p99 / max ({len(paced)} creates)",
                 f"{statistics.median(paced) * 1000:.1f} / {p99 * 1000:.1f} / {max(paced) * 1000:.1f} ms",
                 f"fsync'd write {statistics.median(fsync_times) * 1000:.1f} / {percentile(fsync_times, 0.99) * 1000:.1f} ms",
                 "", "p99 ≤ 50 ms", p99 <= 0.05))

    # Server B: lists, memory and watches over a store of 1,000 then 10,000 pods.
    server, port = start_apiserver(workdir, "data-lists")
    try:
        rss_empty = proc_status(server.pid, "VmRSS") / 1024
        call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
        call(port, "POST", "/api/v1/namespaces", {"metadata": {"name": "watched"}})
        populated = 0
        for count, target in ((1000, 0.1), (10_000, 1.0)):
            began = time.monotonic()
            asyncio.run(populate(port, "bench", populated, count))
            fill_rate = (count - populated) / (time.monotonic() - began)
            populated = count
            times, body = list_latency(port, 5 if quick else 20)
            items = json.loads(body)["items"]
            assert len(items) == count, len(items)
            began = time.perf_counter()
            json.dumps({"kind": "PodList", "items": items}, separators=(",", ":"))
            floor = time.perf_counter() - began
            rows.append((f"list all pods (JSON, {len(body) / 1e6:.1f} MB), {count:,} pods, p50 / max",
                         f"{statistics.median(times) * 1000:.0f} / {max(times) * 1000:.0f} ms",
                         f"json.dumps of the list {floor * 1000:.0f} ms",
                         f"{statistics.median(times) / floor:.1f}x", f"≤ {target * 1000:.0f} ms", max(times) <= target))
        rss = proc_status(server.pid, "VmRSS") / 1024
        rows.append((f"server RSS at {populated:,} pods (after the lists)", f"{rss:.0f} MB",
                     f"empty server {rss_empty:.0f} MB", "", "≤ 300 MB", rss <= 300))
        threads = proc_status(server.pid, "Threads")
        for watchers, spacing, limit in ((1, 0.05, 0.02), (100, 0.2, 0.1), (1000, 1.0, 1.0)):
            latencies, missing = watch_delivery(port, "watched", watchers, watch_events, spacing)
            wait_watches_closed(server.pid, threads)
            worst = max(latencies) if latencies else float("inf")
            figure = percentile(latencies, 0.99) if watchers == 1 else worst
            rows.append((f"watch delivery, {watchers:,} watcher{'s' if watchers > 1 else ''} x {watch_events} events,"
                         " p50 / p99 / max", f"{statistics.median(latencies) * 1000:.1f} / "
                         f"{percentile(latencies, 0.99) * 1000:.1f} / {worst * 1000:.1f} ms"
                         + (f" ({missing} never came)" if missing else ""), "", "",
                         "p99 ≤ 20 ms" if watchers == 1 else f"max ≤ {limit * 1000:.0f} ms",
                         figure <= limit and not missing))
        rows.append(("(populating through the API, 8 clients)", f"{fill_rate:.0f} creates/s", "", "", "", None))
    finally:
        stop(server)
    return rows, keep_alive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="every part, shorter (about a minute)")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return 0
    # 1,000 watches are 2,000 sockets on this machine: lift the soft limit
    # (inherited by the servers and the watcher processes).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if shutil.which("wrk"):
        tool = "wrk " + subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split()[1]
    else:
        tool = "Python client processes (install wrk for a load tool that is surely not the bottleneck: " \
               "sudo apt-get install wrk)"
        print(f"note: wrk not found; using {tool}", file=sys.stderr)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-02-") as workdir:
        fs = subprocess.run(["df", "--output=fstype", workdir], capture_output=True, text=True).stdout.split()[-1]
        rows, keep_alive = run(args.quick, Path(workdir))
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}, Python {platform.python_version()}, data dir on {fs}; "
          f"load: {tool}; aiohttp for paced creates and watchers{'; --quick' if args.quick else ''}")
    if not keep_alive:
        print("(the WSGI server answers every request with `Connection: close`, so every request in the "
              "throughput rows, the floors' included, pays for a new connection and a new thread)")
    print()
    print_rows(rows, "API server")
    print(f"\nrun time {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
