"""What the tests of both ends share: a starter solved up to some stage,
and a stage's result as a test failure message."""
from __future__ import annotations

from pathlib import Path

from splice import splice
from stage_runner import Result

SOLUTIONS = Path(__file__).parent / "solutions"

# The patience (a share of each wait's deadline) of a run that must fail: a
# component lacking a part never meets the wait that grades it, so it
# fails as surely in half the time; most of these tests' time is such
# waits. A run that must pass keeps a learner's deadlines: it ends as soon
# as its checks hold, and a busy machine must not fail it.
EXPECTED_TO_FAIL = 0.5


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
