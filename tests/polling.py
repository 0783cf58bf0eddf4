"""Waiting the way every test here waits: poll with a deadline, never sleep blindly
(common/polling.py, which the demos use too)."""
from __future__ import annotations

from common.polling import wait_for  # noqa: F401 (re-exported to the tests)
from common.ports import free_port  # noqa: F401 (re-exported to the tests)
