"""Your own controller for your own kind: the operator pattern.

`python 04-controllers/website_controller.py --apiserver URL`

A Website (manifests/website-crd.yaml) says "serve this message from this
many web servers". Nothing in the cluster knows what that means until this
controller reads it: for every Website it keeps a Deployment of busybox
web servers answering with the message, and a Service in front of them,
and reports back in the Website's status how many are available and where
the site answers. It is built exactly like the controllers in the
controller manager (informers -> work queue -> reconcile(key)); only the
kind is ours. That is all an "operator" is.

It runs as its own process, not inside controller_manager.py: an operator
ships and upgrades apart from the cluster, and it needs its CRD installed,
which the core controllers must never depend on.

The Website owns what it made (ownerReferences), as a ReplicaSet owns its
pods. Kubernetes' garbage collector watches every kind discovery lists, so
there deleting a Website deletes its Deployment and Service too; ours
(garbage_collector.py) watches a fixed list of kinds that does not include
Websites yet, so here they stay until you delete them.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common.client import kubeconfig  # noqa: E402
from common.client.client import AlreadyExists, NotFound, client_from_args  # noqa: E402
from common.client.events import EventRecorder  # noqa: E402
from common.log import get_logger  # noqa: E402
from controller import Controller, Informers, split_key  # noqa: E402
from ownership import controller_of, owner_reference  # noqa: E402

GROUP_VERSION = "example.groundup.dev/v1"
IMAGE = "busybox:1.35"
PORT = 8080


# [START website-desired]
def desired_deployment(website: dict) -> dict:
    """The Deployment a Website should have: busybox httpd serving the
    message, which reaches the container as an environment variable."""
    name, labels = website["metadata"]["name"], {"website": website["metadata"]["name"]}
    serve = 'mkdir -p /www && echo "$MESSAGE" > /www/index.html && exec httpd -f -p 8080 -h /www'
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": website["metadata"]["namespace"], "labels": labels,
                     "ownerReferences": [owner_reference(website)]},
        "spec": {"replicas": website["spec"].get("replicas", 1), "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{
                                  "name": "httpd", "image": IMAGE, "command": ["sh", "-c", serve],
                                  "env": [{"name": "MESSAGE", "value": website["spec"]["message"]}],
                                  "ports": [{"containerPort": PORT, "name": "http"}]}]}}}}


def desired_service(website: dict) -> dict:
    name = website["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": website["metadata"]["namespace"],
                         "ownerReferences": [owner_reference(website)]},
            "spec": {"selector": {"website": name}, "ports": [{"port": 80, "targetPort": "http"}]}}


def observed_status(website: dict, deployment: dict | None) -> dict:
    meta = website["metadata"]
    available = ((deployment or {}).get("status") or {}).get("availableReplicas", 0)
    return {"availableReplicas": available, "observedGeneration": meta.get("generation", 1),
            "url": f"http://{meta['name']}.{meta['namespace']}.svc.cluster.local"}
# [END website-desired]


def _same_deployment(current: dict, wanted: dict) -> bool:
    """Compare only what we set: the server fills in defaults (imagePullPolicy,
    terminationMessagePath, ...) that a whole-template compare would fight."""
    def ours(deployment: dict) -> tuple:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        return (deployment["spec"].get("replicas"), container.get("image"), container.get("command"),
                container.get("env"))
    return ours(current) == ours(wanted)


class WebsiteController(Controller):
    name = "website"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.websites = self.informers.get(GROUP_VERSION, "websites")
        self.deployments = self.informers.get("apps/v1", "deployments")
        self.services = self.informers.get("v1", "services")
        self.websites.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))
        for informer in (self.deployments, self.services):
            # A change to something a Website owns: look at that Website again.
            informer.add_handler(on_add=self.enqueue_owner, on_update=lambda old, new: self.enqueue_owner(new),
                                 on_delete=self.enqueue_owner)

    def enqueue_owner(self, obj: dict) -> None:
        owner = controller_of(obj)
        if owner and owner.get("kind") == "Website" and owner.get("apiVersion") == GROUP_VERSION:
            self.queue.add(f"{obj['metadata']['namespace']}/{owner['name']}")

    # [START website-reconcile]
    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        website = self.websites.get(namespace, name)
        if website is None or website["metadata"].get("deletionTimestamp"):
            return                    # the garbage collector removes what it owned
        deployment = self._ensure(self.deployments, "apps/v1", "deployments", desired_deployment(website),
                                  _same_deployment, website)
        self._ensure(self.services, "v1", "services", desired_service(website),
                     lambda current, wanted: current["spec"].get("selector") == wanted["spec"]["selector"], website)
        status = observed_status(website, deployment)
        if website.get("status") != status:
            self.client.update_status(GROUP_VERSION, "websites", {**website, "status": status})
    # [END website-reconcile]

    def _ensure(self, informer, group_version: str, plural: str, wanted: dict, same, website: dict) -> dict:
        """Create the object, or bring the fields we own back in line."""
        meta = wanted["metadata"]
        current = informer.get(meta["namespace"], meta["name"])
        if current is None:
            try:
                created = self.client.create(group_version, plural, wanted, meta["namespace"])
            except AlreadyExists:
                # Made by our previous reconcile, which the cache has not
                # caught up with yet: nothing was created now, so no event.
                return self.client.get(group_version, plural, meta["namespace"], meta["name"])
            self.events.event(website, "Normal", "Created", f"Created {wanted['kind']} {meta['name']}")
            return created
        if controller_of(current) is None or controller_of(current).get("uid") != website["metadata"]["uid"]:
            self.events.event(website, "Warning", "NotOwned",
                              f"{wanted['kind']} {meta['name']} exists and is not this Website's: leaving it alone")
            return current
        if same(current, wanted):
            return current
        try:
            return self.client.update(group_version, plural, {**current, "spec": {**current["spec"], **wanted["spec"]}})
        except NotFound:
            return current


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="website_controller.py", description=__doc__.split("\n\n")[0])
    kubeconfig.add_flags(parser)
    parser.add_argument("--workers", type=int, default=2, help="reconcile threads (default 2)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("website-controller")
    client = client_from_args(args, "website-controller", log)
    if client is None:
        return 2                  # no API server: said why
    informers = Informers(client)
    controller = WebsiteController(client, informers, EventRecorder(client, "website-controller", log=log).start(),
                                   log, workers=args.workers)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    informers.start()
    while not informers.wait_for_sync(timeout=1):   # the CRD may not be there yet: keep trying
        if stop.is_set():
            return 0
    controller.start()
    log.info("controllers running", controllers="website")
    stop.wait()
    controller.stop()
    informers.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
