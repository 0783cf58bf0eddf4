"""Your ingress routing rules: chapter 05's ingress controller, with the match written by you.

    python 05-proxy-dns/build-it-yourself/ingress_match.py --apiserver http://127.0.0.1:8080 \\
        --port 8081 --https-port 0

Written for you (the machinery, read it once): the whole ingress
controller of part 5 (05-proxy-dns/ingress_controller.py): its command
line, the informers, the routing table rebuilt from them after every
change (ingress/routes.py: one Route per path of every Ingress of its
class, oldest Ingress first, grouped by host), and the proxy that streams
each request to a ready pod (ingress/forward.py). Yours to write is the
match, the functions below marked TODO(stage N): which route a request's
host and path take, or none. The proxy calls your match() for every
request; None answers 404.

Grade your work with `make stage-05-ingress` (every stage up to the first
that fails) or `make stage-05-ingress STAGE=2` (one stage); with your own
copy of this file, add MINE=path/to/it.py. The stages only send HTTP
requests through your controller, so change anything you like, as long as
it keeps this command line.
"""
from __future__ import annotations

import sys
import traceback
from pathlib import Path

import common

# The controller's modules live in 05-proxy-dns/, next to common/: found from
# common's place, so a copy of this file kept anywhere still finds them.
sys.path.insert(0, str(Path(common.__file__).resolve().parent.parent / "05-proxy-dns"))

import ingress_controller  # noqa: E402
from ingress.routes import Backend, Route, RoutingTable  # noqa: E402,F401


def hostname(host_header: str) -> str:
    """The Host header without its port, lower-cased: "Shop.Example.com:8080" -> "shop.example.com"
    (written for you)."""
    host = host_header.strip().lower()
    if host.startswith("["):                     # an IPv6 literal: [::1]:8080
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def wildcard_of(host: str) -> str | None:
    # TODO(stage 2): the one wildcard rule a host can match: a wildcard
    # stands for exactly one label, the first, so "shop.example.com" ->
    # "*.example.com"; "a.shop.example.com" -> "*.shop.example.com" (never
    # "*.example.com"); a host of one label ("localhost") has none: None.
    # Lesson: "The match" in 05-proxy-dns/lesson-5-from-outside-in.md.
    return None


def routes_for_host(table: RoutingTable, host: str) -> list[Route]:
    # TODO(stage 2): the routes of the most specific host level that has
    # any: table.routes is {host: [Route, ...]}, where the host is exact
    # ("shop.example.com"), a wildcard ("*.example.com") or '' (rules with
    # no host: any host). The exact host first, then its wildcard
    # (wildcard_of), then '': the first that is in table.routes gives all
    # the routes; none: []. The level is chosen before the path: a host
    # whose paths all miss does not fall back to the rules with no host.
    # Until then, only the exact host. Lesson: "The match" in
    # lesson-5-from-outside-in.md.
    return table.routes.get(host, [])


def path_matches(route: Route, path: str) -> bool:
    # TODO(stage 1): does the request's path (no query string: "/foo/bar")
    # match the route's? route.path_type "Exact": the whole path, as
    # written (case matters). "Prefix": whole elements, split by "/":
    # "/foo" matches "/foo" and "/foo/bar", not "/foobar"; a trailing slash
    # is ignored ("/foo/" is "/foo"), and "/" matches every path. (An
    # Ingress's "ImplementationSpecific" arrives here as "Prefix": the
    # table reads it so: each controller defines its own.) Lesson: "The match" in
    # lesson-5-from-outside-in.md.
    raise NotImplementedError("path_matches() is yours to write: see TODO(stage 1)")


def most_specific(candidates: list[Route]) -> Route:
    # TODO(stage 3): of the routes that match (at least one), the one that
    # wins: the longest path ("/api/v1" before "/api" before "/"; a
    # trailing slash not counted), and of two as long, Exact before
    # Prefix. Until then, the first. Lesson: "The match" in
    # lesson-5-from-outside-in.md.
    return candidates[0]


def match(table: RoutingTable, host_header: str, path: str) -> Backend | None:
    # TODO(stage 1): the backend for one request: path is what the client
    # sent after the method ("/foo/bar?q=1": drop the query; an empty path is "/"),
    # host_header its Host header (hostname() cleans it). The routes of
    # routes_for_host() whose path_matches(); none: the table's
    # default_backend (None if the Ingresses name none: a 404); else
    # most_specific() of them, its .backend. Lesson: "The match" in
    # lesson-5-from-outside-in.md.
    raise NotImplementedError("match() is yours to write: see TODO(stage 1)")


def match_and_show_errors(table: RoutingTable, host_header: str, path: str) -> Backend | None:
    """Your match(), with any error it raises printed whole (written for
    you): the proxy closes that request's connection and goes on, and
    the stages show your program's last lines."""
    try:
        return match(table, host_header, path)
    except Exception:
        traceback.print_exc()
        raise


if __name__ == "__main__":
    sys.exit(ingress_controller.main(match=match_and_show_errors))
