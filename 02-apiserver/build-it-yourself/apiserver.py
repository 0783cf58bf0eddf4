"""Your API server: chapter 02's idea, written by you, one stage at a time.

    python 02-apiserver/build-it-yourself/apiserver.py --data-dir /tmp/my-data --port 8080

It serves one kind, pods, the way Kubernetes does: objects in a dict,
mirrored to one JSON file each; every write numbered by one counter (the
resourceVersion); a write based on an old read refused; every change
streamed to watchers. Written for you: the HTTP routes (Flask), errors as
Kubernetes Status objects, writing a file atomically, saving the
resourceVersion ceiling, and the discovery documents the real kubectl
reads before anything else. Yours to write, at the places marked
TODO(stage N), is the store and the watch, about 50 lines; each TODO says
what to write, and names the lesson section that explains why.

Grade your work with `make stage-02` (STAGE=N for one stage, MINE=path
for your own copy). The stages talk to it only over HTTP, and in the end
with the real kubectl.
"""
from __future__ import annotations

import argparse
import json
import os
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path

from flask import Flask, Response, jsonify, request


class ApiError(Exception):
    """An answer that is a Kubernetes Status: code, reason, message."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def not_found(name: str) -> ApiError:
    return ApiError(404, "NotFound", f'pods "{name}" not found')


def write_atomically(path: Path, text: str) -> None:
    """Replace the file at path: a crash leaves the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


# ---------------------------------------------------------------- the store

VERSION_BLOCK = 1000     # resourceVersions reserved at a time in DATA/resource-version


class Store:
    """Pods in a dict, each mirrored to DATA/pods/NAMESPACE/NAME.json."""

    def __init__(self, data_dir: str):
        self.dir = Path(data_dir) / "pods"
        self.ceiling_file = Path(data_dir) / "resource-version"
        self.pods: dict[tuple[str, str], dict] = {}    # (namespace, name) -> pod
        self.version = 0                                # the last resourceVersion given out
        self.reserved = 0                               # the ceiling saved in ceiling_file
        self.history: list[dict] = []                   # every change since start: {"type", "object"}
        self.changed = threading.Condition()            # one lock for all; watchers wait on it
        self.load()

    def load(self) -> None:
        # TODO(stage 3): read every DATA/pods/*/*.json back into self.pods,
        # and set self.version to the number in self.ceiling_file, the
        # ceiling next_version() saved (0 if there is no such file yet), so
        # that numbers never go backwards after a restart. Not the highest
        # resourceVersion among the pods: a delete takes a version too and
        # leaves no file, and a number handed out twice fools a watcher
        # (stage 5 checks that, once you can delete). Lesson: "Durable: one
        # JSON file per object" in lesson-1-store-rest-watch.md.
        pass

    def save(self, pod: dict) -> None:
        write_atomically(self.dir / pod["metadata"]["namespace"] / f"{pod['metadata']['name']}.json",
                         json.dumps(pod))

    def remove_file(self, namespace: str, name: str) -> None:
        (self.dir / namespace / f"{name}.json").unlink(missing_ok=True)

    def next_version(self) -> str:
        """Call with self.changed held: the number for the next write, as Kubernetes sends it (a string).

        Before it hands out a number above the ceiling saved in
        self.ceiling_file, it saves a new ceiling a block higher, so every
        number handed out is at most the saved ceiling, even after kill -9:
        one file write per 1,000 versions, not one per write."""
        self.version += 1
        if self.version > self.reserved:
            self.reserved = self.version + VERSION_BLOCK
            write_atomically(self.ceiling_file, f"{self.reserved}\n")
        return str(self.version)

    def record(self, kind: str, pod: dict) -> None:
        """Call with self.changed held: remember the change, wake the watchers."""
        self.history.append({"type": kind, "object": pod})
        self.changed.notify_all()

    def create(self, namespace: str, pod: dict) -> dict:
        meta = pod.setdefault("metadata", {})
        with self.changed:
            if (namespace, meta.get("name")) in self.pods:
                raise ApiError(409, "AlreadyExists", f'pods "{meta.get("name")}" already exists')
            meta.update(namespace=namespace, uid=str(uuid.uuid4()), resourceVersion=self.next_version(),
                        creationTimestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
            self.save(pod)
            self.pods[namespace, meta["name"]] = pod
            self.record("ADDED", pod)
        return pod

    def get(self, namespace: str, name: str) -> dict:
        # TODO(stage 1): the pod, or raise not_found(name). Lesson: "One
        # path for every request" in lesson-1-store-rest-watch.md.
        raise ApiError(501, "NotImplemented", "Store.get is yours to write: see TODO(stage 1)")

    def list(self, namespace: str | None) -> dict:
        # TODO(stage 2): a PodList: {"apiVersion": "v1", "kind": "PodList",
        # "metadata": {"resourceVersion": the store's version now}, "items":
        # the pods of that namespace (None: of every namespace)}. Lesson:
        # "Watch: one history, many cursors" (list, then watch from its
        # version) in lesson-1-store-rest-watch.md.
        raise ApiError(501, "NotImplemented", "Store.list is yours to write: see TODO(stage 2)")

    def update(self, namespace: str, name: str, pod: dict) -> dict:
        # TODO(stage 4): replace the stored pod by the pod sent, unless that
        # carries a metadata.resourceVersion other than the stored one:
        # then raise ApiError(409, "Conflict", ...). One sent without a
        # resourceVersion is an unconditional update (Kubernetes allows it
        # for pods): no check. Keep the stored uid and creationTimestamp (a
        # client may leave them out), give it the next version, save it
        # (an update lost in a crash is a lie told to the client), put it
        # in self.pods and record "MODIFIED". Never change the stored dict
        # itself: it is the object of an event in self.history already.
        # Lesson: "Optimistic concurrency" in lesson-1-store-rest-watch.md.
        raise ApiError(501, "NotImplemented", "Store.update is yours to write: see TODO(stage 4)")

    def delete(self, namespace: str, name: str) -> dict:
        # TODO(stage 5): remove the pod and its file; record "DELETED" with
        # a copy of the pod at a new resourceVersion (a delete is a change,
        # and a watcher must be able to resume after the pod's last version
        # and still see it go); return it (404 if there is none). Lesson:
        # "Durable: one JSON file per object" in lesson-1-store-rest-watch.md.
        raise ApiError(501, "NotImplemented", "Store.delete is yours to write: see TODO(stage 5)")

    def watch(self, namespace: str | None, since: int, stop: threading.Event):
        # TODO(stage 6): a generator: yield every change to the pods of
        # `namespace` (None: of every namespace) after resourceVersion
        # `since`, in order ({"type": ..., "object": ...} from
        # self.history), then wait on self.changed for more (a second at a
        # time, to notice stop), until stop is set. Yield outside the lock:
        # a slow client must not hold up the writers. (self.history starts
        # empty at every start; the lesson's server keeps an event log on
        # disk, so a watch resumes across a restart. Yours needn't.)
        # Lesson: "Watch: one history, many cursors" in lesson-1-store-rest-watch.md.
        raise ApiError(501, "NotImplemented", "Store.watch is yours to write: see TODO(stage 6)")


# ---------------------------------------------------------------- HTTP

def create_app(store: Store) -> Flask:
    app = Flask(__name__)

    @app.errorhandler(ApiError)
    def status(error: ApiError):
        return jsonify({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                        "message": error.message, "reason": error.reason, "code": error.code}), error.code

    @app.get("/healthz")
    def healthz():
        return "ok"

    @app.get("/api/v1/pods")
    @app.get("/api/v1/namespaces/<namespace>/pods")
    def pods(namespace: str | None = None):
        if request.args.get("watch") in ("true", "1"):
            return watch(namespace, int(request.args.get("resourceVersion") or store.version))
        return jsonify(store.list(namespace))

    @app.post("/api/v1/namespaces/<namespace>/pods")
    def create(namespace: str):
        return jsonify(store.create(namespace, request.get_json())), 201

    @app.get("/api/v1/namespaces/<namespace>/pods/<name>")
    def get(namespace: str, name: str):
        return jsonify(store.get(namespace, name))

    @app.put("/api/v1/namespaces/<namespace>/pods/<name>")
    def update(namespace: str, name: str):
        return jsonify(store.update(namespace, name, request.get_json()))

    @app.delete("/api/v1/namespaces/<namespace>/pods/<name>")
    def delete(namespace: str, name: str):
        return jsonify(store.delete(namespace, name))

    def watch(namespace: str | None, since: int) -> Response:
        """One long response, one JSON event per line, until the client goes
        or timeoutSeconds passes."""
        stop = threading.Event()
        events = store.watch(namespace, since, stop)
        timer = threading.Timer(float(request.args.get("timeoutSeconds") or 1800), stop.set)
        timer.daemon = True                    # Ctrl-C does not wait for it
        timer.start()

        def lines():
            try:
                for event in events:
                    yield json.dumps(event) + "\n"
            finally:
                stop.set()
        return Response(lines(), mimetype="application/json")

    add_discovery(app)
    return app


def add_discovery(app: Flask) -> None:
    """What kubectl asks before `kubectl get pods`: which API versions and
    kinds this server has (machinery: chapter 02's kubectl_compat/ has the
    full story). Ours: the core group v1, with pods in it."""
    @app.get("/api")
    def versions():
        return jsonify({"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}]})

    @app.get("/apis")
    def groups():
        return jsonify({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})

    @app.get("/api/v1")
    def resources():
        return jsonify({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "shortNames": ["po"],
             "verbs": ["create", "delete", "get", "list", "update", "watch"]}]})


def main() -> None:
    parser = argparse.ArgumentParser(description="Your API server (chapter 02, build it yourself).")
    parser.add_argument("--data-dir", required=True, help="where the JSON files live (created if missing)")
    parser.add_argument("--port", type=int, default=8080, help="the port on 127.0.0.1 (default 8080)")
    args = parser.parse_args()
    create_app(Store(args.data_dir)).run(host="127.0.0.1", port=args.port, threaded=True)


if __name__ == "__main__":
    main()
