"""Chapter 05's DNS stages keep both ends honest.

- The reference (05-proxy-dns/cluster_dns.py) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from solutions/cluster_dns.py)
  passes every stage.
- Leave out the part a stage grades, and that stage fails.

Each run is black-box, as `make stage-05` runs it: a fresh API server and
the DNS server as a process on a free loopback port; no root, no Docker.
"""
from __future__ import annotations

import pytest

import dns_stages
from dns_stages import CONTEXT, STAGES
from honesty import EXPECTED_TO_FAIL, report, solved
from splice import todo_stages
from stage_runner import ROOT, run_stage

REFERENCE = ROOT / "05-proxy-dns" / "cluster_dns.py"
STARTER = ROOT / "05-proxy-dns" / "build-it-yourself" / "cluster_dns.py"


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: f"stage-{s.number}")
def test_the_reference_dns_passes_every_stage(stage):
    result = run_stage(stage, REFERENCE, CONTEXT)
    assert result.failure is None, report(result)


def test_the_untouched_starter_fails_stage_1_saying_why():
    result = run_stage(STAGES[0], STARTER, CONTEXT)
    assert result.failure is not None, "the starter passes stage 1: the learner has nothing to write"
    assert result.failure.expected.startswith("web.shop.svc.cluster.local. A: A 10.")
    # At once: waiting out the deadline would tell the learner nothing more.
    assert result.failure.happened == ("your program raised NotImplementedError: "
                                      "service_records() is yours to write: see TODO(stage 1)")
    assert result.failure.hint == dns_stages.NAMES
    assert "NotImplementedError: service_records()" in result.log.replace("\n", " ")


def test_the_starter_with_its_todos_filled_passes_every_stage(tmp_path):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    for stage in STAGES:
        result = run_stage(stage, mine, CONTEXT)
        assert result.failure is None, f"stage {stage.number}: {report(result)}"


@pytest.mark.parametrize("number", range(2, len(STAGES) + 1), ids=lambda n: f"stage-{n}")
def test_a_stage_fails_a_dns_without_what_it_grades(tmp_path, number):
    result = run_stage(STAGES[number - 1], solved(STARTER, tmp_path, {*range(1, number)}), CONTEXT,
                       patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a DNS server without its part"
    assert not result.failure.unreadable, report(result)      # found wrong, not unreadable


# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (2, "answers every type with the A record", "[r for r in records if r.rdtype == rdtype]", "records"),
    (3, "counts pods that are not ready", 'for address in subset.get("addresses") or []]',
     'for address in (subset.get("addresses") or []) + (subset.get("notReadyAddresses") or [])]'),
    (3, "reads only the first subset", 'for subset in endpoints.get("subsets") or []',
     'for subset in (endpoints.get("subsets") or [])[:1]'),
    (3, "builds an rrset with no records when no pod is ready", "return [rrset(name, A, *ips)] if ips else []",
     "return [rrset(name, A, *ips)]"),
    (4, "ignores the protocol", 'and p["protocol"].lower() == protocol]', "]"),
]


@pytest.mark.parametrize("number, mistake, right, wrong", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_stage_catches_a_mistake_in_its_part(tmp_path, number, mistake, right, wrong):
    mine = solved(STARTER, tmp_path, {stage.number for stage in STAGES})
    source = mine.read_text()
    assert right in source, f"the solution no longer has {right!r}"
    mine.write_text(source.replace(right, wrong))
    result = run_stage(STAGES[number - 1], mine, CONTEXT, patience=EXPECTED_TO_FAIL)
    assert result.failure is not None, f"stage {number} passed a DNS server that {mistake}"
    assert not result.failure.unreadable, report(result)


def test_every_todo_in_the_starter_belongs_to_a_stage():
    marked = todo_stages(STARTER.read_text())
    assert set(marked.values()) == {stage.number for stage in STAGES}, marked
