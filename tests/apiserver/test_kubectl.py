"""The real kubectl against our API server: the client learners will use.

Each test runs kubectl in its own namespace, with a kubeconfig and a
discovery cache in the test's temporary directory (kubectl caches discovery
and OpenAPI documents; a cache shared between runs would hide a server that
stopped serving them). The checks read kubectl's output, not only its exit
code: a command that "succeeds" while printing nothing useful is a failure
for a learner.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from apiserver_harness import deployment, pod, unique
from polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60          # seconds any one kubectl command may take before the test fails


class Kubectl:
    """Runs kubectl against one server, in one namespace, with its own config and cache."""

    def __init__(self, binary: str, url: str, namespace: str, workdir: Path):
        self.binary, self.namespace, self.workdir = binary, namespace, workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.kubeconfig.write_text(textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters:
            - name: groundup
              cluster: {{server: "{url}"}}
            users:
            - name: learner
              user: {{}}
            contexts:
            - name: groundup
              context: {{cluster: groundup, user: learner, namespace: {namespace}}}
            current-context: groundup
            """))
        # HOME too, so nothing of the developer's ~/.kube is read or written.
        self.env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(workdir)}

    def argv(self, *args: str) -> list[str]:
        return [self.binary, "--kubeconfig", str(self.kubeconfig),
                "--cache-dir", str(self.workdir / "cache"), *args]

    def run(self, *args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), input=stdin, capture_output=True, text=True,
                              timeout=TIMEOUT, cwd=self.workdir, env={**self.env, **(env or {})})

    def __call__(self, *args: str, **kwargs) -> str:
        """stdout of a command that must succeed."""
        result = self.run(*args, **kwargs)
        assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stderr}{result.stdout}"
        return result.stdout

    def fails(self, *args: str, **kwargs) -> str:
        """stderr of a command that must fail."""
        result = self.run(*args, **kwargs)
        assert result.returncode != 0, f"kubectl {' '.join(args)} should have failed:\n{result.stdout}"
        return result.stderr

    def json(self, *args: str) -> dict:
        return json.loads(self(*args, "-o", "json"))

    def manifest(self, obj: dict | str, name: str = "manifest.yaml") -> str:
        """Write a manifest into the work directory; returns its path for -f."""
        path = self.workdir / name
        path.write_text(obj if isinstance(obj, str) else yaml.safe_dump(obj))
        return str(path)


@pytest.fixture
def k(kubectl, apiserver, namespace, tmp_path) -> Kubectl:
    return Kubectl(kubectl, apiserver.url, namespace, tmp_path)


def rows(table: str) -> list[list[str]]:
    """kubectl's table output as lists of cells (cells here never hold spaces)."""
    return [line.split() for line in table.strip().splitlines()]


def create_pod(api, namespace: str, name: str, **kwargs) -> dict:
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", pod(name, **kwargs))
    assert response.status_code == 201, response.text
    return response.json()


# ----- reading -----

def test_get_prints_the_servers_table(k, api, namespace):
    create_pod(api, namespace, "web")
    table = rows(k("get", "pods"))
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1][:4] == ["web", "0/1", "Pending", "0"]


def test_get_one_pod_as_yaml_and_json(k, api, namespace):
    created = create_pod(api, namespace, "web", labels={"app": "web"})
    as_yaml = yaml.safe_load(k("get", "pod", "web", "-o", "yaml"))
    as_json = k.json("get", "pod", "web")
    for obj in (as_yaml, as_json):
        assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
        assert obj["metadata"]["uid"] == created["metadata"]["uid"]
        assert obj["metadata"]["labels"] == {"app": "web"}
        assert obj["spec"]["containers"][0]["image"] == "busybox:1.35"
    listed = k.json("get", "pods")
    assert listed["kind"] == "List" and [p["metadata"]["name"] for p in listed["items"]] == ["web"]


def test_get_wide_adds_the_priority_columns(k, api, namespace):
    create_pod(api, namespace, "web", nodeName="node-7")
    table = rows(k("get", "pods", "-o", "wide"))
    assert " ".join(table[0]) == "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES"
    assert table[1][0] == "web" and table[1][6] == "node-7"


def test_get_with_a_label_selector(k, api, namespace):
    create_pod(api, namespace, "front", labels={"tier": "front"})
    create_pod(api, namespace, "back", labels={"tier": "back"})
    assert [r[0] for r in rows(k("get", "pods", "-l", "tier=front"))[1:]] == ["front"]
    assert [r[0] for r in rows(k("get", "pods", "-l", "tier in (front,back),tier!=front"))[1:]] == ["back"]
    assert k("get", "pods", "-l", "tier=none").strip() == ""
    assert "No resources found in" in k.run("get", "pods", "-l", "tier=none").stderr


def test_get_all_namespaces_shows_the_namespace_column(k, api, namespace):
    create_pod(api, namespace, "web")
    table = rows(k("get", "pods", "-A"))
    assert table[0][:2] == ["NAMESPACE", "NAME"]
    assert [namespace, "web"] in [r[:2] for r in table[1:]]


def test_show_labels(k, api, namespace):
    create_pod(api, namespace, "web", labels={"app": "web", "tier": "front"})
    table = rows(k("get", "pods", "--show-labels"))
    assert table[0][-1] == "LABELS"
    assert table[1][0] == "web" and table[1][-1] == "app=web,tier=front"


def test_get_all_lists_every_kind_in_the_all_category(k, api, namespace):
    create_pod(api, namespace, "web")
    assert api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("site")).status_code == 201
    out = k("get", "all")
    assert "pod/web" in out and "deployment.apps/site" in out
    assert "READY   UP-TO-DATE   AVAILABLE" in out       # the deployment's own columns


def test_get_with_a_field_selector(k, api, namespace):
    create_pod(api, namespace, "placed", nodeName="x")
    create_pod(api, namespace, "waiting")
    assert [r[0] for r in rows(k("get", "pods", "--field-selector", "spec.nodeName=x"))[1:]] == ["placed"]
    assert [r[0] for r in rows(k("get", "pods", "--field-selector", "spec.nodeName="))[1:]] == ["waiting"]
    error = k.fails("get", "pods", "--field-selector", "spec.image=x")
    assert "field label not supported: spec.image" in error


def test_get_watch_prints_changes_as_they_happen(k, api, namespace):
    create_pod(api, namespace, "first")
    out_path = k.workdir / "watch.out"
    with open(out_path, "w") as out:
        # --request-timeout ends the watch on its own should the test fail half-way.
        watcher = subprocess.Popen(k.argv("get", "pods", "--watch", "--request-timeout=30s"),
                                   stdout=out, stderr=subprocess.STDOUT, env=k.env, cwd=k.workdir)
    try:
        wait_for(lambda: "first" in out_path.read_text(), timeout=TIMEOUT, what="kubectl get -w to list")
        create_pod(api, namespace, "second")
        wait_for(lambda: "second" in out_path.read_text(), timeout=TIMEOUT, what="the watch to show the new pod")
        assert watcher.poll() is None, "the watch ended by itself:\n" + out_path.read_text()
    finally:
        watcher.terminate()
        watcher.wait(10)
    table = rows(out_path.read_text())
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [r[0] for r in table[1:]][:2] == ["first", "second"]


def test_describe_pod_with_its_events(k, api, namespace):
    created = create_pod(api, namespace, "web")
    event = {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "web.scheduled"},
             "involvedObject": {"kind": "Pod", "apiVersion": "v1", "name": "web", "namespace": namespace,
                                "uid": created["metadata"]["uid"]},
             "reason": "Scheduled", "message": f"Successfully assigned {namespace}/web to node-1",
             "type": "Normal", "count": 1, "source": {"component": "default-scheduler"},
             "firstTimestamp": created["metadata"]["creationTimestamp"],
             "lastTimestamp": created["metadata"]["creationTimestamp"]}
    assert api.post(f"/api/v1/namespaces/{namespace}/events", event).status_code == 201
    out = k("describe", "pod", "web")
    for line in ("Name:", "Namespace:", "Containers:", "Image:", "Events:"):
        assert line in out
    assert f"Namespace:        {namespace}" in out or namespace in out.split("Namespace:")[1].splitlines()[0]
    assert "busybox:1.35" in out
    # describe finds the event by fieldSelector involvedObject.name/namespace/uid
    assert "Scheduled" in out and "default-scheduler" in out and "to node-1" in out


def test_describe_without_events(k, api, namespace):
    create_pod(api, namespace, "quiet")
    out = k("describe", "pod", "quiet")
    assert "Name:" in out and "quiet" in out and "Events:" in out


def test_not_found_says_so(k, namespace):
    assert k.fails("get", "pod", "nope").strip() == 'Error from server (NotFound): pods "nope" not found'
    assert "No resources found in " + namespace + " namespace." in k.run("get", "pods").stderr


def test_api_resources_lists_short_names(k):
    table = rows(k("api-resources"))
    assert table[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    # metrics.k8s.io has pods and nodes too (PodMetrics, NodeMetrics), as with metrics-server.
    by_name = {r[0]: r for r in table[1:] if not r[-1].endswith("Metrics")}
    assert ["pods", "metrics.k8s.io/v1beta1", "true", "PodMetrics"] in table
    assert by_name["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["nodes"][1:] == ["no", "v1", "false", "Node"]
    assert k("get", "po").strip() == "" and k("get", "deploy").strip() == ""


def test_explain_reads_the_published_schema(k):
    out = k("explain", "pod.spec.containers")
    assert "KIND:       Pod" in out and "FIELD: containers <[]Container>" in out
    assert "image\t<string>" in out and "imagePullPolicy" in out


def test_get_raw_version(k):
    version = json.loads(k("get", "--raw", "/version"))
    assert (version["major"], version["minor"]) == ("1", "32")
    assert "Server Version: v1.32" in k("version")


def test_cluster_info_does_not_crash(k):
    assert "Kubernetes control plane is running at http://127.0.0.1:" in k("cluster-info")


# ----- writing -----

def web_deployment(replicas: int = 2, image: str = "nginx:1.25") -> dict:
    obj = deployment("web", replicas)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return obj


def test_create_then_create_again(k, namespace):
    path = k.manifest(pod("web"))
    assert k("create", "-f", path).strip() == "pod/web created"
    assert k.fails("create", "-f", path).strip() == \
        f'Error from server (AlreadyExists): error when creating "{path}": pods "web" already exists'


def test_apply_created_unchanged_configured(k, api, namespace):
    path = k.manifest(web_deployment(2))
    assert k("apply", "-f", path).strip() == "deployment.apps/web created"
    assert k("apply", "-f", path).strip() == "deployment.apps/web unchanged"
    k.manifest(web_deployment(3))
    assert k("apply", "-f", path).strip() == "deployment.apps/web configured"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert live["spec"]["replicas"] == 3
    last = json.loads(live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"]["replicas"] == 3


def test_apply_removes_what_left_the_manifest(k, api, namespace):
    """Client-side apply's three-way merge: a label in the last applied
    configuration but not in the new manifest is deleted from the live object."""
    first = web_deployment()
    first["metadata"]["labels"] = {"app": "web", "stage": "beta"}
    path = k.manifest(first)
    k("apply", "-f", path)
    k("label", "deployment", "web", "owner=ops")       # not from the manifest: apply leaves it
    first["metadata"]["labels"] = {"app": "web"}
    k.manifest(first)
    assert k("apply", "-f", path).strip() == "deployment.apps/web configured"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert live["metadata"]["labels"] == {"app": "web", "owner": "ops"}


def test_apply_server_side_and_a_conflict(k, api, namespace):
    path = k.manifest(web_deployment(2))
    assert k("apply", "--server-side", "-f", path).strip() == "deployment.apps/web serverside-applied"
    assert k("apply", "--server-side", "-f", path).strip() == "deployment.apps/web serverside-applied"
    k.manifest(web_deployment(2, image="nginx:1.26"))
    error = k.fails("apply", "--server-side", "--field-manager", "intruder", "-f", path)
    assert "Apply failed with 1 conflict" in error and '"kubectl"' in error
    assert '.spec.template.spec.containers[name="app"].image' in error
    out = k("apply", "--server-side", "--field-manager", "intruder", "--force-conflicts", "-f", path)
    assert out.strip() == "deployment.apps/web serverside-applied"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    managers = {m["manager"] for m in live["metadata"]["managedFields"]}
    assert {"kubectl", "intruder"} <= managers


def test_moving_from_client_side_to_server_side_apply(k, api, namespace):
    """kubectl hands the client-side applier's fields to the server-side one
    (a managedFields rewrite it sends as a JSON patch) before applying."""
    path = k.manifest(web_deployment(2))
    k("apply", "-f", path)
    assert k("apply", "--server-side", "-f", path).strip() == "deployment.apps/web serverside-applied"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    managers = {m["manager"]: m for m in live["metadata"]["managedFields"]}
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]
    assert "kubectl-client-side-apply" not in managers


def test_server_dry_run_stores_nothing(k, api, namespace):
    path = k.manifest(web_deployment(2))
    assert k("apply", "--dry-run=server", "-f", path).strip() == "deployment.apps/web created (server dry run)"
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").status_code == 404
    k("apply", "-f", path)
    k.manifest(web_deployment(7))
    assert k("apply", "--dry-run=server", "-f", path).strip() == "deployment.apps/web configured (server dry run)"
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["spec"]["replicas"] == 2


def test_a_typo_is_rejected_by_strict_decoding(k, api, namespace):
    manifest = pod("typo")
    manifest["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    path = k.manifest(manifest)
    for verb in ("create", "apply"):
        error = k.fails(verb, "-f", path)
        assert 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: ' \
               'unknown field "spec.containers[0].imagePullPolcy"' in error, error
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/typo").status_code == 404


def test_an_invalid_object_names_the_field(k, api, namespace):
    error = k.fails("apply", "-f", str(ROOT / "02-apiserver" / "manifests" / "bad-port.yaml"))
    assert error.strip() == ('The Pod "bad-port" is invalid: spec.containers[0].ports[0].containerPort: '
                             'Invalid value: 70000: must be between 1 and 65535, inclusive')
    nameless = pod("")
    del nameless["metadata"]["name"]
    error = k.fails("create", "-f", k.manifest(nameless))
    assert 'The Pod "" is invalid: metadata.name: Required value: name or generateName is required' in error


def test_apply_and_delete_a_file_of_several_objects(k, api, namespace):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}}
    path = k.manifest(yaml.safe_dump_all([service, web_deployment(), settings]))
    assert k("apply", "-f", path).splitlines() == [
        "service/web created", "deployment.apps/web created", "configmap/settings created"]
    assert k("get", "svc,deploy,cm", "-o", "name").split() == [
        "service/web", "deployment.apps/web", "configmap/settings"]
    assert k("delete", "-f", path).splitlines() == [
        'service "web" deleted', 'deployment.apps "web" deleted', 'configmap "settings" deleted']
    assert k("get", "svc,deploy,cm", "-o", "name").strip() == ""


def test_delete_and_wait(k, api, namespace):
    create_pod(api, namespace, "web")
    assert k("delete", "pod", "web", "--wait", "--timeout=30s").strip() == 'pod "web" deleted'
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web").status_code == 404
    assert 'pods "web" not found' in k.fails("delete", "pod", "web")


def test_delete_waits_until_the_kubelet_is_done(k, api, namespace):
    """A pod on a node is only marked; `delete --wait` watches until its
    kubelet (here: the test) deletes it for good."""
    node = unique("node")
    assert api.post("/api/v1/nodes", {"metadata": {"name": node}}).status_code == 201
    try:
        create_pod(api, namespace, "web", nodeName=node)
        deleting = subprocess.Popen(k.argv("delete", "pod", "web", "--timeout=50s"), env=k.env, cwd=k.workdir,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        path = f"/api/v1/namespaces/{namespace}/pods/web"
        wait_for(lambda: api.get(path).json()["metadata"].get("deletionTimestamp"), timeout=TIMEOUT,
                 what="kubectl delete to mark the pod")
        assert deleting.poll() is None, "kubectl delete returned before the pod was gone"
        assert api.delete(path, {"gracePeriodSeconds": 0}).status_code == 200    # what the kubelet does
        out, _ = deleting.communicate(timeout=TIMEOUT)
        assert deleting.returncode == 0 and out.strip() == 'pod "web" deleted', out
    finally:
        api.delete(f"/api/v1/nodes/{node}")


def test_label_and_annotate(k, api, namespace):
    create_pod(api, namespace, "web", labels={"app": "web"})
    assert k("label", "pod", "web", "tier=front").strip() == "pod/web labeled"
    assert "already has a value" in k.fails("label", "pod", "web", "tier=back")
    k("label", "pod", "web", "tier=back", "--overwrite")
    assert k("annotate", "pod", "web", "note=hello").strip() == "pod/web annotated"
    meta = api.get(f"/api/v1/namespaces/{namespace}/pods/web").json()["metadata"]
    assert meta["labels"] == {"app": "web", "tier": "back"} and meta["annotations"] == {"note": "hello"}
    k("label", "pod", "web", "tier-")
    k("annotate", "pod", "web", "note-")
    meta = api.get(f"/api/v1/namespaces/{namespace}/pods/web").json()["metadata"]
    assert meta["labels"] == {"app": "web"} and not meta.get("annotations")


@pytest.mark.parametrize("patch_type, patch, expect", [
    ("strategic", {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.35"}]}}}},
     ["app", "sidecar"]),                       # strategic: merged by container name
    ("merge", {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "busybox:1.35"}]}}}},
     ["only"]),                                 # merge patch: the list is replaced
    ("json", [{"op": "add", "path": "/spec/template/spec/containers/-",
               "value": {"name": "third", "image": "busybox:1.35"}}],
     ["app", "third"]),
])
def test_patch_in_each_type(k, api, namespace, patch_type, patch, expect):
    assert api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web")).status_code == 201
    out = k("patch", "deployment", "web", "--type", patch_type, "-p", json.dumps(patch))
    assert out.strip() == "deployment.apps/web patched"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert [c["name"] for c in live["spec"]["template"]["spec"]["containers"]] == expect
    assert live["metadata"]["generation"] == 2


def test_scale(k, api, namespace):
    assert api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web")).status_code == 201
    assert k("scale", "deployment", "web", "--replicas=5").strip() == "deployment.apps/web scaled"
    assert k("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "5"
    error = k.fails("scale", "deployment", "web", "--replicas=3", "--current-replicas=2")
    assert "Expected replicas to be 2, was 5" in error


def test_edit_with_an_editor_script(k, api, namespace):
    assert api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web")).status_code == 201
    editor = k.workdir / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/image: busybox:1.35/image: busybox:1.36/' \"$1\"\n")
    editor.chmod(0o755)
    out = k("edit", "deployment", "web", env={"EDITOR": str(editor), "KUBE_EDITOR": str(editor)})
    assert out.strip() == "deployment.apps/web edited"
    live = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"
    # An editor that changes nothing: kubectl sends nothing.
    unchanged = k.workdir / "noop.sh"
    unchanged.write_text("#!/bin/sh\ntrue\n")
    unchanged.chmod(0o755)
    result = k.run("edit", "deployment", "web", env={"EDITOR": str(unchanged), "KUBE_EDITOR": str(unchanged)})
    assert result.returncode == 0 and "Edit cancelled, no changes made." in result.stderr + result.stdout


def test_replace_and_a_stale_replace(k, api, namespace):
    create_pod(api, namespace, "web", labels={"app": "web"})
    stale = k("get", "pod", "web", "-o", "yaml")
    fresh = yaml.safe_load(stale)
    fresh["metadata"]["labels"]["tier"] = "front"
    assert k("replace", "-f", k.manifest(fresh, "fresh.yaml")).strip() == "pod/web replaced"
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web").json()["metadata"]["labels"]["tier"] == "front"
    # The first copy still carries the old resourceVersion: optimistic concurrency says no.
    path = k.manifest(stale, "stale.yaml")
    error = k.fails("replace", "-f", path)
    assert error.strip() == (f'Error from server (Conflict): error when replacing "{path}": Operation cannot be '
                             'fulfilled on pods "web": the object has been modified; please apply your changes '
                             'to the latest version and try again')


def test_generator_commands(k, api, namespace):
    """`run` sends JSON; the typed generators (create configmap, create
    namespace, ...) send protobuf, which protobuf.py reads (test_protobuf.py
    has every generator); both work."""
    assert k("run", "web", "--image=nginx:1.25", "--labels=app=web").strip() == "pod/web created"
    assert rows(k("get", "pods", "--show-labels"))[1][-1] == "app=web"
    assert k("create", "configmap", "settings", "--from-literal=mode=fast").strip() == "configmap/settings created"
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/settings").json()["data"] == {"mode": "fast"}


def test_missing_kubectl_skips_or_fails(tmp_path):
    """Without kubectl the tests skip on a learner's machine and fail in CI
    (GROUNDUP_REQUIRE_KUBECTL=1): CI must never pass by skipping."""
    empty = tmp_path / "bin"
    empty.mkdir()
    for required, outcome in (("", "1 skipped"), ("1", "1 error")):
        env = {**os.environ, "PATH": str(empty), "GROUNDUP_REQUIRE_KUBECTL": required}
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 f"{Path(__file__).relative_to(ROOT)}::test_get_raw_version"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert outcome in result.stdout, result.stdout[-2000:]
        assert "kubectl is not on PATH" in result.stdout
