"""A recorder of the store's file-system calls, and the crash states they allow.

In the spirit of the file-system crash studies (ALICE, "All File Systems
Are Not Created Equal", OSDI 2014): run the store once while recording
what it asks of the file system, then ask "what could the disk hold if the
power went out right after operation k?", rebuild each such disk in a
directory, and let the store start on it.

The model (deliberately simple, and a little harsher than ext4's defaults):

- File data that was written but not fsync'd (or fdatasync'd) may be lost:
  the file then holds what it held at its last fsync (empty if never).
- A directory entry (a create, rename, unlink, mkdir) is durable once its
  directory has been fsync'd after it. One that was not may be lost, or
  kept: the journal commits metadata in order, so we build the states
  "none of the unsynced entries", "all of them", and each prefix of them in
  the order they were made (bounded, see `prefixes`).
- Nothing after the crash point happened.

What it does not model: torn or reordered writes inside one file (a write
either reaches the disk at an fsync or not at all), disks that lie about
flushing their cache, and file systems without ordered metadata.
"""
from __future__ import annotations

import builtins
import os
import pathlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Op:
    kind: str          # create write truncate fsync fsync_dir rename unlink mkdir ack
    path: str = ""     # relative to the data directory
    target: str = ""   # rename's new name
    data: bytes = b""
    note: object = None  # ack: what the test noted


@dataclass
class Recorder:
    """Wraps the calls file_store.py and event_log.py make, passing each
    through to the real file system and noting it."""
    root: Path
    drop_file_fsync: bool = False      # for the self-test: the store without its data fsync
    drop_dir_fsync: bool = False       # ... without its directory fsyncs
    drop_log_fsync: bool = False       # ... without the event log's fdatasync, its commit point
    ops: list[Op] = field(default_factory=list)
    _fds: dict[int, str] = field(default_factory=dict)
    _in_mkdir: bool = False

    def rel(self, path) -> str | None:
        try:
            relative = str(Path(os.path.abspath(path)).relative_to(self.root))
            return "" if relative == "." else relative
        except ValueError:
            return None                  # not the store's business

    def ack(self, note) -> None:
        self.ops.append(Op("ack", note=note))

    def install(self, monkeypatch, modules) -> None:
        recorder = self
        real_open, real_os_open, real_fsync, real_fdatasync = builtins.open, os.open, os.fsync, os.fdatasync
        real_replace, real_close = os.replace, os.close
        real_mkdir, real_unlink, real_rename, real_touch = (pathlib.Path.mkdir, pathlib.Path.unlink,
                                                             pathlib.Path.rename, pathlib.Path.touch)

        class File:
            def __init__(self, path, mode):
                self.rel = recorder.rel(path)
                existed = os.path.exists(path)
                self.file = real_open(path, mode)
                if self.rel is not None and any(m in mode for m in "wa"):
                    if not existed:
                        recorder.ops.append(Op("create", self.rel))
                    elif "w" in mode:
                        recorder.ops.append(Op("truncate", self.rel, data=b""))
                    recorder._fds[self.file.fileno()] = self.rel

            def write(self, data):
                if self.rel is not None:
                    recorder.ops.append(Op("write", self.rel, data=bytes(data)))
                return self.file.write(data)

            def truncate(self, size):
                if self.rel is not None:
                    recorder.ops.append(Op("truncate", self.rel, data=str(size).encode()))
                return self.file.truncate(size)

            def __getattr__(self, name):
                return getattr(self.file, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.file.close()

        def fake_open(path, mode="r", *args, **kwargs):
            if any(m in mode for m in "wa+"):
                return File(path, mode)
            return real_open(path, mode, *args, **kwargs)

        def fake_os_open(path, flags, *args, **kwargs):
            fd = real_os_open(path, flags, *args, **kwargs)
            if flags & os.O_DIRECTORY and recorder.rel(path) is not None:
                recorder._fds[fd] = "dir:" + recorder.rel(path)
            return fd

        def sync(fd, real):
            name = recorder._fds.get(fd)
            if name is None:
                return real(fd)
            if name.startswith("dir:"):
                if recorder.drop_dir_fsync:
                    return None
                recorder.ops.append(Op("fsync_dir", name[4:]))
            else:
                if recorder.drop_file_fsync and name.startswith("registry"):
                    return None
                if recorder.drop_log_fsync and name.startswith("events"):
                    return None
                recorder.ops.append(Op("fsync", name))
            return real(fd)

        def fake_replace(src, dst):
            if recorder.rel(src) is not None:
                recorder.ops.append(Op("rename", recorder.rel(src), recorder.rel(dst)))
            return real_replace(src, dst)

        def fake_mkdir(self, mode=0o777, parents=False, exist_ok=False):
            if recorder._in_mkdir:                 # Path.mkdir(parents=True) calls itself
                return real_mkdir(self, mode, parents, exist_ok)
            missing = [p for p in [self, *self.parents] if not p.exists()]
            recorder._in_mkdir = True
            try:
                real_mkdir(self, mode, parents, exist_ok)
            finally:
                recorder._in_mkdir = False
            for path in reversed(missing):
                if recorder.rel(path) is not None:
                    recorder.ops.append(Op("mkdir", recorder.rel(path)))

        def fake_unlink(self, missing_ok=False):
            existed = self.exists()
            real_unlink(self, missing_ok)
            if existed and recorder.rel(self) is not None:
                recorder.ops.append(Op("unlink", recorder.rel(self)))

        def fake_rename(self, target):
            if recorder.rel(self) is not None:
                recorder.ops.append(Op("rename", recorder.rel(self), recorder.rel(target)))
            return real_rename(self, target)

        def fake_touch(self, mode=0o666, exist_ok=True):
            if not self.exists() and recorder.rel(self) is not None:
                recorder.ops.append(Op("create", recorder.rel(self)))
            return real_touch(self, mode, exist_ok)

        for module in modules:
            monkeypatch.setattr(module, "open", fake_open, raising=False)
        monkeypatch.setattr(os, "open", fake_os_open)
        monkeypatch.setattr(os, "fsync", lambda fd: sync(fd, real_fsync))
        monkeypatch.setattr(os, "fdatasync", lambda fd: sync(fd, real_fdatasync))
        monkeypatch.setattr(os, "replace", fake_replace)
        monkeypatch.setattr(os, "close", real_close)
        monkeypatch.setattr(pathlib.Path, "mkdir", fake_mkdir)
        monkeypatch.setattr(pathlib.Path, "unlink", fake_unlink)
        monkeypatch.setattr(pathlib.Path, "rename", fake_rename)
        monkeypatch.setattr(pathlib.Path, "touch", fake_touch)


def _parent(path: str) -> str:
    return os.path.dirname(path)


def crash_states(ops: list[Op], crash: int, prefixes: int = 3):
    """The disks the rules allow after ops[:crash]: (label, {path: bytes}, {dirs})."""
    names: dict[str, int] = {}             # the file system as the process saw it: path -> inode
    data: dict[int, bytes] = {}            # inode -> bytes in the page cache
    synced: dict[int, bytes] = {}          # inode -> bytes at its last fsync
    entries: list[tuple[str, Op, int | None]] = []   # metadata ops in order: (directory, op, inode)
    durable_upto: dict[str, int] = {}      # directory -> entries[:n] on it are durable
    inodes = 0
    for op in ops[:crash]:
        if op.kind == "create":
            inodes += 1
            names[op.path], data[inodes], synced[inodes] = inodes, b"", b""
            entries.append((_parent(op.path), op, inodes))
        elif op.kind == "write":
            data[names[op.path]] += op.data
        elif op.kind == "truncate":
            size = int(op.data or b"0")
            data[names[op.path]] = data[names[op.path]][:size]
        elif op.kind == "fsync":
            synced[names[op.path]] = data[names[op.path]]
        elif op.kind == "rename":
            names[op.target] = names.pop(op.path)
            entries.append((_parent(op.target), op, names[op.target]))
        elif op.kind == "unlink":
            names.pop(op.path, None)
            entries.append((_parent(op.path), op, None))
        elif op.kind == "mkdir":
            entries.append((_parent(op.path), op, None))
        elif op.kind == "fsync_dir":
            durable_upto[op.path] = len(entries)
    durable = [index < durable_upto.get(directory, 0) for index, (directory, _, _) in enumerate(entries)]
    unsynced = [index for index, is_durable in enumerate(durable) if not is_durable]
    cuts = sorted({0, len(unsynced), *(len(unsynced) * n // (prefixes + 1) for n in range(1, prefixes + 1))})
    for cut in cuts:
        applied = set(unsynced[:cut])
        for label, contents in (("synced data", synced), ("all data", data)):
            files: dict[str, int] = {}
            dirs: set[str] = {""}
            for index, (_, op, inode) in enumerate(entries):
                if not (durable[index] or index in applied):
                    continue
                if op.kind == "create":
                    files[op.path] = inode
                elif op.kind == "rename" and op.path in files:
                    files[op.target] = files.pop(op.path)
                elif op.kind == "rename":
                    # the temporary's own entry was lost but the rename was not:
                    # the journal keeps order, so this cannot happen on its own
                    files[op.target] = inode
                elif op.kind == "unlink":
                    files.pop(op.path, None)
                elif op.kind == "mkdir":
                    dirs.add(op.path)
            reachable = {path: contents[inode] for path, inode in files.items() if _reachable(path, dirs)}
            yield (f"{cut}/{len(unsynced)} unsynced entries, {label}", reachable,
                   {d for d in dirs if _reachable(d + "/x", dirs)})


def _reachable(path: str, dirs: set[str]) -> bool:
    parent = _parent(path)
    while parent:
        if parent not in dirs:
            return False
        parent = _parent(parent)
    return True


def materialise(files: dict[str, bytes], dirs: set[str], into: Path) -> None:
    for directory in sorted(dirs):
        (into / directory).mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        (into / path).write_bytes(content)
