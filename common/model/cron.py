"""Cron schedules, as a CronJob's spec.schedule writes them.

    "*/5 * * * *"      minute hour day-of-month month day-of-week
    "@hourly"          and the other descriptors: @yearly @annually @monthly @weekly @daily @midnight
    "@every 1h30m"     a fixed interval

Kubernetes parses these with robfig/cron's standard parser: five fields (no
seconds), the descriptors, and `@every <duration>`. The API server checks a
schedule parses (validation) and the CronJob controller asks when it fires
next; both call this module, so the two can never disagree. The field
arithmetic itself is croniter's (a maintained library); what is ours is
which forms are accepted.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta

from croniter import croniter

DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
               "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
               "@hourly": "0 * * * *"}
_EVERY = re.compile(r"^@every\s+((?:\d+(?:\.\d+)?(?:h|m|s|ms))+)$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


class ScheduleError(ValueError):
    pass


class Schedule:
    """A parsed schedule: next_after(t) is the first firing time strictly after t."""

    def __init__(self, text: str):
        self.text = text
        spec = text.strip()
        self.interval: timedelta | None = None
        every = _EVERY.match(spec)
        if every:
            seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(every.group(1)))
            # robfig/cron rounds the interval to whole seconds, at least one.
            self.interval = timedelta(seconds=max(1, int(seconds)))
            return
        if spec.startswith("@"):
            if spec not in DESCRIPTORS:
                raise ScheduleError(f"unrecognized descriptor: {spec}")
            spec = DESCRIPTORS[spec]
        fields = spec.split()
        if len(fields) != 5:
            raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {text}")
        if not croniter.is_valid(spec):
            raise ScheduleError(f"invalid schedule: {text}")
        self.fields = spec

    def next_after(self, moment: datetime) -> datetime:
        if self.interval is not None:
            return moment.replace(microsecond=0) + self.interval
        return croniter(self.fields, moment).get_next(datetime)


def parse(text: str) -> Schedule:
    """A Schedule, or ScheduleError saying what is wrong (the validation message)."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError("empty schedule")
    if text.strip().startswith(("TZ=", "CRON_TZ=")):
        raise ScheduleError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    return Schedule(text)


def valid_time_zone(name) -> bool:
    """An IANA zone name ("Europe/Paris"), as spec.timeZone takes."""
    from zoneinfo import ZoneInfo
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name:
        return False
    try:
        ZoneInfo(name)
    except Exception:
        return False
    return True
