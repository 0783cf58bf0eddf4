"""Shared fixtures.

Tests that need Docker use the `docker_client` fixture. Without a Docker
engine they skip with one line saying why, unless GROUNDUP_REQUIRE_DOCKER=1
(set by .ci/run), where a missing engine is a failure: CI must never pass by
skipping the tests that matter.

Tests that run the real kubectl use the `kubectl` fixture, on the same
terms: without kubectl on PATH they skip, unless GROUNDUP_REQUIRE_KUBECTL=1.
So do the tests against etcd (the `etcd` fixture): without etcd on PATH
they skip, unless GROUNDUP_REQUIRE_ETCD=1.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Chapter folders start with a digit, so they are not packages; their
# modules import each other by plain name, as when run as scripts.
for chapter in ("01-kubelet", "02-apiserver", "tests/lessons", "tests/kubelet", "tests/apiserver",
                "03-scheduler", "tests/scheduler", "04-controllers", "tests/controllers",
                "05-proxy-dns", "tests/network", "dashboard", "tests/dashboard"):
    sys.path.insert(0, str(ROOT / chapter))


def docker_required() -> bool:
    return os.environ.get("GROUNDUP_REQUIRE_DOCKER") == "1"


@pytest.fixture(scope="session")
def docker_client():
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as error:  # any reason: no socket, no permission, no daemon
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        reason = f"no Docker engine answers at {where} ({type(error).__name__}); start dockerd to run this test"
        if docker_required():
            pytest.fail(f"GROUNDUP_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)
    for image in ("busybox:1.35", "registry.k8s.io/pause:3.9"):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            message = f"image {image} is missing: run `make images`"
            if docker_required():
                pytest.fail(message)
            pytest.skip(message)
    return client


@pytest.fixture(scope="session")
def kubectl() -> str:
    """The path of the kubectl binary, found on PATH."""
    path = shutil.which("kubectl")
    if path is None:
        reason = "kubectl is not on PATH: install kubectl 1.32 to run the kubectl tests"
        if os.environ.get("GROUNDUP_REQUIRE_KUBECTL") == "1":
            pytest.fail(f"GROUNDUP_REQUIRE_KUBECTL=1 but {reason}")
        pytest.skip(reason)
    return path


def _require(command: str, package: str) -> None:
    """Skip (or, with GROUNDUP_REQUIRE_ETCD=1, as in CI, fail) without `command`."""
    if shutil.which(command) is None:
        reason = f"{command} is not on PATH: install {package} (make setup does, as root) to run the etcd tests"
        if os.environ.get("GROUNDUP_REQUIRE_ETCD") == "1":
            pytest.fail(f"GROUNDUP_REQUIRE_ETCD=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def etcd_binary() -> None:
    """etcd is installed (tests that start their own members take this)."""
    _require("etcd", "etcd-server")


@pytest.fixture(scope="session")
def haproxy_binary() -> None:
    _require("haproxy", "haproxy")


@pytest.fixture(scope="session")
def etcd(etcd_binary, tmp_path_factory):
    """One etcd member on free loopback ports for the whole session; each
    test keeps its keys under a prefix of its own."""
    from etcd_cluster import EtcdCluster
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    yield cluster
    cluster.stop()


# `make test` runs the suite on three workers (pytest-xdist). Whatever shares
# this computer's state runs one test at a time, as in a plain run, in one
# of two groups that never touch each other's state:
# - THIS_COMPUTER: the lessons (fixed ports 6443, 8080, 10255..., fixed
#   /tmp paths, node names node1 and node2, the machines master, node1 and
#   node2 of `make machines`), the network tests' machines (namespaces,
#   iptables, a dockerd each), the set-up script, the kubectl versions
#   matrix, the demos (port 8080 if free, nodes demo-node1 and demo-node2:
#   the learner's-program tests in tests/stages/), and the dashboard's
#   browser tests: Chromium aborts its requests (ERR_NETWORK_CHANGED) when
#   this computer's addresses change, which the namespace machines do;
# - DOCKER: tests that run kubelets on this computer's Docker engine, each
#   under a node name of its own (test-<random>), on free ports, removing
#   only its own node's containers.
# Each group is one xdist scope, so it runs on one worker, one test at a
# time; the two groups, and everything else (an API server on a free
# loopback port, plain code), a module at a time, share the three workers.
# The groups are the longest chains, so they are handed out first. The
# two serial chains keep two workers mostly waiting (on Docker, on a
# lesson's deadline), so a third does the rest meanwhile: 13 minutes
# instead of about 18 on two cores. Three once flaked (a kubelet's sync
# race and a controller pod without its configuration, both found under
# that load and fixed since, issue 35), which is why it had gone back to two.
# The worker is chosen by file (xdist's scheduler sees test ids, not
# fixtures), so a test elsewhere that needs Docker is an error naming its file.
THIS_COMPUTER = ("tests/lessons/", "tests/network/", "tests/test_setup_machine.py",
                 "tests/apiserver/test_kubectl_versions.py", "tests/stages/test_demos_run_yours.py",
                 "tests/dashboard/")
DOCKER = ("tests/kubelet/", "tests/test_docker_requirement.py", "tests/apiserver/test_pod_log.py",
          "tests/apiserver/test_top.py", "tests/apiserver/test_exec.py", "tests/apiserver/test_ha_kubelets.py",
          "tests/scheduler/test_with_kubelets.py",
          "tests/stages/test_kubelet_stages.py")
# Files in those folders that touch none of it (pure decisions, parsers, a
# server of their own on a free loopback port) run beside everything else:
# on the two serial chains they only lengthened the longest path. The check
# below keeps them honest: a test here that takes Docker is an error.
UNSHARED = ("tests/kubelet/test_api_source.py", "tests/kubelet/test_api_volume_payloads.py", "tests/kubelet/test_claim_cleanup.py",
            "tests/kubelet/test_decisions.py", "tests/kubelet/test_node_ip.py", "tests/kubelet/test_node_status.py",
            "tests/kubelet/test_pod_dns.py", "tests/kubelet/test_pod_fields.py",
            "tests/kubelet/test_security_context_options.py", "tests/kubelet/test_service_env.py",
            "tests/kubelet/test_spdy.py", "tests/kubelet/test_stats_summary.py", "tests/lessons/test_runner.py",
            "tests/network/test_cluster_dns.py", "tests/network/test_proxy_affinity.py",
            "tests/network/test_route_agent.py", "tests/network/test_ingress_routing.py",
            "tests/network/test_ingress_controller.py", "tests/dashboard/test_summaries.py",
            "tests/dashboard/test_screenshots.py")
# Files whose tests make "another machine" on a test subnet of their own
# (tests/netns.py: 10.213.x.0/30, one x per file): two of their tests at
# once would clash, so a checkpoint run (--checkpoint, below) keeps each
# file's tests together, one at a time.
OWN_SUBNET = ("tests/kubelet/test_port_auth.py", "tests/apiserver/test_remote.py", "tests/apiserver/test_pod_log.py")
# Files whose tests share an expensive module-scoped fixture (a kubelet and
# its API server, an HA control plane, a server with a gauntlet of files):
# a checkpoint run keeps each file's tests on one worker, so the fixture is
# made once rather than once per worker. Measured on chapter 02 (issue 42):
# spread test by test, these files' set-ups took 222 s of the run's 950 s of
# work, mostly the same servers started up to seven times.
SHARED_FIXTURE = ("tests/apiserver/test_exec.py", "tests/apiserver/test_metrics.py",
                  "tests/apiserver/test_core_alone.py", "tests/apiserver/test_ha_leaders.py",
                  "tests/apiserver/test_gauntlet.py", "tests/apiserver/test_top.py",
                  "tests/apiserver/test_service_accounts.py", "tests/apiserver/test_node_authorizer.py",
                  "tests/apiserver/test_access_review.py", "tests/apiserver/test_resource_metrics.py",
                  "tests/apiserver/test_hostile_http.py")
ONE_AT_A_TIME = THIS_COMPUTER + DOCKER
GROUPS = {"this computer": THIS_COMPUTER, "this computer's Docker": DOCKER}


def path_of(nodeid: str) -> str:
    return nodeid.split("::")[0]


def group_of(nodeid: str) -> str | None:
    """The serial group a test runs in, or None for the shared pool."""
    path = path_of(nodeid)
    if path in UNSHARED:
        return None
    return next((group for group, paths in GROUPS.items() if path.startswith(paths)), None)


def shares_this_computer(nodeid: str) -> bool:
    return group_of(nodeid) is not None


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class OneAtATimeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = group_of(nodeid)
            if config.getoption("checkpoint") and path_of(nodeid) in SHARED_FIXTURE:
                # Its fixture made once. xdist hands out the scopes with the
                # most tests first, so these long chains start at once.
                return path_of(nodeid)
            if config.getoption("checkpoint") and group != "this computer" and path_of(nodeid) not in OWN_SUBNET:
                # One chapter's run: nothing else uses this computer's Docker
                # meanwhile, so its tests need no chain of their own; and each
                # test is a unit, so no long module holds one worker while the
                # other idles (a module's shared fixture is made once on each
                # worker that runs its tests: every one uses free ports and
                # names of its own).
                return nodeid
            return group or super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            # The long chains first. workqueue is xdist's own (an OrderedDict
            # of scopes in 3.8, which requirements.txt pins): if a later xdist
            # has none, the groups are only handed out in their usual order.
            queue = getattr(self, "workqueue", None)
            if hasattr(queue, "move_to_end"):
                for group in GROUPS:
                    if group in queue:
                        queue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return OneAtATimeScheduling(config, log)


def pytest_addoption(parser):
    parser.addoption("--capabilities", metavar="CHAPTERS",
                     help="end with one line per capability of these chapters (01, 01,03 or all): "
                          "its tests passed and failed, and the lesson section to read (tests/capabilities.py)")
    parser.addoption("--checkpoint", action="store_true",
                     help="one chapter's run (make test-NN): with -n, spread its tests one by one over the "
                          "workers, Docker's too; only what shares this computer's fixed ports and machines, "
                          "and the files in OWN_SUBNET, stay one at a time")
    parser.addoption("--update-screenshots", action="store_true",
                     help="the dashboard's browser tests write the screenshots the READMEs show "
                          "(dashboard/screenshots/); without it they only check")


def pytest_configure(config):
    config.addinivalue_line("markers", "exhaustive: every case of a table or every version, beyond what "
                            "explains the chapter; make test runs them, make test-NN leaves them to it")
    wanted = config.getoption("capabilities")
    # Under xdist the summary is the controller's: the workers' reports reach it.
    if wanted and not hasattr(config, "workerinput"):
        from capabilities import CapabilitySummary, chapters_named
        try:
            chapters = chapters_named(wanted)
        except ValueError as error:
            raise pytest.UsageError(f"--capabilities: {error}") from None
        config.pluginmanager.register(CapabilitySummary(chapters), "capabilities")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ChainTimes(), "chain-times")


class ChainTimes:
    """Where a run's time went, by chain: each serial group runs one test at
    a time on one worker, so the longer group is the run's floor however
    many workers there are (the 15-minute goal is won or lost there)."""

    def __init__(self):
        self.seconds: dict[str, dict[str, float]] = {}      # chain -> file -> seconds

    def pytest_runtest_logreport(self, report) -> None:
        chain = group_of(report.nodeid) or "everything else (all workers)"
        files = self.seconds.setdefault(chain, {})
        files[path_of(report.nodeid)] = files.get(path_of(report.nodeid), 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if sum(len(files) for files in self.seconds.values()) < 2:
            return
        terminalreporter.section("where the time went, by chain (set-up, test and tear-down)")
        for chain, files in sorted(self.seconds.items(), key=lambda item: -sum(item[1].values())):
            longest = sorted(files.items(), key=lambda item: -item[1])[:4]
            terminalreporter.write_line(f"{chain}: {sum(files.values()):,.0f} s in {len(files)} files; longest: "
                                        + ", ".join(f"{path} {seconds:.0f} s" for path, seconds in longest))


def makes_another_machine(module) -> bool:
    """Whether a test module uses tests/netns.py (the module, or its remote_machine)."""
    netns = sys.modules.get("netns")
    return netns is not None and module is not None and any(value is netns or value is netns.remote_machine
                                                            for value in vars(module).values())


def pytest_collection_modifyitems(config, items):
    astray = sorted({item.nodeid.split("::")[0] for item in items
                     if "docker_client" in item.fixturenames and not shares_this_computer(item.nodeid)})
    if astray:
        raise pytest.UsageError(f"{', '.join(astray)} use Docker: add them to DOCKER in tests/conftest.py, "
                                "so that they run on the worker that has this computer to itself")
    subnets = sorted({path_of(item.nodeid) for item in items if path_of(item.nodeid) not in OWN_SUBNET
                      and makes_another_machine(getattr(item, "module", None))})
    if subnets:
        raise pytest.UsageError(f"{', '.join(subnets)} make another machine on a test subnet (tests/netns.py): add "
                                "them to OWN_SUBNET in tests/conftest.py, so that their tests never run side by side")
