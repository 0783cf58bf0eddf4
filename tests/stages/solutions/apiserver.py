"""One way to fill chapter 02's starter: for the tests, not for reading first.

Each function here replaces the starter's method of the same name
(02-apiserver/build-it-yourself/apiserver.py, the ones marked TODO(stage N));
tests/stages/test_apiserver_stages.py splices them in and checks that the
result passes every stage, and that leaving out stage N's method fails
stage N.
"""


class Store:
    """The starter's Store methods."""

    def load(self) -> None:
        for path in self.dir.glob("*/*.json"):
            pod = json.loads(path.read_text())
            self.pods[pod["metadata"]["namespace"], pod["metadata"]["name"]] = pod
        if self.ceiling_file.exists():
            self.version = int(self.ceiling_file.read_text())

    def get(self, namespace: str, name: str) -> dict:
        with self.changed:
            if (namespace, name) not in self.pods:
                raise not_found(name)
            return self.pods[namespace, name]

    def list(self, namespace: str | None) -> dict:
        with self.changed:
            items = [pod for (ns, _), pod in sorted(self.pods.items()) if namespace in (None, ns)]
            return {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": str(self.version)},
                    "items": items}

    def update(self, namespace: str, name: str, pod: dict) -> dict:
        with self.changed:
            current = self.pods.get((namespace, name))
            if current is None:
                raise not_found(name)
            sent = pod["metadata"].get("resourceVersion")
            if sent and sent != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods "{name}": '
                               "the object has been modified; please apply your changes to the latest version and try again")
            for field in ("namespace", "uid", "creationTimestamp"):
                pod["metadata"][field] = current["metadata"][field]
            pod["metadata"]["resourceVersion"] = self.next_version()
            self.save(pod)
            self.pods[namespace, name] = pod
            self.record("MODIFIED", pod)
            return pod

    def delete(self, namespace: str, name: str) -> dict:
        with self.changed:
            pod = self.pods.pop((namespace, name), None)
            if pod is None:
                raise not_found(name)
            self.remove_file(namespace, name)
            pod = {**pod, "metadata": {**pod["metadata"], "resourceVersion": self.next_version()}}
            self.record("DELETED", pod)
            return pod

    def watch(self, namespace: str | None, since: int, stop: threading.Event):
        seen = 0
        while not stop.is_set():
            with self.changed:
                news = self.history[seen:]
                seen = len(self.history)
                if not news:
                    self.changed.wait(1)
            for event in news:
                meta = event["object"]["metadata"]
                if int(meta["resourceVersion"]) > since and namespace in (None, meta["namespace"]):
                    yield event
