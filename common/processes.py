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
