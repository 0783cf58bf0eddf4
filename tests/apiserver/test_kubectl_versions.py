"""kubectl 1.27 to 1.33 against one real cluster: the lessons' commands, each
version in a namespace of its own (02-apiserver/kubectl_compat/kubectl_versions.py holds
the steps and prints the same matrix as a table).

A version whose binary this machine lacks is skipped with one line naming
it; everything else must pass.
"""
from __future__ import annotations

import pytest

from kubectl_compat import kubectl_versions
from common.tooling.local_cluster import Cluster


NODE = kubectl_versions.NODE
# Every version is a row of a compatibility table, not a lesson: make test
# runs them all, a chapter's checkpoint (make test-02) leaves them to it;
# test_kubectl.py covers the kubectl the lessons use either way.
pytestmark = pytest.mark.exhaustive


@pytest.fixture(scope="module")
def cluster(docker_client, kubectl):
    try:
        with Cluster([NODE]) as running:
            kubectl_versions.start_controller_manager(running)
            yield running
    except SystemExit as error:      # Cluster's way to say a process did not come up
        pytest.fail(str(error))


@pytest.mark.parametrize("version", kubectl_versions.VERSIONS)
def test_the_lessons_commands_work_with_kubectl(version, cluster, tmp_path):
    binary = kubectl_versions.find_binary(version)
    if binary is None:
        pytest.skip(f"no kubectl.{version} or kubectl-{version} on this machine")
    outcomes = kubectl_versions.run_version(version, binary, cluster.url, tmp_path, NODE)
    failed = [f"kubectl {o.step.name}: expected {o.step.expect!r} in\n{o.output}" for o in outcomes if not o.passed]
    assert not failed, f"kubectl {version}:\n" + "\n".join(failed)
