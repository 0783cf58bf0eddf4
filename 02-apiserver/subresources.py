"""Subresources: scale, binding and log (status lives in writes.py, it is a plain update).

- `deployments/scale` shows a workload as an autoscaling/v1 Scale: what
  `kubectl scale` and autoscalers read and write, whatever the kind.
- `pods/binding` is how the scheduler assigns a pod to a node: it sets
  spec.nodeName once, and only once.
- `pods/log` is the one request the API server passes on to a kubelet.
"""
from __future__ import annotations

import copy

import requests
from flask import Response, request

import api_errors
import decode
import objects
import registry
import writes
from request_context import dry_run, existing, respond, server
from common.model import field_errors
from common.model.selectors import selector_from_label_selector

NODES = registry.for_kind("", "Node")


# ----- scale -----

def _to_scale(obj: dict) -> dict:
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    try:
        selector_text = str(selector_from_label_selector(selector))
    except ValueError:
        selector_text = ""
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": selector_text},
    }


def get_scale(info):
    return respond(_to_scale(existing(info)))


def _change_scale(info, new_scale_of):
    def change(current: dict) -> dict:
        scale = new_scale_of(_to_scale(current))
        name = (scale.get("metadata") or {}).get("name", info.name)
        if name != info.name:
            raise api_errors.bad_request(f"the name of the Scale ({name}) does not match the name on the URL ({info.name})")
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise api_errors.invalid(info.resource, "Scale", info.name,
                                     [field_errors.invalid("spec.replicas", replicas, "must be an integer")])
        if replicas < 0:
            raise api_errors.invalid(info.resource, "Scale", info.name, [field_errors.invalid(
                "spec.replicas", replicas, "must be greater than or equal to 0")])
        current["spec"]["replicas"] = replicas
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv:
            current["metadata"]["resourceVersion"] = rv    # the Scale's version guards the update
        return current
    return respond(_to_scale(writes.update_object(info, change, subresource="scale")))


def update_scale(info):
    """PUT a Scale: what client-go's scale client and autoscalers send."""
    body = request.get_data()
    if decode.media_type(request.content_type) not in decode.JSON_TYPES + ("",):
        raise api_errors.unsupported_media_type(request.content_type, decode.JSON_TYPES)
    sent = decode.parse_body(body, request.content_type or "application/json")
    decode.check_kind(sent, info.resource, kind="Scale", api_version="autoscaling/v1")
    return _change_scale(info, lambda scale: sent)


def patch_scale(info):
    body = request.get_data()
    kind = decode.media_type(request.content_type)
    return _change_scale(info, lambda scale: server().hooks.patch(
        kind, scale, body, "autoscaling", "v1", "Scale", request.args.get("fieldManager", "")))


# ----- binding -----

# [START binding]
def create_binding(info):
    """POST pods/NAME/binding {"target": {"kind": "Node", "name": "node1"}}."""
    binding = decode.parse_body(request.get_data(), request.content_type or "application/json")
    target = (binding or {}).get("target") if isinstance(binding, dict) else None
    node = target.get("name") if isinstance(target, dict) else None
    if not isinstance(node, str) or not node:
        raise api_errors.invalid(info.resource, "Binding", info.name, [field_errors.required("target.name")])
    meta = binding.get("metadata") if isinstance(binding.get("metadata"), dict) else {}
    if meta.get("name", info.name) != info.name:
        raise api_errors.bad_request(f"the name of the Binding ({meta['name']}) does not match the pod on the URL ({info.name})")
    if target.get("kind", "Node") != "Node":
        raise api_errors.invalid(info.resource, "Binding", info.name, [field_errors.not_supported(
            "target.kind", target.get("kind"), ["Node"])])

    def bind(pod: dict) -> dict:
        if pod["metadata"].get("deletionTimestamp"):
            raise api_errors.conflict(info.resource, info.name, "pod is being deleted, cannot be assigned to a host")
        if meta.get("uid") and meta["uid"] != pod["metadata"]["uid"]:
            raise api_errors.conflict(info.resource, info.name, f"Precondition failed: UID in precondition: "
                                      f"{meta['uid']}, UID in object meta: {pod['metadata']['uid']}")
        assigned = pod["spec"].get("nodeName")
        if assigned:
            raise api_errors.conflict(info.resource, info.name, f'pod {info.name} is already assigned to node "{assigned}"')
        pod["spec"]["nodeName"] = node
        conditions = [c for c in pod.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        pod["status"]["conditions"] = conditions + [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": objects.now()}]
        return pod
    if dry_run():
        bind(copy.deepcopy(existing(info)))      # every check, no write
    else:
        server().store.update(info.resource, info.namespace, info.name, bind)
    return respond({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)
# [END binding]


# ----- log -----

def pod_log(info):
    """Pass the request on to the kubelet on the pod's node, and stream its answer back."""
    pod = existing(info)
    node_name = pod["spec"].get("nodeName")
    if not node_name:
        raise api_errors.bad_request(f"pod {info.name} does not have a host assigned")
    containers = [c["name"] for c in pod["spec"].get("containers", [])]
    container = request.args.get("container") or (containers[0] if len(containers) == 1 else "")
    if not container:
        raise api_errors.bad_request(f"a container name must be specified for pod {info.name}, "
                                     f"choose one of: [{' '.join(containers)}]")
    node = server().store.get(NODES, "", node_name)
    if node is None:
        raise api_errors.not_found(NODES, node_name)
    url = f"{kubelet_url(node)}/containerLogs/{info.namespace}/{info.name}/{container}"
    params = {k: request.args[k] for k in ("follow", "tailLines", "timestamps", "previous", "sinceSeconds")
              if k in request.args}
    try:
        upstream = requests.get(url, params=params, headers=kubelet_credentials(), stream=True, timeout=(5, None))
    except requests.RequestException as error:
        raise api_errors.APIError(502, "ServiceUnavailable",
                                  f"cannot reach the kubelet of node {node_name} at {url}: {error}") from None
    if upstream.status_code in (401, 403):
        upstream.close()
        raise refused_by_kubelet(node_name, upstream.status_code)
    if upstream.status_code != 200:
        return Response(upstream.content, upstream.status_code, mimetype="application/json")
    response = Response(upstream.iter_content(chunk_size=None), mimetype="text/plain")
    response.call_on_close(upstream.close)    # a `kubectl logs -f` that ends closes the kubelet's stream too
    return response


def kubelet_credentials() -> dict:
    """The API server's token for the kubelets' port, as Kubernetes' API
    server presents its --kubelet-client-certificate. It travels over plain
    HTTP here: whoever can watch the nodes' network can read it (Kubernetes'
    kubelet port speaks HTTPS)."""
    token = server().kubelet_client_token
    return {"Authorization": f"Bearer {token}"} if token else {}


def refused_by_kubelet(node_name: str, code: int) -> api_errors.APIError:
    """The kubelet turned the API server away. Passed on as it is, a 401
    would read to kubectl as "your own credentials are wrong"; the fault is
    in the server's configuration, so say which flags to check."""
    fix = ("start the API server with --kubelet-client-token-file naming the token that kubelet's "
           "--authentication-token-file holds" if not server().kubelet_client_token else
           "the API server's --kubelet-client-token-file and that kubelet's --authentication-token-file "
           "hold different tokens")
    return api_errors.internal(f"the kubelet of node {node_name} refused the API server's request "
                               f"({code} {'Unauthorized' if code == 401 else 'Forbidden'}): {fix}")


def kubelet_url(node: dict) -> str:
    """Where a node's kubelet listens, from what it reported in its status."""
    status = node.get("status") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, dict)}
    host = addresses.get("InternalIP") or addresses.get("Hostname") or node["metadata"]["name"]
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or 10255
    return f"http://{host}:{port}"


HANDLERS = {
    ("get", "scale"): get_scale, ("update", "scale"): update_scale, ("patch", "scale"): patch_scale,
    ("create", "binding"): create_binding,
    ("get", "log"): pod_log,
}
