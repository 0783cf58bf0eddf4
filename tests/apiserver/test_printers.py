"""Server-side printing: the Table the API server sends for `kubectl get`.

Pure functions, no server: each case is an object as a cluster would hold it
and the cells a Kubernetes 1.32 server prints for it. The clock is fixed.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone

import pytest

from kubectl_compat import printers
import registry
from kubectl_compat.printer_formats import human_duration

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def ago(**delta) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_of(obj: dict):
    group = obj["apiVersion"].rpartition("/")[0]
    return registry.for_kind(group, obj["kind"])


def printed(obj: dict) -> dict:
    """{column name: cell} for one object, wide columns included."""
    table = printers.to_table(resource_of(obj), [obj], now=NOW)
    names = [c["name"] for c in table["columnDefinitions"]]
    (row,) = table["rows"]
    assert len(row["cells"]) == len(names)
    return dict(zip(names, row["cells"]))


def meta(name: str = "web", **extra) -> dict:
    return {"name": name, "namespace": "default", "creationTimestamp": ago(hours=5), **extra}


# --- HumanDuration ---------------------------------------------------------------

DAY, YEAR = 86400, 365 * 86400


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (0.9, "0s"), (-0.5, "0s"), (-1, "0s"), (-1.9, "0s"), (-2, "<invalid>"),
    (5, "5s"), (59, "59s"), (119, "119s"),
    (120, "2m"), (123, "2m3s"), (599, "9m59s"),
    (600, "10m"), (601, "10m"), (15 * 60, "15m"), (3 * 3600 - 1, "179m"),
    (3 * 3600, "3h"), (3 * 3600 + 5 * 60, "3h5m"), (8 * 3600 - 60, "7h59m"),
    (8 * 3600, "8h"), (47 * 3600 + 59 * 60, "47h"),
    (2 * DAY, "2d"), (2 * DAY + 3 * 3600, "2d3h"), (8 * DAY - 3600, "7d23h"),
    (8 * DAY, "8d"), (45 * DAY, "45d"), (729 * DAY + 23 * 3600, "729d"),
    (2 * YEAR, "2y"), (2 * YEAR + 10 * DAY, "2y10d"), (8 * YEAR - DAY, "7y364d"),
    (8 * YEAR, "8y"), (20 * YEAR + 100 * DAY, "20y"),
])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


# --- Pods --------------------------------------------------------------------------

def pod(containers=("app",), status=None, spec=None, **metadata) -> dict:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta(**metadata),
           "spec": {"containers": [{"name": n, "image": "nginx:1.27"} for n in containers], **(spec or {})}}
    if status is not None:
        obj["status"] = status
    return obj


def running(name="app", ready=True, restarts=0, last=None) -> dict:
    status = {"name": name, "ready": ready, "restartCount": restarts, "started": True,
              "state": {"running": {"startedAt": ago(hours=1)}}}
    if last:
        status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": last}}
    return status


def waiting(reason, name="app", restarts=0, last=None) -> dict:
    status = {"name": name, "ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}}}
    if last:
        status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": last}}
    return status


def terminated(name="app", exit_code=0, reason=None, signal=None) -> dict:
    state = {"exitCode": exit_code, "finishedAt": ago(minutes=30)}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": state}}


def ready_condition(value="True") -> dict:
    return {"type": "Ready", "status": value}


POD_CASES = {
    "crash loop, 5 restarts": (
        pod(status={"phase": "Running", "containerStatuses": [
            waiting("CrashLoopBackOff", restarts=5, last=ago(minutes=5))]}),
        ("0/1", "CrashLoopBackOff", "5 (5m ago)")),
    "running and ready": (
        pod(status={"phase": "Running", "conditions": [ready_condition()], "containerStatuses": [running()]}),
        ("1/1", "Running", "0")),
    "completed": (
        pod(status={"phase": "Succeeded", "containerStatuses": [terminated(reason="Completed")]}),
        ("0/1", "Completed", "0")),
    "error": (
        pod(status={"phase": "Failed", "containerStatuses": [terminated(exit_code=1, reason="Error")]}),
        ("0/1", "Error", "0")),
    "killed, no reason: exit code": (
        pod(status={"phase": "Failed", "containerStatuses": [terminated(exit_code=137)]}),
        ("0/1", "ExitCode:137", "0")),
    "killed, no reason: signal": (
        pod(status={"phase": "Failed", "containerStatuses": [terminated(exit_code=137, signal=9)]}),
        ("0/1", "Signal:9", "0")),
    "pending, no status yet": (pod(), ("0/1", "Pending", "0")),
    "pending, unscheduled": (
        pod(status={"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        ("0/1", "Pending", "0")),
    "scheduling gated": (
        pod(status={"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        ("0/1", "SchedulingGated", "0")),
    "container creating": (
        pod(status={"phase": "Pending", "containerStatuses": [waiting("ContainerCreating")]}),
        ("0/1", "ContainerCreating", "0")),
    "image pull back-off": (
        pod(status={"phase": "Pending", "containerStatuses": [waiting("ImagePullBackOff")]}),
        ("0/1", "ImagePullBackOff", "0")),
    "terminating": (
        pod(deletionTimestamp=ago(seconds=10),
            status={"phase": "Running", "containerStatuses": [running()]}),
        ("1/1", "Terminating", "0")),
    "deleted after it succeeded: still Completed": (
        pod(deletionTimestamp=ago(seconds=10),
            status={"phase": "Succeeded", "containerStatuses": [terminated(reason="Completed")]}),
        ("0/1", "Completed", "0")),
    "deleted on a lost node": (
        pod(deletionTimestamp=ago(seconds=10),
            status={"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]}),
        ("1/1", "Unknown", "0")),
    "evicted": (
        pod(status={"phase": "Failed", "reason": "Evicted"}), ("0/1", "Evicted", "0")),
    "two containers, one ready": (
        pod(containers=("app", "log"), status={"phase": "Running", "conditions": [ready_condition("False")],
                                               "containerStatuses": [running("app"), running("log", ready=False)]}),
        ("1/2", "Running", "0")),
    "two containers: the first one's trouble is shown": (
        pod(containers=("app", "log"), status={"phase": "Running", "containerStatuses": [
            waiting("CrashLoopBackOff", "app", restarts=2, last=ago(minutes=1)),
            waiting("ImagePullBackOff", "log")]}),
        ("0/2", "CrashLoopBackOff", "2 (60s ago)")),
    "restarts summed, latest time wins": (
        pod(containers=("app", "log"), status={"phase": "Running", "containerStatuses": [
            running("app", restarts=3, last=ago(hours=3)), running("log", restarts=1, last=ago(seconds=42))]}),
        ("2/2", "Running", "4 (42s ago)")),
    "one finished, one running, pod ready": (
        pod(containers=("job", "proxy"), status={"phase": "Running", "conditions": [ready_condition()],
                                                 "containerStatuses": [terminated("job", reason="Completed"),
                                                                       running("proxy")]}),
        ("1/2", "Running", "0")),
    "one finished, one running, pod not ready": (
        pod(containers=("job", "proxy"), status={"phase": "Running", "conditions": [ready_condition("False")],
                                                 "containerStatuses": [terminated("job", reason="Completed"),
                                                                       running("proxy")]}),
        ("1/2", "NotReady", "0")),
    "init container running": (
        pod(spec={"initContainers": [{"name": "migrate"}, {"name": "seed"}]},
            status={"phase": "Pending", "initContainerStatuses": [waiting("PodInitializing", "migrate")],
                    "containerStatuses": [waiting("PodInitializing")]}),
        ("0/1", "Init:0/2", "0")),
    "second init container running": (
        pod(spec={"initContainers": [{"name": "migrate"}, {"name": "seed"}]},
            status={"phase": "Pending", "initContainerStatuses": [
                terminated("migrate", reason="Completed"),
                {"name": "seed", "restartCount": 0, "state": {"running": {}}}]}),
        ("0/1", "Init:1/2", "0")),
    "init container crashing": (
        pod(spec={"initContainers": [{"name": "migrate"}]},
            status={"phase": "Pending", "initContainerStatuses": [
                waiting("CrashLoopBackOff", "migrate", restarts=4, last=ago(minutes=2))],
                "containerStatuses": [waiting("PodInitializing")]}),
        ("0/1", "Init:CrashLoopBackOff", "4 (2m ago)")),
    "init container failed": (
        pod(spec={"initContainers": [{"name": "migrate"}]},
            status={"phase": "Failed", "initContainerStatuses": [terminated("migrate", 1, "Error")]}),
        ("0/1", "Init:Error", "0")),
    "init container failed without a reason": (
        pod(spec={"initContainers": [{"name": "migrate"}]},
            status={"phase": "Failed", "initContainerStatuses": [terminated("migrate", 3)]}),
        ("0/1", "Init:ExitCode:3", "0")),
    "sidecar counts as a container": (
        pod(spec={"initContainers": [{"name": "mesh", "restartPolicy": "Always"}]},
            status={"phase": "Running", "conditions": [ready_condition(), {"type": "Initialized", "status": "True"}],
                    "initContainerStatuses": [running("mesh", restarts=1, last=ago(minutes=7))],
                    "containerStatuses": [running()]}),
        ("2/2", "Running", "1 (7m ago)")),
}


@pytest.mark.parametrize("obj, expected", POD_CASES.values(), ids=POD_CASES.keys())
def test_pod_ready_status_restarts(obj, expected):
    cells = printed(obj)
    assert (cells["Ready"], cells["Status"], cells["Restarts"]) == expected
    assert cells["Name"] == "web"
    assert cells["Age"] == "5h"


def test_pod_columns_and_wide_cells():
    obj = pod(spec={"nodeName": "node-1", "readinessGates": [{"conditionType": "example.com/lb"},
                                                           {"conditionType": "example.com/dns"}]},
              status={"phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
                      "nominatedNodeName": "node-2",
                      "conditions": [{"type": "example.com/lb", "status": "True"},
                                     {"type": "example.com/dns", "status": "False"}],
                      "containerStatuses": [running()]})
    table = printers.to_table(resource_of(obj), [obj], now=NOW)
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
                       ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert table["rows"][0]["cells"] == ["web", "1/1", "Running", "0", "5h",
                                         "10.244.1.5", "node-1", "node-2", "1/2"]


def test_pod_wide_cells_for_a_new_pod_are_none():
    cells = printed(pod())
    assert [cells[c] for c in ("IP", "Node", "Nominated Node", "Readiness Gates")] == ["<none>"] * 4


def test_pod_ip_falls_back_to_status_pod_ip():
    assert printed(pod(status={"phase": "Running", "podIP": "10.0.0.9"}))["IP"] == "10.0.0.9"


@pytest.mark.parametrize("phase, conditions", [
    ("Running", None),
    ("Succeeded", [{"type": "Completed", "status": "True", "reason": "Succeeded",
                    "message": "The pod ran to completion."}]),
    ("Failed", [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
])
def test_finished_pods_rows_are_marked_completed(phase, conditions):
    obj = pod(status={"phase": phase})
    (row,) = printers.to_table(resource_of(obj), [obj], now=NOW)["rows"]
    assert row.get("conditions") == conditions


# --- Nodes ---------------------------------------------------------------------------

def node(conditions=None, labels=None, unschedulable=None, addresses=None, info=True) -> dict:
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta("node-1", labels=labels or {}),
           "spec": {}, "status": {}}
    del obj["metadata"]["namespace"]
    if unschedulable is not None:
        obj["spec"]["unschedulable"] = unschedulable
    if conditions is not None:
        obj["status"]["conditions"] = conditions
    if addresses is not None:
        obj["status"]["addresses"] = addresses
    if info:
        obj["status"]["nodeInfo"] = {"kubeletVersion": "v1.32.0-groundup", "osImage": "Debian GNU/Linux 12",
                                     "kernelVersion": "6.1.0-28-amd64",
                                     "containerRuntimeVersion": "docker://27.3.1"}
    return obj


def ready(value: str) -> list[dict]:
    return [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": value}]


NODE_CASES = {
    "ready": (node(ready("True")), ("Ready", "<none>")),
    "not ready": (node(ready("False")), ("NotReady", "<none>")),
    "ready condition unknown": (node(ready("Unknown")), ("NotReady", "<none>")),
    "never reported": (node(), ("Unknown", "<none>")),
    "cordoned": (node(ready("True"), unschedulable=True), ("Ready,SchedulingDisabled", "<none>")),
    "cordoned and down": (node(ready("False"), unschedulable=True), ("NotReady,SchedulingDisabled", "<none>")),
    "control plane": (node(ready("True"), labels={"node-role.kubernetes.io/control-plane": ""}),
                      ("Ready", "control-plane")),
    "roles sorted, old label too": (
        node(ready("True"), labels={"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge",
                                    "node-role.kubernetes.io/": "", "app": "x"}),
        ("Ready", "edge,worker")),
}


@pytest.mark.parametrize("obj, expected", NODE_CASES.values(), ids=NODE_CASES.keys())
def test_node_status_and_roles(obj, expected):
    cells = printed(obj)
    assert (cells["Status"], cells["Roles"]) == expected
    assert (cells["Name"], cells["Age"], cells["Version"]) == ("node-1", "5h", "v1.32.0-groundup")


def test_node_wide_cells():
    cells = printed(node(ready("True"), addresses=[{"type": "Hostname", "address": "node-1"},
                                                   {"type": "InternalIP", "address": "192.168.1.11"}]))
    assert list(cells)[5:] == ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]
    assert list(cells.values())[5:] == ["192.168.1.11", "<none>", "Debian GNU/Linux 12", "6.1.0-28-amd64",
                                        "docker://27.3.1"]
    bare = printed(node(info=False))
    assert list(bare.values())[4:] == ["", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


# --- Services and Endpoints ------------------------------------------------------------

def service(spec: dict, status=None) -> dict:
    obj = {"apiVersion": "v1", "kind": "Service", "metadata": meta(), "spec": spec}
    if status:
        obj["status"] = status
    return obj


HTTP = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}
SERVICE_CASES = {
    "cluster IP": (service({"type": "ClusterIP", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
                            "ports": [HTTP], "selector": {"app": "web"}}),
                   ["ClusterIP", "10.96.0.20", "<none>", "80/TCP", "5h", "app=web"]),
    "DNS: two protocols, default type and protocol": (
        service({"clusterIP": "10.96.0.10", "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}],
                 "selector": {"k8s-app": "kube-dns", "app": "dns"}}),
        ["ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "5h", "app=dns,k8s-app=kube-dns"]),
    "cluster IP with external IPs": (
        service({"type": "ClusterIP", "clusterIP": "10.96.0.21", "externalIPs": ["203.0.113.5", "203.0.113.6"],
                 "ports": [HTTP]}),
        ["ClusterIP", "10.96.0.21", "203.0.113.5,203.0.113.6", "80/TCP", "5h", "<none>"]),
    "headless": (service({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"],
                          "selector": {"app": "db"}}),
                 ["ClusterIP", "None", "<none>", "<none>", "5h", "app=db"]),
    "node port": (service({"type": "NodePort", "clusterIP": "10.96.0.30",
                           "ports": [{**HTTP, "nodePort": 30080},
                                     {"name": "https", "port": 443, "protocol": "TCP", "nodePort": 30443}]}),
                  ["NodePort", "10.96.0.30", "<none>", "80:30080/TCP,443:30443/TCP", "5h", "<none>"]),
    "load balancer, pending": (service({"type": "LoadBalancer", "clusterIP": "10.96.0.40",
                                        "ports": [{**HTTP, "nodePort": 31000}]}),
                               ["LoadBalancer", "10.96.0.40", "<pending>", "80:31000/TCP", "5h", "<none>"]),
    "load balancer with an address": (
        service({"type": "LoadBalancer", "clusterIP": "10.96.0.41", "externalIPs": ["203.0.113.9"],
                 "ports": [{**HTTP, "nodePort": 31001}]},
                {"loadBalancer": {"ingress": [{"ip": "198.51.100.7"}, {"hostname": "lb.example.com"}]}}),
        ["LoadBalancer", "10.96.0.41", "198.51.100.7,lb.example.com,203.0.113.9", "80:31001/TCP", "5h", "<none>"]),
    "external name": (service({"type": "ExternalName", "externalName": "db.example.com"}),
                      ["ExternalName", "<none>", "db.example.com", "<none>", "5h", "<none>"]),
}


@pytest.mark.parametrize("obj, expected", SERVICE_CASES.values(), ids=SERVICE_CASES.keys())
def test_service_cells(obj, expected):
    cells = printed(obj)
    assert list(cells) == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert list(cells.values()) == ["web", *expected]


def endpoints(*subsets) -> dict:
    obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta()}
    if subsets:
        obj["subsets"] = list(subsets)
    return obj


def addrs(*ips) -> list[dict]:
    return [{"ip": ip} for ip in ips]


ENDPOINT_CASES = {
    "no subsets": (endpoints(), "<none>"),
    "two pods": (endpoints({"addresses": addrs("10.0.0.1", "10.0.0.2"), "ports": [{"port": 80}]}),
                 "10.0.0.1:80,10.0.0.2:80"),
    "three shown, rest counted": (
        endpoints({"addresses": addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"), "ports": [{"port": 80}]}),
        "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."),
    "exactly three": (endpoints({"addresses": addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), "ports": [{"port": 80}]}),
                      "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80"),
    "two ports, two subsets": (
        endpoints({"addresses": addrs("10.0.0.1", "10.0.0.2"), "ports": [{"port": 80}, {"port": 443}]},
                  {"addresses": addrs("10.0.1.1"), "ports": [{"port": 8080}]}),
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."),
    "headless without ports": (endpoints({"addresses": addrs("10.0.0.1", "10.0.0.2")}), "10.0.0.1,10.0.0.2"),
    "IPv6": (endpoints({"addresses": addrs("fd00::5"), "ports": [{"port": 80}]}), "[fd00::5]:80"),
    "only not-ready pods": (endpoints({"notReadyAddresses": addrs("10.0.0.1"), "ports": [{"port": 80}]}), ""),
}


@pytest.mark.parametrize("obj, expected", ENDPOINT_CASES.values(), ids=ENDPOINT_CASES.keys())
def test_endpoints_cells(obj, expected):
    assert printed(obj) == {"Name": "web", "Endpoints": expected, "Age": "5h"}


# --- Events, ConfigMaps, Secrets, Namespaces ------------------------------------------

def event(**fields) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": meta("web.1811f3a9c2d0e4b7"),
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "BackOff", "type": "Warning", "message": "Back-off restarting failed container app\n",
            "source": {"component": "kubelet", "host": "node-1"}, **fields}


EVENT_CASES = {
    "repeated kubelet event": (
        event(firstTimestamp=ago(minutes=20), lastTimestamp=ago(seconds=30), count=7),
        ["30s", "Warning", "BackOff", "pod/web", "spec.containers{app}", "kubelet, node-1",
         "Back-off restarting failed container app", "20m", 7, "web.1811f3a9c2d0e4b7"]),
    "first time only, no count": (
        event(firstTimestamp=ago(minutes=3), type="Normal", reason="Scheduled", source={"component": "scheduler"},
              involvedObject={"kind": "Pod", "name": "web"}, message="Successfully assigned default/web to node-1"),
        ["3m", "Normal", "Scheduled", "pod/web", "", "scheduler",
         "Successfully assigned default/web to node-1", "3m", 1, "web.1811f3a9c2d0e4b7"]),
    "new-style: eventTime, series, reporting controller": (
        event(source={}, eventTime="2026-11-22T11:00:00.123456Z", reportingComponent="deployment-controller",
              reportingInstance="cm-1", series={"count": 4, "lastObservedTime": ago(minutes=1)},
              involvedObject={"kind": "Deployment", "name": "web"}),
        ["60s", "Warning", "BackOff", "deployment/web", "", "deployment-controller, cm-1",
         # 59m59.88s: ages are truncated, never rounded up.
         "Back-off restarting failed container app", "59m", 4, "web.1811f3a9c2d0e4b7"]),
    "about a kind, no name; no times": (
        event(source={}, involvedObject={"kind": "Node"}),
        ["<unknown>", "Warning", "BackOff", "node", "", "",
         "Back-off restarting failed container app", "<unknown>", 1, "web.1811f3a9c2d0e4b7"]),
}


@pytest.mark.parametrize("obj, expected", EVENT_CASES.values(), ids=EVENT_CASES.keys())
def test_event_cells(obj, expected):
    cells = printed(obj)
    assert list(cells) == ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message",
                           "First Seen", "Count", "Name"]
    assert list(cells.values()) == expected


@pytest.mark.parametrize("obj, expected", [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings"),
      "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
     {"Name": "settings", "Data": 3, "Age": "5h"}),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("empty")},
     {"Name": "empty", "Data": 0, "Age": "5h"}),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": meta("db"), "type": "Opaque",
      "data": {"user": "YQ==", "password": "Yg=="}},
     {"Name": "db", "Type": "Opaque", "Data": 2, "Age": "5h"}),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": meta("token"), "type": "kubernetes.io/service-account-token"},
     {"Name": "token", "Type": "kubernetes.io/service-account-token", "Data": 0, "Age": "5h"}),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": meta("team-a"), "status": {"phase": "Active"}},
     {"Name": "team-a", "Status": "Active", "Age": "5h"}),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": meta("old", deletionTimestamp=ago(seconds=1)),
      "status": {"phase": "Terminating"}},
     {"Name": "old", "Status": "Terminating", "Age": "5h"}),
], ids=["configmap", "empty configmap", "secret", "secret without data", "namespace", "namespace terminating"])
def test_configmap_secret_namespace(obj, expected):
    assert printed(obj) == expected


# --- Workloads -------------------------------------------------------------------------

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"},
                                    {"name": "log", "image": "busybox:1.35"}]}}


def workload(kind: str, spec: dict, status=None, api_version="apps/v1", **metadata) -> dict:
    obj = {"apiVersion": api_version, "kind": kind, "metadata": meta(**metadata),
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE, **spec}}
    if status is not None:
        obj["status"] = status
    return obj


WORKLOAD_CASES = {
    "replicaset": (
        workload("ReplicaSet", {"replicas": 3}, {"replicas": 3, "readyReplicas": 2}),
        {"Name": "web", "Desired": 3, "Current": 3, "Ready": 2, "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web"}),
    "replicaset just created": (
        workload("ReplicaSet", {"replicas": 2}),
        {"Name": "web", "Desired": 2, "Current": 0, "Ready": 0, "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web"}),
    "deployment rolling": (
        workload("Deployment", {"replicas": 3, "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]}},
                 {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 1, "availableReplicas": 2}),
        {"Name": "web", "Ready": "2/3", "Up-to-date": 1, "Available": 2, "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web,!canary,tier in (edge,front)"}),
    "deployment, replicas defaulted, no selector": (
        workload("Deployment", {"selector": None}),
        {"Name": "web", "Ready": "0/1", "Up-to-date": 0, "Available": 0, "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": ""}),
    "deployment scaled to zero": (
        workload("Deployment", {"replicas": 0}, {}),
        {"Name": "web", "Ready": "0/0", "Up-to-date": 0, "Available": 0, "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web"}),
    "daemonset": (
        workload("DaemonSet", {"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"],
                                                                 "nodeSelector": {"kubernetes.io/os": "linux"}}}},
                 {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                  "updatedNumberScheduled": 3, "numberAvailable": 2}),
        {"Name": "web", "Desired": 3, "Current": 3, "Ready": 2, "Up-to-date": 3, "Available": 2,
         "Node Selector": "kubernetes.io/os=linux", "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web"}),
    "daemonset on every node": (
        workload("DaemonSet", {}, {"desiredNumberScheduled": 1}),
        {"Name": "web", "Desired": 1, "Current": 0, "Ready": 0, "Up-to-date": 0, "Available": 0,
         "Node Selector": "<none>", "Age": "5h", "Containers": "app,log",
         "Images": "nginx:1.27,busybox:1.35", "Selector": "app=web"}),
}


@pytest.mark.parametrize("obj, expected", WORKLOAD_CASES.values(), ids=WORKLOAD_CASES.keys())
def test_workload_cells(obj, expected):
    assert printed(obj) == expected


def job(spec=None, status=None, **metadata) -> dict:
    return workload("Job", {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                            **(spec or {})}, status, api_version="batch/v1", **metadata)


def condition(kind: str) -> dict:
    return {"type": kind, "status": "True"}


JOB_CASES = {
    "complete": (job({"completions": 1}, {"succeeded": 1, "startTime": ago(minutes=10),
                                          "completionTime": ago(minutes=9, seconds=30),
                                          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}),
                 ("Complete", "1/1", "30s")),
    "running": (job({"completions": 5, "parallelism": 2}, {"succeeded": 2, "active": 2, "startTime": ago(minutes=4)}),
                ("Running", "2/5", "4m")),
    "work queue, parallel": (job({"parallelism": 3}, {"startTime": ago(seconds=5)}), ("Running", "0/1 of 3", "5s")),
    "not started": (job({"completions": 1}), ("Running", "0/1", "")),
    "failed": (job({"completions": 1}, {"failed": 7, "startTime": ago(hours=1), "conditions": [
        {"type": "Complete", "status": "False"}, condition("FailureTarget"), condition("Failed")]}),
               ("Failed", "0/1", "60m")),
    "failing": (job({"completions": 1}, {"startTime": ago(minutes=2), "conditions": [condition("FailureTarget")]}),
                ("FailureTarget", "0/1", "2m")),
    "suspended": (job({"completions": 1, "suspend": True}, {"conditions": [condition("Suspended")]}),
                  ("Suspended", "0/1", "")),
    "terminating": (job({"completions": 1}, {"startTime": ago(minutes=1)}, deletionTimestamp=ago(seconds=3)),
                    ("Terminating", "0/1", "60s")),
}


@pytest.mark.parametrize("obj, expected", JOB_CASES.values(), ids=JOB_CASES.keys())
def test_job_cells(obj, expected):
    cells = printed(obj)
    assert (cells["Status"], cells["Completions"], cells["Duration"]) == expected
    assert list(cells) == ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]
    assert cells["Selector"] == "batch.kubernetes.io/controller-uid=u1"


# --- The Table itself ---------------------------------------------------------------------

def test_list_table_carries_list_metadata_and_partial_objects():
    pods = [pod(name="a"), pod(name="b")]
    table = printers.to_table(resource_of(pods[0]), pods, {"resourceVersion": "42", "continue": "tok"}, now=NOW)
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert table["metadata"] == {"resourceVersion": "42", "continue": "tok"}
    assert [row["cells"][0] for row in table["rows"]] == ["a", "b"]
    assert table["rows"][1]["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                          "metadata": pods[1]["metadata"]}
    json.dumps(table)  # what the REST layer will do


def test_empty_list_still_has_columns():
    table = printers.to_table(registry.for_kind("", "Pod"), [], {"resourceVersion": "7"}, now=NOW)
    assert table["rows"] == [] and len(table["columnDefinitions"]) == 9


def test_one_object_table_takes_the_objects_resource_version():
    # A GET of one object and each watch event are tables of one row.
    obj = pod(resourceVersion="17")
    assert printers.to_table(resource_of(obj), [obj], now=NOW)["metadata"] == {"resourceVersion": "17"}


@pytest.mark.parametrize("include, expected", [
    ("Object", "whole"), ("Metadata", "partial"), ("None", "absent")])
def test_include_object(include, expected):
    obj = pod()
    (row,) = printers.to_table(resource_of(obj), [obj], None, include, now=NOW)["rows"]
    shown = {"whole": obj, "absent": None,
             "partial": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}}
    assert row.get("object") == shown[expected]


def test_unknown_include_object_is_refused():
    with pytest.raises(ValueError, match="includeObject"):
        printers.to_table(registry.for_kind("", "Pod"), [], None, "Everything")


def test_naive_now_is_utc_and_default_now_is_the_clock():
    obj = pod()
    naive = printers.to_table(resource_of(obj), [obj], now=NOW.replace(tzinfo=None))
    assert naive["rows"][0]["cells"][4] == "5h"
    fresh = pod(creationTimestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert printers.to_table(resource_of(fresh), [fresh])["rows"][0]["cells"][4] in ("0s", "1s", "2s")


@pytest.mark.parametrize("resource", [r for r in registry.RESOURCES if "list" in r.verbs], ids=str)
def test_every_kind_has_a_name_column_and_well_formed_definitions(resource):
    definitions = printers.to_table(resource, [], now=NOW)["columnDefinitions"]
    assert [d["format"] for d in definitions].count("name") == 1
    for definition in definitions:
        assert set(definition) == {"name", "type", "format", "description", "priority"}
        assert definition["priority"] in (0, 1) and definition["description"]
    assert printers.printer_for(resource) is not printers.DEFAULT


def test_kind_without_a_printer_gets_name_and_age():
    widget = registry.Resource("example.com", "v1", "Widget", "widgets", True)
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w1")}
    table = printers.to_table(widget, [obj, {"metadata": {"name": "w2"}}], now=NOW)
    assert [d["name"] for d in table["columnDefinitions"]] == ["Name", "Age"]
    assert [row["cells"] for row in table["rows"]] == [["w1", "5h"], ["w2", "<unknown>"]]


# --- Missing and garbled fields: a printer never fails a list ------------------------------

GARBLED = {
    "empty": {},
    "metadata not a map": {"metadata": "web", "spec": None, "status": None},
    "wrong types everywhere": {
        "metadata": {"name": "web", "creationTimestamp": "yesterday", "labels": ["x"],
                     "deletionTimestamp": 5, "resourceVersion": 9},
        "spec": {"containers": "app", "initContainers": [None, "x", {"name": 3}], "replicas": "3",
                 "completions": "all", "parallelism": None, "selector": {"matchLabels": "app"},
                 "template": {"spec": {"containers": [None, {"name": None, "image": 7}], "nodeSelector": "x"}},
                 "ports": [{"port": "http", "nodePort": "x", "protocol": 6}, "80"], "type": 7,
                 "clusterIPs": [None], "externalIPs": "1.2.3.4", "readinessGates": [{"conditionType": None}],
                 "unschedulable": "yes"},
        "status": {"phase": 3, "conditions": ["Ready", {"type": "Ready", "status": True}],
                   "containerStatuses": [None, {"state": "running", "lastState": {"terminated": "x"}},
                                         {"restartCount": "5", "state": {"waiting": {"reason": None}}},
                                         {"state": {"terminated": {"exitCode": "1", "signal": "KILL"}}}],
                   "initContainerStatuses": [{"state": {"terminated": None, "waiting": "x"}}],
                   "podIPs": "10.0.0.1", "loadBalancer": {"ingress": [{"ip": None}]},
                   "addresses": [{"type": "InternalIP"}], "nodeInfo": "linux", "startTime": "noon",
                   "replicas": 2.5, "succeeded": True},
        "subsets": [{"addresses": [{"ip": None}, "x"], "ports": [{"port": None}]}, 5],
        "data": "abc", "binaryData": [1], "type": None,
        "involvedObject": "pod/web", "source": "kubelet", "series": {"count": "x"},
        "count": "many", "firstTimestamp": 0, "lastTimestamp": "later", "message": None,
    },
}


@pytest.mark.parametrize("shape", GARBLED, ids=GARBLED.keys())
@pytest.mark.parametrize("resource", registry.RESOURCES, ids=str)
def test_garbled_objects_print_without_raising(resource, shape, caplog):
    obj = {"apiVersion": resource.api_version, "kind": resource.kind, **GARBLED[shape]}
    with caplog.at_level(logging.ERROR):
        table = printers.to_table(resource, [obj], {"resourceVersion": "1"}, now=NOW)
    (row,) = table["rows"]
    assert len(row["cells"]) == len(table["columnDefinitions"])
    json.dumps(table)
    # Each printer copes by itself; the safety net below was not needed.
    assert not caplog.records, caplog.text


def test_missing_creation_timestamp_prints_unknown_age():
    obj = pod()
    del obj["metadata"]["creationTimestamp"]
    assert printed(obj)["Age"] == "<unknown>"


def test_a_printer_that_raises_still_gives_a_row(monkeypatch, caplog):
    def broken(obj, now):
        raise KeyError("spec")
    resource = registry.for_kind("apps", "Deployment")
    printer = printers.printer_for(resource)
    monkeypatch.setitem(printers.PRINTERS, ("apps", "Deployment"), printers.Printer(printer.columns, broken))
    obj = workload("Deployment", {"replicas": 1})
    with caplog.at_level(logging.ERROR):
        (row,) = printers.to_table(resource, [obj], now=NOW)["rows"]
    assert row["cells"] == ["web"] + ["<unknown>"] * (len(printer.columns) - 1)
    assert "cannot print Deployment web" in caplog.text


# --- Ingress: kubectl's formatHosts and ingressLoadBalancerStatusStringer -------------------

def ingress(hosts: list, addresses: list | None = None, tls: bool = False) -> dict:
    spec = {"ingressClassName": "groundup", "rules": [{"host": h} if h else {} for h in hosts]}
    if tls:
        spec["tls"] = [{"hosts": [h for h in hosts if h], "secretName": "web-tls"}]
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta(), "spec": spec}
    if addresses is not None:
        obj["status"] = {"loadBalancer": {"ingress": addresses}}
    return obj


INGRESS_CASES = {
    "no rule names a host": (ingress([""]), "*"),
    "two hosts": (ingress(["a.example", "b.example"]), "a.example,b.example"),
    # A rule with no host among the first three: the third host still fits, nothing follows it.
    "a hostless rule before the third host": (ingress(["a", "b", "", "c"]), "a,b,c"),
    # A rule after the third host: counted, whether it names a host or not (N counts rules).
    "a rule after the third host": (ingress(["a", "b", "c", ""]), "a,b,c + 1 more..."),
    "two rules after": (ingress(["a", "b", "c", "d", "e"]), "a,b,c + 2 more..."),
    "a hostless rule first, then four": (ingress(["", "a", "b", "c", "d"]), "a,b,c + 2 more..."),
}


@pytest.mark.parametrize("obj, hosts", INGRESS_CASES.values(), ids=INGRESS_CASES.keys())
def test_ingress_hosts_as_kubectl_formats_them(obj, hosts):
    assert printed(obj)["Hosts"] == hosts


def test_ingress_address_is_a_sorted_set_and_ports_follow_tls():
    obj = ingress(["a.example"], [{"ip": "192.0.2.12"}, {"hostname": "lb.example"}, {"ip": "192.0.2.10"},
                                  {"ip": "192.0.2.12"}, {"ip": "192.0.2.11", "hostname": "ignored.example"}],
                  tls=True)
    cells = printed(obj)
    assert list(cells) == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert cells["Address"] == "192.0.2.10,192.0.2.11,192.0.2.12,lb.example"
    assert cells["Ports"] == "80, 443" and cells["Class"] == "groundup"
