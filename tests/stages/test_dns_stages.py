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

import dns_stages
from both_ends import FirstStage, both_ends
from dns_stages import CONTEXT, STAGES
from stage_runner import ROOT

REFERENCE = ROOT / "05-proxy-dns" / "cluster_dns.py"
STARTER = ROOT / "05-proxy-dns" / "build-it-yourself" / "cluster_dns.py"
FIRST = FirstStage("web.shop.svc.cluster.local. A: A 10.",
                   "your program raised NotImplementedError: service_records() is yours to write: see TODO(stage 1)",
                   dns_stages.NAMES)

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

globals().update(both_ends(STAGES, CONTEXT, REFERENCE, STARTER, FIRST, MISTAKES, "a DNS server"))
