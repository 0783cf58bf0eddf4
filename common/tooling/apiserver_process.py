"""A real apiserver.py process over a data directory, on a loopback port
of its own: what the tests and the chapters' benchmarks run a server in.
start() waits until /readyz answers; stop() asks politely, kill() does
not (what a power cut would do).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import requests

from common.tooling.polling import wait_for
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

ROOT = Path(__file__).resolve().parents[2]
APISERVER = ROOT / "02-apiserver" / "apiserver.py"


class APIServer:
    def __init__(self, data_dir: Path, *extra: str, port: int | None = None):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = list(extra)
        self.log_path = self.data_dir.parent / f"apiserver-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def start(self, wait: bool = True) -> "APIServer":
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, str(APISERVER), "--data-dir", str(self.data_dir), "--port", str(self.port), *self.extra],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Until /readyz answers 200; an exit on the way fails with the server's log."""
        wait_for(self._ready, timeout=30, what=f"the API server on {self.url} (log: {self.log_path})")

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the API server exited with {self.process.returncode}:\n{self.log()}")
        try:
            return requests.get(self.url + "/readyz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            stop_within(self.process, 10)

    def kill(self) -> None:
        """SIGKILL: no clean-up, no flush, as a power cut would."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
