"""One JSON encoding per stored object, shared by everything that sends it.

A create used to encode the same pod four times: for its file, for the
event log's line, for the response, and once more for the watchers. The
store now encodes each object it writes once (`remember`), when it logs
the write; the log line, the watch event and the 201 reuse those bytes
(`encode`), and so does a private copy of the object (`private_copy`:
parsing JSON is several times quicker than `copy.deepcopy` of the same
dict).

The cache knows objects by identity, and holds each one it names, so an
id is never reused while it is here. That is safe because of the store's
rule (storage.py): an object it has stored is never changed again, only
replaced. Anything not remembered (a list, a Status, an object still
being built) is encoded as before, and not kept. It holds the newest
`SIZE` writes: an object written longer ago is encoded again when asked.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict

SIZE = 4096

_lock = threading.Lock()
_encoded: OrderedDict[int, tuple[dict, bytes]] = OrderedDict()   # id(obj) -> (obj, its compact JSON)


def dumps(obj) -> bytes:
    """Compact JSON, as every answer and event is sent."""
    return json.dumps(obj, separators=(",", ":")).encode()


def remember(obj: dict) -> bytes:
    """The store's one encoding of an object it is writing, kept for the others."""
    data = lookup(obj)
    if data is None:
        data = dumps(obj)
        with _lock:
            _encoded[id(obj)] = (obj, data)
            while len(_encoded) > SIZE:
                _encoded.popitem(last=False)
    return data


def lookup(obj) -> bytes | None:
    entry = _encoded.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def encode(obj) -> bytes:
    """The stored bytes when the store wrote this very object; else a new encoding."""
    data = lookup(obj)
    return data if data is not None else dumps(obj)


def private_copy(obj):
    """A deep copy of JSON data, to change freely: parsed from its bytes."""
    return json.loads(encode(obj))
