"""metrics.k8s.io/v1beta1: what pods and nodes use, for `kubectl top`.

    GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods[/{name}]   PodMetrics
    GET /apis/metrics.k8s.io/v1beta1/pods                            every namespace's
    GET /apis/metrics.k8s.io/v1beta1/nodes[/{name}]                  NodeMetrics

    kubectl top pods -> API server -> each node's kubelet: GET /stats/summary
                                   -> the containers' cgroups (01-kubelet/stats/resource_usage.py)

Nothing is stored. A request lists the pods (or nodes) it names from the
store, asks the kubelets of their nodes for their Summary, all at once,
and turns each pod's containers into a PodMetrics: CPU in nanocores
("250m" is a quarter of a core, averaged over a window), memory as the
working set. A pod whose node has no figure for it (not running yet, or
the kubelet unreachable) is left out, as metrics-server leaves it out.

In Kubernetes the API server serves none of this. metrics-server, a pod
in kube-system, scrapes every kubelet every 15 s, keeps the latest
figures in memory, and registers itself as an aggregated API (an
APIService object): the API server authenticates and authorizes the
request, then proxies it to metrics-server. That keeps a component with a
cache and a scrape loop out of the API server and lets it be replaced
(by prometheus-adapter, say). We have one process and want the request's
path short enough to follow by reading: so the API server asks the
kubelets itself, when asked, through the same door it uses for logs
(subresources.kubelet_url). Authorization is the same as for any
resource: RBAC's `system:aggregated-metrics-reader` gives get and list on
metrics.k8s.io pods and nodes to view, edit and admin.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import requests
from flask import Blueprint, g, request

import api_errors
import gauntlet
import objects
import registry
import request_info
from common.log import get_logger
from common.model.quantity import BINARY_SI, Quantity
from request_context import respond, selectors, server
from subresources import NODES, kubelet_credentials, kubelet_url, refused_by_kubelet

bp = Blueprint("resource_metrics", __name__)
log = get_logger("apiserver")

GROUP_VERSION = "metrics.k8s.io/v1beta1"
PODS = registry.lookup("", "v1", "pods")
NODE_METRICS = registry.lookup("metrics.k8s.io", "v1beta1", "nodes")
# The kubelet rates CPU between its readings, at least this far apart
# (01-kubelet/stats/stats_summary.py RESOLUTION). The window is reported as
# that: it is longer after a spell in which nobody asked, which the
# Summary does not tell.
WINDOW = "10s"
KUBELET_TIMEOUT = 5.0     # seconds; a node that does not answer by then is left out


@bp.get("/apis/metrics.k8s.io/v1beta1/<path:path>")
def serve(path: str):
    """The same door as every resource (rest.serve_resource): who, may they, then the verb."""
    info = request_info.parse(request.method, request.path, request.args)
    g.info = info
    user = gauntlet.authenticate(request)
    gauntlet.authorize(user, info)
    if info.verb not in info.resource.verbs or info.subresource:
        raise api_errors.method_not_allowed(f"{info.verb} is not supported on {info.resource}")
    if info.resource is NODE_METRICS:
        return get_node(info) if info.name else list_nodes(info)
    return get_pod(info) if info.name else list_pods(info)


# [START pod-metrics]
def list_pods(info):
    labels, fields = selectors(info)
    pods, _ = server().store.list(PODS, info.namespace or None)
    pods = [p for p in pods if labels.matches(p["metadata"].get("labels")) and fields.matches(p)]
    summaries = summaries_of({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")})
    items = [m for p in pods if (m := pod_metrics(p, summaries.get(p["spec"].get("nodeName")))) is not None]
    return respond({"kind": "PodMetricsList", "apiVersion": GROUP_VERSION,
                    "metadata": {}, "items": items})


def pod_metrics(pod: dict, summary: dict | None) -> dict | None:
    """A pod's PodMetrics from its node's Summary; None if it has no figures there."""
    meta = pod["metadata"]
    stats = next((s for s in (summary or {}).get("pods", [])
                  if s["podRef"].get("uid") == meta["uid"]), None)
    if stats is None or not stats.get("containers"):
        return None
    return {"kind": "PodMetrics", "apiVersion": GROUP_VERSION,
            "metadata": metadata(meta), "timestamp": max(c["cpu"]["time"] for c in stats["containers"]),
            "window": WINDOW,
            "containers": [{"name": c["name"], "usage": usage(c)} for c in stats["containers"]]}
# [END pod-metrics]


def get_pod(info):
    pod = server().store.get(PODS, info.namespace, info.name)
    node = pod and pod["spec"].get("nodeName")
    found = pod_metrics(pod, summary_of_one(node)) if node else None
    if found is None:
        raise not_found("podmetrics", f"{info.namespace}/{info.name}")
    return respond(found)


def list_nodes(info):
    labels, fields = selectors(info)
    nodes, _ = server().store.list(NODES)
    nodes = [n for n in nodes if labels.matches(n["metadata"].get("labels")) and fields.matches(n)]
    summaries = summaries_of({n["metadata"]["name"] for n in nodes})
    items = [node_metrics(n, summaries[n["metadata"]["name"]]) for n in nodes if n["metadata"]["name"] in summaries]
    return respond({"kind": "NodeMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})


def get_node(info):
    node = server().store.get(NODES, "", info.name)
    if node is None:
        raise not_found("nodemetrics", info.name)
    return respond(node_metrics(node, summary_of_one(info.name)))


def not_found(kind: str, name: str) -> api_errors.APIError:
    """metrics-server's words: podmetrics.metrics.k8s.io "default/web" not found."""
    return api_errors.APIError(404, "NotFound", f'{kind}.metrics.k8s.io "{name}" not found',
                               {"name": name, "group": "metrics.k8s.io", "kind": kind})


def node_metrics(node: dict, summary: dict) -> dict:
    """The node's own figures: its kubelet reads the whole machine
    (/proc/stat, /proc/meminfo), pods and everything else on it. Two
    kubelets on one machine (the tests, a one-machine cluster) report the
    same machine twice."""
    stats = summary["node"]
    return {"kind": "NodeMetrics", "apiVersion": GROUP_VERSION, "metadata": metadata(node["metadata"]),
            "timestamp": stats["cpu"]["time"], "window": WINDOW, "usage": usage(stats)}


def metadata(meta: dict) -> dict:
    """As metrics-server writes it: the object's name, namespace and labels,
    created now (the figures are made for this answer)."""
    out = {"name": meta["name"], "creationTimestamp": objects.now()}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    if meta.get("labels"):
        out["labels"] = meta["labels"]
    return out


def usage(stats: dict) -> dict:
    """CPU in nanocores and memory in bytes, as Kubernetes quantities
    (1005035795n, 1700Ki); kubectl prints them as 1006m and 1Mi."""
    return {"cpu": str(Quantity(Fraction(stats["cpu"].get("usageNanoCores", 0), 10**9))),
            "memory": str(Quantity(stats["memory"].get("workingSetBytes", 0), BINARY_SI))}


# ----- asking the kubelets ----------------------------------------------------

# [START ask-kubelets]
def summaries_of(node_names: set[str]) -> dict[str, dict]:
    """node name -> its kubelet's Summary, asked in parallel. A node that
    cannot be asked is left out and logged; if every one failed, the
    request fails with the first reason, so `kubectl top` says why."""
    nodes = [n for n in (server().store.get(NODES, "", name) for name in sorted(node_names)) if n]
    if not nodes:
        return {}
    credentials = kubelet_credentials()           # read here: the threads have no request context
    with ThreadPoolExecutor(max_workers=min(16, len(nodes)), thread_name_prefix="stats-summary") as pool:
        answers = list(pool.map(lambda node: _ask_kubelet(node, credentials), nodes))
    summaries, failures = {}, []
    for node, (summary, failure) in zip(nodes, answers):
        if failure is None:
            summaries[node["metadata"]["name"]] = summary
        else:
            failures.append(_error(node["metadata"]["name"], failure))
            log.warning("no metrics from a node", obj=node["metadata"]["name"], error=failures[-1].message)
    if failures and not summaries:
        raise failures[0]
    return summaries
# [END ask-kubelets]


def summary_of_one(node_name: str) -> dict | None:
    node = server().store.get(NODES, "", node_name)
    if node is None:
        return None
    summary, failure = _ask_kubelet(node, kubelet_credentials())
    if failure is not None:
        raise _error(node_name, failure)
    return summary


def _ask_kubelet(node: dict, credentials: dict) -> tuple[dict | None, str | int | None]:
    """(its Summary, None), or (None, the HTTP code or the reason it could not be asked)."""
    url = f"{kubelet_url(node)}/stats/summary"
    try:
        answer = requests.get(url, headers=credentials, timeout=KUBELET_TIMEOUT)
    except requests.RequestException as error:
        return None, f"cannot reach it at {url}: {error}"
    if answer.status_code != 200:
        return None, answer.status_code
    return answer.json(), None


def _error(node_name: str, failure: str | int) -> api_errors.APIError:
    if failure in (401, 403):
        return refused_by_kubelet(node_name, failure)       # says which flags to look at
    what = f"it answered {failure} to /stats/summary" if isinstance(failure, int) else failure
    return api_errors.APIError(503, "ServiceUnavailable", f"no metrics from the kubelet of node {node_name}: {what}")
