"""Every chapter's README, run as a lesson: command by command, against the
output it promises. A failure names the README line, the command, and a
diff of expected and actual output. See tests/lessons/README.md."""
from __future__ import annotations

import pytest
from sybil.example import SybilFailure

from runner import ROOT, Session, lesson_document

LESSONS = sorted(p for p in ROOT.glob("[0-9][0-9]-*/README.md") if "```console" in p.read_text())


@pytest.mark.parametrize("readme", LESSONS, ids=[p.parent.name for p in LESSONS])
def test_lesson(readme, tmp_path, docker_client):
    document = lesson_document(readme)
    session = Session(tmp_path)
    document.namespace["session"] = session
    problem = None
    try:
        for example in document.examples():
            example.evaluate()      # stops at the first step that fails
    except SybilFailure as failure:
        problem = failure.result    # README:line, command, diff: nothing more
    finally:
        session.close()
    if problem:
        pytest.fail(problem, pytrace=False)
