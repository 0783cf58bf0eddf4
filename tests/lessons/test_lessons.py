"""Every chapter's lesson, run command by command against the output it
promises: the README and its lesson-N-*.md parts, played in order as one
session. A failure names the file and line, the command, and a diff of
expected and actual output. See tests/lessons/README.md."""
from __future__ import annotations

import pytest

from runner import ROOT, Session, lesson_files, play

CHAPTERS = sorted(c for c in ROOT.glob("[0-9][0-9]-*") if c.is_dir() and lesson_files(c))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_lesson(chapter, tmp_path, docker_client):
    session = Session(tmp_path)
    try:
        problem = play(lesson_files(chapter), session)
    finally:
        session.close()
    if problem:
        pytest.fail(problem, pytrace=False)
