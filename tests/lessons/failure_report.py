"""What a failed lesson step leaves behind to read, printed under its diff.

A step that fails in CI is often a flake that does not come back on a
re-run (chapter 05 part 4: the Website controller in its pod never said
"controllers running"). By then the cluster is gone, so the report keeps
what a maintainer would have looked at: each kubelet's last log lines (the
kubelets run in the runner's own terminals), `kubectl describe` of the
pods the failing command was about, and what Docker says ended the
lesson's containers (chapter 04 part 1 in CI, 2026-12-07: every container
of node1 died at once, and its kubelet's log cannot say who killed them).
"""
from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

KUBELET_LINES = 40      # of each kubelet's log
DESCRIBE_LINES = 150    # of `kubectl describe`, which ends with the events


def kubelet_logs(terminals) -> list[str]:
    """The last lines of every kubelet the lesson started (the terminals are
    runner.Background: command, machine, started, output())."""
    sections = []
    for terminal in terminals:
        if "kubelet.py" not in terminal.command:
            continue
        lines = terminal.output()[-KUBELET_LINES:]
        sections.append(f"--- the kubelet on {terminal.machine} ({terminal.started}), its last "
                        f"{len(lines)} lines:\n" + "\n".join(lines))
    return sections


def describe_command(command: str) -> str | None:
    """`kubectl describe pods` narrowed as the failing kubectl command was
    (its namespace, label selector, pod names); None if it was not about pods
    in a way we can tell (then `kubectl get pods -A -o wide` says enough)."""
    try:
        words = shlex.split(command.split("\n")[0], comments=True)
    except ValueError:                       # a quote the first line does not close
        return None
    if "kubectl" not in words:
        return None
    words = words[words.index("kubectl") + 1:]
    for operator in ("|", "||", "&&", ";", ">", "2>&1"):
        words = words[:words.index(operator)] if operator in words else words    # kubectl's own words
    namespace, selector, names = [], [], []
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in ("-n", "--namespace") and following:
            namespace = [word, following]
        elif word.startswith("--namespace=") or word in ("-A", "--all-namespaces"):
            namespace = [word]
        elif word in ("-l", "--selector") and following:
            selector = [word, following]
        elif word.startswith("--selector="):
            selector = [word]
        elif word.startswith(("pod/", "pods/")):
            names.append(word.split("/", 1)[1])
        elif word in ("pod", "pods", "po") and following and not following.startswith("-"):
            names.append(following)
    if not (namespace or selector or names):
        return None
    # kubectl takes names or a selector, not both: the names are more precise
    return shlex.join(["kubectl", "describe", "pods", *namespace, *(names or selector)])


def trimmed(lines: list[str], limit: int = DESCRIBE_LINES) -> str:
    """At most `limit` lines, keeping the end (describe's events are last)."""
    if len(lines) <= limit:
        return "\n".join(lines)
    return f"({len(lines) - limit} lines left out)\n" + "\n".join(lines[-limit:])


# Docker's events for a container's start and end. Followed from the
# lesson's start (a query afterwards would see only dockerd's last 256
# events, which a busy CI run's other tests fill within seconds).
ACTIONS = ("start", "kill", "die", "oom", "destroy")
FORMAT = ("{{.Time}} {{.Action}} {{index .Actor.Attributes \"io.groundup.node-name\"}} "
          "{{index .Actor.Attributes \"io.kubernetes.pod.name\"}} "
          "{{index .Actor.Attributes \"io.kubernetes.container.name\"}} "
          "exitCode={{index .Actor.Attributes \"exitCode\"}} signal={{index .Actor.Attributes \"signal\"}}")


def follow_docker_events(path) -> subprocess.Popen | None:
    """`docker events` for the kubelets' containers, into `path`, until
    stopped; None where there is no docker command."""
    command = ["docker", "events", "--filter", "type=container", "--filter", "label=io.groundup.node-name",
               "--format", FORMAT]
    for action in ACTIONS:
        command += ["--filter", f"event={action}"]
    try:
        with open(path, "wb") as out:
            return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    except OSError:
        return None


def docker_endings(node_names, path) -> str | None:
    """How the lesson's nodes' containers started and ended, as Docker
    recorded it (followed since the lesson began): a kill's signal, a
    death's exit code, an OOM kill. (Namespace machines have engines of their own.)"""
    if not node_names:
        return None
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    lines = []
    for line in text.splitlines():
        when, _, rest = line.partition(" ")
        if rest.split(" ")[1:2] and rest.split(" ")[1] in node_names and when.isdigit():
            lines.append(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime(int(when))) + rest)   # as the kubelets log
    return "\n".join(lines[-KUBELET_LINES:]) or "(none)"
