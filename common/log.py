"""One logging helper for every component.

Each component calls ``get_logger("kubelet")`` once and logs one line per
event, naming the object it is about::

    log.info("container started", obj="default/web", container="app")

In a terminal the lines go through rich (colours, aligned columns); into a
file or a pipe they are plain text, one event per line, easy to grep:

    2026-11-22T03:14:07Z kubelet INFO default/web: container started container=app
"""
from __future__ import annotations

import logging
import os
import sys
import time

_configured: set[str] = set()


class PlainFormatter(logging.Formatter):
    """UTC timestamp, component, level, then the message."""

    def formatTime(self, record, datefmt=None):  # noqa: N802 (logging's name)
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))

    def format(self, record):
        return f"{self.formatTime(record)} {record.name} {record.levelname} {record.getMessage()}"


def _handler(stream) -> logging.Handler:
    if stream.isatty() and os.environ.get("TERM") != "dumb":
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(file=stream), show_path=False,
                              markup=False, log_time_format="%H:%M:%S")
        handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
        return handler
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PlainFormatter())
    return handler


class EventLogger:
    """A thin wrapper that turns (event, obj, fields) into one line."""

    def __init__(self, logger: logging.Logger):
        self._logger = logger

    def _line(self, event: str, obj: str | None, fields: dict) -> str:
        prefix = f"{obj}: " if obj else ""
        extra = " ".join(f"{k}={_quote(v)}" for k, v in fields.items() if v is not None)
        return f"{prefix}{event}" + (f" {extra}" if extra else "")

    def debug(self, event, obj=None, **fields):
        if self._logger.isEnabledFor(logging.DEBUG):
            self._logger.debug(self._line(event, obj, fields))

    def info(self, event, obj=None, **fields):
        self._logger.info(self._line(event, obj, fields))

    def warning(self, event, obj=None, **fields):
        self._logger.warning(self._line(event, obj, fields))

    def error(self, event, obj=None, **fields):
        self._logger.error(self._line(event, obj, fields))


def _quote(value) -> str:
    text = str(value)
    return repr(text) if (not text or any(c.isspace() for c in text)) else text


def get_logger(component: str, level: str | int | None = None, stream=None) -> EventLogger:
    """The logger for one component; configured once per process."""
    logger = logging.getLogger(component)
    if component not in _configured:
        logger.addHandler(_handler(stream or sys.stderr))
        logger.propagate = False
        _configured.add(component)
    level = level or os.environ.get("GROUNDUP_LOG_LEVEL", "INFO")
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    return EventLogger(logger)
