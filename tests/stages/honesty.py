"""What the tests of both ends share: a starter solved up to some stage,
and a stage's result as a test failure message."""
from __future__ import annotations

from pathlib import Path

import stage_runner
from splice import splice
from stage_runner import Result

SOLUTIONS = Path(__file__).parent / "solutions"

# Half a learner's deadlines, for every run these tests make: a component
# that lacks a part fails as surely in half the time (it never meets the
# wait), while the reference and the solved starter, held to the same
# halved deadlines in the same run, show they are still long enough for a
# correct component on this machine. About a third of these tests' time.
stage_runner.PATIENCE = 0.5


def solved(starter: Path, tmp_path: Path, stages: set[int], instead: dict[str, str] | None = None) -> Path:
    """A copy of starter with the TODOs of `stages` filled from solutions/<its name>."""
    path = tmp_path / f"my_{starter.name}"
    path.write_text(splice(starter.read_text(), (SOLUTIONS / starter.name).read_text(), stages, instead))
    return path


def report(result: Result) -> str:
    if result.failure is None:
        return "passed"
    failure = result.failure
    return f"expected {failure.expected}\nhappened {failure.happened}\nhint {failure.hint}\nlog:\n{result.log}"
