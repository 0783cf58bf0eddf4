"""The dashboard's cost, measured: `make bench-dashboard` (python dashboard/bench.py).

A real API server and a real dashboard process on loopback, and headless
Chromium (Debian's, driven by Playwright) with TABS tabs open on the page.

1. Requests the API server serves while nothing changes, for 10 s, with no
   tab open and then with every tab open: the tabs cost the server nothing
   (one set of watches per dashboard process, fanned out inside it).
2. The update delay at RATE pod changes a second (creations, then
   deletions): from the moment a plain watch beside the dashboard hears of
   a change to the moment each tab has it, so that the API server's own
   time to answer the writer (its own row) is not counted as the
   dashboard's. Twice: TABS streams read without a browser, and no browser
   running (what the dashboard adds), then TABS browser tabs, where a
   MutationObserver in the page notes when the DOM shows it (what the page
   adds too; the browsers share this machine's cores). Both clocks are this
   machine's. p50, p99 and the worst, over every tab. Beside each: the CPU
   every process of the run used meanwhile (from /proc: where the cores
   went, whatever else the machine was doing), and in the browser run what
   each tab's main thread did per change (Chromium's own counters: script,
   style, layout).
3. A big cluster: PODS pods, one new tab, the time until all their cards are
   drawn.

API requests are counted from the server's own /metrics
(apiserver_request_total); the writer's own requests are subtracted.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

import requests

from common.client.client import APIClient
from common.client.kubeconfig import Connection
from common.tooling.apiserver_process import APIServer
from common.tooling.bench_tools import cpu_seconds, machine, percentile
from common.tooling.polling import wait_for
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

ROOT = Path(__file__).resolve().parents[1]
REQUEST_LINE = re.compile(r'^apiserver_request_total\{[^}]*\} ([0-9.e+]+)$', re.M)

# Runs in each tab: the time (epoch ms) each pod's card appears and loses its key.
OBSERVER = """() => {
  window.seen = {added: {}, removed: {}};
  const now = () => performance.timeOrigin + performance.now();
  new MutationObserver((records) => {
    const t = now();
    for (const r of records) {
      if (r.type === "childList") {
        for (const n of r.addedNodes) if (n.dataset && n.dataset.pod) window.seen.added[n.dataset.pod] ??= t;
      } else if (r.attributeName === "data-pod" && r.oldValue && !r.target.dataset.pod) {
        window.seen.removed[r.oldValue] ??= t;
      }
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                             attributeFilter: ["data-pod"]});
}"""


def goto(tab, url: str) -> None:
    """Open url; again if Chromium saw this computer's addresses change
    (ERR_NETWORK_CHANGED: network namespaces made by other work)."""
    for attempt in range(10):
        try:
            tab.goto(url)
            return
        except Exception as error:
            if "ERR_NETWORK_CHANGED" not in str(error) or attempt == 9:
                raise


def requests_served(api: str) -> float:
    return sum(float(v) for v in REQUEST_LINE.findall(requests.get(f"{api}/metrics", timeout=10).text))


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"nodeName": "node1",
                     "containers": [{"name": "app", "image": "busybox:1.35",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


class Writer:
    """Sends changes at a steady rate from a few threads; remembers when each was sent."""

    def __init__(self, api: str, rate: float):
        self.api, self.rate = api, rate
        self.sent: dict[str, float] = {}            # when the change left the writer (epoch ms)
        self.done: dict[str, float] = {}            # when the server answered: the change is stored
        self.requests = 0
        self.lock = threading.Lock()
        self.session = requests.Session()

    def run(self, names: list[str], change) -> None:
        start = time.time()
        threads = []
        for index, name in enumerate(names):
            due = start + index / self.rate
            time.sleep(max(0.0, due - time.time()))
            thread = threading.Thread(target=self._send, args=(name, change))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()

    def _send(self, name: str, change) -> None:
        sent = time.time() * 1000
        response = change(self.session, name)
        assert response.status_code in (200, 201), response.text
        with self.lock:
            self.sent[name], self.done[name] = sent, time.time() * 1000
            self.requests += 1

    def create(self, session, name):
        return session.post(f"{self.api}/api/v1/namespaces/default/pods", json=pod(name), timeout=30)

    def delete(self, session, name):
        # No kubelet here: gracePeriodSeconds 0 removes the pod at once, one change.
        return session.delete(f"{self.api}/api/v1/namespaces/default/pods/{name}",
                              json={"gracePeriodSeconds": 0}, timeout=30)


class Watcher(threading.Thread):
    """A plain watch on pods beside the dashboard: when the API server's
    news of each change reached a client. The page's delay is measured from
    here, so that the server's own write latency (the writer's row) is not
    counted as the dashboard's."""

    def __init__(self, api: str):
        super().__init__(daemon=True)
        self.client = APIClient(Connection(api), timeout=30)
        self.seen: dict[str, dict[str, float]] = {"added": {}, "removed": {}}
        self.watch = None

    def run(self) -> None:
        version = self.client.list("v1", "pods")["metadata"]["resourceVersion"]
        self.watch = self.client.watch("v1", "pods", resource_version=version, timeout_seconds=1800)
        for kind, obj in self.watch:                 # ends when close() hangs up
            which = {"ADDED": "added", "DELETED": "removed"}.get(kind)
            if which:
                self.seen[which].setdefault(obj["metadata"]["name"], time.time() * 1000)

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()                       # safe from another thread, unlike a raw response


class StreamTab(threading.Thread):
    """A tab without a browser: GET /events read as EventSource reads it,
    noting when each pod's change arrives. What the dashboard itself adds,
    without twenty renderers competing for this machine's two cores.

    A plain socket: it reads whatever has arrived at once (not a byte at a
    time, which cost this process more CPU than the dashboard spent serving
    it), and close() really hangs up, so the dashboard drops the tab."""

    def __init__(self, url: str):
        super().__init__(daemon=True)                # ends with the dashboard's stream
        host, port = url.split("//")[1].rstrip("/").split(":")
        self.socket = socket.create_connection((host, int(port)), timeout=10)
        self.socket.sendall(f"GET /events HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        self.socket.settimeout(None)
        self.seen: dict[str, dict[str, float]] = {"added": {}, "removed": {}}
        self.snapshot = threading.Event()

    def run(self) -> None:
        received = b""
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                head += self.socket.recv(65536)
            head, received = head.split(b"\r\n\r\n", 1)
            assert b"chunked" in head.lower(), head  # werkzeug writes each message as one chunk
            body = b""
            while True:
                now = time.time() * 1000
                while True:                          # every whole chunk received so far
                    size_line, crlf, rest = received.partition(b"\r\n")
                    if not crlf or len(rest) < int(size_line, 16) + 2:
                        break
                    size = int(size_line, 16)
                    body, received = body + rest[:size], rest[size + 2:]
                *messages, body = body.split(b"\n\n")
                for message in messages:
                    self.note(message.decode(), now)
                more = self.socket.recv(1 << 20)
                if not more:
                    return
                received += more
        except OSError:                              # closed by close(): this tab is done
            return

    def note(self, message: str, now: float) -> None:
        fields = dict(line.split(": ", 1) for line in message.split("\n") if ": " in line)
        if fields.get("event") == "snapshot":
            self.snapshot.set()
        elif fields.get("event") == "changes":
            for change in json.loads(fields["data"]):
                if change["kind"] == "pods":
                    if change["op"] == "delete":
                        self.seen["removed"].setdefault(change["key"], now)
                    else:
                        self.seen["added"].setdefault(change["object"]["key"], now)

    def close(self) -> None:
        try:
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.socket.close()


def descendants(root: int) -> list[int]:
    """Every process under root (Playwright's driver, Chromium and its children)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue                                 # ended while we looked
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def process_kind(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "chromium" not in command.split(" ", 1)[0]:
        return "Playwright's driver"
    kind = re.search(r" --type=(\S+)", command)     # a zygote's children keep their flags in one string
    if kind and kind.group(1) == "renderer" and "--top-chrome-webui" not in command:
        return "Chromium renderers (the tabs)"
    if kind and kind.group(1) == "gpu-process":
        return "Chromium GPU process (compositing)"
    return "Chromium browser and helpers"


class CPUMeter:
    """CPU seconds each part of the run used between start() and stop():
    where the two cores went, whatever else the machine was doing."""

    def __init__(self, parts: dict[str, int]):
        self.parts = parts                           # name -> pid, for the processes started here

    def _sample(self) -> dict[int, tuple[str, float]]:
        pids = {pid: process_kind(pid) for pid in descendants(os.getpid())}
        pids.update({pid: name for name, pid in self.parts.items()})
        found = {}
        for pid, name in pids.items():
            try:
                found[pid] = (name, cpu_seconds(pid))
            except OSError:
                continue
        return found

    def start(self) -> None:
        self.began, self.before = time.time(), self._sample()

    def stop(self) -> dict[str, float]:
        """CPU seconds per part (processes that began meanwhile count from 0)."""
        after, used = self._sample(), {}
        for pid, (name, seconds) in after.items():
            used[name] = used.get(name, 0.0) + seconds - self.before.get(pid, (name, 0.0))[1]
        self.wall = time.time() - self.began
        return used


def main_thread_time(tabs) -> dict[str, float]:
    """Each tab's main-thread time so far, from Chromium's own counters
    (DevTools' Performance.getMetrics), summed over the tabs, in seconds."""
    totals: dict[str, float] = {}
    for tab in tabs:
        metrics = {m["name"]: m["value"] for m in tab.cdp.send("Performance.getMetrics")["metrics"]}
        for name in ("TaskDuration", "ScriptDuration", "RecalcStyleDuration", "LayoutDuration"):
            totals[name] = totals.get(name, 0.0) + metrics.get(name, 0.0)
    return totals


def delays(since: dict[str, float], seen_by_tab: list[dict]) -> list[float]:
    """For every tab and change: when the tab showed it, less `since` (ms)."""
    return [seen.get(f"default/{name}", float("inf")) - at for seen in seen_by_tab for name, at in since.items()]


def figures(found: list[float]) -> str:
    return f"p50 {percentile(found, 0.5):.0f} ms, p99 {percentile(found, 0.99):.0f} ms, max {max(found):.0f} ms"


def measure(api: str, watcher: Watcher, args, prefix: str, where: str, seen_by, meter: CPUMeter,
            browser_tabs=()) -> list[tuple]:
    """Create args.changes pods at args.rate a second, then delete them; the
    delay from the plain watch to each observer (seen_by(phase): a dict of
    pod key -> epoch ms per observer). Beside it, the CPU each process used
    meanwhile and, with browser tabs, what their main threads did."""
    rows = []
    names = [f"{prefix}-{i}" for i in range(args.changes)]
    for phase in ("added", "removed"):
        verb = "created" if phase == "added" else "deleted"
        say(f"{args.changes} pods {verb} at {args.rate:.0f}/s")
        writer = Writer(api, args.rate)
        before, began = requests_served(api), time.time()
        meter.start()
        page_before = main_thread_time(browser_tabs)
        writer.run(names, writer.create if phase == "added" else writer.delete)
        took = time.time() - began
        wait_for(lambda: all(sum(f"default/{n}" in seen for n in names) == len(names) for seen in seen_by(phase)),
                 120, interval=0.5, what=f"every observer to see the pods {verb}")
        used = meter.stop()
        page = {name: value - page_before[name] for name, value in main_thread_time(browser_tabs).items()}
        others = requests_served(api) - before - writer.requests - 1
        seen = seen_by(phase)
        from_watch = delays({n: watcher.seen[phase][n] for n in names}, seen)
        what = f"{len(names)} pods {verb} at {len(names) / took:.0f}/s"
        rows.append((f"{what}: API server, request sent to answered", figures(
            [writer.done[n] - writer.sent[n] for n in names]), "", "", None))
        rows.append((f"{what}: a plain watch hears of it to {where}", figures(from_watch),
                     f"{others:.0f} API requests besides the writer's", "p99 ≤ 500 ms",
                     percentile(from_watch, 0.99) <= 500))
        rows.append((f"{what}: CPU used meanwhile ({meter.wall:.1f} s), in CPU seconds per second",
                     ", ".join(f"{name} {seconds / meter.wall:.2f}" for name, seconds in
                               sorted(used.items(), key=lambda item: -item[1]) if seconds >= 0.005 * meter.wall),
                     f"machine's load average {os.getloadavg()[0]:.1f}", "", None))
        if browser_tabs:
            # CPU (from /proc): what each change costs each tab, whatever the load.
            chromium = sum(seconds for name, seconds in used.items() if name.startswith("Chromium"))
            tab_ms = 1000 / len(browser_tabs) / len(names)
            rows.append((f"{what}: Chromium's CPU per change per tab",
                         f"{chromium * tab_ms:.2f} ms, of which the tab's renderer "
                         f"{used.get('Chromium renderers (the tabs)', 0) * tab_ms:.2f} ms",
                         f"{len(browser_tabs)} tabs at {args.rate:.0f} changes/s need "
                         f"{chromium * tab_ms * len(browser_tabs) * args.rate / 1000:.1f} cores of Chromium", "", None))
            # Wall-clock time of the main thread's tasks (Chromium's counters):
            # on a loaded machine it includes waiting for a core.
            per_change = {name: value * tab_ms for name, value in page.items()}
            rows.append((f"{what}: each tab's main thread per change, wall clock (Chromium's counters)",
                         f"{per_change['TaskDuration']:.2f} ms in tasks: script {per_change['ScriptDuration']:.2f}, "
                         f"style {per_change['RecalcStyleDuration']:.2f}, layout {per_change['LayoutDuration']:.2f}",
                         "", "", None))
    return rows


def register_node(api: str, name: str) -> None:
    requests.post(f"{api}/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}},
                  timeout=10).raise_for_status()
    node = requests.get(f"{api}/api/v1/nodes/{name}", timeout=10).json()
    room = {"cpu": "64", "memory": "256Gi", "pods": "2000"}
    node["status"] = {"capacity": room, "allocatable": room,
                      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
    requests.put(f"{api}/api/v1/nodes/{name}/status", json=node, timeout=10).raise_for_status()


def idle_rate(api: str, seconds: float) -> float:
    before = requests_served(api)
    time.sleep(seconds)                              # a measuring window, not a wait for something
    return (requests_served(api) - before - 1) / seconds   # less the /metrics GET that read "before"


def say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=20)
    parser.add_argument("--rate", type=float, default=100, help="pod changes a second (default 100)")
    parser.add_argument("--changes", type=int, default=500, help="pods created, then deleted (default 500)")
    parser.add_argument("--pods", type=int, default=1000, help="pods of the big cluster (default 1000)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # a stopped run still stops its processes

    workdir = Path(tempfile.mkdtemp(prefix="groundup-bench-dashboard-"))
    server = APIServer(workdir / "data").start()
    port = free_port()
    log = open(workdir / "dashboard.log", "ab")
    dashboard = subprocess.Popen([sys.executable, str(ROOT / "dashboard" / "dashboard.py"), "--apiserver", server.url,
                                  "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/"
    rows = []
    try:
        wait_for(lambda: requests.get(url + "healthz", timeout=1).ok, 30, what="the dashboard")
        register_node(server.url, "node1")
        wait_for(lambda: all(requests.get(url + "api/state", timeout=5).json()["synced"].values()), 30,
                 what="the dashboard's lists")
        say("10 s with no tab open")
        no_tabs = idle_rate(server.url, 10)
        meter = CPUMeter({"the dashboard": dashboard.pid, "API server": server.process.pid,
                          "this bench (writer, watch, stream readers)": os.getpid()})
        watcher = Watcher(server.url)
        watcher.start()
        # The watch is open once it hears of a change (the server may hold its
        # headers until the first event): one sentinel pod, not measured.
        sentinel = Writer(server.url, 1)
        sentinel.run(["sentinel"], sentinel.create)
        wait_for(lambda: "sentinel" in watcher.seen["added"], 30, what="the plain watch")

        # The streams alone first, no browser running: what the dashboard adds.
        say(f"{args.tabs} streams read without a browser")
        streams = [StreamTab(url) for _ in range(args.tabs)]
        for stream in streams:
            stream.start()
        for stream in streams:
            assert stream.snapshot.wait(30), "a stream without its snapshot"
        rows += measure(server.url, watcher, args, "stream", f"the stream of each of {args.tabs} tabs",
                        lambda phase: [stream.seen[phase] for stream in streams], meter)
        for stream in streams:
            stream.close()                           # the dashboard drops each at its next write

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            say(f"opening {args.tabs} tabs")
            tabs = []
            for _ in range(args.tabs):
                # A context per tab, as twenty people's browsers: one browser
                # keeps at most six connections to a server, and each tab's
                # stream holds one (dashboard/README.md says so).
                tab = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                goto(tab, url)
                tab.wait_for_function("() => document.querySelector('#connection').dataset.state === 'live'")
                tab.evaluate(OBSERVER)
                tab.cdp = tab.context.new_cdp_session(tab)
                tab.cdp.send("Performance.enable")
                tabs.append(tab)
            say(f"10 s with {args.tabs} tabs open")
            with_tabs = idle_rate(server.url, 10)
            rows.insert(0, ("API requests/s, idle, 10 s", f"{no_tabs:.2f} with no tab", f"{with_tabs:.2f} with "
                            f"{args.tabs} tabs", "unchanged", abs(with_tabs - no_tabs) < 0.5))

            say(f"{args.tabs} browser tabs")
            rows += measure(server.url, watcher, args, "page", f"the page in each of {args.tabs} browser tabs",
                            lambda phase: [t.evaluate(f"window.seen.{phase}") for t in tabs], meter, tabs)
            watcher.close()
            for tab in tabs:
                tab.context.close()

            say(f"{args.pods} pods, then a new tab")
            for start in range(0, args.pods, 100):      # the big cluster, written before the tab opens
                batch = [f"big-{i}" for i in range(start, min(start + 100, args.pods))]
                Writer(server.url, 1000).run(batch, Writer(server.url, 1000).create)
            wait_for(lambda: sum(p["name"].startswith("big-") for p in
                                 requests.get(url + "api/state", timeout=10).json()["objects"]["pods"]) == args.pods,
                     60, what="the dashboard to hold every pod")
            tab = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            began = time.time()
            goto(tab, url)
            tab.wait_for_function(f"() => document.querySelectorAll('[data-pod^=\"default/big-\"]').length === {args.pods}",
                                  timeout=60_000)
            drawn = time.time() - began
            rows.append((f"{args.pods} pods: the page opened to every card drawn", f"{drawn:.2f} s", "",
                         "< 2 s", drawn < 2))
            browser.close()
    finally:
        stop_within(dashboard, 10)
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"dashboard benchmark, {date.today()}, {machine()}")
    print("| measure | figure | beside it | target | met |")
    print("|---|---|---|---|---|")
    for what, figure, beside, target, met in rows:
        verdict = "" if met is None else "yes" if met else "NO"
        print(f"| {what} | {figure} | {beside} | {target} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
