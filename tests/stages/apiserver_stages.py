"""Chapter 02's stages: an API server, graded one capability at a time.

The learner's program is the API server here. Each stage starts it on a
free loopback port over a data directory of its own (`--data-dir DIR
--port N`), talks to it over HTTP as any client would, kills it with
SIGKILL where a stage asks whether it keeps its word across a crash, and
in the end points the real kubectl at it. Pods only: the contract is
GET/POST/PUT/DELETE on /api/v1/namespaces/NS/pods[/NAME], GET
/api/v1/pods, ?watch=true&resourceVersion=N, and /healthz.
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import threading
from pathlib import Path

import requests

from common.tooling.ports import free_port
from stage_runner import Client, Hint, Program, Stage, StageContext, StageFailure

INDEX = "02-apiserver/README.md"
PART1 = "02-apiserver/lesson-1-store-rest-watch.md"
PART2 = "02-apiserver/lesson-2-run-the-api-server.md"

VERSIONS = Hint("The idea", INDEX)                  # "One counter orders every change": opaque strings
ONE_PATH = Hint("One path for every request", PART1)
DURABLE = Hint("Durable: one JSON file per object", PART1)
CONCURRENCY = Hint("Optimistic concurrency", PART1)
WATCH = Hint("Watch: one history, many cursors", PART1)
KUBECTL = Hint("3. The real kubectl", PART2)


class LearnerAPIServer(StageContext):
    """The learner's API server on a free port, over a data directory of its own."""

    def __init__(self, mine: Path, workdir: Path):
        super().__init__(mine, workdir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = Client(self.url)
        self.server: Program | None = None

    def mine_args(self) -> list[str]:
        return ["--data-dir", str(self.workdir / "data"), "--port", str(self.port)]

    def start_server(self) -> None:
        self.server = self.start_mine()
        self.wait_until(lambda: self.api.get("/healthz", timeout=2).status_code == 200,
                        expected=f"your API server answering GET {self.url}/healthz with 200",
                        happened=lambda: "it did not")

    def crash_and_restart(self) -> None:
        self.server.kill()
        self.start_server()


CONTEXT = LearnerAPIServer


def pod_object(name: str, namespace: str = "default", labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]}}


def answer(response: requests.Response) -> str:
    """A response as a learner wants to see it in a failure: code and body."""
    return f"{response.status_code} {response.text.strip()[:300]}"


def expect_code(response: requests.Response, code: int, what: str, hint: Hint | None = None) -> dict:
    """The JSON body of a response to `what` (a request, in words), if its code is `code`."""
    if response.status_code != code:
        raise StageFailure(f"{what} to answer {code}", f"the answer was {answer(response)}", hint)
    try:
        return response.json()
    except ValueError:
        raise StageFailure(f"{what} to answer {code} with a JSON body", f"the body was {response.text[:300]!r}",
                           hint)


def expect_status(response: requests.Response, code: int, reason: str, what: str, hint: Hint | None = None) -> None:
    body = expect_code(response, code, what, hint)
    if body.get("kind") != "Status" or body.get("reason") != reason:
        raise StageFailure(f'{what} to answer a Status object with reason "{reason}"', f"the body was {json.dumps(body)[:300]}",
                           hint)


def create(ctx: LearnerAPIServer, name: str, namespace: str = "default", **kwargs) -> dict:
    response = ctx.api.post(f"/api/v1/namespaces/{namespace}/pods", pod_object(name, namespace, **kwargs))
    return expect_code(response, 201, f"POST of pod {name}")


def version(obj: dict) -> int:
    """An object's resourceVersion as a number (our server's, like etcd's, is a counter)."""
    value = (obj.get("metadata") or {}).get("resourceVersion")
    if not isinstance(value, str) or not value.isdigit():
        raise StageFailure("metadata.resourceVersion to be a string of digits, as Kubernetes sends it",
                           f"it is {value!r}", VERSIONS)
    return int(value)


# ---------------------------------------------------------------- the stages

def stage_create_and_get(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    created = create(ctx, "web")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        if not created["metadata"].get(field):
            raise StageFailure(f"the created pod to come back with metadata.{field} set by the server",
                               f"its metadata is {created['metadata']}")
    got = expect_code(ctx.api.get("/api/v1/namespaces/default/pods/web"), 200, "GET of pod web")
    if got.get("metadata", {}).get("uid") != created["metadata"]["uid"]:
        raise StageFailure("GET to return the pod POST created (the same uid)", f"it returned {json.dumps(got)[:300]}")
    expect_status(ctx.api.get("/api/v1/namespaces/default/pods/nobody"), 404, "NotFound",
                  "GET of a pod that does not exist")
    second = create(ctx, "db")
    if version(second) <= version(created):
        raise StageFailure("each write to get a higher resourceVersion than the one before",
                           f"web got {version(created)}, then db got {version(second)}")


def stage_list(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    pods = [create(ctx, "a"), create(ctx, "b"), create(ctx, "c", "kube-system")]
    listed = expect_code(ctx.api.get("/api/v1/namespaces/default/pods"), 200, "GET of the default namespace's pods")
    names = sorted(item["metadata"]["name"] for item in listed.get("items") or [])
    if listed.get("kind") != "PodList" or names != ["a", "b"]:
        raise StageFailure('a PodList ("kind": "PodList") with items a and b (c is in kube-system)',
                           f'kind {listed.get("kind")!r}, items {names}')
    if version(listed) < max(version(p) for p in pods):
        raise StageFailure("the list's metadata.resourceVersion to be the store's version as of the list, "
                           "at least that of every pod in it (a watch starts from there)",
                           f"it is {version(listed)}; the pods' are {[version(p) for p in pods]}", WATCH)
    everywhere = expect_code(ctx.api.get("/api/v1/pods"), 200, "GET /api/v1/pods (every namespace)")
    names = sorted(item["metadata"]["name"] for item in everywhere.get("items") or [])
    if names != ["a", "b", "c"]:
        raise StageFailure("GET /api/v1/pods to list the pods of every namespace: a, b, c", f"it listed {names}")


def stage_durable(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    before = {name: create(ctx, name) for name in ("web", "db", "cache")}
    ctx.crash_and_restart()
    for name, pod in before.items():
        response = ctx.api.get(f"/api/v1/namespaces/default/pods/{name}")
        got = expect_code(response, 200, f"GET of pod {name} after kill -9 and a restart")
        if got["metadata"].get("resourceVersion") != pod["metadata"]["resourceVersion"]:
            raise StageFailure(f"pod {name} as it was, resourceVersion {pod['metadata']['resourceVersion']}",
                               f"it came back with {got['metadata'].get('resourceVersion')!r}")
    after = create(ctx, "new")
    highest = max(version(p) for p in before.values())
    if version(after) <= highest:
        raise StageFailure(f"the first write after the restart to get a resourceVersion above {highest}, "
                           "the highest before it (versions never go backwards: a watcher would miss it)",
                           f"it got {version(after)}")


def stage_concurrency(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    created = create(ctx, "web")
    first = json.loads(json.dumps(created))
    first["metadata"]["labels"] = {"tier": "frontend"}
    path = "/api/v1/namespaces/default/pods/web"
    updated = expect_code(ctx.api.put(path, first), 200, "PUT with the resourceVersion just read")
    if updated["metadata"].get("labels") != {"tier": "frontend"} or version(updated) <= version(created):
        raise StageFailure("the updated pod back, with the new label and a higher resourceVersion",
                           f"labels {updated['metadata'].get('labels')}, resourceVersion "
                           f"{updated['metadata'].get('resourceVersion')} (was {version(created)})")
    if updated["metadata"].get("uid") != created["metadata"]["uid"]:
        raise StageFailure("an update to keep the pod's uid", f"it changed from {created['metadata']['uid']} "
                                                              f"to {updated['metadata'].get('uid')}")
    stale = json.loads(json.dumps(created))             # a second client, who read before the first wrote
    stale["metadata"]["labels"] = {"tier": "backend"}
    expect_status(ctx.api.put(path, stale), 409, "Conflict",
                  f"PUT with resourceVersion {version(created)}, older than the stored one,")
    got = expect_code(ctx.api.get(path), 200, "GET of pod web")
    if got["metadata"].get("labels") != {"tier": "frontend"}:
        raise StageFailure("the first writer's change kept (tier: frontend)",
                           f"the labels are {got['metadata'].get('labels')}")
    expect_status(ctx.api.put("/api/v1/namespaces/default/pods/nobody", pod_object("nobody")), 404, "NotFound",
                  "PUT of a pod that does not exist")
    # A client that leaves out resourceVersion, uid and creationTimestamp
    # (the server's fields) makes an unconditional update, which
    # Kubernetes allows for pods; the server keeps its uid and timestamp.
    fresh = copy.deepcopy(got)
    for field in ("resourceVersion", "uid", "creationTimestamp"):
        del fresh["metadata"][field]
    fresh["metadata"]["labels"] = {"tier": "cache"}
    last = expect_code(ctx.api.put(path, fresh), 200, "PUT of pod web without a metadata.resourceVersion "
                                                       "(an unconditional update, which Kubernetes allows for pods)")
    for field in ("uid", "creationTimestamp"):
        if last["metadata"].get(field) != created["metadata"][field]:
            raise StageFailure(f"a PUT that leaves out metadata.{field} to keep the stored one, "
                               f"{created['metadata'][field]}", f"the pod came back with {last['metadata'].get(field)!r}")
    ctx.crash_and_restart()
    got = expect_code(ctx.api.get(path), 200, "GET of pod web after kill -9 and a restart")
    if got["metadata"].get("labels") != {"tier": "cache"} or got["metadata"].get("resourceVersion") != \
            last["metadata"]["resourceVersion"]:
        raise StageFailure(f"pod web after kill -9 and a restart as its last update left it: labels {{'tier': 'cache'}}, "
                           f"resourceVersion {last['metadata']['resourceVersion']} (a 200 means it is on disk)",
                           f"it came back with labels {got['metadata'].get('labels')}, resourceVersion "
                           f"{got['metadata'].get('resourceVersion')!r}", DURABLE)
    after = create(ctx, "new")
    if version(after) <= version(last):
        raise StageFailure(f"the first write after the restart to get a resourceVersion above {version(last)}, "
                           "the last update's (versions never go backwards)", f"it got {version(after)}", DURABLE)


def stage_delete(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    create(ctx, "db")
    create(ctx, "web")              # the newest pod: its delete takes the highest version yet
    path = "/api/v1/namespaces/default/pods/web"
    expect_code(ctx.api.delete(path), 200, "DELETE of pod web")
    expect_status(ctx.api.get(path), 404, "NotFound", "GET of the deleted pod")
    expect_status(ctx.api.delete(path), 404, "NotFound", "a second DELETE of it")
    before = version(expect_code(ctx.api.get("/api/v1/namespaces/default/pods"), 200, "GET of the pods"))
    ctx.crash_and_restart()
    expect_status(ctx.api.get(path), 404, "NotFound", "GET of the deleted pod after kill -9 and a restart "
                                                      "(its file removed)")
    expect_code(ctx.api.get("/api/v1/namespaces/default/pods/db"), 200, "GET of pod db (not deleted)")
    after = create(ctx, "new")
    if version(after) <= before:
        raise StageFailure(f"the first write after the restart to get a resourceVersion above {before}, the "
                           "store's version before the crash (versions never go backwards)",
                           f"it got {version(after)}, a number reached before the crash (the newest write, web's "
                           "DELETE, left no file: the pods' files alone cannot say how far the counter got)")


class Watcher:
    """A watch read on a thread of its own, events collected as they come."""

    def __init__(self, ctx: LearnerAPIServer, since: int):
        self.events: list[dict] = []
        self.error: str | None = None
        self.response = None
        self.url = f"{ctx.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion={since}"
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        try:
            with requests.get(self.url, stream=True, timeout=(5, 30)) as self.response:
                if self.response.status_code != 200:
                    self.error = f"the answer {answer(self.response)}"
                    return
                for line in self.response.iter_lines():
                    if line:
                        event = json.loads(line)
                        if event.get("type") != "BOOKMARK":
                            self.events.append(event)
        except (requests.RequestException, ValueError) as error:
            self.error = f"{type(error).__name__}: {error}"

    def seen(self) -> list[str]:
        return [f"{e.get('type')} {e.get('object', {}).get('metadata', {}).get('name')}" for e in self.events]


def stage_watch(ctx: LearnerAPIServer) -> None:
    ctx.start_server()
    path = "/api/v1/namespaces/default/pods"
    start = version(expect_code(ctx.api.get(path), 200, "GET of the pods (a list, to watch from)"))
    created = create(ctx, "web")
    changed = json.loads(json.dumps(created))
    changed["metadata"]["labels"] = {"app": "web"}
    updated = expect_code(ctx.api.put(f"{path}/web", changed), 200, "PUT of pod web")
    expect_code(ctx.api.delete(f"{path}/web"), 200, "DELETE of pod web")
    wanted = ["ADDED web", "MODIFIED web", "DELETED web"]
    replay = Watcher(ctx, start)
    ctx.wait_until(lambda: len(replay.events) >= 3 or replay.error,
                   expected=f"a watch from resourceVersion {start} (before the writes) to replay {wanted}",
                   happened=lambda: f"it sent {replay.seen()}")
    if replay.seen()[:3] != wanted:
        raise StageFailure(f"a watch from resourceVersion {start} to replay {wanted}, in order",
                           f"it sent {replay.seen()}" + (f" and then {replay.error}" if replay.error else ""))
    check_replayed_objects(*(event["object"] for event in replay.events[:3]), created=created, updated=updated)
    now = version(expect_code(ctx.api.get(path), 200, "GET of the pods"))
    live = Watcher(ctx, now)
    create(ctx, "elsewhere", "kube-system")
    create(ctx, "late")
    ctx.wait_until(lambda: "ADDED late" in live.seen() or live.error,
                   expected=f"a watch from resourceVersion {now} to send ADDED late, created after it opened",
                   happened=lambda: f"it sent {live.seen()}")
    if live.seen() != ["ADDED late"]:
        raise StageFailure(f"a watch of namespace default from resourceVersion {now} to send only what came after "
                           "it, and only in default: ADDED late (pod elsewhere is in kube-system)",
                           f"it sent {live.seen()}" + (f" and then {live.error}" if live.error else ""))


def check_replayed_objects(added: dict, modified: dict, deleted: dict, *, created: dict, updated: dict) -> None:
    """Each event's object is the pod as it was at that change: the history is not rewritten."""
    if version(added) != version(created) or added["metadata"].get("labels"):
        raise StageFailure(f"the replayed ADDED web to be the pod as created: resourceVersion {version(created)}, "
                           "no labels", f"it has resourceVersion {version(added)} and labels "
                           f"{added['metadata'].get('labels')}: the update changed the stored pod in place, "
                           "and with it the object of the earlier event")
    if version(modified) != version(updated):
        raise StageFailure(f"the replayed MODIFIED web at the version the PUT answered, {version(updated)}",
                           f"it has resourceVersion {version(modified)}")
    if version(deleted) <= version(modified):
        raise StageFailure(f"the DELETED web at a new resourceVersion, above the MODIFIED one ({version(modified)})",
                           f"it has {version(deleted)}: a watcher that resumes from {version(modified)} "
                           "would never see web go")


def stage_kubectl(ctx: LearnerAPIServer) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise StageFailure("kubectl on PATH (see \"Getting kubectl\" in README.md)", "there is none")
    ctx.start_server()
    created = create(ctx, "web")
    create(ctx, "db")
    (ctx.workdir / "kubeconfig").write_text("")        # yours stays out of it
    base = [kubectl, "-s", ctx.url, "--cache-dir", str(ctx.workdir / "kube-cache"), "--request-timeout", "10s"]
    env = {"KUBECONFIG": str(ctx.workdir / "kubeconfig"), "PATH": "/usr/bin:/bin", "HOME": str(ctx.workdir)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=30, env=env)

    listed = run("get", "pods", "-o", "name")
    if listed.returncode != 0 or sorted(listed.stdout.split()) != ["pod/db", "pod/web"]:
        raise StageFailure("kubectl get pods -o name to print pod/db and pod/web",
                           f"it exited {listed.returncode}: {(listed.stdout + listed.stderr).strip()[:400]}")
    uid = run("get", "pod", "web", "-o", "jsonpath={.metadata.uid}")
    if uid.stdout.strip() != created["metadata"]["uid"]:
        raise StageFailure(f"kubectl get pod web -o jsonpath={{.metadata.uid}} to print {created['metadata']['uid']}",
                           f"it exited {uid.returncode}: {(uid.stdout + uid.stderr).strip()[:400]}")
    deleted = run("delete", "pod", "db", "--wait=false")
    if deleted.returncode != 0 or ctx.api.get("/api/v1/namespaces/default/pods/db").status_code != 404:
        raise StageFailure("kubectl delete pod db to delete it",
                           f"it exited {deleted.returncode}: {(deleted.stdout + deleted.stderr).strip()[:400]}")


STAGES = [
    Stage(1, "create a pod and read it back", stage_create_and_get, ONE_PATH,
          terms=("metadata.uid", "metadata.creationTimestamp", "metadata.resourceVersion", "404", "`NotFound`",
                 "string of digits", "higher one")),
    Stage(2, "list: a namespace's pods, every namespace's, and the version it is as of", stage_list, WATCH,
          terms=("`PodList`", "that namespace only", "GET /api/v1/pods", "every namespace",
                 "the store's version as of the list")),
    Stage(3, "durable: kill -9 and restart, nothing lost, versions never go back", stage_durable, DURABLE,
          terms=("kill -9", "same resourceVersion", "Versions never go backwards", "after a restart")),
    Stage(4, "optimistic concurrency: a write based on an old read is a 409", stage_concurrency, CONCURRENCY,
          terms=("409 Conflict", "older resourceVersion", "unconditional update", "same uid",
                 "uid and creationTimestamp", "404 `NotFound`")),
    Stage(5, "delete, for good, its version never handed out again", stage_delete, DURABLE,
          terms=("stays deleted", "second DELETE 404", "file was removed", "the DELETE of the newest pod")),
    Stage(6, "watch: replay from a version, then live", stage_watch, WATCH,
          terms=("?watch=true&resourceVersion=N", "`ADDED`", "`MODIFIED`", "`DELETED`", "in order",
                 "as it was at that change", "new resourceVersion", "only that namespace")),
    Stage(7, "the real kubectl lists, reads and deletes your pods", stage_kubectl, KUBECTL,
          terms=("discovery", "`APIResourceList`", "-o name", "-o jsonpath", "DELETE")),
]
