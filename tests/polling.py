"""Waiting the way every test here waits: poll with a deadline, never sleep blindly."""
from __future__ import annotations

import time

import requests

from common.ports import free_port  # noqa: F401 (re-exported to the tests)


def wait_for(check, timeout: float = 30, interval: float = 0.2, what: str = "condition"):
    """Poll check() until it returns something truthy; fail with `what` and
    the last value seen after timeout seconds."""
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
