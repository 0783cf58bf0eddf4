"""A steady stream of requests, counted: the finale's witness.

    python 05-proxy-dns/request_loop.py http://10.213.0.11:30080/ http://10.213.0.12:30080/ [--rate 10]

Sends `--rate` requests a second, in turn to each URL, every one on a new
connection (so that every request is a new choice of endpoint for the
proxies, as a fresh client's would be), and counts what came back. A
request fails when it gets no answer within `--timeout` seconds, or an
answer other than 200: each failure is printed the moment it happens,
with the time, so that it can be laid beside what was done to the cluster
then. Every `--every` seconds it prints a line of totals and which answers
came (counted by the answer's first two words, "backend v1": versions, not
pods); Ctrl-C prints the whole tally and the failures again, and stops.
"""
from __future__ import annotations

import argparse
import itertools
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import requests


@dataclass
class Tally:
    requests: int = 0
    failures: list[str] = field(default_factory=list)      # "06:51:02.123 URL: why", in order
    answers: Counter = field(default_factory=Counter)       # "backend v1 via frontend" -> count

    def line(self) -> str:
        answers = ", ".join(f"{answer}: {count}" for answer, count in sorted(self.answers.items()))
        return f"{self.requests} requests, {len(self.failures)} failed; answers: {answers or 'none'}"


def clock() -> str:
    now = time.time()
    return time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"


def kind_of(answer: str) -> str:
    """What an answer counts as: its first two words ('backend v1' of
    'backend v1 backend-5c8d9-x2kq7 via frontend-7f6b4-q9z2m'), so that
    versions are counted, not the pods that served them."""
    words = answer.split()
    return " ".join(words[:2]) if words else "(an empty answer)"


class RequestLoop:
    """Requests at a steady rate, counted; `tally()` is a copy, safe to
    take from another thread (the tests take one before and after each
    thing they do to the cluster)."""

    def __init__(self, urls: list[str], rate: float = 10.0, timeout: float = 5.0,
                 on_failure=None, host: str | None = None):
        self.urls, self.interval, self.timeout = urls, 1.0 / rate, timeout
        # A new connection every time; and the host name an ingress routes by, if given.
        self.headers = {"Connection": "close", **({"Host": host} if host else {})}
        self.on_failure = on_failure or (lambda line: None)
        self._tally = Tally()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    # [START one-request]
    def ask(self, url: str) -> str | None:
        """One request on a connection of its own; a failure is recorded
        with the time and the reason, at once, and returned."""
        try:
            response = requests.get(url, timeout=self.timeout, headers=self.headers)
            answer = response.text.strip().splitlines()[0] if response.text.strip() else ""
            failed = None if response.status_code == 200 else f"{response.status_code} {answer}"
        except requests.RequestException as error:
            failed = f"no answer: {type(error).__name__}"
        with self._lock:
            self._tally.requests += 1
            if failed:
                self._tally.failures.append(f"{clock()} {url}: {failed}")
                self.on_failure(self._tally.failures[-1])
            else:
                self._tally.answers[kind_of(answer)] += 1
        return failed
    # [END one-request]

    def run(self) -> None:
        """Until stop(): one request every interval, in turn to each URL;
        a slow answer delays the next rather than piling requests up."""
        next_at = time.monotonic()
        for url in itertools.cycle(self.urls):
            if self._stopping.is_set():
                return
            self.ask(url)
            next_at = max(next_at + self.interval, time.monotonic())
            self._stopping.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        self._stopping.set()

    def tally(self) -> Tally:
        with self._lock:
            return Tally(self._tally.requests, list(self._tally.failures), Counter(self._tally.answers))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+", help="the URLs to ask, in turn")
    parser.add_argument("--rate", type=float, default=10.0, help="requests a second (default 10)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for an answer (default 5)")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between lines of totals (default 10)")
    parser.add_argument("--host", help="the Host header to send (what an ingress routes by); default: the URL's")
    args = parser.parse_args(argv)
    if not 0 < args.rate <= 1000:
        parser.error(f"--rate: {args.rate:g} is not a rate this loop can keep: give 0 < rate <= 1000")
    if not 0 < args.timeout <= 60 or not 0 < args.every:
        parser.error("--timeout must be in (0, 60] seconds and --every above 0")
    for url in args.urls:
        if not url.startswith(("http://", "https://")):
            parser.error(f"{url!r} is not an http:// or https:// URL")

    loop = RequestLoop(args.urls, args.rate, args.timeout, on_failure=lambda line: print("FAILED", line, flush=True),
                       host=args.host)
    signal.signal(signal.SIGINT, lambda *_: loop.stop())
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    print(f"asking {' and '.join(args.urls)}, {args.rate:g} requests a second", flush=True)
    worker = threading.Thread(target=loop.run, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(args.every)
        if worker.is_alive():
            print(time.strftime("%H:%M:%S"), loop.tally().line(), flush=True)
    tally = loop.tally()
    print(f"stopped: {tally.line()}", flush=True)
    for failure in tally.failures:
        print(f"  failed {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
