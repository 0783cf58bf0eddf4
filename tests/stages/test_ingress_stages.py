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
from both_ends import FirstStage, both_ends
from common.addresses import this_machines_address
from ingress_stages import CONTEXT, STAGES
from stage_runner import ROOT

REFERENCE = ROOT / "05-proxy-dns" / "ingress_controller.py"
STARTER = ROOT / "05-proxy-dns" / "build-it-yourself" / "ingress_match.py"
FIRST = FirstStage("Host shop.example, GET /foo: to foo",
                   "your program raised NotImplementedError: match() is yours to write: see TODO(stage 1)",
                   ingress_stages.THE_MATCH)

pytestmark = pytest.mark.skipif(this_machines_address().startswith("127."),
                                reason="this machine has no address but loopback, and an EndpointSlice may not hold one")

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

globals().update(both_ends(STAGES, CONTEXT, REFERENCE, STARTER, FIRST, MISTAKES, "a controller"))
