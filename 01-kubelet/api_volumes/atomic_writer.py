"""Writing a volume's files so that a reader never sees half an update.

A ConfigMap, Secret or downward API volume is a directory the kubelet
fills with files, and rewrites while the pod runs when the object changes.
A program in the container may read two files (a certificate and its key)
at the very moment the kubelet writes them: it must see both old or both
new, never one of each, and never a file cut short.

Kubernetes' AtomicWriter (pkg/volume/util/atomic_writer.go) gets that from
one atomic system call, rename(2). The volume looks like this:

    ..2026_11_26_10_01_07.1839274/     a timestamped directory with every file
    ..data -> ..2026_11_26_10_01_07.1839274
    game.properties -> ..data/game.properties
    ui.properties -> ..data/ui.properties

An update writes a whole new timestamped directory beside the old one,
points a new symlink `..data_tmp` at it and renames that over `..data`.
The names the program opens go through `..data`, so every path it opens
after the rename is new, and every file it opened before is the old one,
complete. Then the old directory goes. (The names start with `..` so that
`ls` does not show them.)
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import NamedTuple

DATA_DIR = "..data"
NEW_DATA_DIR = "..data_tmp"
MAX_PATH = 4096          # Kubernetes' limits for a payload path
MAX_NAME = 255


class File(NamedTuple):
    data: bytes
    mode: int            # permission bits, e.g. 0o644


class PayloadError(ValueError):
    """A path in the payload would escape the volume, or is malformed."""


def check_path(path: str) -> None:
    """The checks AtomicWriter makes (validatePath): a payload path is
    relative, stays inside the volume, and does not collide with its
    `..` names. The API server should have refused such a path; the
    writer checks again, because a path like `../../etc/passwd` written
    by the kubelet (often root) would land on the node itself."""
    if not path:
        raise PayloadError("invalid path: must not be empty")
    if os.path.isabs(path):
        raise PayloadError(f"invalid path: must be relative path: {path}")
    if len(path) > MAX_PATH:
        raise PayloadError(f"invalid path: must be less than or equal to {MAX_PATH} characters")
    parts = path.split("/")
    if any(len(part) > MAX_NAME for part in parts):
        raise PayloadError(f"invalid path: must not contain a segment longer than {MAX_NAME} characters")
    if ".." in parts:
        raise PayloadError(f"invalid path: must not contain '..': {path}")
    if parts[0].startswith(".."):
        raise PayloadError(f"invalid path: must not start with '..': {path}")


# [START atomic-write-volume]
def write(target: str, payload: dict[str, File]) -> bool:
    """Make the volume directory `target` hold exactly `payload` (path ->
    File). True if anything changed; a payload equal to what is there is
    not written again, so a refresh every second costs only reads."""
    for path in payload:
        check_path(path)
    os.makedirs(target, mode=0o755, exist_ok=True)
    data_link = os.path.join(target, DATA_DIR)
    old_dir = os.readlink(data_link) if os.path.islink(data_link) else None
    if old_dir and _holds(os.path.join(target, old_dir), payload) and _linked(target, payload):
        return False
    # 1. Every file, complete, in a new directory nobody reads yet.
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    new_dir = tempfile.mkdtemp(prefix=stamp, dir=target)
    os.chmod(new_dir, 0o755)
    for path, file in payload.items():
        full = os.path.join(new_dir, path)
        os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
        with open(full, "wb") as out:
            out.write(file.data)
        os.chmod(full, file.mode)          # exactly the mode asked, whatever the umask
    # 2. The switch: one rename(2) replaces ..data, atomically.
    new_link = os.path.join(target, NEW_DATA_DIR)
    if os.path.lexists(new_link):
        os.remove(new_link)                # left by a kubelet killed right here
    os.symlink(os.path.basename(new_dir), new_link)
    os.rename(new_link, data_link)
    # 3. The names the program opens, each a symlink through ..data; then
    #    what the old payload had and the new one has not, and the old files.
    _link_visible_names(target, payload)
    if old_dir:
        shutil.rmtree(os.path.join(target, old_dir), ignore_errors=True)
    return True
# [END atomic-write-volume]


def _top_names(payload: dict[str, File]) -> set[str]:
    return {os.path.normpath(path).split("/")[0] for path in payload}


def _link_visible_names(target: str, payload: dict[str, File]) -> None:
    wanted = _top_names(payload)
    for name in wanted:
        link = os.path.join(target, name)
        if not os.path.islink(link):
            os.symlink(os.path.join(DATA_DIR, name), link)
    for name in os.listdir(target):
        if not name.startswith("..") and name not in wanted:
            os.remove(os.path.join(target, name))


def _linked(target: str, payload: dict[str, File]) -> bool:
    """Are the visible names exactly the payload's (after a kubelet
    killed between the rename and the links, they may not be)?"""
    visible = {name for name in os.listdir(target) if not name.startswith("..")}
    return visible == _top_names(payload)


def _holds(directory: str, payload: dict[str, File]) -> bool:
    """Does directory hold exactly these files, with these modes?"""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            full = os.path.join(root, name)
            found[os.path.relpath(full, directory)] = full
    if set(found) != {os.path.normpath(path) for path in payload}:
        return False
    for path, file in payload.items():
        full = found[os.path.normpath(path)]
        if os.stat(full).st_mode & 0o7777 != file.mode:
            return False
        with open(full, "rb") as current:
            if current.read() != file.data:
                return False
    return True
