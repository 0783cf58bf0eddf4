"""ListOptions: what a list or a watch asks for in its query, checked as Kubernetes checks it.

    GET /api/v1/pods?resourceVersion=120&resourceVersionMatch=NotOlderThan&limit=500

Kubernetes reads the query into a ListOptions object, then checks it in
three places, and so answers three ways (k8s.io/apiserver's ListResource):

    a value that does not parse             400 BadRequest   limit=abc, limit=2^63,
                                                             fieldSelector=a==b==c
    options that contradict each other      422 Invalid      resourceVersionMatch without
      (ValidateListOptions)                    on kind         resourceVersion, or with continue,
                                               ListOptions     or not Exact/NotOlderThan
    what storage cannot do                  400 BadRequest   continue with a resourceVersion

Then the version, which is where a list can be truthful or not:

- NotOlderThan (the default when a version is given): the newest state is
  not older than any version we have given out, so it is the answer.
- A version this server has not reached: another API server on the same
  etcd may have written it a moment ago, so we give our history 3 s to
  catch up, as Kubernetes' watch cache does, then answer 504 Timeout
  "Too large resource version" with a ResourceVersionTooLarge cause
  (client-go retries on it). Serving the present instead would tell the
  client it has seen a write it has not.
- Exact: the objects as they were at that version. etcd keeps old
  revisions until it compacts them, so the etcd store can serve them. The
  JSON-file store keeps only the present: for any version but the newest
  it answers 410 Expired, the answer to "that version is gone", after
  which a client lists again without one. Kubernetes answers the same
  for a compacted revision.

Not done: Kubernetes also reads `limit` with a `resourceVersion` and no
match as Exact (a legacy rule); we read it as NotOlderThan, the way a
list without `limit` is read.
"""
from __future__ import annotations

import api_errors
import decode
from common.model.field_errors import forbidden, not_supported

MATCHES = ("Exact", "NotOlderThan")
CATCH_UP_SECONDS = 3          # Kubernetes' watch cache waits as long for a version it has not seen


# [START list-version]
def read_list(store, info, args, continue_rv: int) -> tuple[list[dict], int]:
    """store.list at the version the query asks for: the newest, or (Exact) an
    older one the store still has. 400/422 for bad options, 410, 504."""
    exact = _check_list_options(store, args)
    try:
        items, rv = store.list(info.resource, info.namespace or None, resource_version=continue_rv or exact)
    except api_errors.APIError as error:
        if exact and error.code == 410:          # etcd compacted it
            raise api_errors.gone("The resourceVersion for the provided list is too old.") from None
        raise
    if exact and rv != exact:                    # the file store answered with the present
        raise api_errors.gone("The resourceVersion for the provided list is too old.")
    return items, rv
# [END list-version]


def _check_list_options(store, args) -> int:
    """The version an Exact list must be read at, or 0 for the newest."""
    decode.query_int(args, "limit", 0)                       # 400 unless a 64-bit integer
    match = args.get("resourceVersionMatch", "")
    version = args.get("resourceVersion", "")
    errors = []
    if match:
        if not version:
            errors.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if args.get("continue"):
            errors.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
        if match not in MATCHES:
            errors.append(not_supported("resourceVersionMatch", match, [*MATCHES, ""]))
        if match == "Exact" and version == "0":
            errors.append(forbidden("resourceVersionMatch",
                                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    _refuse(errors)
    if args.get("continue") and version not in ("", "0"):
        raise api_errors.bad_request("specifying resource version is not allowed when using continue")
    rv = query_resource_version(args)
    if rv is None:
        return 0
    wait_for_version(store, rv)
    return rv if match == "Exact" else 0


def watch_from(store, args) -> int | None:
    """The version a watch starts after (None: none given), once reached."""
    if args.get("resourceVersionMatch"):
        _refuse([forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch")])
    rv = query_resource_version(args)
    if rv is not None:
        wait_for_version(store, rv)
    return rv


def wait_for_version(store, rv: int) -> None:
    """Return once the store has reached `rv`; 504 if it does not within
    CATCH_UP_SECONDS (a version from the future, or from another cluster)."""
    if rv <= store.resource_version:
        return
    current = store.wait_for_resource_version(rv, timeout=CATCH_UP_SECONDS)
    if rv > current:
        raise api_errors.APIError(504, "Timeout", f"Timeout: Too large resource version: {rv}, current: {current}",
                                  {"causes": [{"reason": "ResourceVersionTooLarge",
                                               "message": "Too large resource version"}],
                                   "retryAfterSeconds": 1})


def _refuse(errors: list) -> None:
    """422 on the kind ListOptions, as Kubernetes' ValidateListOptions answers."""
    if errors:
        error = api_errors.invalid("", "ListOptions.meta.k8s.io", "", errors)
        error.details.update(group="meta.k8s.io", kind="ListOptions")
        raise error


def query_resource_version(args) -> int | None:
    """?resourceVersion=N: None when absent or "0" (any version will do),
    else a positive whole number; 400 for anything else, list or watch."""
    raw = args.get("resourceVersion", "")
    if raw in ("", "0"):
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) < 20) or int(raw) == 0:
        raise api_errors.bad_request(f"resourceVersion must be a positive number, not {raw!r}")
    return int(raw)
