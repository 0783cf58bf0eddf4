"""The sync loop against a source that is still listing: no Docker needed.

A kubelet restarted while the API server is down finds its pods' containers
in Docker but no pods from the API source yet. It must keep them until the
source has listed. The race this guards: the source's first list landing
between the kubelet reading the wanted pods and asking whether the source
has synced. Read in that order, the kubelet saw an empty wanted set and a
synced source, and killed a running pod's sandbox (issue 35).
"""
from __future__ import annotations

from docker_runtime import ContainerInfo
from kubelet import Kubelet
from common.log import get_logger

POD = {"metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
       "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}


class ListingSource:
    """An API source whose first list completes at a moment the test picks."""

    def __init__(self):
        self.listed: dict[str, dict] = {}
        self.synced = False

    def finish_first_list(self) -> None:
        self.listed = {POD["metadata"]["uid"]: POD}
        self.synced = True

    def pods(self) -> dict[str, dict]:
        return dict(self.listed)

    def has_synced(self) -> bool:
        return self.synced


class DockerWithTheRunningPod:
    """Docker's answer: the pod's sandbox, running. Listing it is when the
    source's first list lands."""

    def __init__(self, during_list):
        self.during_list = during_list

    def list_containers(self) -> list[ContainerInfo]:
        self.during_list()
        return [ContainerInfo(id="sandbox-1", name="POD", pod_uid="uid-web", pod_namespace="default",
                              pod_name="web", hash="h", restart_count=0, sandbox_id="sandbox-1", grace_period=30,
                              state="running", exit_code=0, oom_killed=False, error="", started_at=1.0,
                              finished_at=None, created=1.0, image="registry.k8s.io/pause:3.9", image_id="sha256:p",
                              ip="10.0.0.2")]

    def list_volume_pods(self) -> dict[str, str]:
        return {}                                 # no emptyDir volumes to sweep


def test_a_source_that_syncs_while_docker_is_listed_does_not_get_its_running_pod_killed():
    source = ListingSource()
    assert killed_by_one_sync(source, DockerWithTheRunningPod(during_list=source.finish_first_list)) == []


def test_a_pod_that_a_synced_source_does_not_want_is_killed():
    source = ListingSource()
    source.synced = True                          # listed, and the pod is not in it: deleted while we were away
    assert killed_by_one_sync(source, DockerWithTheRunningPod(during_list=lambda: None)) == ["default/web"]


def killed_by_one_sync(source, docker) -> list[str]:
    """The pods (namespace/name) one sync_once hands to a worker to kill."""
    kubelet = Kubelet("node-a", docker, [source], get_logger("kubelet"))
    killed = []
    kubelet.worker.kill_pod = lambda key, *rest: killed.append(key)
    try:
        kubelet.sync_once()
    finally:
        kubelet._workers.shutdown(wait=True)     # any kill submitted has run
    return killed
