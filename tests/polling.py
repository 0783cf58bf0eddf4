"""Waiting the way every test here waits: poll with a deadline, never sleep blindly
(common/tooling/polling.py, which the demos use too).

The tests poll more tightly than the demos (every 50 ms, not 200): a test
is a chain of waits, each overshooting its event by half an interval on
average, and a chapter's run has thousands of them. What a check costs (a
GET on a loopback server, a Docker list filtered by label) is a few
milliseconds, so four times as many polls cost little."""
from __future__ import annotations

from common.tooling import polling
from common.tooling.ports import free_port  # noqa: F401 (re-exported to the tests)

INTERVAL = 0.05


def wait_for(check, timeout: float = 30, interval: float = INTERVAL, what: str = "condition"):
    """common.tooling.polling.wait_for, polling every INTERVAL seconds unless told otherwise."""
    return polling.wait_for(check, timeout, interval, what)
