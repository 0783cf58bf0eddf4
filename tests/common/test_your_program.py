"""common/tooling/your_program.py: how a demo (and the stage runner) shows the end
of a learner's program. The demos themselves: tests/stages/test_demos_run_yours.py."""
from __future__ import annotations

import subprocess
import sys

import pytest

from common.tooling.your_program import YourProgram, YourProgramExited, last_lines


@pytest.mark.parametrize("output, count, shown", [
    ("", 12, ""),
    ("one\ntwo\nthree\n", 2, "two\nthree"),
    # A loop failing every second: said once, with how many more (the times differ).
    ("starting\n2026-11-26T16:00:00Z sync failed\n2026-11-26T16:00:01Z sync failed\n"
     "2026-11-26T16:00:02Z sync failed\n", 12,
     "starting\n2026-11-26T16:00:00Z sync failed  (and 2 more like it)"),
    ("\x1b[31mred\x1b[0m text\n", 12, "red text"),          # colour codes gone
])
def test_last_lines(output, count, shown):
    assert last_lines(output, count) == shown


def test_check_is_silent_while_the_program_runs_and_names_it_once_it_is_gone(tmp_path):
    log = tmp_path / "mine.log"
    log.write_text("")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    program = YourProgram("scheduler", tmp_path / "mine.py", process, log)
    try:
        program.check()                 # running: nothing to say
    finally:
        process.kill()
        process.wait()
    with pytest.raises(YourProgramExited) as exited:
        program.check()
    assert str(exited.value) == (f"your scheduler ({tmp_path / 'mine.py'}) was killed by signal 9; "
                                 "its last lines:\n    (it printed nothing)")
