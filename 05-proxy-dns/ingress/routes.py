"""The routing table: every Ingress of our class, flattened into routes.

The ingress controller keeps a local copy of Ingresses, IngressClasses,
Services and EndpointSlices (informers), and after any change builds
this table again from them, whole. A request then needs no API
call: it looks up its host and path here (match.py) and gets the ready
pod addresses to send it to.

Building it whole is the simplest thing that is right: the table is a
pure function of the four caches, so no event can leave it half-updated.
It costs a pass over our Ingresses per change, fine for hundreds of them;
ingress-nginx does the same (it renders its whole nginx.conf), and only
avoids reloading nginx when just the endpoints changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# The class annotations Kubernetes defines.
CLASS_ANNOTATION = "kubernetes.io/ingress.class"          # before spec.ingressClassName existed
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"           # how an EndpointSlice names its Service


@dataclass(frozen=True)
class Backend:
    """A Service port an Ingress names, by number or by name."""
    namespace: str
    service: str
    port: int | str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.service}:{self.port}"


@dataclass(frozen=True)
class Route:
    host: str            # "" for any host, "*.example.com", or "shop.example.com"
    path: str            # "/api"
    path_type: str       # "Exact" or "Prefix" (ImplementationSpecific is read as Prefix)
    backend: Backend
    ingress: str         # "namespace/name" of the Ingress it comes from


@dataclass(frozen=True)
class Target:
    """Where a backend's requests go right now, or why nowhere."""
    endpoints: tuple[tuple[str, int], ...] = ()
    problem: str = ""    # e.g. 'service "default/web" not found'


@dataclass
class RoutingTable:
    routes: dict[str, list[Route]] = field(default_factory=dict)   # by host ("" = any)
    default_backend: Backend | None = None
    targets: dict[Backend, Target] = field(default_factory=dict)
    tls: dict[str, str] = field(default_factory=dict)              # host -> "namespace/secret"
    ingresses: list[dict] = field(default_factory=list)            # the Ingresses we serve
    conflicts: list[str] = field(default_factory=list)

    def target(self, backend: Backend) -> Target:
        return self.targets.get(backend) or Target(problem=f"backend {backend} unknown")


# [START is-ours]
def is_ours(ingress: dict, class_name: str, classes: dict[str, dict]) -> bool:
    """An Ingress is ours if it names our class (in the field, or in the
    annotation that came before it), or names none while our class is the
    cluster's default (its IngressClass says so in an annotation)."""
    named = (ingress.get("spec") or {}).get("ingressClassName") or \
        ((ingress.get("metadata") or {}).get("annotations") or {}).get(CLASS_ANNOTATION)
    if named:
        return named == class_name
    ours = classes.get(class_name) or {}
    return ((ours.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
# [END is-ours]


def oldest_first(ingresses: list[dict]) -> list[dict]:
    """Kubernetes' controllers merge Ingresses oldest first, so that when two
    claim the same host and path the one that was there first keeps it."""
    def age_key(ing: dict):
        meta = ing.get("metadata") or {}
        return meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or ""
    return sorted(ingresses, key=age_key)


def backend_of(spec: dict | None, namespace: str) -> Backend | None:
    service = (spec or {}).get("service")
    if not isinstance(service, dict):
        return None                 # a resource backend: for controllers that serve objects, not us
    port = service.get("port") or {}
    return Backend(namespace, service.get("name") or "", port.get("number") or port.get("name") or 0)


# [START routes-from-ingresses]
def routes_of(ingress: dict) -> list[Route]:
    """One Route per path of every rule of one Ingress."""
    meta = ingress["metadata"]
    namespace, name = meta.get("namespace") or "default", meta["name"]
    routes = []
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for http_path in ((rule.get("http") or {}).get("paths")) or []:
            backend = backend_of(http_path.get("backend"), namespace)
            if backend is None:
                continue
            path_type = "Exact" if http_path.get("pathType") == "Exact" else "Prefix"
            routes.append(Route(rule.get("host") or "", http_path.get("path") or "/", path_type,
                                backend, f"{namespace}/{name}"))
    return routes


def merge(ingresses: list[dict], table: RoutingTable) -> None:
    """Every route of every Ingress, oldest Ingress first; a later claim on a
    host, path and type already taken loses, and is logged."""
    taken: dict[tuple[str, str, str], Route] = {}
    for ingress in oldest_first(ingresses):
        for route in routes_of(ingress):
            claim = (route.host, route.path, route.path_type)
            if claim in taken and taken[claim].ingress != route.ingress:
                table.conflicts.append(f"{route.ingress}: {route.path_type} {route.host or '*'}{route.path} "
                                       f"is already served by {taken[claim].ingress} (older): ignored")
                continue
            taken.setdefault(claim, route)
            table.routes.setdefault(route.host, []).append(route)
# [END routes-from-ingresses]


# [START default-backends]
def add_default_backends(ingresses: list[dict], table: RoutingTable) -> None:
    """An Ingress's defaultBackend, read as ingress-nginx reads it. With no
    rules, it is the catch-all for what no rule of any host matches (the
    oldest such Ingress's). With rules, it only takes the paths its own
    hosts do not match (a "/" Prefix route, for each host it is the first
    to name, unless some Ingress has one there): never other hosts'
    traffic, so not another namespace's."""
    first_named: set[str] = set()
    for ingress in oldest_first(ingresses):
        spec, meta = ingress.get("spec") or {}, ingress["metadata"]
        default = backend_of(spec.get("defaultBackend"), meta.get("namespace") or "default")
        if not spec.get("rules"):
            if default and table.default_backend is None:
                table.default_backend = default
            continue
        for host in [rule.get("host") or "" for rule in spec["rules"]]:
            if not host or host in first_named:
                continue                            # no host: the any-host level, not this Ingress's own
            first_named.add(host)
            has_root = any(r.path == "/" and r.path_type == "Prefix" for r in table.routes.get(host, []))
            if default and not has_root:
                table.routes.setdefault(host, []).append(
                    Route(host, "/", "Prefix", default, f"{meta.get('namespace') or 'default'}/{meta['name']}"))
# [END default-backends]


# [START resolve-backend]
def resolve(backend: Backend, services: dict, slices: list[dict]) -> Target:
    """The ready pod addresses behind a Service port, from its EndpointSlices.

    The Ingress names the Service's port (80, or "http"); the pods listen on
    its targetPort, which each slice states by the Service port's name.
    So: the Service port -> its name -> that port in each slice."""
    service = services.get((backend.namespace, backend.service))
    if service is None:
        return Target(problem=f'service "{backend.namespace}/{backend.service}" not found')
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return Target(problem=f'service "{backend.namespace}/{backend.service}" is an ExternalName')
    wanted = next((p for p in spec.get("ports") or []
                   if backend.port in (p.get("port"), p.get("name"))), None)
    if wanted is None:
        return Target(problem=f'service "{backend.namespace}/{backend.service}" has no port {backend.port}')
    port_name = wanted.get("name") or ""
    endpoints = set()
    for slice_ in slices:
        labels = (slice_.get("metadata") or {}).get("labels") or {}
        if slice_["metadata"].get("namespace") != backend.namespace or \
                labels.get(SERVICE_NAME_LABEL) != backend.service:
            continue
        port = next((p.get("port") for p in slice_.get("ports") or [] if (p.get("name") or "") == port_name), None)
        if port is None:
            continue
        for endpoint in slice_.get("endpoints") or []:
            # ready unset means ready (the API's rule); terminating pods get no new requests.
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                endpoints.update((address, port) for address in endpoint.get("addresses") or [])
    if not endpoints:
        return Target(problem=f'service "{backend.namespace}/{backend.service}" has no ready endpoint')
    return Target(tuple(sorted(endpoints)))
# [END resolve-backend]


def build(ingresses: list[dict], classes: list[dict], services: list[dict], slices: list[dict],
          class_name: str) -> RoutingTable:
    """The table for the Ingresses of class_name, from the four caches."""
    by_class = {c["metadata"]["name"]: c for c in classes}
    ours = [i for i in ingresses if is_ours(i, class_name, by_class)]
    table = RoutingTable(ingresses=ours)
    merge(ours, table)
    add_default_backends(ours, table)
    by_key = {(s["metadata"].get("namespace"), s["metadata"]["name"]): s for s in services}
    backends = {r.backend for routes in table.routes.values() for r in routes}
    if table.default_backend:
        backends.add(table.default_backend)
    table.targets = {b: resolve(b, by_key, slices) for b in backends}
    table.tls = tls_hosts(ours)
    return table


def tls_hosts(ingresses: list[dict]) -> dict[str, str]:
    """host -> "namespace/secretName", oldest Ingress first; an entry with no
    secret name means "the controller's own certificate" and is left out."""
    hosts: dict[str, str] = {}
    for ingress in oldest_first(ingresses):
        namespace = ingress["metadata"].get("namespace") or "default"
        for entry in (ingress.get("spec") or {}).get("tls") or []:
            if entry.get("secretName"):
                for host in entry.get("hosts") or []:
                    hosts.setdefault(host, f"{namespace}/{entry['secretName']}")
    return hosts
