"""Chapter 04's stages keep both ends honest.

- The reference (04-controllers/controller_manager.py, its ReplicaSet
  controller only) passes every stage.
- The untouched starter fails stage 1, with the message a learner sees.
- The starter with its marked places filled (from
  solutions/replicaset_controller.py) passes every stage.
- Leave out the part a stage grades, and that stage fails.

Each run is black-box, as `make stage-04` runs it: a fresh API server and
the controller as a process; no kubelet, no Docker.
"""
from __future__ import annotations

import controller_stages
from both_ends import FirstStage, both_ends
from controller_stages import CONTEXT, STAGES
from stage_runner import ROOT

REFERENCE = ROOT / "04-controllers" / "controller_manager.py"
STARTER = ROOT / "04-controllers" / "build-it-yourself" / "replicaset_controller.py"
FIRST = FirstStage("3 pods of ReplicaSet web (spec.replicas is 3)",
                   "your program raised NotImplementedError: manage_replicas() is yours to write: see TODO(stage 1)",
                   controller_stages.THE_REPLICASET)

# Mistakes a learner could make in a part that looks finished, and the
# stage that must catch each: (stage, the mistake, the solution's line, the line with the mistake).
MISTAKES = [
    (1, "leaves out blockOwnerDeletion", '"controller": True, "blockOwnerDeletion": True}\n    return',
     '"controller": True}\n    return'),
    # Deleting in list order is caught only by chance (the list is sorted by
    # the pods' random names: 1 time in 70 it deletes the four not ready),
    # so the mistake graded here is its sure-to-fail cousin: the ready ones first.
    (3, "deletes the ready pods first",
     "return sorted(newest_first, key=lambda pod: (bool(pod[\"spec\"].get(\"nodeName\")), "
     "is_ready(pod)))[:count]",
     "return sorted(pods, key=lambda pod: not is_ready(pod))[:count]"),
    (4, "counts pods being deleted", 'and not pod["metadata"].get("deletionTimestamp")', ""),
    (4, "counts a Succeeded pod", 'phase not in ("Succeeded", "Failed")', 'phase != "Failed"'),
    (5, "never releases",
     'self.set_owners(pod, [ref for ref in refs if ref.get("uid") != rs["metadata"]["uid"]])', "ours.append(pod)"),
]

globals().update(both_ends(STAGES, CONTEXT, REFERENCE, STARTER, FIRST, MISTAKES, "a controller"))
