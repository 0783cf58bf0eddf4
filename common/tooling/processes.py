"""Child processes: stopping one the polite way, then the firm way; and a
program run in the background with its output in a log file."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path


def stop_within(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM, and SIGKILL if it has not exited after grace seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_on_signals():
    """An Event set by SIGTERM or SIGINT: a component's main loop waits on
    it, and returns to clean up instead of dying mid-write."""
    import signal
    import threading
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


class LoggedProcess:
    """A program run in the background, its output appended to a log file
    of its own (the first place to look when it misbehaves): started,
    asked whether it still runs, stopped politely, or killed (what the
    failure tests do to it)."""

    def __init__(self, name: str, log_path: Path):
        self.name = name
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None

    def spawn(self, argv: list[str], cwd: Path | None = None) -> None:
        with open(self.log_path, "ab") as log:
            # A session of its own: Ctrl-C in the terminal reaches only us,
            # and we stop the children in order. Unbuffered, so a Python
            # program's log is up to date when someone reads it.
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                            start_new_session=True)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 10) -> None:
        if self.running:
            stop_within(self.process, grace)

    def kill(self) -> None:
        if self.running:
            self.process.kill()
            self.process.wait()
