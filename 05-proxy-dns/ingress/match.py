"""The match: which route of the routing table a request's host and path take.

Kubernetes' Ingress page states the rules every controller follows:

- host: an exact host beats a wildcard (`*.example.com` stands for exactly
  one label: it matches `shop.example.com`, not `example.com` nor
  `a.shop.example.com`), which beats a rule with no host (any host);
- path, Exact: the whole path, as written (case matters);
- path, Prefix: whole elements, split by "/": `/foo` matches `/foo` and
  `/foo/bar`, not `/foobar`; a trailing slash is ignored (`/foo/` is `/foo`);
- when several paths match, the longest wins; of equal length, Exact
  before Prefix.

The host level is chosen first: a request for shop.example.com whose path
matches none of that host's rules does not fall back to the any-host rules
(as in ingress-nginx, where each host is its own server block); it gets the
default backend, or a 404.
"""
from __future__ import annotations

from ingress.routes import Backend, Route, RoutingTable


def hostname(host_header: str) -> str:
    """The Host header without its port, lower-cased: "Shop.Example.com:8080" -> "shop.example.com"."""
    host = host_header.strip().lower()
    if host.startswith("["):                     # an IPv6 literal: [::1]:8080
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def wildcard_of(host: str) -> str | None:
    """The one wildcard a host can match: "shop.example.com" -> "*.example.com"."""
    first, dot, rest = host.partition(".")
    return f"*.{rest}" if dot and first and rest else None


def routes_for_host(table: RoutingTable, host: str) -> list[Route]:
    """The routes of the most specific host level that has any."""
    for candidate in (host, wildcard_of(host), ""):
        if candidate is not None and candidate in table.routes:
            return table.routes[candidate]
    return []


# [START path-match]
def path_matches(route: Route, path: str) -> bool:
    if route.path_type == "Exact":
        return path == route.path
    prefix = [p for p in route.path.split("/") if p]          # "/foo/" -> ["foo"]; "/" -> []
    elements = [p for p in path.split("/") if p]
    return elements[:len(prefix)] == prefix


def most_specific(candidates: list[Route]) -> Route:
    """Of the routes that match, the longest path; of equal length, Exact before Prefix."""
    return max(candidates, key=lambda r: (len(r.path.rstrip("/") or "/"), r.path_type == "Exact"))


def match(table: RoutingTable, host_header: str, path: str) -> Backend | None:
    """The backend for a request, or None: no rule and no default backend (404)."""
    path = path.split("?", 1)[0] or "/"
    candidates = [r for r in routes_for_host(table, hostname(host_header)) if path_matches(r, path)]
    if not candidates:
        return table.default_backend
    return most_specific(candidates).backend
# [END path-match]
