"""Per-key exponential back-off, the shape of client-go's flowcontrol.Backoff.

The kubelet uses one for crashing containers (10 s, 20 s, 40 s ... up to
5 min) and one for failed image pulls. A key's delay doubles every time
``next`` is called and falls back to the initial delay once the key has had
no trouble for twice the maximum (so a container that ran fine for ten
minutes starts over at 10 s).
"""
from __future__ import annotations

import threading
import time


# [START backoff]
class Backoff:
    def __init__(self, initial: float, maximum: float, clock=time.monotonic):
        self.initial = initial
        self.maximum = maximum
        self._clock = clock
        self._entries: dict[object, tuple[float, float]] = {}  # key -> (delay, last update)
        self._lock = threading.Lock()

    def next(self, key) -> float:
        """Record one more failure for key; return the delay now in force."""
        now = self._clock()
        with self._lock:
            delay, updated = self._entries.get(key, (0.0, now))
            if delay == 0 or now - updated > 2 * self.maximum:
                delay = self.initial
            else:
                delay = min(delay * 2, self.maximum)
            self._entries[key] = (delay, now)
            return delay

    def delay(self, key) -> float:
        """The current delay for key (0 if it has none)."""
        with self._lock:
            return self._entries.get(key, (0.0, 0.0))[0]

    def in_backoff_since(self, key, event_time: float) -> bool:
        """True while less than the current delay has passed since event_time
        (a time on this Backoff's clock, e.g. when the container died)."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            return False
        delay, updated = entry
        now = self._clock()
        if now - updated > 2 * self.maximum:
            return False
        return now - event_time < delay
# [END backoff]

    def forget(self, key) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def forget_if(self, unwanted) -> None:
        """Drop the entries whose key unwanted(key) rejects (pods that went away)."""
        with self._lock:
            for key in [k for k in self._entries if unwanted(k)]:
                del self._entries[key]
