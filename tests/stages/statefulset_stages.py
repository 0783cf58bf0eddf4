"""Chapter 04's second program: the StatefulSet controller's plan, graded one rule at a time.

The learner writes what the controller does next (stateful_pods.py's
plan(): which pods to create, which to delete, when to wait), a pure
function of the set's pods. So each stage asks it about tables of pods,
as Kubernetes' StatefulSet controller would see them, and compares the
answer with what that controller does: no API server, no kubelet, no
Docker, a second or so a stage. The learner's file runs in a process of
its own (plan_server.py), which the stage asks over loopback HTTP, so a
plan() that raises, loops or exits is reported, never run in here.

Every question of a stage is about a set "web" of 3 (unless it says
otherwise); a check that nothing happens comes after one where something
does, so a plan that never does anything fails first.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import requests

from common.tooling.ports import free_port
from stage_runner import Hint, Program, Stage, StageContext, StageFailure

PART4 = "04-controllers/lesson-4-state-that-keeps-its-name.md"
WHAT_COMES_NEXT = Hint("What comes next", PART4)
SERVER = Path(__file__).resolve().parent / "plan_server.py"

NOW = 1_800_000_000.0              # the "now" of every question: the pods' times are before it
OLD, NEW = "web-5d8f7c", "web-7b9c4d"   # two revisions of the set's template
SAME = {"current": OLD, "update": OLD}


class WithPlan(StageContext):
    """The learner's file behind plan_server.py on a free loopback port."""

    def __init__(self, mine: Path, workdir: Path):
        super().__init__(mine, workdir)
        self.port = free_port()

    def start_mine(self, *args: str) -> Program:
        program = Program(SERVER, [str(self.mine), "--port", str(self.port), *args],
                          self.workdir / f"mine-{len(self.programs) + 1}.log")
        self.programs.append(program)
        return program


CONTEXT = WithPlan


# ---------------------------------------------------------------- pods

def pod(ordinal: int, state: str = "ready", revision: str = OLD, ready_for: float = 3600) -> dict:
    """Pod web-<ordinal> as the informer shows it. state: pending (made, not
    started), running (started, not Ready), ready (Running and Ready for
    `ready_for` seconds), failed, succeeded, terminating (Ready, being deleted)."""
    name = f"web-{ordinal}"
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}",
            "labels": {"app": "nginx", "controller-revision-hash": revision}}
    status: dict = {"phase": {"pending": "Pending", "failed": "Failed", "succeeded": "Succeeded"}.get(state,
                                                                                                   "Running")}
    if state in ("ready", "terminating", "running"):
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - ready_for))
        status["conditions"] = [{"type": "Ready", "status": "True" if state != "running" else "False",
                                 "lastTransitionTime": since}]
    if state == "terminating":
        meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 1))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}, "status": status}


def pods(*states: str, revision: str = OLD) -> dict[int, dict]:
    """pods("ready", "-", "failed"): web-0 ready, no web-1, web-2 failed."""
    return {n: pod(n, state, revision) for n, state in enumerate(states) if state != "-"}


def shown(table: dict[int, dict]) -> str:
    if not table:
        return "no pods"
    parts = []
    for n, p in sorted(table.items()):
        phase = p["status"]["phase"]
        ready = any(c["status"] == "True" for c in p["status"].get("conditions", []))
        state = ("terminating" if p["metadata"].get("deletionTimestamp") else
                 "Running and Ready" if phase == "Running" and ready else
                 "Running, not Ready" if phase == "Running" else phase)
        revision = p["metadata"]["labels"]["controller-revision-hash"]
        parts.append(f"{p['metadata']['name']} {state}" + (f" (new template, {revision})" if revision == NEW else ""))
    return ", ".join(parts)


# ---------------------------------------------------------------- asking

def ask(ctx: WithPlan, table: dict[int, dict], *, replicas: int = 3, start: int = 0, ordered: bool = True,
        revisions: dict | None = None, min_ready_seconds: int = 0) -> dict:
    """The learner's plan() for this table: {"create": [[ordinal, revision]], "delete": [names]}."""
    question = {"pods": {str(n): p for n, p in table.items()}, "start": start, "replicas": replicas,
                "revisions": {"partition": 0, "rolling": True, **(revisions or SAME)}, "ordered": ordered,
                "min_ready_seconds": min_ready_seconds, "now": NOW}
    def check():
        response = requests.post(f"http://127.0.0.1:{ctx.port}/plan", data=json.dumps(question), timeout=5)
        if response.status_code != 200:
            raise StageFailure(f"plan() to answer for {shown(table)}", f"your plan() raised {response.text}",
                               WHAT_COMES_NEXT)
        return response.json()
    return ctx.wait_until(check, expected=f"plan() to answer for {shown(table)}",
                          happened=lambda: "it did not answer", timeout=10, hint=WHAT_COMES_NEXT)


def did(answer: dict, create: str = "created", delete: str = "deleted", nothing: str = "did nothing") -> str:
    """What a plan's answer does, in words: "created web-0; deleted web-3"."""
    template = {OLD: "", NEW: " from the new template"}
    made = [f"web-{o}" + template.get(r, f" from {r}") for o, r in answer["create"]]
    if not made and not answer["delete"]:
        return nothing
    return "; ".join(part for part in (f"{create} {', '.join(made)}" if made else "",
                                       f"{delete} {', '.join(answer['delete'])}" if answer["delete"] else "")
                     if part)


def expect(ctx: WithPlan, table: dict[int, dict], *, create=(), delete=(), why: str, any_order: bool = False,
           **asked) -> None:
    """plan() for `table` creates exactly `create` (ordinals, or (ordinal,
    revision)) and deletes exactly `delete` (ordinals), or the stage fails."""
    answer = ask(ctx, table, **asked)
    wanted_create = [list(c) if isinstance(c, tuple) else [c, (asked.get("revisions") or SAME)["update"]]
                     for c in create]
    wanted_delete = [f"web-{o}" for o in delete]
    got_create, got_delete = answer["create"], answer["delete"]
    if any_order:
        wanted_create, got_create = sorted(wanted_create), sorted(got_create)
        wanted_delete, got_delete = sorted(wanted_delete), sorted(got_delete)
    if got_create == wanted_create and got_delete == wanted_delete:
        return
    settings = [f"replicas {asked.get('replicas', 3)}"]
    if asked.get("start"):
        settings.append(f"ordinals.start {asked['start']}")
    settings.append("OrderedReady" if asked.get("ordered", True) else "Parallel")
    if asked.get("min_ready_seconds"):
        settings.append(f"minReadySeconds {asked['min_ready_seconds']}")
    revisions = asked.get("revisions")
    if revisions:
        settings.append(f"the template changed: current revision {revisions['current']} (the old template), "
                        f"update revision {revisions['update']} (the new)"
                        if revisions["current"] != revisions["update"] else "")
        if "partition" in revisions:
            settings.append(f"partition {revisions['partition']}")
        if revisions.get("rolling") is False:
            settings.append("updateStrategy OnDelete")
    wanted = did({"create": wanted_create, "delete": wanted_delete}, "create", "delete", "do nothing")
    raise StageFailure(f"with {shown(table)} ({', '.join(s for s in settings if s)}): {wanted} ({why})",
                       f"your plan() {did(answer)}", WHAT_COMES_NEXT)


# ---------------------------------------------------------------- the stages

def stage_in_order(ctx: WithPlan) -> None:
    ctx.start_mine()
    expect(ctx, {}, create=[0], why="a new set starts with web-0, and only web-0: the next waits for it")
    expect(ctx, pods("pending"), why="web-0 is not Running yet: web-1 waits")
    expect(ctx, pods("running"), why="web-0 runs but is not Ready: web-1 waits")
    expect(ctx, pods("ready"), create=[1], why="web-0 is Running and Ready: now web-1")
    expect(ctx, pods("ready", "ready"), create=[2], why="web-1 is Running and Ready: now web-2")
    expect(ctx, pods("ready", "ready", "ready"), why="the set is complete: nothing to do")
    expect(ctx, pods("ready", "pending"), replicas=4, why="web-1 is not Running yet: web-2 waits")
    expect(ctx, {}, start=5, replicas=2, create=[5],
           why="spec.ordinals.start 5: the pods are web-5 and web-6, web-5 first")
    expect(ctx, {5: pod(5)}, start=5, replicas=2, create=[6], why="then web-6")
    expect(ctx, {0: pod(0, ready_for=60)}, min_ready_seconds=30, create=[1],
           why="web-0 has been Ready for 60 s, more than minReadySeconds")
    expect(ctx, {0: pod(0, ready_for=10)}, min_ready_seconds=30,
           why="web-0 has been Ready for 10 s only: minReadySeconds is 30")


def stage_comes_back(ctx: WithPlan) -> None:
    ctx.start_mine()
    expect(ctx, pods("ready", "-", "ready"), create=[1],
           why="web-1 is missing: it is made again with its own name, web-1 (never web-3)")
    expect(ctx, pods("-", "ready", "ready"), create=[0], why="web-0 is missing: it is made again as web-0")
    expect(ctx, pods("ready", "failed", "ready"), delete=[1],
           why="web-1 has Failed: it is deleted, and made again as web-1 once it is gone; nothing else "
               "until then")
    expect(ctx, pods("succeeded", "ready", "ready"), delete=[0],
           why="web-0 has Succeeded: it stopped for good, so it is deleted, to come back as web-0")
    expect(ctx, pods("ready", "terminating", "ready"),
           why="web-1 is being deleted: no second web-1 while the first is still there")
    expect(ctx, pods("terminating"),
           why="web-0 is being deleted, though still Ready: web-1 waits until a new web-0 is Running and Ready")
    expect(ctx, pods("ready", "ready", "failed", "ready"), replicas=4, delete=[2],
           why="web-2 has Failed: it goes first, web-3 is left alone")


def stage_scale_down(ctx: WithPlan) -> None:
    ctx.start_mine()
    expect(ctx, pods("ready", "ready", "ready", "ready", "ready"), delete=[4],
           why="scaled from 5 to 3: the highest ordinal goes first, and alone")
    expect(ctx, pods("ready", "ready", "ready", "ready", "terminating"),
           why="web-4 is still terminating: web-3 waits for it to be gone")
    expect(ctx, pods("ready", "ready", "ready", "ready"), delete=[3], why="web-4 is gone: now web-3")
    expect(ctx, pods("ready", "ready"), replicas=0, delete=[1], why="scaled to 0: web-1 first, then web-0")
    expect(ctx, pods("ready", "pending", "ready", "ready", "ready"),
           why="web-1 is not Running and Ready: OrderedReady removes a pod only when every pod it keeps is")
    expect(ctx, {0: pod(0), 1: pod(1), 7: pod(7), 3: pod(3)}, replicas=2, delete=[7],
           why="web-7 is the highest extra ordinal, whatever the gaps")


def stage_parallel(ctx: WithPlan) -> None:
    ctx.start_mine()
    expect(ctx, {}, ordered=False, create=[0, 1, 2], any_order=True,
           why="podManagementPolicy Parallel: every missing pod at once")
    expect(ctx, pods("pending"), ordered=False, create=[1, 2], any_order=True,
           why="Parallel: web-1 and web-2 do not wait for web-0 to be Ready")
    expect(ctx, pods("ready", "ready", "ready", "ready", "ready"), replicas=2, ordered=False,
           delete=[4, 3, 2], any_order=True, why="Parallel, scaled from 5 to 2: every extra pod at once")
    expect(ctx, pods("pending", "failed", "-", "ready", "terminating"), replicas=4, ordered=False,
           create=[2], delete=[1], any_order=True,
           why="Parallel: web-1 (Failed) deleted and web-2 made in the same step; web-4 is already going")
    expect(ctx, pods("ready", "terminating"), replicas=2, ordered=False,
           why="web-1 is still being deleted: even in Parallel, no second web-1 before the first is gone")


def stage_rolling_update(ctx: WithPlan) -> None:
    ctx.start_mine()
    changed = {"current": OLD, "update": NEW}
    expect(ctx, pods("ready", "ready", "ready"), revisions=changed, delete=[2],
           why="a rolling update replaces the highest ordinal first, one pod at a time")
    expect(ctx, pods("ready", "ready", "terminating"), revisions=changed,
           why="web-2 is still terminating: nothing else moves")
    expect(ctx, pods("ready", "ready"), revisions=changed, create=[(2, NEW)],
           why="web-2 is gone: it is made again, from the new template")
    expect(ctx, {**pods("ready", "ready"), 2: pod(2, "pending", NEW)}, revisions=changed,
           why="the new web-2 is not Running and Ready yet: web-1 waits for it")
    expect(ctx, {**pods("ready", "ready"), 2: pod(2, "ready", NEW)}, revisions=changed, delete=[1],
           why="the new web-2 is Ready: now web-1")
    expect(ctx, {0: pod(0), 1: pod(1, "ready", NEW), 2: pod(2, "ready", NEW)}, revisions=changed, delete=[0],
           why="then web-0, last")
    expect(ctx, pods("ready", "ready", "ready", revision=NEW), revisions=changed, why="every pod is updated")
    expect(ctx, pods("ready", "ready", "ready"), ordered=False, revisions=changed, delete=[2],
           why="Parallel too updates one pod at a time, highest ordinal first")
    expect(ctx, {**pods("ready", "ready"), 2: pod(2, "pending", NEW)}, ordered=False, revisions=changed,
           why="Parallel too: the new web-2 is not Running and Ready yet, so web-1 waits for it")
    partition = {**changed, "partition": 1}
    expect(ctx, pods("ready", "ready", "ready"), revisions=partition, delete=[2],
           why="partition 1: web-2 and web-1 are updated, highest first")
    expect(ctx, {0: pod(0), 1: pod(1, "ready", NEW), 2: pod(2, "ready", NEW)}, revisions=partition,
           why="partition 1: web-0, below the partition, keeps the old template")
    expect(ctx, pods("-", "ready", "ready", revision=NEW), revisions=partition, create=[(0, OLD)],
           why="partition 1: web-0, deleted, comes back from the current (old) revision")
    expect(ctx, pods("ready", "ready", "ready"), revisions={**changed, "partition": 3},
           why="partition 3 (as many as replicas): no pod is updated; a canary of none")
    expect(ctx, pods("ready", "ready", "ready"), revisions={**changed, "rolling": False},
           why="updateStrategy OnDelete: the controller replaces no pod itself")
    expect(ctx, pods("ready", "ready"), revisions={**changed, "rolling": False, "partition": 2},
           create=[(2, NEW)], why="OnDelete: a pod deleted by someone comes back from the new template "
                                  "(a partition is RollingUpdate's only)")


STAGES = [
    Stage(1, "OrderedReady: web-0 first, each pod once the one before is Running and Ready", stage_in_order,
          WHAT_COMES_NEXT, terms=("OrderedReady", "lowest ordinal first", "Running and Ready", "one at a time",
                                  "`spec.ordinals.start`", "`minReadySeconds`")),
    Stage(2, "a missing or finished pod comes back as itself", stage_comes_back, WHAT_COMES_NEXT,
          terms=("its own name", "Failed", "Succeeded", "being deleted")),
    Stage(3, "scaling down: the highest ordinal first, one at a time", stage_scale_down, WHAT_COMES_NEXT,
          terms=("highest ordinal first", "one at a time", "terminating", "every pod it keeps")),
    Stage(4, "Parallel: every missing pod at once, every extra pod at once", stage_parallel, WHAT_COMES_NEXT,
          terms=("Parallel", "every missing pod at once", "every extra pod at once")),
    Stage(5, "a rolling update: highest ordinal first, down to the partition", stage_rolling_update,
          WHAT_COMES_NEXT, terms=("highest ordinal first", "partition", "current revision", "OnDelete")),
]
