"""`Accept`: which format answers a request for objects, as Kubernetes negotiates it.

Kubernetes serves every kind as JSON, YAML and protobuf, and answers with
the first of them the request's `Accept` allows (k8s.io/apiserver's
negotiation package). When none is allowed it answers 406 NotAcceptable,
naming the types it has:

    Accept: (none), */*, application/*, application/json   JSON
    Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...  JSON (a Table: printers.py)
    Accept: application/vnd.kubernetes.protobuf,...           JSON: we read protobuf but do not
                                                              write it, and client-go reads the JSON
    Accept: application/yaml                                  YAML (a watch: 406, YAML has no stream form)
    Accept: image/png                                         406 NotAcceptable

The handlers all answer JSON; `init_app` (__init__.py) registers two
hooks around them: `negotiate` before, which refuses what cannot be
satisfied, and `encode_answer` after, which rewrites a JSON answer as
YAML when YAML was chosen. A log, exec, attach
or port-forward answers in its own format and is left alone.

Unlike Kubernetes, which negotiates after authenticating, the hook runs
first, so a request nobody may make can get its 406 before its 401: it
learns only which formats the server speaks.
"""
from __future__ import annotations

import json

import yaml
from flask import g, request

import api_errors
import request_info

JSON, YAML, PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
SERVED = (JSON, YAML, PROTOBUF)               # in Kubernetes' order: the first is the default
STREAMED = (JSON, PROTOBUF)                   # for a watch: YAML has no stream framing
OWN_FORMAT = ("log", "exec", "attach", "portforward")
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)    # libyaml's, where installed: 10x faster


# [START negotiate]
def output_type(accept: str, watching: bool) -> str | None:
    """JSON or YAML, whichever `accept` prefers; None if it allows neither."""
    offered = STREAMED if watching else SERVED
    for media_type in _preferred(accept or "*/*"):
        kind, _, sub = media_type.partition("/")
        for served in offered:
            if media_type == served or (sub == "*" and served.startswith(kind + "/")) or kind == "*":
                return YAML if served == YAML else JSON    # protobuf asked for: answered as JSON
    return None


def _preferred(accept: str) -> list[str]:
    """The media types of an Accept header, most wanted first: by q, then
    the specific before the wildcard (RFC 9110). q=0 means "not this"."""
    clauses = []
    for position, clause in enumerate(accept.split(",")):
        media_type, *params = (part.strip() for part in clause.split(";"))
        weight = _weight(params)
        if media_type and weight > 0:
            clauses.append((-weight, media_type.startswith("*"), media_type.endswith("*"), position, media_type.lower()))
    return [clause[-1] for clause in sorted(clauses)]
# [END negotiate]


def _weight(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0            # an unreadable weight: not this one
    return 1.0


def refuse_unacceptable() -> None:
    """Before a request for objects: 406 if no format we have is acceptable."""
    if not request_info.is_resource_path(request.path):
        return
    try:
        info = request_info.parse(request.method, request.path, request.args)
    except api_errors.APIError:
        return                        # the request path answers what is wrong with it
    if info.subresource in OWN_FORMAT:
        return
    watching = info.verb == "watch"
    chosen = output_type(request.headers.get("Accept", ""), watching)
    if chosen is None:
        offered = [t + ";stream=watch" for t in STREAMED] if watching else list(SERVED)
        raise api_errors.APIError(406, "NotAcceptable",
                                  f"only the following media types are accepted: {', '.join(offered)}")
    g.output_type = chosen


def answer_as_yaml(response):
    """After: the handler's JSON, written as YAML when YAML was chosen."""
    if g.get("output_type") != YAML or response.is_streamed or response.mimetype != JSON:
        return response
    document = json.loads(response.get_data())
    response.set_data(yaml.dump(document, Dumper=_DUMPER, default_flow_style=False, allow_unicode=True))
    response.mimetype = YAML
    return response
