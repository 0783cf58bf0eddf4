"""Crash consistency: an acknowledged write survives a power cut at any moment.

SIGKILL (test_durability.py) leaves the kernel's page cache intact, so it
cannot tell a store that fsyncs from one that does not. Here the store
serves a sequence of writes while crash_fs.Recorder notes every call it
makes to the file system; then, for every point k of that sequence, we
build the disks a journaling file system may hold after a power cut right
after call k (crash_fs.crash_states: unsynced data may vanish, an unsynced
directory entry may vanish, in order), start a fresh store on each, and
check that every write acknowledged before k is there, exactly, and that
nothing is corrupt. The same checker, run on a store with its data fsync
or its directory fsyncs taken out, must find lost writes: the test can
fail.
"""
from __future__ import annotations

import copy
import logging

import pytest

import event_log
import file_store
import registry
from crash_fs import Recorder, crash_states, materialise

PODS = registry.lookup("", "v1", "pods")
CONFIGMAPS = registry.lookup("", "v1", "configmaps")
DEPLOYMENTS = registry.lookup("apps", "v1", "deployments")
KEEP = 4          # a tiny watch window, so the log is checkpointed and old segments deleted
SEGMENT = 3       # lines per log segment


def small_store(data):
    """A store whose log is checkpointed, and its old segments deleted, every few writes."""
    return file_store.FileStore(data, watch_cache_size=KEEP, log_segment_size=SEGMENT)


def workload(store, recorder):
    """Creates, updates and deletes over three kinds in two groups and two
    namespaces. Each acknowledged write notes what the key must now hold."""
    def note(resource, namespace, name, obj):
        recorder.ack(((resource.plural, namespace, name), copy.deepcopy(obj)))

    def pod(name, namespace="default"):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.35"}]}}

    for i in range(4):
        for namespace in ("default", "team-a"):
            note(PODS, namespace, f"web-{i}", store.create(PODS, pod(f"web-{i}", namespace)))
    note(CONFIGMAPS, "default", "settings", store.create(CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
        "data": {"colour": "blue"}}))
    note(DEPLOYMENTS, "default", "web", store.create(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1}}))
    for i in range(3):
        def relabel(obj, i=i):
            obj["metadata"]["labels"] = {"round": str(i)}
            return obj
        note(PODS, "default", "web-0", store.update(PODS, "default", "web-0", relabel))
        note(DEPLOYMENTS, "default", "web", store.update(DEPLOYMENTS, "default", "web",
                                                         lambda obj, i=i: {**obj, "spec": {"replicas": i + 2}}))
    for i in range(3):
        store.delete(PODS, "team-a", f"web-{i}")
        note(PODS, "team-a", f"web-{i}", None)
    note(PODS, "team-a", "web-0", store.create(PODS, pod("web-0", "team-a")))     # a name used again


def record(tmp_path, monkeypatch, **drops):
    data = tmp_path / "recorded"
    data.mkdir()
    recorder = Recorder(data.resolve(), **drops)
    with monkeypatch.context() as patch:
        recorder.install(patch, [file_store, event_log])
        store = small_store(data)
        workload(store, recorder)
        store.close()
    return recorder.ops


def check_every_crash(ops, tmp_path, first: int = 0) -> tuple[int, list[str]]:
    """(crash states checked, problems): start a store on every crash state
    after call `first`."""
    logging.disable(logging.INFO)
    problems, checked, seen = [], 0, set()
    try:
        for crash in range(first, len(ops) + 1):
            acked, in_flight = {}, {}
            for op in ops[:crash]:
                if op.kind == "ack":
                    key, obj = op.note
                    acked[key] = obj
            after = next((op for op in ops[crash:] if op.kind == "ack"), None)
            if after is not None:             # the write under way at the crash
                in_flight[after.note[0]] = after.note[1]
            for label, files, dirs in crash_states(ops, crash):
                fingerprint = (tuple(sorted(files.items())), tuple(sorted(dirs)))
                if fingerprint in seen and not acked:
                    continue
                seen.add(fingerprint)
                checked += 1
                where = tmp_path / f"crash-{checked}"
                materialise(files, dirs, where)
                problem = check_state(where, acked, in_flight)
                if problem:
                    op = ops[crash - 1] if crash else None
                    problems.append(f"crash after call {crash} ({op.kind} {op.path}{' -> ' + op.target if op and op.target else ''})"
                                    f" [{label}]: {problem}" if op else f"crash before any call [{label}]: {problem}")
                    if len(problems) >= 5:
                        return checked, problems
    finally:
        logging.disable(logging.NOTSET)
    return checked, problems


def check_state(where, acked, in_flight) -> str | None:
    try:
        store = small_store(where)
    except Exception as error:   # noqa: BLE001: any failure to start is corruption
        return f"the store does not start: {type(error).__name__}: {error}"
    try:
        resources = {"pods": PODS, "configmaps": CONFIGMAPS, "deployments": DEPLOYMENTS}
        for (plural, namespace, name), expected in acked.items():
            got = store.get(resources[plural], namespace, name)
            allowed = [expected]
            if (plural, namespace, name) in in_flight:
                allowed.append(in_flight[(plural, namespace, name)])
            if got not in allowed:
                what = "gone" if got is None else f"at resourceVersion {got['metadata']['resourceVersion']}"
                want = "gone" if expected is None else f"resourceVersion {expected['metadata']['resourceVersion']}"
                return f"{plural} {namespace}/{name} was acknowledged as {want} but is {what}"
        newest = max((int(obj["metadata"]["resourceVersion"]) for obj in acked.values() if obj), default=0)
        if store.resource_version < newest:
            return f"the store's resourceVersion {store.resource_version} is behind acknowledged {newest}"
        for resource in resources.values():
            store.list(resource)           # every object readable
    finally:
        store.close()
    return None


def test_every_acknowledged_write_survives_every_crash_state(tmp_path, monkeypatch):
    ops = record(tmp_path, monkeypatch)
    assert sum(op.kind == "ack" for op in ops) == 20
    assert {"fsync", "fsync_dir", "rename", "unlink", "mkdir"} <= {op.kind for op in ops}
    checked, problems = check_every_crash(ops, tmp_path)
    print(f"{len(ops)} file-system calls, {checked} crash states checked")
    assert not problems, "\n".join(problems)


def test_a_restart_makes_what_it_inherited_durable_before_the_log_lets_go(tmp_path, monkeypatch):
    """A crash that keeps the page cache (the process killed, not the
    power) leaves renames that are visible but not yet durable; the
    restarted store finds them done and has nothing to redo. Then enough
    writes elsewhere to checkpoint the log and delete the segment that
    could redo them, then a power cut: they must not be lost, so the
    checkpoint fsyncs their directories too."""
    data = tmp_path / "recorded"
    data.mkdir()
    recorder = Recorder(data.resolve())
    with monkeypatch.context() as patch:
        recorder.install(patch, [file_store, event_log])
        before_crash = small_store(data)
        for name in ("web-0", "web-1"):     # fewer than a segment: no checkpoint before the crash
            created = before_crash.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                                                 "metadata": {"name": name, "namespace": "default"},
                                                 "spec": {"containers": [{"name": "c", "image": "busybox:1.35"}]}})
            recorder.ack((("pods", "default", name), copy.deepcopy(created)))
        # The crash: no close, no last words. The files are as it left them.
        restart = len(recorder.ops)
        store = small_store(data)
        for i in range(4 * SEGMENT):        # several checkpoints: the segment with web-0 and web-1 goes
            created = store.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": f"settings-{i}", "namespace": "team-b"}})
            recorder.ack((("configmaps", "team-b", f"settings-{i}"), copy.deepcopy(created)))
        store.close()
    ops = recorder.ops
    deleted = [op.path for op in ops[restart:] if op.kind == "unlink" and op.path.startswith("events/")]
    assert f"events/{0:020d}.log" in deleted, "the test must make the restarted store delete the first segment"
    checked, problems = check_every_crash(ops, tmp_path, first=restart)
    print(f"{len(ops) - restart} file-system calls after the restart, {checked} crash states checked")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("drop", ["drop_file_fsync", "drop_dir_fsync", "drop_log_fsync"])
def test_the_checker_finds_lost_writes_when_an_fsync_is_taken_out(tmp_path, monkeypatch, drop):
    """The same checker on a store without its object-file fsync, without
    its directory fsyncs, or without the event log's fdatasync (the commit
    point: a rename not yet durable is redone from the log, so a log line
    lost with it loses the write): acknowledged writes are lost, and found."""
    ops = record(tmp_path, monkeypatch, **{drop: True})
    _, problems = check_every_crash(ops, tmp_path)
    assert problems, f"with {drop} the checker found nothing: it cannot fail"
    assert any("was acknowledged" in problem for problem in problems), problems
