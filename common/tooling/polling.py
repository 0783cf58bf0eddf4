"""Waiting the way everything here waits: poll with a deadline, never sleep blindly."""
from __future__ import annotations

import time

import requests


def wait_for(check, timeout: float = 30, interval: float = 0.2, what: str = "condition"):
    """Poll check() until it returns something truthy; fail with `what` and
    the last value seen after timeout seconds. An error from a server that
    is not up yet (a refused connection, a missing key) counts as not yet."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (requests.RequestException, KeyError, IndexError, TypeError) as error:
            last = error
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {last!r}")
