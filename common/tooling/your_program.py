"""A component you wrote, run by a demo in place of ours.

Each chapter's demo can run the learner's own component (from the
chapter's build-it-yourself/) where it would run the reference one:
`make demo-03 SCHEDULER=path/to/yours.py`. The demo watches it like every
process it starts, but when it exits the story is different. When one of
ours exits, the cause may be anywhere, so a demo shows every log. When
yours exits, the cause is in yours: the demo stops with one line naming
your file, then the last lines your program printed, and nothing else
(no traceback from deep inside the demo).

The stage runner (tests/stages/stage_runner.py) shows a learner's output
the same way, with last_lines().
"""
from __future__ import annotations

import os
import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAST_LINES = 12
COLOURS = re.compile(r"\x1b\[[0-9;]*m")              # terminal colour codes (Flask's log has them)
LEADING_TIME = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ")   # our logs' first word


class YourProgramExited(SystemExit):
    """The learner's program has exited. A SystemExit: Python prints its
    message and exits with code 1, without a traceback."""


def environment() -> dict[str, str]:
    """The environment to start your program in: `import common` works for
    a copy kept anywhere, and what it prints reaches its log at once (not
    when a buffer fills), so its last lines are there when it dies."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def last_lines(text: str, count: int = LAST_LINES) -> str:
    """The last lines of a program's output, a run of one repeated line
    shown once with its count (a loop failing every second says so once)."""
    folded: list[list] = []          # [first line, its text without the time, how many]
    for line in COLOURS.sub("", text).splitlines():
        same = LEADING_TIME.sub("", line)
        if folded and folded[-1][1] == same:
            folded[-1][2] += 1
        else:
            folded.append([line, same, 1])
    return "\n".join(line if times == 1 else f"{line}  (and {times - 1} more like it)"
                     for line, _, times in folded[-count:])


def display(path: Path) -> str:
    """A path as the learner would type it: from the repository root if it is inside."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass
class YourProgram:
    """The learner's program, started by a demo, and where its output goes."""

    role: str                   # what it is in the cluster, as the demo says it: "scheduler"
    path: Path                  # the learner's file
    process: subprocess.Popen
    log_path: Path

    def check(self) -> None:
        """Raise YourProgramExited if it is no longer running. A demo calls
        this wherever it waits, so a crash is noticed at the next poll."""
        code = self.process.poll()
        if code is not None:
            raise YourProgramExited(self.exit_message(code))

    def exit_message(self, code: int) -> str:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        output = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        tail = last_lines(output) or "(it printed nothing)"
        return f"your {self.role} ({display(self.path)}) {how}; its last lines:\n{textwrap.indent(tail, '    ')}"
