"""What a request is about, read off its URL and method.

    GET    /api/v1/namespaces/default/pods/web        -> get pods "web" in default
    GET    /api/v1/pods?watch=true                    -> watch pods in every namespace
    PATCH  /apis/apps/v1/namespaces/d/deployments/w/scale -> patch deployments/scale
    POST   /api/v1/namespaces/default/pods/web/binding -> create pods/binding

Kubernetes parses every request into such a RequestInfo first (its
RequestInfoFactory), so that authorization can decide on verb, resource,
namespace and name without knowing the handlers. Ours is the same shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import api_errors
import registry

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}


@dataclass(frozen=True)
class RequestInfo:
    verb: str              # get list watch create update patch delete deletecollection
    resource: registry.Resource
    namespace: str         # "" for cluster-scoped kinds and all-namespace lists
    name: str              # "" for collections
    subresource: str       # "", "status", "scale", "binding", "log", "exec", "attach", "portforward"


def _not_found(path: str) -> api_errors.APIError:
    return api_errors.APIError(404, "NotFound", f"the server could not find the requested resource ({path})")


def parse(method: str, path: str, args) -> RequestInfo:
    """`path` is the request's whole URL path, e.g. "/api/v1/namespaces/d/pods/web"."""
    parts = [p for p in path.split("/") if p]
    if path.startswith("/api/"):
        group, rest = "", parts[1:]
        version, rest = (rest[0], rest[1:]) if rest else ("", [])
    else:
        if len(parts) < 3:
            raise _not_found(path)
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    # /namespaces/{ns}/{plural}...: a namespaced resource. /namespaces/{name}
    # alone (or with a subresource such as status) is the Namespace itself.
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise _not_found(path)
    resource = registry.lookup(group, version, rest[0])
    if resource is None:
        raise _not_found(path)
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in resource.subresources:
        raise api_errors.APIError(404, "NotFound", f"{resource} has no subresource {subresource!r}")
    if namespace and not resource.namespaced:
        raise api_errors.APIError(404, "NotFound", f"{resource} are not namespaced: use {path.replace(f'namespaces/{namespace}/', '', 1)}")
    if resource.namespaced and name and not namespace:
        raise api_errors.APIError(404, "NotFound", f"{resource} are namespaced: use .../namespaces/NAMESPACE/{resource.plural}/{name}")
    verb = _VERBS.get(method, "")
    if not verb:
        raise api_errors.method_not_allowed(f"method {method} is not supported")
    if not name:
        watching = str(args.get("watch", "false")).lower() not in ("false", "0")   # as Go reads a query bool
        verb = {"get": "watch" if watching else "list", "delete": "deletecollection"}.get(verb, verb)
        if verb in ("update", "patch"):
            raise api_errors.method_not_allowed(f"{method} needs an object name: .../{resource.plural}/NAME")
    elif verb == "create" and subresource not in ("binding", "token", "exec", "attach", "portforward"):
        raise api_errors.method_not_allowed(f"POST creates in a collection: drop the name {name!r} from the URL")
    return RequestInfo(verb, resource, namespace, name, subresource)


def is_resource_path(path: str) -> bool:
    """True for a URL that names objects (/api/v1/pods, /apis/apps/v1/...);
    False for discovery (/api, /api/v1, /apis/apps/v1) and everything else."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        return len(parts) >= 3
    if parts[:1] == ["apis"]:
        return len(parts) >= 4
    return False
