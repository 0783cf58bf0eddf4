"""Your StatefulSet plan: what chapter 04's StatefulSet controller does next, decided by you.

    python 04-controllers/build-it-yourself/stateful_pods.py --apiserver http://127.0.0.1:8080

Written for you (the machinery, read it once): the whole StatefulSet
controller of part 4 (04-controllers/statefulset.py): its informers, the
ControllerRevisions, the claims made before each pod, the pods made from
the template with their names and DNS names, the deletes and the status.
Run as above, this file is that controller (a controller manager with
only its StatefulSet controller), deciding with your plan(). The plan's
order is written too: plan() below makes and mends, then scales down,
then rolls. Yours to write are the three steps and one choice, the
functions marked TODO(stage N): which pods to create, which to delete,
and when to stop and wait.

Grade your work with `make stage-04-statefulset` (every stage up to the
first that fails) or `make stage-04-statefulset STAGE=2` (one stage);
with your own copy of this file, add MINE=path/to/it.py. The stages call
your plan() with tables of pods (no API server, no Docker) and compare
what it answers with what Kubernetes' StatefulSet controller does, so
change anything you like, as long as plan() keeps its arguments and
returns a Plan.
"""
from __future__ import annotations

import sys
from pathlib import Path

import common

# The controller's modules live in 04-controllers/, next to common/: found
# from common's place, so a copy of this file kept anywhere still finds them.
sys.path.insert(0, str(Path(common.__file__).resolve().parent.parent / "04-controllers"))

# What the plan works with, written for you (04-controllers/stateful_pods.py):
#   Plan           .create: [(ordinal, revision), ...]; .delete: [pod, ...]; .waiting_for: "why it stops"
#   Revisions      .current, .update (revision names), .partition (int), .rolling (False: OnDelete)
#   wait_for(result, "what")    notes what the plan waits for and returns True: "stop here"
#   has_finished(pod)           status.phase is Failed or Succeeded: it stopped for good
#   is_terminating(pod)         metadata.deletionTimestamp is set: it is going
#   revision_of(pod)            the revision the pod was made from (its controller-revision-hash label)
from stateful_pods import (POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL, Plan, RetentionPolicy,  # noqa: E402,F401
                           Revisions, claim_name, claim_owners, has_finished, is_running_and_ready,
                           is_terminating, new_claim, new_pod, ordinal_of, pod_name, revision_of, wait_for,
                           with_owners)


def plan(pods: dict[int, dict], start: int, replicas: int, revisions: Revisions, *,
         ordered: bool, min_ready_seconds: int = 0, now: float = 0.0) -> Plan:
    """The next steps towards `replicas` pods numbered start, start+1, ...
    (written for you). pods: the set's pods there are, by ordinal (web-3 is
    3), extra ones included; ordered: podManagementPolicy OrderedReady
    (False: Parallel). healthy(pod): Running, Ready for minReadySeconds, and
    not being deleted.
    The controller deletes result.delete and creates result.create (with
    their claims) and calls plan() again at the next change of a pod."""
    result = Plan()
    wanted = range(start, start + replicas)

    def healthy(pod: dict) -> bool:               # a pod being deleted may still be Ready: not healthy
        return is_running_and_ready(pod, min_ready_seconds, now) and not is_terminating(pod)

    if make_and_mend(result, pods, wanted, revisions, ordered, healthy):
        return result                             # OrderedReady: a pod before the rest is not ready
    if scale_down(result, pods, wanted, ordered) or result.create or result.delete:
        return result                             # the update waits until the set has its size
    roll(result, pods, wanted, revisions, healthy)
    return result


def make_and_mend(result: Plan, pods: dict[int, dict], wanted: range, revisions: Revisions,
                  ordered: bool, healthy) -> bool:
    # TODO(stage 1): step 1, every ordinal in `wanted`, lowest first. A
    # pod missing: result.create.append((ordinal, revision_for(ordinal,
    # wanted.start, revisions))), whatever number it has (web-1 missing
    # between web-0 and web-2 is made again as web-1). A pod that stopped
    # for good (has_finished, and not is_terminating already):
    # result.delete.append(pod), and a later plan makes it again, same
    # name. OrderedReady (`ordered`): after one such step, or at a pod
    # that is not healthy() (still Pending, not Ready, or terminating),
    # stop: return wait_for(result, "what it waits for"). Parallel: go on
    # to the next ordinal, never waiting. Nothing stopped it: return
    # False. Lesson: "What comes next" in
    # 04-controllers/lesson-4-state-that-keeps-its-name.md.
    raise NotImplementedError("make_and_mend() is yours to write: see TODO(stage 1)")


def revision_for(ordinal: int, start: int, revisions: Revisions) -> str:
    # TODO(stage 5): the revision a pod made now is made from. Below the
    # partition (ordinal < start + revisions.partition) of a RollingUpdate
    # (revisions.rolling), revisions.current: web-0, deleted under
    # partition 1, comes back on the old template. Otherwise
    # revisions.update. Until then, always the update. Lesson: "What
    # comes next" in lesson-4-state-that-keeps-its-name.md.
    return revisions.update


def scale_down(result: Plan, pods: dict[int, dict], wanted: range, ordered: bool) -> bool:
    # TODO(stage 3): step 2, the pods whose ordinal is not in `wanted`,
    # highest ordinal first: each not terminating yet goes in
    # result.delete. OrderedReady: one at a time, so stop at the first,
    # deleted now or still terminating (return wait_for(...)). Parallel:
    # all of them. Nothing stopped it: return False. Until then, no pod
    # is removed. Lesson: "What comes next" in
    # lesson-4-state-that-keeps-its-name.md.
    return False


def roll(result: Plan, pods: dict[int, dict], wanted: range, revisions: Revisions, healthy) -> bool:
    # TODO(stage 5): step 3, the update (reached only when every wanted pod
    # exists and nothing else was done). OnDelete (not revisions.rolling):
    # nothing. RollingUpdate: the ordinals of `wanted` highest first,
    # stopping below the partition (ordinal < wanted.start +
    # revisions.partition never changes). The first pod not on
    # revisions.update (revision_of) and not terminating: delete it and
    # stop (step 1 of a later plan makes it again from the update). A pod
    # that is not healthy() (the one just made, say): stop and wait for
    # it. Both ways, return wait_for(...); through them all: False. Until
    # then, no update. Lesson: "What comes next" in
    # lesson-4-state-that-keeps-its-name.md.
    return False


def main() -> int:
    """Run the StatefulSet controller with this plan (written for you)."""
    import controller_manager
    import statefulset
    statefulset.plan = plan                      # the controller's reconcile calls yours
    return controller_manager.main(["--controllers", "statefulset", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
