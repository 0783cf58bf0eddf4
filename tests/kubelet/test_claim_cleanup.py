"""Which directories a kubelet's clean-up may remove under --local-path-root
(01-kubelet/api_volumes/persistent.py), in-process, against a stand-in API
server: only the ones it made itself, once their PersistentVolume is gone.

The root is a directory of the machine. In CI, a test's kubelet (its own
API server, to which the lesson's volume is unknown: a 404) removed the
directory chapter 04's lesson had just mounted in a running pod
("can't create /data/notes.txt: nonexistent directory")."""
from __future__ import annotations

import logging

from api_volumes.persistent import ClaimVolumes
from common.client.client import APIConnectionError, NotFound


class StandInServer:
    """Answers GET persistentvolumes/NAME: the volume, a 404, or no answer."""

    def __init__(self, existing=(), away=False):
        self.existing, self.away = set(existing), away

    def get(self, group_version, plural, namespace, name):
        assert (group_version, plural) == ("v1", "persistentvolumes")
        if self.away:
            raise APIConnectionError("connection refused")
        if name not in self.existing:
            raise NotFound(404, "NotFound", f'persistentvolumes "{name}" not found')
        return {"metadata": {"name": name}}


def claims(tmp_path, server, mounted=()) -> ClaimVolumes:
    return ClaimVolumes(server, "node1", events=None, log=logging.getLogger("test"),
                        local_path_root=str(tmp_path / "local-path"), records=str(tmp_path / "root" / "local-volumes"),
                        mounted=lambda: set(mounted))


def volume_dir(tmp_path, name: str):
    directory = tmp_path / "local-path" / name
    directory.mkdir(parents=True)
    (directory / "data").write_text("someone's data\n")
    return directory


def test_only_the_directories_this_kubelet_made_go_once_their_volume_does(tmp_path):
    server = StandInServer(existing={"pvc-kept"})
    volumes = claims(tmp_path, server)
    mine, kept = volume_dir(tmp_path, "pvc-mine"), volume_dir(tmp_path, "pvc-kept")
    volumes._record("pvc-mine", str(mine))
    volumes._record("pvc-kept", str(kept))
    theirs = volume_dir(tmp_path, "pvc-theirs")       # another cluster's kubelet made it: no record here

    assert volumes.remove_deleted() == [str(mine)]
    assert not mine.exists() and kept.exists() and theirs.exists()
    assert (theirs / "data").read_text() == "someone's data\n"
    assert volumes.remove_deleted() == []              # its record went with it


def test_a_directory_in_use_or_an_api_server_away_keeps_it(tmp_path):
    mine = volume_dir(tmp_path, "pvc-mine")
    claims(tmp_path, StandInServer())._record("pvc-mine", str(mine))
    assert claims(tmp_path, StandInServer(), mounted={str(mine)}).remove_deleted() == []   # a container has it
    assert claims(tmp_path, StandInServer(away=True)).remove_deleted() == []               # cannot tell
    assert mine.exists()
    assert claims(tmp_path, StandInServer()).remove_deleted() == [str(mine)]                # a restarted kubelet too


def test_nothing_outside_the_provisioners_root_is_ever_recorded(tmp_path):
    volumes = claims(tmp_path, StandInServer())
    elsewhere = tmp_path / "srv" / "pvc-admins"
    elsewhere.mkdir(parents=True)
    volumes._record("pvc-admins", str(elsewhere))      # a hostPath PV an administrator pointed anywhere
    volumes._record("../escape", str(tmp_path / "local-path" / "x"))
    assert volumes.remove_deleted() == [] and elsewhere.exists()
