"""A chapter's tests as a map of the chapter: one line per capability.

`make test-NN` is the learner's checkpoint: "my cluster does what this
chapter promised". A line of dots does not say which of the chapter's ideas
held, so a run given `--capabilities NN` ends with one line per capability
of the lesson (pods and the pause container, restarts and back-off, ...),
its tests passed and failed, and for a failure the section of the lesson to
read, as the stages do (tests/stages/stage_runner.py).

Which test belongs to which capability is declared here, in CHAPTERS, not
guessed: a capability names test files, or `file::pattern` for some of a
file's test functions (fnmatch on the function's name). The first
capability that matches a test has it. tests/test_capabilities.py holds the
tables to that: every test of a chapter is on some line, every entry still
matches a test, and every section named exists.
"""
from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from rich.console import Console
from rich.markup import escape

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Capability:
    name: str                   # what the learner's component can do, in the lesson's words
    read: str                   # where the lesson explains it: "page.md#anchor", from the repository root
    tests: tuple[str, ...]      # "test_file.py", or "test_file.py::test_name_pattern"

    def has(self, filename: str, function: str) -> bool:
        for entry in self.tests:
            file, _, pattern = entry.partition("::")
            if file == filename and (not pattern or fnmatchcase(function, pattern)):
                return True
        return False


@dataclass(frozen=True)
class Chapter:
    number: str
    title: str
    folder: str                 # the chapter's tests, from the repository root
    capabilities: tuple[Capability, ...]

    def capability_of(self, filename: str, function: str) -> Capability | None:
        return next((c for c in self.capabilities if c.has(filename, function)), None)


KUBELET_LESSON = "01-kubelet/lesson-1-how-the-kubelet-works.md"
KUBELET_RUN = "01-kubelet/lesson-2-run-the-kubelet.md"
KUBELET_MORE = "01-kubelet/lesson-3-init-sidecars-hooks-probes.md"
KUBELET_JOINS = "02-apiserver/lesson-4-the-kubelet-joins.md"

CHAPTER_01 = Chapter("01", "the kubelet", "tests/kubelet", (
    Capability("pods and the pause container", f"{KUBELET_LESSON}#the-pause-container-and-the-app-containers", (
        "test_pods.py::test_two_containers_*", "test_pods.py::test_host_port_*", "test_pods.py::test_env_*",
        "test_decisions.py::test_compute_pod_actions", "test_decisions.py::test_env_expansion",
        "test_decisions.py::test_command_and_args_*", "test_decisions.py::test_hash_changes_*",
        "test_decisions.py::test_a_changed_spec_*", "test_lifecycle.py::test_editing_a_container_*",
        "test_cluster.py::test_a_killed_pause_container_*", "test_cluster.py::test_a_pod_runs_on_its_node_*")),
    Capability("restarts and back-off", f"{KUBELET_LESSON}#restart-back-off", (
        "test_pods.py::test_crashing_*", "test_pods.py::test_restart_policy_*",
        "test_decisions.py::test_crash_loop_*", "test_decisions.py::test_backoff_*",
        "test_decisions.py::test_a_failed_sandbox_*", "test_decisions.py::test_a_fixed_image_*",
        "test_decisions.py::test_a_pod_the_api_server_has_as_finished_*", "test_decisions.py::test_a_finished_pods_*",
        "test_lifecycle.py::test_a_taken_host_port_*", "test_lifecycle.py::test_missing_image_*",
        "test_cluster.py::test_a_crash_loop_*", "test_cluster.py::test_*image*")),
    Capability("probes", f"{KUBELET_LESSON}#probes", (
        "test_pods.py::*probe*", "test_decisions.py::*probe*", "test_decisions.py::test_liveness_*",
        "test_cluster.py::*probe*", "test_startup_probe.py")),
    Capability("init containers and sidecars",
               f"{KUBELET_MORE}#1-init-containers-one-at-a-time-in-order-before-the-app", (
                   "test_init_containers.py", "test_decisions.py::*init_container*", "test_decisions.py::*sidecar*",
                   "test_lifecycle_cluster.py::*init*")),
    Capability("hooks and graceful stops", f"{KUBELET_MORE}#4-hooks-poststart-and-prestop", (
        "test_hooks.py", "test_lifecycle_cluster.py::test_hook_*", "test_lifecycle.py::test_graceful_stop_*",
        "test_lifecycle_cluster.py::test_kubectl_delete_grace_period_*")),
    Capability("volumes", f"{KUBELET_JOINS}#configmaps-and-secrets-what-the-kubelet-fetches", (
        "test_lifecycle.py::*empty_dir*", "test_api_volumes.py", "test_api_volume_payloads.py",
        "test_sa_token_volume.py", "test_claim_volumes.py", "test_claim_cleanup.py")),
    Capability("status, logs and stats", f"{KUBELET_LESSON}#status", (
        "test_decisions.py::test_pod_phase", "test_decisions.py::test_qos_class",
        "test_lifecycle.py::test_read_only_port_*", "test_lifecycle.py::test_container_logs_*",
        "test_cluster.py::test_kubectl_logs_*", "test_stats_summary.py")),
    Capability("manifests and the sync loop", f"{KUBELET_LESSON}#the-sync-loop", (
        "test_lifecycle.py", "test_sync_sources.py")),
    Capability("security contexts, and what is refused", f"{KUBELET_RUN}#7-break-a-manifest", (
        "test_security_context.py", "test_security_context_options.py", "test_pod_fields.py")),
    Capability("the node joins an API server", f"{KUBELET_JOINS}#registering-the-node", (
        "test_api_source.py", "test_node_registration.py", "test_node_status.py", "test_node_ip.py",
        "test_cluster.py", "test_mirror_pods.py", "test_service_env.py", "test_pod_dns.py")),
    Capability("the kubelet's port: logs, exec, port-forward",
               f"{KUBELET_JOINS}#the-kubelets-port-for-the-api-server-only", ("test_port_auth.py", "test_spdy.py")),
    Capability("the core alone, later parts by their flags", "01-kubelet/README.md#build-it", ("test_kubelet_alone.py",)),
))

STORE = "02-apiserver/lesson-1-store-rest-watch.md"
RUN_SERVER = "02-apiserver/lesson-2-run-the-api-server.md"
GAUNTLET = "02-apiserver/lesson-3-the-gauntlet.md"

CHAPTER_02 = Chapter("02", "the API server", "tests/apiserver", (
    Capability("a durable store", f"{STORE}#durable-one-json-file-per-object", (
        "test_store.py", "test_crash_consistency.py", "test_durability.py", "test_deletion_race.py")),
    Capability("watch", f"{STORE}#watch-one-history-many-cursors", (
        "test_watch.py", "test_watch_restart.py", "test_informer.py", "test_events.py")),
    Capability("REST, kinds and validation", f"{STORE}#one-path-for-every-request", (
        "test_rest.py", "test_types.py", "test_field_validation.py", "test_custom_resources.py",
        "test_rc_and_cronjob_kinds.py", "test_statefulset_kinds.py", "test_service_ips.py", "test_leases.py", "test_hostile.py",
        "test_hostile_http.py", "test_metrics.py", "test_storage_kinds.py")),
    Capability("the real kubectl", f"{RUN_SERVER}#3-the-real-kubectl", (
        "test_kubectl.py", "test_kubectl_versions.py", "test_printers.py", "test_patches.py",
        "test_negotiation.py", "test_protobuf.py", "test_openapi.py", "test_discovery_versions.py",
        "test_python_client.py", "test_ingress_kubectl.py")),
    Capability("who is asking: tokens and certificates", f"{GAUNTLET}#who-is-asking-tokens", (
        "test_tokens.py", "test_certs.py", "test_gauntlet.py", "test_remote.py")),
    Capability("may they: ABAC and RBAC", f"{GAUNTLET}#may-they-as-api-objects-rbac", (
        "test_abac.py", "test_rbac.py", "test_access_review.py", "test_node_authorizer.py")),
    Capability("ServiceAccounts", f"{GAUNTLET}#who-a-program-is-serviceaccounts", ("test_service_accounts.py",)),
    Capability("kubectl top", "02-apiserver/lesson-6-kubectl-top.md#the-idea", (
        "test_top.py", "test_resource_metrics.py")),
    Capability("into the pod: logs, exec, port-forward",
               "02-apiserver/lesson-7-into-the-pod.md#the-idea-the-path-of-one-keystroke", (
                   "test_exec.py", "test_pod_log.py")),
    Capability("etcd and several API servers", "02-apiserver/lesson-8-etcd.md#etcd-in-five-minutes", (
        "test_etcd_store.py", "test_ha.py", "test_ha_chaos.py", "test_ha_leaders.py", "test_ha_kubelets.py")),
    Capability("the core alone, the rest registered into it", "02-apiserver/README.md#build-it", (
        "test_core_alone.py", "test_registration_hooks.py")),
))

SCHEDULE = "03-scheduler/lesson-1-how-it-schedules.md"
RUN_SCHEDULER = "03-scheduler/lesson-2-run-the-scheduler.md"

CHAPTER_03 = Chapter("03", "the scheduler", "tests/scheduler", (
    Capability("filters: does the pod fit?", f"{SCHEDULE}#a-filter-does-the-pod-fit", ("test_scheduler_filters.py",)),
    Capability("volumes: where the data is", f"{SCHEDULE}#volumes-where-the-data-is", ("test_volume_filters.py",)),
    Capability("scores and ties", f"{SCHEDULE}#a-score-the-emptiest-node", ("test_scheduler_scores.py",)),
    Capability("the queue and the cache", f"{SCHEDULE}#when-nothing-fits", ("test_scheduler_queue_and_cache.py",)),
    Capability("another scheduler", f"{RUN_SCHEDULER}#12-another-scheduler", (
        "test_scheduler_end_to_end.py::*another_scheduler*", "test_two_schedulers.py")),
    Capability("binding, end to end", f"{SCHEDULE}#binding", (
        "test_scheduler_end_to_end.py", "test_with_kubelets.py")),
))

CONTROLLERS = "04-controllers/build-it.md"

CHAPTER_04 = Chapter("04", "the controllers", "tests/controllers", (
    Capability("the ReplicaSet", f"{CONTROLLERS}#the-replicaset", (
        "test_controller_decisions.py::test_the_least_useful_*", "test_controller_decisions.py::test_which_pods_*",
        "test_controller_decisions.py::test_available_*", "test_replicaset.py",
        "test_replication_controller.py")),
    Capability("the worker loop", f"{CONTROLLERS}#the-worker-loop", (
        "test_controller_decisions.py", "test_two_controller_managers.py", "test_serviceaccounts.py")),
    Capability("the Deployment", f"{CONTROLLERS}#the-deployment", ("test_deployment.py",)),
    Capability("Endpoints", f"{CONTROLLERS}#endpoints", ("test_endpoints.py", "test_endpointslice.py")),
    Capability("nodes that go quiet", f"{CONTROLLERS}#nodes-that-go-quiet", (
        "test_node_lifecycle.py", "test_node_ipam.py")),
    Capability("owners that go", f"{CONTROLLERS}#owners-that-go", ("test_garbage_collector.py", "test_namespace.py")),
    Capability("claims and volumes", f"{CONTROLLERS}#claims-and-volumes", ("test_volume_binder.py",)),
    Capability("DaemonSets, Jobs and CronJobs",
               "04-controllers/lesson-1-run-the-controllers.md#7-node2-comes-back-a-daemonset-and-a-job", (
                   "test_daemonset.py", "test_job.py", "test_cronjob.py")),
    Capability("StatefulSets", "04-controllers/lesson-4-state-that-keeps-its-name.md#what-comes-next",
               ("test_statefulset.py",)),
    Capability("your own kind",
               "04-controllers/lesson-2-your-own-kind.md#the-operator-04-controllerswebsite_controllerpy",
               ("test_website_operator.py",)),
))

POD_NETWORK = "05-proxy-dns/lesson-1-the-pod-network.md"
SERVICES = "05-proxy-dns/lesson-2-services.md"

CHAPTER_05 = Chapter("05", "the proxy and DNS", "tests/network", (
    Capability("machines made of namespaces", f"{POD_NETWORK}#three-machines-on-one-computer", ("test_machines.py",)),
    Capability("the pod network", f"{POD_NETWORK}#pods-with-addresses-of-their-own", (
        "test_pod_network.py", "test_route_agent.py")),
    Capability("a proxy on every node", f"{SERVICES}#a-proxy-on-every-node", (
        "test_services.py", "test_proxy_affinity.py")),
    Capability("rules alone: iptables mode", f"{SERVICES}#rules-alone-iptables-mode", ("test_services_iptables.py",)),
    Capability("names: cluster DNS", f"{SERVICES}#names-cluster-dns", ("test_cluster_dns.py",)),
    Capability("an application that survives",
               "05-proxy-dns/lesson-3-an-application-that-survives.md#two-tiers", ("test_finale.py",)),
    Capability("on real machines: the three-VM path and make doctor", "05-proxy-dns/README.md#on-real-machines",
               ("test_three_vm_path.py",)),
    Capability("a controller in the cluster",
               "05-proxy-dns/lesson-4-a-controller-in-the-cluster.md#a-website-made-by-a-pod",
               ("test_controller_pod.py",)),
    Capability("from outside in: Ingress", "05-proxy-dns/lesson-5-from-outside-in.md#the-match", (
        "test_ingress_routing.py", "test_ingress_controller.py")),
    Capability("the dashboard in the cluster", "dashboard/README.md#in-the-cluster", ("test_dashboard_pod.py",)),
))

CHAPTERS = {chapter.number: chapter for chapter in (CHAPTER_01, CHAPTER_02, CHAPTER_03, CHAPTER_04, CHAPTER_05)}


def where(nodeid: str) -> tuple[Chapter, str, str] | None:
    """The chapter, file name and test function of a test id, or None
    for a test outside the chapters' folders."""
    path, _, rest = nodeid.partition("::")
    folder, _, filename = path.rpartition("/")
    function = rest.split("::")[-1].split("[")[0]       # a class's method, a parametrized case: the function
    chapter = next((c for c in CHAPTERS.values() if c.folder == folder), None)
    return (chapter, filename, function) if chapter else None


# --- the summary --------------------------------------------------------------

@dataclass
class Line:
    capability: Capability | None           # None: tests of the chapter on no line (see tests/test_capabilities.py)
    outcomes: Counter = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)


class CapabilitySummary:
    """A pytest plugin: collects each test's outcome, and ends the run
    with one table per chapter ran, one row per capability."""

    def __init__(self, chapters: list[Chapter]):
        self.chapters = chapters
        self.outcomes: dict[str, str] = {}      # test id -> passed, failed or skipped

    def pytest_runtest_logreport(self, report) -> None:
        # A test is three reports (setup, call, teardown); a failure in any
        # is the test's. Under xdist the workers' reports arrive here too.
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and report.nodeid not in self.outcomes:
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and report.passed:
            self.outcomes.setdefault(report.nodeid, "passed")

    def lines(self, chapter: Chapter) -> list[Line]:
        lines = {c.name: Line(c) for c in chapter.capabilities}
        other = Line(None)
        for nodeid, outcome in self.outcomes.items():
            found = where(nodeid)
            if found is None or found[0] is not chapter:
                continue
            capability = chapter.capability_of(found[1], found[2])
            line = lines[capability.name] if capability else other
            line.outcomes[outcome] += 1
            if outcome == "failed":
                line.failed.append(nodeid)
        ran = [line for line in lines.values() if line.outcomes]
        return ran + ([other] if other.outcomes else [])

    def pytest_terminal_summary(self, terminalreporter) -> None:
        buffer = io.StringIO()
        # Not wrapped: a section's path stays on its line, where a learner (or grep) finds it.
        console = Console(file=buffer, force_terminal=terminalreporter.hasmarkup, soft_wrap=True)
        for chapter in self.chapters:
            lines = self.lines(chapter)
            if lines:
                print_chapter(console, chapter, lines)
        if buffer.getvalue():
            terminalreporter.write_sep("=", "what the tests say, capability by capability")
            terminalreporter.write(buffer.getvalue())


def print_chapter(console: Console, chapter: Chapter, lines: list[Line]) -> None:
    """One line per capability: a mark, its name, its counts; under a
    failing one, the section to read."""
    console.print(f"[bold]chapter {chapter.number}, {chapter.title}[/bold]")
    width = max(len(line.capability.name) if line.capability else len(UNMAPPED) for line in lines)
    for line in lines:
        counts = ", ".join(f"{line.outcomes[o]} {o}" for o in ("passed", "failed", "skipped") if line.outcomes[o])
        name = line.capability.name if line.capability else UNMAPPED
        mark = mark_of(line)
        console.print(f"{mark} {escape(name):<{width}}  {counts}")
        if line.failed and line.capability:
            console.print(f"    read [bold]{line.capability.read}[/bold]")
    broken = sum(1 for line in lines if line.failed)
    if broken:
        console.print(f"{broken} of {len(lines)} capabilities have a failing test: the failures are above, "
                      "and each line says where the lesson explains it")
    elif all(line.capability and line.outcomes["passed"] for line in lines):
        console.print(f"[green]all {len(lines)} capabilities hold[/green]")


UNMAPPED = "tests on no line of tests/capabilities.py"


def mark_of(line: Line) -> str:
    """✗ a test failed; ✓ tests passed and none failed; - every test skipped
    (no Docker, say: nothing was shown to hold); ? tests on no line."""
    if line.failed:
        return "[red]✗[/red]"
    if line.capability is None:
        return "[yellow]?[/yellow]"
    return "[green]✓[/green]" if line.outcomes["passed"] else "[yellow]-[/yellow]"


def chapters_named(value: str) -> list[Chapter]:
    """--capabilities 01 (one chapter), 01,03 or all."""
    if value == "all":
        return list(CHAPTERS.values())
    names = [name.strip().zfill(2) for name in value.split(",")]
    unknown = [name for name in names if name not in CHAPTERS]
    if unknown:
        raise ValueError(f"no chapter {', '.join(unknown)}: the chapters are {', '.join(CHAPTERS)} (or all)")
    return [CHAPTERS[name] for name in names]


# --- what tests/test_capabilities.py checks ---------------------------------------

HEADING = re.compile(r"^#+ (.+?)\s*$", re.M)


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub (and most forges) make it: lower case,
    punctuation dropped but hyphens and underscores kept, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)     # a "# comment" in a block is no heading
    return {anchor(heading) for heading in HEADING.findall(text)}
