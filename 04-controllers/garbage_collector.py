"""The garbage collector: objects whose owners are gone go too.

A Deployment owns ReplicaSets, a ReplicaSet owns pods: each dependent names
its owners in metadata.ownerReferences (kind, name and uid). Nothing else
ties them together, so when an owner is deleted someone must follow those
references backwards. That is this controller, for every kind it watches.
How, is the DELETE's propagationPolicy, which the API server turns into a
finalizer on the owner (02-apiserver/admission.py, finalizers_for_delete):

    Background  the owner goes at once; we then find its dependents
                dangling (their owner's uid no longer exists) and delete them
    Foreground  the owner stays, marked, with the `foregroundDeletion`
                finalizer; we delete its dependents, and once none that
                blocks it (blockOwnerDeletion) is left, remove the finalizer
    Orphan      the owner stays with the `orphan` finalizer; we remove it
                from its dependents' ownerReferences, then remove the finalizer

The informers keep a graph of who owns whom (OwnerGraph): which dependents
to look at when an owner changes or goes. Before deleting anything we ask
the server, not the cache, whether the owner really is gone: a cache can
lag, and a dependent deleted by mistake cannot be brought back.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from api_resources import APIResources
from common.client.client import NotFound
from controller import Controller

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"

# The kinds we watch: those that own or are owned in our cluster. Kubernetes
# watches every kind discovery lists; we leave out the ones that carry no
# owner references here and change often (events, endpoints).
WATCHED = (
    ("v1", "pods"), ("apps/v1", "replicasets"), ("apps/v1", "deployments"), ("apps/v1", "daemonsets"),
    ("batch/v1", "jobs"), ("batch/v1", "cronjobs"), ("v1", "replicationcontrollers"),
    ("apps/v1", "statefulsets"), ("apps/v1", "controllerrevisions"),
    ("v1", "persistentvolumeclaims"),      # a StatefulSet's, by its retention policy
    ("discovery.k8s.io/v1", "endpointslices"),
    ("v1", "configmaps"), ("v1", "secrets"), ("v1", "services"),
    ("v1", "nodes"),                       # own mirror pods and kubelets' Leases
    ("coordination.k8s.io/v1", "leases"),
    ("v1", "namespaces"),                  # may carry the orphan or foregroundDeletion finalizer too
)


@dataclass
class Node:
    """One object in the graph: where it lives, and the object as last seen."""
    group_version: str
    plural: str
    obj: dict

    @property
    def uid(self) -> str:
        return self.obj["metadata"]["uid"]

    @property
    def owner_uids(self) -> set[str]:
        return {ref.get("uid") for ref in self.obj["metadata"].get("ownerReferences") or []}

    def describe(self) -> str:
        meta = self.obj["metadata"]
        return "/".join(filter(None, (self.plural, meta.get("namespace"), meta["name"])))


class OwnerGraph:
    """uid -> Node, and owner uid -> its dependents' uids (Kubernetes' GraphBuilder, in small).
    An owner we have not seen still has its dependents listed, by uid."""

    def __init__(self):
        self._nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def put(self, node: Node) -> set[str]:
        """Add or refresh a node; returns the owner uids it no longer names."""
        with self._lock:
            old = self._nodes.get(node.uid)
            dropped = (old.owner_uids if old else set()) - node.owner_uids
            for owner in dropped:
                self._dependents.get(owner, set()).discard(node.uid)
            for owner in node.owner_uids:
                self._dependents.setdefault(owner, set()).add(node.uid)
            self._nodes[node.uid] = node
            return dropped

    def remove(self, uid: str) -> Node | None:
        with self._lock:
            node = self._nodes.pop(uid, None)
            for owner in node.owner_uids if node else ():
                self._dependents.get(owner, set()).discard(uid)
            return node

    def get(self, uid: str) -> Node | None:
        with self._lock:
            return self._nodes.get(uid)

    def dependents(self, uid: str) -> list[Node]:
        with self._lock:
            return [self._nodes[d] for d in self._dependents.get(uid, ()) if d in self._nodes]


# ------------------------------------------------ decisions (pure, table-tested)

SOLID, DANGLING, WAITING = "solid", "dangling", "waiting"   # an owner, as the server sees it


def owner_state(owner: dict | None, ref: dict) -> str:
    """dangling: gone, or another object now has its name (uid differs);
    waiting: being deleted in the foreground, waiting for its dependents;
    solid: there, and keeping its dependents."""
    if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
        return DANGLING
    meta = owner["metadata"]
    if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
        return WAITING
    return SOLID


@dataclass(frozen=True)
class Verdict:
    action: str                                   # "keep", "remove-owner-refs", "delete"
    owner_uids: tuple[str, ...] = ()              # for remove-owner-refs
    policy: str = ""                              # for delete: the propagationPolicy to send
    why: str = field(default="", compare=False)


def decide(owners: dict[str, str], has_dependents: bool, finalizers: list[str]) -> Verdict:
    """What to do with a dependent, given its owners' states by uid."""
    solid = [uid for uid, state in owners.items() if state == SOLID]
    gone_or_going = tuple(uid for uid, state in owners.items() if state != SOLID)
    if solid:
        if gone_or_going:       # still owned: only stop pointing at the others (and blocking them)
            return Verdict("remove-owner-refs", gone_or_going, why="another owner remains")
        return Verdict("keep", why="its owners exist")
    if WAITING in owners.values() and has_dependents:
        # An owner waits for us in the foreground: so must we for ours, or the
        # owner would go before our dependents do.
        return Verdict("delete", policy="Foreground", why="an owner is being deleted in the foreground")
    if ORPHAN in finalizers:
        policy = "Orphan"
    elif FOREGROUND in finalizers:
        policy = "Foreground"
    else:
        policy = "Background"
    return Verdict("delete", policy=policy, why="no owner remains")


def blocks(dependent: dict, owner_uid: str) -> bool:
    """Does this dependent hold up its owner's foreground deletion?"""
    return any(ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion")
               for ref in dependent["metadata"].get("ownerReferences") or [])


def being_deleted_with(obj: dict, finalizer: str) -> bool:
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


# ------------------------------------------------ the controller

class GarbageCollector(Controller):
    """Keys are uids: an owner and its dependents are found by uid, whatever their kind."""
    name = "garbagecollector"

    def __init__(self, *args, watched=WATCHED, **kwargs):
        super().__init__(*args, **kwargs)
        self.graph = OwnerGraph()
        self.resources = APIResources(self.client)
        for group_version, plural in watched:
            informer = self.informers.get(group_version, plural)
            informer.add_handler(on_add=lambda obj, gv=group_version, p=plural: self.changed(gv, p, None, obj),
                                 on_update=lambda old, new, gv=group_version, p=plural: self.changed(gv, p, old, new),
                                 on_delete=self.deleted)

    # ------------------------------------------------ events -> uids to look at

    def changed(self, group_version: str, plural: str, old: dict | None, obj: dict) -> None:
        node = Node(group_version, plural, obj)
        dropped = self.graph.put(node)
        if being_deleted_with(obj, ORPHAN) or being_deleted_with(obj, FOREGROUND):
            self.queue.add(node.uid)                       # an owner with work for us
        if any(self.graph.get(uid) is None for uid in node.owner_uids):
            self.queue.add(node.uid)                       # an owner we never saw: does it exist?
        for uid in dropped:                                # no longer blocks that owner
            self._owner_may_be_done(uid)

    def deleted(self, obj: dict) -> None:
        uid = obj["metadata"]["uid"]
        node = self.graph.remove(uid)
        for dependent in self.graph.dependents(uid):       # now dangling
            self.queue.add(dependent.uid)
        for owner_uid in node.owner_uids if node else ():  # one blocker fewer
            self._owner_may_be_done(owner_uid)

    def _owner_may_be_done(self, uid: str) -> None:
        owner = self.graph.get(uid)
        if owner is not None and being_deleted_with(owner.obj, FOREGROUND):
            self.queue.add(uid)

    # ------------------------------------------------ reconcile

    # [START garbage-collector-reconcile]
    def reconcile(self, uid: str) -> None:
        node = self.graph.get(uid)
        if node is None:
            return                                         # gone meanwhile: nothing left to do
        obj = self._latest(node)                           # the server's word, not the cache's
        if obj is None:
            return
        if being_deleted_with(obj, ORPHAN):
            self.orphan_dependents(node, obj)
        elif being_deleted_with(obj, FOREGROUND):
            self.delete_dependents_first(node, obj)
        elif obj["metadata"].get("ownerReferences") and not obj["metadata"].get("deletionTimestamp"):
            self.collect_if_unowned(node, obj)
    # [END garbage-collector-reconcile]

    def _latest(self, node: Node) -> dict | None:
        meta = node.obj["metadata"]
        try:
            obj = self.client.get(node.group_version, node.plural, meta.get("namespace"), meta["name"])
        except NotFound:
            return None
        return obj if obj["metadata"].get("uid") == node.uid else None   # a new object of the same name

    def collect_if_unowned(self, node: Node, obj: dict) -> None:
        owners = {ref.get("uid"): self.owner_state(obj, ref) for ref in obj["metadata"]["ownerReferences"]}
        verdict = decide(owners, bool(self.graph.dependents(node.uid)), obj["metadata"].get("finalizers") or [])
        if verdict.action == "remove-owner-refs":
            self.remove_owner_refs(node, obj, set(verdict.owner_uids))
        elif verdict.action == "delete":
            self.log.info("deleting", controller=self.name, obj=node.describe(), policy=verdict.policy,
                          why=verdict.why)
            try:
                self.client.delete(node.group_version, node.plural, obj["metadata"].get("namespace"),
                                   obj["metadata"]["name"], propagation_policy=verdict.policy,
                                   preconditions={"uid": node.uid})
            except NotFound:
                pass

    def owner_state(self, dependent: dict, ref: dict) -> str:
        """Ask the server for the owner a reference names (by kind, name and uid)."""
        resource = self.resources.for_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if resource is None:
            # A kind this server does not serve: we cannot tell whether the
            # owner exists, so we must not delete (Kubernetes waits too).
            self.log.info("owner of unknown kind", controller=self.name, kind=ref.get("kind"),
                          apiVersion=ref.get("apiVersion"))
            return SOLID
        namespace = dependent["metadata"].get("namespace")
        if resource.namespaced and not namespace:
            # A cluster-scoped object cannot be owned by a namespaced one: no such owner exists.
            self.events.event(dependent, "Warning", "OwnerRefInvalidNamespace",
                              f"ownerRef {ref} does not exist in namespace \"\"")
            return DANGLING
        try:
            owner = self.client.get(resource.group_version, resource.plural,
                                    namespace if resource.namespaced else None, ref.get("name", ""))
        except NotFound:
            owner = None
        return owner_state(owner, ref)

    def remove_owner_refs(self, node: Node, obj: dict, owner_uids: set[str]) -> None:
        """Patch guarded by resourceVersion: a Conflict means read again and decide again."""
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in owner_uids]
        try:
            self.client.patch(node.group_version, node.plural, meta.get("namespace"), meta["name"],
                              {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta["resourceVersion"]}})
        except NotFound:
            pass

    def orphan_dependents(self, node: Node, owner: dict) -> None:
        for dependent in self.graph.dependents(node.uid):
            latest = self._latest(dependent)
            if latest is not None and node.uid in Node(dependent.group_version, dependent.plural, latest).owner_uids:
                self.remove_owner_refs(dependent, latest, {node.uid})
                self.log.info("orphaned", controller=self.name, obj=dependent.describe(), owner=node.describe())
        self.remove_finalizer(node, owner, ORPHAN)

    def delete_dependents_first(self, node: Node, owner: dict) -> None:
        dependents = self.graph.dependents(node.uid)
        for dependent in dependents:
            if not dependent.obj["metadata"].get("deletionTimestamp"):
                self.queue.add(dependent.uid)              # each decides (owner WAITING) and goes
        if not any(blocks(d.obj, node.uid) for d in dependents):
            self.remove_finalizer(node, owner, FOREGROUND)

    def remove_finalizer(self, node: Node, obj: dict, finalizer: str) -> None:
        """The last step: with no finalizer left, the API server removes the object."""
        meta = obj["metadata"]
        rest = [f for f in meta.get("finalizers") or [] if f != finalizer]
        try:
            self.client.patch(node.group_version, node.plural, meta.get("namespace"), meta["name"],
                              {"metadata": {"finalizers": rest or None, "resourceVersion": meta["resourceVersion"]}})
        except NotFound:
            return
        self.log.info("removed finalizer", controller=self.name, obj=node.describe(), finalizer=finalizer)
