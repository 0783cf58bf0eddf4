"""Every chapter's lesson, run command by command against the output it
promises: the README and its lesson-N-*.md parts, played in order as one
session. A failure names the file and line, the command, and a diff of
expected and actual output. See tests/lessons/README.md."""
from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from runner import ROOT, Session, lesson_files, play, uses_machines

CHAPTERS = sorted(c for c in ROOT.glob("[0-9][0-9]-*") if c.is_dir() and lesson_files(c))
# The lessons run a cluster as a learner does, on the documented ports: the
# API server's 6443 and 8080, the kubelets' read-only 10255 and 10256, and
# chapter 01's hostPort 8000.
LESSON_PORTS = (6443, 8080, 8000, 10255, 10256)


def ports_in_use() -> list[int]:
    """The lesson ports something listens on; a cluster that was just
    stopped (the previous lesson's) is given up to 30 s to let go."""
    deadline = time.monotonic() + 30
    while (busy := _ports_taken()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return busy


def who_listens(ports: list[int]) -> str:
    """`ss`'s lines for those ports: which process holds them."""
    shown = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout.splitlines()
    return "\n".join(line for line in shown if any(f":{port} " in line for port in ports))


def _ports_taken() -> list[int]:
    busy = []
    for port in LESSON_PORTS:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                busy.append(port)
    return busy


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_lesson(chapter, tmp_path, docker_client):
    # A cluster of the learner's own on these ports would answer the
    # lesson's commands (and the lesson would stop its pods): refuse instead.
    busy = ports_in_use()
    if busy:
        pytest.fail(f"port(s) {', '.join(map(str, busy))} in use: the lessons run a cluster on "
                    f"{', '.join(map(str, LESSON_PORTS))}; stop what listens there (a cluster of your own?) "
                    f"and run again:\n{who_listens(busy)}", pytrace=False)
    if uses_machines(lesson_files(chapter)) and os.geteuid() != 0:
        reason = "this lesson plays on machines made of namespaces (make machines), which needs root"
        if os.environ.get("GROUNDUP_REQUIRE_DOCKER") == "1":
            pytest.fail(f"in CI, but {reason}", pytrace=False)
        pytest.skip(reason)
    session = Session(tmp_path)
    try:
        problem = play(lesson_files(chapter), session)
    finally:
        session.close()
    if problem:
        pytest.fail(problem, pytrace=False)
