"""The event log: the watch history on disk, so that a watch survives a restart.

    DATA/events/00000000000000001000.log    every event after version 1000, up to 3500
    DATA/events/00000000000000003500.log    every event after version 3500, up to now

(a segment holds a quarter of the history, 2,500 events by default)

One line of JSON per acknowledged write, in resourceVersion order:

    {"rv":1001,"type":"ADDED","group":"","version":"v1","plural":"pods","namespace":"default","object":{...}}

It is the store's *commit point*, as a database's write-ahead log is: the
store appends each batch of writes here and fsyncs the file once, before it
renames a single object file into place. So a write is either in the log
(and start-up finishes it, should the server have died before the rename)
or it never happened (a line cut off by the crash is not a write: it was
never acknowledged, and start-up cuts it off the file).

The log is bounded the way etcd's is: by compaction. It is cut into
segments of `segment_size` lines; each file is named after the version its
events follow. When a segment is full the store makes its object files
durable (a *checkpoint*) and starts a new segment; the oldest segments are
deleted as long as the newer ones still hold at least `keep` events. The
oldest file's name is therefore the *horizon*: a watch from that version or
later resumes with every event after it; an older one gets 410.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import json_cache
from common.log import get_logger

log = get_logger("apiserver")


class CorruptLog(Exception):
    """A segment other than the newest is damaged: the history has a hole."""


@dataclass
class _Segment:
    path: Path
    after: int           # every event in it is newer than this version
    lines: int = 0


def _segment_path(directory: Path, after: int) -> Path:
    return directory / f"{after:020d}.log"     # zero-padded: names sort as the versions do


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (new names, removals) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class EventLog:
    def __init__(self, directory: Path, keep: int, segment_size: int | None = None):
        self.directory = Path(directory)
        self.keep = max(1, keep)                         # the newest `keep` events always survive compaction
        self.segment_size = segment_size or max(self.keep // 4, 100)
        self._segments: list[_Segment] = []              # oldest first; the last one is appended to
        self._file = None

    @property
    def horizon(self) -> int:
        """Every event newer than this version is in the log."""
        return self._segments[0].after

    def open(self, start_rv: int) -> list[dict]:
        """Read every kept event back, oldest first, and get ready to append.

        `start_rv` names the first segment of a data directory that has no
        log yet: nothing before it can be replayed."""
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True)
            fsync_dir(self.directory.parent)    # the log's directory itself survives a power cut
        paths = sorted(self.directory.glob("*.log"))
        self._segments = [_Segment(path, int(path.stem)) for path in paths if path.stem.isdigit()]
        records: list[dict] = []
        for segment in self._segments:
            newest = segment is self._segments[-1]
            records.extend(self._read(segment, newest, records[-1]["rv"] if records else segment.after))
        if not self._segments:
            self._segments.append(self._create(start_rv))
        self._file = open(self._segments[-1].path, "ab")
        return records

    def _read(self, segment: _Segment, newest: bool, previous_rv: int) -> list[dict]:
        data = segment.path.read_bytes()
        records, offset = [], 0
        while offset < len(data):
            end = data.find(b"\n", offset)
            record = self._parse(data[offset:end]) if end >= 0 else None
            if record is None or record["rv"] <= previous_rv:
                if not newest:
                    raise CorruptLog(f"{segment.path} is damaged at byte {offset}: the watch history "
                                     f"has a hole. Remove {self.directory} to start a new history "
                                     "(watches from before the restart then get 410 and list again)")
                # A batch the crash cut off: never fsync'd, so never
                # acknowledged. Cut it off the file too, so that the next
                # append does not follow half a line.
                with open(segment.path, "r+b") as f:
                    f.truncate(offset)
                    os.fsync(f.fileno())
                log.info("cut off an unfinished write at the end of the event log",
                         file=str(segment.path), bytes=len(data) - offset)
                break
            records.append(record)
            previous_rv = record["rv"]
            offset = end + 1
        segment.lines = len(records)
        return records

    @staticmethod
    def _parse(line: bytes) -> dict | None:
        try:
            record = json.loads(line)
            return record if isinstance(record, dict) and isinstance(record.get("rv"), int) else None
        except ValueError:
            return None

    # [START event-log-append]
    def append(self, lines: list[bytes]) -> None:
        """Make a batch of events durable with one fsync: the commit point."""
        self._file.write(b"".join(lines))
        self._file.flush()
        os.fdatasync(self._file.fileno())    # the data, and the file's size: enough to read it back
        self._segments[-1].lines += len(lines)

    @property
    def full(self) -> bool:
        return self._segments[-1].lines >= self.segment_size

    def rotate(self, last_rv: int) -> None:
        """Start a new segment after `last_rv`; delete the oldest ones the
        window no longer needs. The caller has made every logged write's
        object file durable: no start-up will need those lines again."""
        self._file.close()
        self._segments.append(self._create(last_rv))
        self._file = open(self._segments[-1].path, "ab")
        while sum(segment.lines for segment in self._segments[1:]) >= self.keep:
            self._segments.pop(0).path.unlink()     # compaction: whole segments, oldest first
        fsync_dir(self.directory)           # the new name, and the deletions, survive a power cut
    # [END event-log-append]

    def _create(self, after: int) -> _Segment:
        path = _segment_path(self.directory, after)
        path.touch()
        fsync_dir(self.directory)
        return _Segment(path, after)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def record_line(event) -> bytes:
    """One event as a line of the log. A MODIFIED keeps the object before it
    too: a watch with a selector needs both to see an object move in or out."""
    head = {"rv": event.resource_version, "type": event.type, "group": event.resource.group,
            "version": event.resource.version, "plural": event.resource.plural, "namespace": event.namespace}
    old = b',"old":' + json_cache.encode(event.old) if event.type == "MODIFIED" else b""
    return json_cache.dumps(head)[:-1] + b',"object":' + json_cache.remember(event.obj) + old + b"}\n"
