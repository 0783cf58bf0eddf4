"""Every kubectl a learner is likely to have, against one cluster: a matrix.

    python 02-apiserver/kubectl_compat/kubectl_versions.py [--versions 1.27,1.33]

Learners arrive with whatever kubectl their distribution or cloud shell gave
them. This runs the lessons' kubectl commands with each kubectl binary found
(kubectl.1.27 ... kubectl.1.33 beside the one on PATH, as the Google Cloud
SDK's dispatcher installs them, or any `kubectl-1.NN`/`kubectl.1.NN` on PATH)
against a real API server and one real kubelet, and prints a Markdown table of
what worked. tests/apiserver/test_kubectl_versions.py runs the same steps and
fails on any cell that is not a pass.

Each version works in a namespace of its own, with its own kubeconfig and
discovery cache (kubectl caches discovery and OpenAPI: a cache shared between
versions would hide a server that answers one of them wrongly).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests


VERSIONS = tuple(f"1.{minor}" for minor in range(27, 34))
TIMEOUT = 60                    # seconds any one command may take
NODE = "kubectl-matrix-node"    # the kubelet's name: no lesson or other test uses it

# What the matrix cannot run yet, and why: named in the table, never silent.
NOT_SERVED_YET = {
    "exec / attach / cp / port-forward / top": "no streaming subresources or metrics API yet (issue 21)",
}


def find_binary(version: str) -> str | None:
    """The kubectl binary of one minor version on this machine, if any."""
    on_path = shutil.which("kubectl")
    places = [Path(os.path.realpath(on_path)).parent] if on_path else []
    places += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    for place in places:
        for name in (f"kubectl.{version}", f"kubectl-{version}"):
            if (place / name).is_file() and os.access(place / name, os.X_OK):
                return str(place / name)
    return None


# --- the steps ---------------------------------------------------------------

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: NODE
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.35
    command: ["sh", "-c", "echo hello from web; exec sleep 3600"]
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  colour: blue
"""

PRUNED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: pruned-set
  labels: {tier: config}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: front
spec:
  replicas: 1
  selector:
    matchLabels: {app: front}
  template:
    metadata:
      labels: {app: front}
    spec:
      nodeName: NODE
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:1.35
        command: ["sleep", "3600"]
"""


@dataclass
class Step:
    """One kubectl command of the lessons, and the text its output must hold."""
    name: str
    args: list[str]
    expect: str
    env: dict = field(default_factory=dict)
    watch_until: list[str] | None = None    # a watch: run these while it streams


STEPS = [
    Step("apply -f (create)", ["apply", "-f", "pod.yaml"], "pod/web created"),
    Step("create -f", ["create", "-f", "configmap.yaml"], "configmap/settings created"),
    Step("apply -f (apps/v1)", ["apply", "-f", "deployment.yaml"], "deployment.apps/front created"),
    Step("wait --for=condition=Ready", ["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"],
         "pod/web condition met"),
    Step("get", ["get", "pods"], "Running"),
    Step("get -o wide", ["get", "pods", "-o", "wide"], "NODE"),
    Step("get -o yaml", ["get", "pod", "web", "-o", "yaml"], "name: web"),
    Step("get -o json", ["get", "pod", "web", "-o", "json"], '"name": "web"'),
    Step("get -w", ["get", "pods", "-w"], "version=2", watch_until=["label", "pod", "web", "version=2"]),
    Step("describe", ["describe", "pod", "web"], "Started"),
    Step("logs", ["logs", "web"], "hello from web"),
    Step("apply -f (unchanged)", ["apply", "-f", "pod.yaml"], "pod/web unchanged"),
    Step("patch", ["patch", "configmap", "settings", "-p", '{"data":{"size":"large"}}'],
         "configmap/settings patched"),
    Step("edit", ["edit", "configmap", "settings"], "configmap/settings edited",
         env={"KUBE_EDITOR": "sed -i s/colour:.blue/colour:\\ green/", "EDITOR": ""}),
    # Chapter 04's controller manager runs the Deployment.
    Step("rollout status", ["rollout", "status", "deployment/front", "--timeout=90s"],
         'deployment "front" successfully rolled out'),
    Step("rollout restart", ["rollout", "restart", "deployment/front"], "deployment.apps/front restarted"),
    Step("rollout status (after restart)", ["rollout", "status", "deployment/front", "--timeout=90s"],
         'deployment "front" successfully rolled out'),
    Step("rollout history", ["rollout", "history", "deployment/front"], "REVISION"),
    Step("rollout undo", ["rollout", "undo", "deployment/front"], "deployment.apps/front rolled back"),
    Step("scale", ["scale", "deployment", "front", "--replicas=2"], "deployment.apps/front scaled"),
    Step("create configmap (generator)", ["create", "configmap", "made", "--from-literal=a=1"],
         "configmap/made created"),
    Step("create namespace (generator)", ["create", "namespace", "NAMESPACE-extra"],
         "namespace/NAMESPACE-extra created"),
    # --prune's default list names kinds this server does not serve (PVCs,
    # StatefulSets...): kubectl names the first one it cannot map, so the
    # lessons give the kinds to prune explicitly.
    Step("apply --prune", ["apply", "--prune", "--prune-allowlist=core/v1/ConfigMap", "-l", "tier=config",
                           "-f", "pruned.yaml"], "configmap/pruned-set created"),
    Step("explain", ["explain", "pod.spec.restartPolicy"], "restartPolicy"),
    Step("auth can-i", ["auth", "can-i", "create", "pods"], "yes"),
    Step("delete", ["delete", "pod", "web", "--wait=false"], 'pod "web" deleted'),
    Step("delete -f", ["delete", "-f", "configmap.yaml"], 'configmap "settings" deleted'),
]


@dataclass
class Outcome:
    step: Step
    passed: bool
    output: str


class Kubectl:
    """One kubectl binary, its own kubeconfig, cache and namespace."""

    def __init__(self, binary: str, url: str, namespace: str, workdir: Path, node: str):
        self.binary, self.namespace, self.workdir = binary, namespace, workdir
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "kubeconfig").write_text(textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters: [{{name: groundup, cluster: {{server: "{url}"}}}}]
            users: [{{name: learner, user: {{}}}}]
            contexts: [{{name: groundup, context: {{cluster: groundup, user: learner, namespace: {namespace}}}}}]
            current-context: groundup
            """))
        (workdir / "pod.yaml").write_text(POD.replace("NODE", node))
        (workdir / "configmap.yaml").write_text(CONFIGMAP)
        (workdir / "deployment.yaml").write_text(DEPLOYMENT.replace("NODE", node))
        (workdir / "pruned.yaml").write_text(PRUNED)
        self.env = {**os.environ, "KUBECONFIG": str(workdir / "kubeconfig"), "HOME": str(workdir)}

    def argv(self, args: list[str]) -> list[str]:
        args = [a.replace("NAMESPACE", self.namespace) for a in args]
        return [self.binary, "--cache-dir", str(self.workdir / "cache"), *args]

    def run(self, args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(args), capture_output=True, text=True, timeout=TIMEOUT,
                              cwd=self.workdir, env={**self.env, **(env or {})}, stdin=subprocess.DEVNULL)

    def step(self, step: Step) -> Outcome:
        expect = step.expect.replace("NAMESPACE", self.namespace)
        if step.watch_until:
            return self._watch(step, expect)
        result = self.run(step.args, step.env)
        output = result.stdout + result.stderr
        return Outcome(step, result.returncode == 0 and expect in output, output)

    def _watch(self, step: Step, expect: str) -> Outcome:
        """Start the watch, make the change, and wait for the watch to print it."""
        watch = subprocess.Popen(self.argv(step.args + ["--output-watch-events=false", "--show-labels"]),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL)
        seen: list[str] = []
        try:
            first = watch.stdout.readline()          # the listing is printed first
            seen.append(first)
            change = self.run(step.watch_until)
            seen.append(f"(kubectl {' '.join(step.watch_until)}: {change.stdout.strip()})\n")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                line = watch.stdout.readline()
                if not line:
                    break
                seen.append(line)
                if expect in line:
                    return Outcome(step, True, "".join(seen))
            return Outcome(step, False, "".join(seen))
        finally:
            watch.kill()
            watch.wait()


def run_version(version: str, binary: str, url: str, workdir: Path, node: str) -> list[Outcome]:
    namespace = "kubectl-" + version.replace(".", "-")
    # The namespace is made through the API, not kubectl: `create namespace`
    # is one of the steps under test.
    requests.post(f"{url}/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": namespace}}, timeout=10).raise_for_status()
    kubectl = Kubectl(binary, url, namespace, workdir / namespace, node)
    return [kubectl.step(step) for step in STEPS]


def start_controller_manager(cluster) -> None:
    """Chapter 04's controllers, so that `kubectl rollout` has something to watch."""
    cluster.start_process("controller-manager", ["04-controllers/controller_manager.py", "--apiserver", cluster.url])


def markdown_table(results: dict[str, list[Outcome] | str]) -> str:
    versions = list(results)
    lines = ["| command | " + " | ".join(versions) + " |", "|---|" + "---|" * len(versions)]
    for i, step in enumerate(STEPS):
        cells = []
        for version in versions:
            outcome = results[version]
            cells.append("skipped" if isinstance(outcome, str) else "yes" if outcome[i].passed else "**NO**")
        lines.append(f"| `kubectl {step.name}` | " + " | ".join(cells) + " |")
    for name, why in NOT_SERVED_YET.items():
        lines.append(f"| `kubectl {name}` | " + " | ".join("not yet" for _ in versions) + f" |")
    notes = [f"- not yet: `{name}`: {why}." for name, why in NOT_SERVED_YET.items()]
    notes += [f"- {version} skipped: {why}" for version, why in results.items() if isinstance(why, str)]
    return "\n".join(lines + [""] + notes)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(VERSIONS), help="comma-separated minor versions")
    args = parser.parse_args(argv)
    from common.tooling.local_cluster import Cluster

    results: dict[str, list[Outcome] | str] = {}
    with Cluster([NODE]) as cluster, tempfile.TemporaryDirectory(prefix="kubectl-matrix-") as tmp:
        start_controller_manager(cluster)
        for version in args.versions.split(","):
            binary = find_binary(version)
            if binary is None:
                results[version] = f"no kubectl.{version} or kubectl-{version} on this machine"
                continue
            results[version] = run_version(version, binary, cluster.url, Path(tmp), NODE)
            for outcome in results[version]:
                if not outcome.passed:
                    print(f"kubectl {version} {outcome.step.name}: FAILED\n{outcome.output}", file=sys.stderr)
    print(markdown_table(results))
    return 0 if all(isinstance(r, str) or all(o.passed for o in r) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
