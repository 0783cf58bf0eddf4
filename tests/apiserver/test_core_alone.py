"""Chapter 02's core runs alone: `apiserver.py --no-kubectl-compat`.

The same real server process, once with kubectl_compat/ plugged into the
core's hooks (as it always runs) and once without it, over real HTTP: a
plain client (requests, and the official Python client) gets the same
JSON either way; what only kubectl needs is there with the layer and
answered as Kubernetes answers what a server does not serve without it
(415 for a PATCH type, 406 for an Accept, 404 for discovery).
"""
from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from apiserver_harness import APISERVER, APIServer, Client, pod, unique, watch_lines
from common.tooling.polling import wait_for
from common.tooling.ports import free_port
from common.tooling.processes import stop_within

ALONE, WITH_KUBECTL = "core alone", "with kubectl_compat"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture(scope="module", params=[ALONE, WITH_KUBECTL])
def server(request, tmp_path_factory):
    flags = ["--no-kubectl-compat"] if request.param == ALONE else []
    process = APIServer(tmp_path_factory.mktemp("core-alone") / "data", *flags).start()
    process.mode = request.param
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server) -> Client:
    """This module's server, for conftest's `namespace` fixture too."""
    return Client(server.url)


# ----- the same either way -----

def test_create_get_list_replace_and_delete_as_json(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = api.post(path, {"metadata": {"name": "c", "labels": {"app": "a"}}, "data": {"v": "1"}})
    assert created.status_code == 201 and created.headers["Content-Type"] == "application/json"
    got = api.get(f"{path}/c").json()
    assert got["data"] == {"v": "1"} and got["metadata"]["uid"] == created.json()["metadata"]["uid"]
    listed = api.get(path, params={"labelSelector": "app=a"}).json()
    assert listed["kind"] == "ConfigMapList" and [o["metadata"]["name"] for o in listed["items"]] == ["c"]
    stale = {**got, "data": {"v": "2"}, "metadata": {**got["metadata"], "resourceVersion": "1"}}
    assert api.put(f"{path}/c", stale).status_code == 409            # optimistic concurrency
    assert api.put(f"{path}/c", {**got, "data": {"v": "2"}}).json()["data"] == {"v": "2"}
    assert api.delete(f"{path}/c").status_code == 200
    assert api.get(f"{path}/c").status_code == 404


def test_a_json_merge_patch_is_the_cores_own(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "c"}, "data": {"keep": "1", "drop": "2"}})
    patched = api.patch(f"{path}/c", {"data": {"drop": None, "new": "3"}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"] == {"keep": "1", "new": "3"}
    assert api.patch(f"{path}/c", b"[1, 2]").status_code == 400


def test_a_watch_streams_json_events(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    start = api.get(path).json()["metadata"]["resourceVersion"]
    api.post(path, {"metadata": {"name": "w"}, "data": {"v": "1"}})
    api.patch(f"{path}/w", {"data": {"v": "2"}})
    api.delete(f"{path}/w")
    response = api.get(path, params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "10"},
                       stream=True)
    events = []
    for event in watch_lines(response):
        events.append((event["type"], event["object"]["data"]["v"]))
        if len(events) == 3:
            break
    response.close()
    assert events == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


def test_validation_and_defaults_are_the_cores(api, namespace):
    path = f"/api/v1/namespaces/{namespace}/pods"
    refused = api.post(path, {"metadata": {"name": "bad"}, "spec": {"containers": []}})
    assert refused.status_code == 422 and refused.json()["reason"] == "Invalid"
    created = api.post(path, pod("web")).json()
    assert created["spec"]["restartPolicy"] == "Always"               # common/model/defaults.py


def test_the_python_client_reads_and_writes_as_json(server, namespace):
    config = client.Configuration()
    config.host = server.url
    with client.ApiClient(config) as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "py"}, "data": {"v": "1"}})
        assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["py"]
        patched = core.patch_namespaced_config_map("py", namespace, {"data": {"v": "2"}},
                                                   _content_type="application/merge-patch+json")
        assert patched.data == {"v": "2"}
        if server.mode == ALONE:
            # The client's default for a dict is a strategic merge patch, which needs
            # the kind's schema: as for a custom kind in Kubernetes, 415.
            with pytest.raises(ApiException) as refused:
                core.patch_namespaced_config_map("py", namespace, {"data": {"v": "3"}})
            assert refused.value.status == 415
        core.delete_namespaced_config_map("py", namespace)
        assert core.list_namespaced_config_map(namespace).items == []


def test_a_kubelets_watch_of_its_nodes_pods_either_way(api, namespace):
    """Field selectors are an extension, not kubectl's: without them no kubelet could join."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    start = api.get(path).json()["metadata"]["resourceVersion"]
    api.post(path, pod("elsewhere", nodeName="node2"))
    api.post(path, pod("mine", nodeName="node1"))
    response = api.get(path, params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "5",
                                     "fieldSelector": "spec.nodeName=node1"}, stream=True)
    assert response.status_code == 200, response.text
    first = next(watch_lines(response))
    response.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "mine")
    listed = api.get(path, params={"fieldSelector": "spec.nodeName!=node1"}).json()
    assert [p["metadata"]["name"] for p in listed["items"]] == ["elsewhere"]
    refused = api.get(path, params={"fieldSelector": "spec.image=x"})
    assert refused.status_code == 400 and "field label not supported: spec.image" in refused.json()["message"]


@pytest.mark.parametrize("accept", ["application/json;stream=watch", "application/json; charset=utf-8",
                                    "application/*;q=0.5", "application/yaml;q=1, */*;q=0.1"])
def test_an_accept_that_allows_json_with_parameters_gets_json(api, namespace, accept):
    """Only the media type counts, not its parameters: client-go watches with `;stream=watch`."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    params = {"watch": "true", "timeoutSeconds": "1"} if "stream=watch" in accept else {}
    reply = api.get(path, headers={"Accept": accept}, params=params)
    assert reply.status_code == 200, reply.text


def test_an_accept_that_refuses_json_is_406(api, namespace):
    reply = api.get(f"/api/v1/namespaces/{namespace}/configmaps", headers={"Accept": "application/json;q=0"})
    assert reply.status_code == 406


def test_services_and_custom_kinds_plug_in_either_way(api):
    """extensions/ registers into the same hooks, with or without kubectl_compat."""
    kubernetes = api.get("/api/v1/namespaces/default/services/kubernetes").json()
    assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"
    name = unique("svc")
    created = api.post("/api/v1/namespaces/default/services",
                       {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}).json()
    assert created["spec"]["clusterIP"].startswith("10.")
    api.delete(f"/api/v1/namespaces/default/services/{name}")


# ----- what only kubectl needs: there with the layer, refused as Kubernetes refuses without it -----

def test_a_patch_type_nobody_registered_is_415(server, api, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "c"}, "data": {"v": "1"}})
    patched = api.patch(f"{path}/c", {"data": {"v": "2"}}, content_type=STRATEGIC)
    if server.mode == ALONE:
        assert patched.status_code == 415 and patched.json()["reason"] == "UnsupportedMediaType"
        assert "application/merge-patch+json" in patched.json()["message"]
    else:
        assert patched.status_code == 200 and patched.json()["data"] == {"v": "2"}


@pytest.mark.parametrize("accept", ["application/vnd.kubernetes.protobuf", "application/yaml"])
def test_an_accept_without_json(server, api, namespace, accept):
    reply = api.get(f"/api/v1/namespaces/{namespace}/configmaps", headers={"Accept": accept})
    if server.mode == ALONE:
        assert reply.status_code == 406 and reply.json()["reason"] == "NotAcceptable"
    else:
        # Protobuf is answered as JSON (client-go reads it); YAML as YAML.
        assert reply.status_code == 200
        assert reply.headers["Content-Type"] == ("application/yaml" if accept.endswith("yaml") else "application/json")


def test_kubectls_table_is_asked_for_and_json_comes_when_none_is_registered(server, api, namespace):
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    reply = api.get(f"/api/v1/namespaces/{namespace}/configmaps", headers={"Accept": accept}).json()
    assert reply["kind"] == ("ConfigMapList" if server.mode == ALONE else "Table")


def test_a_review_in_protobuf_is_read_only_with_the_layer(server, api):
    """kubectl auth can-i sends its review as protobuf: read by the decoder
    kubectl_compat registers (a garbled one is then a 400), else 415."""
    reply = api.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", b"k8s\x00\x0a\xff",
                     content_type="application/vnd.kubernetes.protobuf")
    assert reply.status_code == (415 if server.mode == ALONE else 400), reply.text


def test_discovery_and_openapi_come_with_the_layer(server, api):
    expected = 404 if server.mode == ALONE else 200
    assert api.get("/api").status_code == expected
    assert api.get("/openapi/v3").status_code == expected
    assert api.get("/readyz").status_code == 200          # the core's own, for load balancers
    version = api.get("/version")                          # the core's too: kubelets and clients ask
    assert version.status_code == 200 and version.json()["major"] == "1", version.text


def test_a_custom_kind_without_the_layer(server, api, namespace):
    """CRDs are an extension: defined, served, pruned and merge-patched in
    both modes; a strategic merge patch is 415, naming the types this server
    takes for a custom kind (so not JSON patch or apply when they are not served)."""
    group = f"{unique('g')}.groundup.dev"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"notes.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "notes", "singular": "note", "kind": "Note"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "text": {"type": "string"}, "pages": {"type": "integer", "default": 1}}}}}}}]}}
    assert api.post(CRDS, crd).status_code == 201
    path = f"/apis/{group}/v1/namespaces/{namespace}/notes"
    wait_for(lambda: api.get(path).status_code == 200, timeout=10, what=f"{path} to be served")
    made = api.post(path, {"apiVersion": f"{group}/v1", "kind": "Note", "metadata": {"name": "n"},
                           "spec": {"text": "hi", "colour": "red"}})
    assert made.status_code == 201, made.text
    assert made.json()["spec"] == {"text": "hi", "pages": 1}                  # pruned, defaulted
    patched = api.patch(f"{path}/n", {"spec": {"text": "bye"}})
    assert patched.status_code == 200 and patched.json()["spec"] == {"text": "bye", "pages": 1}
    refused = api.patch(f"{path}/n", {"spec": {"text": "x"}}, content_type=STRATEGIC)
    assert refused.status_code == 415
    listed = refused.json()["message"].split("include: ")[1].split(" (got")[0].split(", ")
    expected = {"application/merge-patch+json"} | (
        set() if server.mode == ALONE else {"application/json-patch+json", "application/apply-patch+yaml"})
    assert set(listed) == expected
    assert api.delete(f"{CRDS}/notes.{group}").status_code == 200


def test_apply_without_a_field_manager_answers_as_before(server, api, namespace):
    """The fieldManager check is patches.apply_patch's, after the body parses:
    an object that exists gets its message, a body that does not parse its parse error."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(path, {"metadata": {"name": "c"}, "data": {"v": "1"}})
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {v: '2'}\n"
    existing = api.patch(f"{path}/c", manifest, content_type=APPLY)
    broken = api.patch(f"{path}/c", b"data: [\n", content_type=APPLY)
    if server.mode == ALONE:
        assert (existing.status_code, broken.status_code) == (415, 415)
        return
    assert existing.status_code == 400 and "fieldManager is required for apply requests" in existing.json()["message"]
    assert broken.status_code == 400 and "neither valid JSON nor valid YAML" in broken.json()["message"]
    applied = api.patch(f"{path}/c", manifest, content_type=APPLY, params={"fieldManager": "me"})
    assert applied.status_code == 200 and applied.json()["data"] == {"v": "2"}


# The import blocker: any import of kubectl_compat fails, then apiserver.py runs as `python apiserver.py`.
BLOCKED_RUN = """
import runpy, sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "kubectl_compat":
            raise ImportError("kubectl_compat is blocked in this test")
sys.meta_path.insert(0, Blocker())
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_the_core_serves_with_kubectl_compat_not_importable(tmp_path):
    """--no-kubectl-compat loads none of kubectl_compat/: the server starts and
    serves with every import of it refused."""
    port = free_port()
    log = open(tmp_path / "apiserver.log", "wb")
    process = subprocess.Popen([sys.executable, "-c", BLOCKED_RUN, str(APISERVER), "--data-dir", str(tmp_path / "data"),
                                "--port", str(port), "--no-kubectl-compat"], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    api = Client(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: _ready(api, process, tmp_path / "apiserver.log"), timeout=30, what="the core alone to serve")
        made = api.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"v": "1"}})
        assert made.status_code == 201, made.text
        assert api.get("/api/v1/pods", params={"fieldSelector": "spec.nodeName=node1"}).status_code == 200
    finally:
        stop_within(process, 10)
    assert "kubectl_compat" not in (tmp_path / "apiserver.log").read_text()


def _ready(api: Client, process: subprocess.Popen, log) -> bool:
    assert process.poll() is None, f"the API server exited:\n{log.read_text()}"
    try:
        return api.get("/readyz", timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


@pytest.mark.parametrize("flags,loaded", [(["--no-kubectl-compat"], False), ([], True)])
def test_kubectl_compat_is_loaded_only_when_asked_for(flags, loaded):
    probe = ("import sys, apiserver; apiserver.extensions(apiserver.parse_args(sys.argv[1:])); "
             "print(any(name.split('.')[0] == 'kubectl_compat' for name in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe, *flags], cwd=APISERVER.parent,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(loaded)
