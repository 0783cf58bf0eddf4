"""The tests that keep a chapter's stages honest at both ends, made once
for every chapter whose stages are graded black-box (tests/stages/test_*_stages.py):

- the reference passes every stage;
- the untouched starter fails stage 1 at once, with the message a learner sees;
- the starter with its marked places filled (from solutions/) passes every stage;
- leave out the part a stage grades, and that stage fails;
- make a typical mistake in a part that looks finished, and its stage fails;
- every TODO in the starter belongs to a stage.

A chapter's test file says what differs (its stages, its first message,
its mistakes) and takes the tests: `globals().update(both_ends(...))`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from honesty import EXPECTED_TO_FAIL, report, solved
from splice import todo_stages
from stage_runner import run_stage


@dataclass(frozen=True)
class FirstStage:
    """What the untouched starter's stage 1 says."""
    expected: str       # the start of what stage 1 expected
    happened: str       # "your program raised NotImplementedError: manage_replicas() is yours to write: ..."
    hint: str           # the lesson section stage 1 points to

    def function(self) -> str:
        """The function the NotImplementedError names ("manage_replicas()")."""
        return self.happened.split("NotImplementedError: ", 1)[1].split(" ")[0]


def both_ends(stages, context, reference: Path, starter: Path, first: FirstStage,
              mistakes: list[tuple[int, str, str, str]], what: str, own_parts=None) -> dict:
    """The six tests, by name, for a module's globals. `mistakes`: (stage,
    the mistake, the solution's line, the line with the mistake); `what`:
    what the learner builds, for the messages ("a controller");
    `own_parts`: the stages after the first with a TODO of their own (all
    of them, unless some only grade more of an earlier stage's part: then
    the mistakes keep those honest)."""
    own_parts = list(own_parts) if own_parts is not None else list(range(2, len(stages) + 1))

    @pytest.mark.parametrize("stage", stages, ids=lambda s: f"stage-{s.number}")
    def test_the_reference_passes_every_stage(stage):
        result = run_stage(stage, reference, context)
        assert result.failure is None, report(result)

    def test_the_untouched_starter_fails_stage_1_saying_why():
        result = run_stage(stages[0], starter, context)
        assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
        assert result.failure.expected.startswith(first.expected), result.failure.expected
        # At once: waiting out the deadline would tell the learner nothing more.
        assert result.failure.happened == first.happened
        assert result.failure.hint == first.hint
        assert f"NotImplementedError: {first.function()}" in result.log.replace("\n", " ")

    def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path):
        mine = solved(starter, tmp_path, {stage.number for stage in stages})
        for stage in stages:
            result = run_stage(stage, mine, context)
            assert result.failure is None, f"stage {stage.number}: {report(result)}"

    @pytest.mark.parametrize("number", own_parts, ids=lambda n: f"stage-{n}")
    def test_a_stage_fails_one_without_what_it_grades(tmp_path, number):
        result = run_stage(stages[number - 1], solved(starter, tmp_path, {*range(1, number)}), context,
                           patience=EXPECTED_TO_FAIL)
        assert result.failure is not None, f"stage {number} passed {what} without its part"
        assert not result.failure.unreadable, report(result)      # found wrong, not unreadable

    @pytest.mark.parametrize("number, mistake, right, wrong", mistakes, ids=[m[1] for m in mistakes])
    def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
        mine = solved(starter, tmp_path, {stage.number for stage in stages})
        source = mine.read_text()
        assert source.count(right) == 1, f"the solution has {source.count(right)} of {right!r}, not one"
        mine.write_text(source.replace(right, wrong))
        result = run_stage(stages[number - 1], mine, context, patience=EXPECTED_TO_FAIL)
        assert result.failure is not None, f"stage {number} passed {what} that {mistake}"
        assert not result.failure.unreadable, report(result)

    def test_every_todo_in_the_starter_belongs_to_a_stage():
        marked = todo_stages(starter.read_text())
        assert set(marked.values()) == {1, *own_parts}, marked

    return {name: value for name, value in locals().items() if name.startswith("test_")}
