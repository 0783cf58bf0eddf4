"""Chapter 05's ingress stages keep both ends honest.

- The reference (05-proxy-dns/ingress_controller.py) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from solutions/ingress_match.py,
  which is the reference's own ingress/match.py) passes every stage.
- Leave out the part a stage grades, and that stage fails; make a typical
  mistake in it, and that stage fails too.

Each run is black-box, as `make stage-05-ingress` runs it: a fresh API
server, "pods" on this machine's address, the controller as a process on a
free loopback port, and HTTP requests with a Host header; no root, no Docker.
"""
from __future__ import annotations

import pytest

import ingress_stages
from common.addresses import this_machines_address
from honesty import EXPECTED_TO_FAIL, report, solved
from ingress_stages import CONTEXT, STAGES
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "05-proxy-dns" / "ingress_controller.py"
STARTER = ROOT / "05-proxy-dns" / "build-it-yourself" / "ingress_match.py"

pytestmark = pytest.mark.skipif(this_machines_address().startswith("127."),
                                reason="this machine has no address but loopback, and an EndpointSlice may not hold one")


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: f"stage-{s.number}")
def test_the_reference_controller_passes_every_stage(stage):
    result = run_stage(stage, REFERENCE, CONTEXT)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why():
    result = run_stage(STAGES[0], STARTER, CONTEXT)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected.startswith("Host shop.example, GET /foo: to foo")
    # At once: waiting out the deadline would tell the learner nothing more.
    assert result.failure.happened == ("your program raised NotImplementedError: "
                                      "match() is yours to write: see TODO(stage 1)")
    assert result.failure.hint == ingress_stages.THE_MATCH
    assert "NotImplementedError: match()" in result.log.replace("\n", " ")


def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    for stage in STAGES:
        result = run_stage(stage, mine, CONTEXT)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


@pytest.mark.parametrize("number", range(2, len(STAGES) + 1), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_controller_without_what_it_grades(tmp_path, number):
    result = run_stage(STAGES[number - 1], solved(STARTER, tmp_path, {*range(1, number)}), CONTEXT,
                       patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a controller without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (1, "compares a Prefix as a string, so /foo matches /foobar", "return elements[:len(prefix)] == prefix",
     "return path.startswith(route.path)"),
    (1, "reads an Exact path as a Prefix", 'if route.path_type == "Exact":', "if False:"),
    (1, "answers 404 where the default backend should take it", "return table.default_backend", "return None"),
    (1, "leaves the query string on the path", 'path = path.split("?", 1)[0] or "/"', 'path = path or "/"'),
    (2, "lets a wildcard match more than one label", 'for candidate in (host, wildcard_of(host), ""):',
     'for candidate in (host, *[w for w in table.routes if w[:2] == "*." and host.endswith(w[1:])], ""):'),
    (2, "tries the wildcard before the exact host", 'for candidate in (host, wildcard_of(host), ""):',
     'for candidate in (wildcard_of(host), host, ""):'),
    (2, "takes the paths of every host level that matches, not of the most specific one",
     'for candidate in (host, wildcard_of(host), ""):\n'
     '        if candidate is not None and candidate in table.routes:\n'
     '            return table.routes[candidate]\n',
     'return [r for c in (host, wildcard_of(host), "") if c is not None for r in table.routes.get(c, [])]\n'),
    (3, "ignores Exact at equal length", 'key=lambda r: (len(r.path.rstrip("/") or "/"), r.path_type == "Exact"))',
     'key=lambda r: len(r.path.rstrip("/") or "/"))'),
    (3, "takes the shortest path", "return max(candidates,", "return min(candidates,"),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    source = mine.read_text()
    assert right in source, f"the solution no longer has {right!r}"
    mine.write_text(source.replace(right, wrong))
    result = run_stage(STAGES[number - 1], mine, CONTEXT, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a controller that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == {stage.number for stage in STAGES}, marked
