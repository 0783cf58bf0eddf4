"""Stopping a child process the polite way, then the firm way."""
from __future__ import annotations

import subprocess


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
