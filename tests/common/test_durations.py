"""Duration flags (common/times.py's duration): Kubernetes' forms, as Go's
time.ParseDuration reads them, and plain seconds; and every component's
duration flags through that one parser (issue 35: --node-monitor-grace-period
5s was a usage error while --leader-elect-lease-duration 5s was fine)."""
from __future__ import annotations

import argparse
import importlib
import re
from unittest import mock

import pytest

from common.times import duration


@pytest.mark.parametrize("text, seconds", [
    ("40s", 40), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("1m30s", 90), ("1.5s", 1.5), ("1.5h", 5400),
    ("2h45m30.5s", 9930.5), ("5m0s", 300), (".5s", 0.5), ("250us", 0.00025), ("250µs", 0.00025), ("100ns", 1e-7),
    ("40", 40), ("0.5", 0.5), ("0", 0), (" 15s ", 15),      # plain seconds, as these flags always took
])
def test_a_duration_in_seconds(text, seconds):
    assert duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "15x", "15s junk", "-3s", "-3", "1s2", "1m5", "inf", "nan", "1e3s",
                                  "1d", "5 s", "1h 30m"])
def test_not_a_duration_is_a_usage_error_that_shows_the_forms(text):
    with pytest.raises(argparse.ArgumentTypeError, match="write it as 40s, 5m, 1h30m or 500ms"):
        duration(text)


# Components whose parse_args(argv) builds their flags; the others have no duration flag.
COMPONENTS = ["kubelet", "apiserver", "scheduler", "controller_manager", "route_agent"]
# A flag whose name or help speaks of time, but that is not a duration in Kubernetes either:
# --default-toleration-seconds becomes a pod's tolerationSeconds, a whole number.
NOT_DURATIONS = {"--default-toleration-seconds"}
TIME_WORDS = re.compile(r"second|period|frequency|timeout|interval|grace|resync|duration|deadline|backoff|how often|how long")


def parser_of(parse_args) -> argparse.ArgumentParser:
    """The parser a component's parse_args builds (it returns only the values)."""
    built = []
    parse = argparse.ArgumentParser.parse_args

    def keep(parser, *args, **kwargs):
        built.append(parser)
        return parse(parser, *args, **kwargs)
    with mock.patch.object(argparse.ArgumentParser, "parse_args", keep):
        parse_args([])
    return built[0]


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_duration_flag_of_a_component_takes_5s(component):
    parse_args = importlib.import_module(component).parse_args
    actions = [a for a in parser_of(parse_args)._actions if a.option_strings]
    durations = [a for a in actions if a.type is duration]
    assert durations, f"{component} has no duration flag"
    # All at once: some must fit together (the kubelet's --backoff-max is at least --backoff-initial).
    parsed = parse_args([word for action in durations for word in (action.option_strings[0], "5s")])
    assert {action.option_strings[0]: getattr(parsed, action.dest) for action in durations} == \
        {action.option_strings[0]: 5.0 for action in durations}
    # And none is left on a bare number: a flag about time is a duration, or listed above.
    numbers_about_time = [a.option_strings[0] for a in actions if a.type in (int, float)
                          and TIME_WORDS.search(f"{a.option_strings[0]} {a.help}".lower())
                          and a.option_strings[0] not in NOT_DURATIONS]
    assert numbers_about_time == []
