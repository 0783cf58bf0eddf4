"""Every filter, table-driven: a pod, a node, and the exact reasons (or none)."""
from __future__ import annotations

import pytest

from framework import Framework
from inter_pod import InterPodAffinity
from node_filters import NodeAffinity, NodeConditions, NodeName, NodePorts, NodeUnschedulable, TaintToleration
from node_resources import NodeResourcesFit
from scheduler_harness import make_pod, node_info

FITS = ()


def run(plugin, pod, node, others=()):
    """The reasons plugin gives for node, run by the framework as the scheduler runs it."""
    decision = Framework([plugin], []).schedule(pod, [node, *others])
    return decision.failures.get(node.name, (None, ()))[1]


def tolerate(key, effect="NoSchedule", operator="Exists", value=None):
    toleration = {"key": key, "operator": operator, "effect": effect}
    if value is not None:
        toleration["value"] = value
    return toleration


# ---------------------------------------------------------------- NodeConditions

NOT_READY = ("node(s) were not ready",)


@pytest.mark.parametrize("node, pod, expected", [
    (dict(ready="True"), {}, FITS),
    (dict(ready="False"), {}, NOT_READY),
    (dict(ready="Unknown"), {}, NOT_READY),
    (dict(ready=None), {}, NOT_READY),                                  # never reported: not ready
    (dict(ready="False"), dict(tolerations=[tolerate("node.kubernetes.io/not-ready")]), FITS),
    (dict(ready="Unknown"), dict(tolerations=[tolerate("node.kubernetes.io/unreachable")]), FITS),
    (dict(ready="Unknown"), dict(tolerations=[tolerate("node.kubernetes.io/not-ready")]), NOT_READY),
    (dict(conditions={"DiskPressure": "True"}), {}, ("node(s) had disk pressure",)),
    (dict(conditions={"DiskPressure": "False"}), {}, FITS),
    (dict(conditions={"DiskPressure": "True"}), dict(tolerations=[tolerate("node.kubernetes.io/disk-pressure")]),
     FITS),
    (dict(conditions={"PIDPressure": "True"}), {}, ("node(s) had pid pressure",)),
    # Memory pressure turns away only pods that asked for nothing (BestEffort).
    (dict(conditions={"MemoryPressure": "True"}), {}, ("node(s) had memory pressure",)),
    (dict(conditions={"MemoryPressure": "True"}), dict(cpu="100m"), FITS),
    (dict(conditions={"MemoryPressure": "True"}), dict(limits={"memory": "64Mi"}), FITS),
    (dict(conditions={"MemoryPressure": "True"}),
     dict(tolerations=[tolerate("node.kubernetes.io/memory-pressure")]), FITS),
    (dict(ready="False", conditions={"DiskPressure": "True"}), {}, NOT_READY),   # first problem only
])
def test_node_conditions(node, pod, expected):
    assert run(NodeConditions(), make_pod(**pod), node_info(**node)) == expected


# ---------------------------------------------------------------- NodeUnschedulable

@pytest.mark.parametrize("unschedulable, tolerations, expected", [
    (False, [], FITS),
    (True, [], ("node(s) were unschedulable",)),
    (True, [tolerate("node.kubernetes.io/unschedulable")], FITS),
    (True, [tolerate("node.kubernetes.io/unschedulable", effect="")], FITS),      # any effect
    (True, [tolerate("node.kubernetes.io/unschedulable", effect="NoExecute")], ("node(s) were unschedulable",)),
    (True, [{"operator": "Exists"}], FITS),                                       # tolerates everything
])
def test_node_unschedulable(unschedulable, tolerations, expected):
    pod = make_pod(tolerations=tolerations)
    assert run(NodeUnschedulable(), pod, node_info(unschedulable=unschedulable)) == expected


# ---------------------------------------------------------------- NodeName

@pytest.mark.parametrize("node_name, expected", [
    ("", FITS),
    ("node1", FITS),
    ("node2", ("node(s) didn't match the requested node name",)),
])
def test_node_name(node_name, expected):
    pod = make_pod(**({"nodeName": node_name} if node_name else {}))
    assert run(NodeName(), pod, node_info("node1")) == expected


# ---------------------------------------------------------------- TaintToleration

# Kubernetes 1.32's wording names the first untolerated taint: {key: value}
# (tainttoleration/taint_toleration.go at v1.32.0).
UNTOLERATED = ("node(s) had untolerated taint {dedicated: gpu}",)
GPU = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("taints, tolerations, expected", [
    ([], [], FITS),
    ([GPU], [], UNTOLERATED),
    ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], FITS),
    ([GPU], [{"key": "dedicated", "value": "gpu"}], FITS),                          # Equal is the default
    ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}], UNTOLERATED),
    ([GPU], [{"key": "dedicated", "operator": "Exists"}], FITS),                    # any value, any effect
    ([GPU], [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], UNTOLERATED),
    ([GPU], [{"key": "other", "operator": "Exists"}], UNTOLERATED),
    ([GPU], [{"operator": "Exists"}], FITS),                                        # empty key: every taint
    ([{"key": "k", "effect": "NoExecute"}], [], ("node(s) had untolerated taint {k: }",)),
    ([{"key": "k", "effect": "NoExecute"}], [{"key": "k", "operator": "Exists", "effect": "NoExecute"}], FITS),
    ([{"key": "k", "effect": "PreferNoSchedule"}], [], FITS),                       # only a preference
    ([GPU, {"key": "k", "effect": "NoSchedule"}], [{"key": "dedicated", "operator": "Exists"}],
     ("node(s) had untolerated taint {k: }",)),                                    # names the one not tolerated
])
def test_taint_toleration_filter(taints, tolerations, expected):
    pod = make_pod(tolerations=tolerations)
    assert run(TaintToleration(), pod, node_info(taints=taints)) == expected


# ---------------------------------------------------------------- NodeAffinity

MISMATCH = ("node(s) didn't match Pod's node affinity/selector",)


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def term(*expressions, fields=()):
    result = {}
    if expressions:
        result["matchExpressions"] = [dict(zip(("key", "operator", "values"), e)) for e in expressions]
    if fields:
        result["matchFields"] = [dict(zip(("key", "operator", "values"), f)) for f in fields]
    return result


LABELS = {"disktype": "ssd", "cores": "8", "zone": "a"}


@pytest.mark.parametrize("spec, expected", [
    ({}, FITS),
    ({"nodeSelector": {"disktype": "ssd"}}, FITS),
    ({"nodeSelector": {"disktype": "ssd", "zone": "a"}}, FITS),
    ({"nodeSelector": {"disktype": "hdd"}}, MISMATCH),
    ({"nodeSelector": {"gpu": "yes"}}, MISMATCH),
    ({"affinity": required(term(("disktype", "In", ["ssd", "nvme"])))}, FITS),
    ({"affinity": required(term(("disktype", "In", ["hdd"])))}, MISMATCH),
    ({"affinity": required(term(("disktype", "NotIn", ["hdd"])))}, FITS),
    ({"affinity": required(term(("disktype", "NotIn", ["ssd"])))}, MISMATCH),
    ({"affinity": required(term(("gpu", "NotIn", ["yes"])))}, FITS),               # absent label: not in
    ({"affinity": required(term(("disktype", "Exists", [])))}, FITS),
    ({"affinity": required(term(("gpu", "Exists", [])))}, MISMATCH),
    ({"affinity": required(term(("gpu", "DoesNotExist", [])))}, FITS),
    ({"affinity": required(term(("disktype", "DoesNotExist", [])))}, MISMATCH),
    ({"affinity": required(term(("cores", "Gt", ["4"])))}, FITS),
    ({"affinity": required(term(("cores", "Gt", ["8"])))}, MISMATCH),
    ({"affinity": required(term(("cores", "Lt", ["16"])))}, FITS),
    ({"affinity": required(term(("cores", "Lt", ["8"])))}, MISMATCH),
    ({"affinity": required(term(("zone", "Gt", ["1"])))}, MISMATCH),               # not a number
    ({"affinity": required(term(("gpu", "Lt", ["1"])))}, MISMATCH),                # absent
    # Terms are ORed, expressions within a term ANDed.
    ({"affinity": required(term(("disktype", "In", ["hdd"])), term(("zone", "In", ["a"])))}, FITS),
    ({"affinity": required(term(("disktype", "In", ["ssd"]), ("zone", "In", ["b"])))}, MISMATCH),
    ({"affinity": required(term())}, MISMATCH),                                     # an empty term matches nothing
    ({"affinity": required()}, MISMATCH),
    ({"affinity": required(term(fields=[("metadata.name", "In", ["node1"])]))}, FITS),
    ({"affinity": required(term(fields=[("metadata.name", "NotIn", ["node1"])]))}, MISMATCH),
    # nodeSelector and affinity must both hold.
    ({"nodeSelector": {"disktype": "hdd"}, "affinity": required(term(("zone", "In", ["a"])))}, MISMATCH),
])
def test_node_affinity_filter(spec, expected):
    assert run(NodeAffinity(), make_pod(**spec), node_info("node1", labels=LABELS)) == expected


# ---------------------------------------------------------------- NodePorts

NO_PORTS = ("node(s) didn't have free ports for the requested pod ports",)


def with_ports(name, *ports):
    """A pod whose container takes these host ports: (port,), (port, protocol) or (port, protocol, ip)."""
    specs = [dict(zip(("hostPort", "protocol", "hostIP"), p), containerPort=p[0]) for p in ports]
    pod = make_pod(name)
    pod.pod["spec"]["containers"][0]["ports"] = specs
    from pod_info import PodInfo
    return PodInfo.of(pod.pod)


@pytest.mark.parametrize("used, wanted, expected", [
    ([], [(8080,)], FITS),
    ([(8080,)], [(8080,)], NO_PORTS),
    ([(8080,)], [(8081,)], FITS),
    ([(53, "TCP")], [(53, "UDP")], FITS),                                    # another protocol
    ([(53, "UDP")], [(53, "UDP")], NO_PORTS),
    ([(80, "TCP", "10.0.0.1")], [(80, "TCP", "10.0.0.2")], FITS),            # different addresses
    ([(80, "TCP", "10.0.0.1")], [(80, "TCP", "10.0.0.1")], NO_PORTS),
    ([(80, "TCP", "10.0.0.1")], [(80, "TCP", "0.0.0.0")], NO_PORTS),         # every address includes it
    ([(80, "TCP")], [(80, "TCP", "10.0.0.1")], NO_PORTS),
    ([(80,)], [(81,), (80,)], NO_PORTS),                                     # any one port clashing is enough
])
def test_node_ports(used, wanted, expected):
    node = node_info(running=[with_ports("running", *used)] if used else [])
    assert run(NodePorts(), with_ports("new", *wanted), node) == expected


def test_a_port_is_free_again_once_its_pod_is_gone():
    node = node_info(running=[with_ports("running", (8080,))])
    node.remove_pod("default/running")
    assert run(NodePorts(), with_ports("new", (8080,)), node) == FITS


# ---------------------------------------------------------------- NodeResourcesFit

@pytest.mark.parametrize("node, running, pod, expected", [
    (dict(cpu="2"), [], dict(cpu="2"), FITS),                               # exactly full fits
    (dict(cpu="2"), [], dict(cpu="2001m"), ("Insufficient cpu",)),
    (dict(cpu="2"), [dict(cpu="1500m")], dict(cpu="500m"), FITS),
    (dict(cpu="2"), [dict(cpu="1500m")], dict(cpu="600m"), ("Insufficient cpu",)),
    (dict(memory="1Gi"), [], dict(memory="1Gi"), FITS),
    (dict(memory="1Gi"), [], dict(memory="1025Mi"), ("Insufficient memory",)),
    (dict(cpu="1", memory="1Gi"), [], dict(cpu="2", memory="2Gi"), ("Insufficient cpu", "Insufficient memory")),
    (dict(pods="2"), [{}, {}], {}, ("Too many pods",)),
    (dict(pods="3"), [{}, {}], {}, FITS),
    (dict(pods="1", cpu="1"), [{}], dict(cpu="2"), ("Too many pods", "Insufficient cpu")),
    (dict(cpu="1"), [], dict(limits={"cpu": "2"}), ("Insufficient cpu",)),     # a limit alone is the request
    (dict(cpu="1"), [dict(limits={"cpu": "800m"})], dict(cpu="300m"), ("Insufficient cpu",)),
    (dict(cpu="1"), [dict(cpu="1")], {}, FITS),                               # asking for nothing always fits
])
def test_node_resources_fit(node, running, pod, expected):
    pods = [make_pod(f"running-{i}", **spec) for i, spec in enumerate(running)]
    assert run(NodeResourcesFit(), make_pod("new", **pod), node_info(running=pods, **node)) == expected


def test_extended_resources_are_compared_by_name():
    pod = make_pod(limits={"example.com/gpu": "2"})
    node = node_info()
    assert run(NodeResourcesFit(), pod, node) == ("Insufficient example.com/gpu",)
    node.allocatable["example.com/gpu"] = 2
    assert run(NodeResourcesFit(), pod, node) == FITS


# ---------------------------------------------------------------- InterPodAffinity

def anti(selector_labels, topology="kubernetes.io/hostname", namespaces=None):
    entry = {"labelSelector": {"matchLabels": selector_labels}, "topologyKey": topology}
    if namespaces is not None:
        entry["namespaces"] = namespaces
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [entry]}}


def near(selector_labels, topology="kubernetes.io/hostname"):
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector_labels}, "topologyKey": topology}]}}


WEB = {"app": "web"}


@pytest.mark.parametrize("case, new_pod, on_node1, on_node2, expected_node1", [
    ("no rules", dict(labels=WEB), [dict(labels=WEB)], [], FITS),
    ("anti-affinity, a match on this host", dict(labels=WEB, affinity=anti(WEB)), [dict(labels=WEB)], [],
     ("node(s) didn't match pod anti-affinity rules",)),
    ("anti-affinity, the match on another host", dict(labels=WEB, affinity=anti(WEB)), [], [dict(labels=WEB)],
     FITS),
    ("anti-affinity, a match in another namespace", dict(labels=WEB, affinity=anti(WEB)),
     [dict(labels=WEB, namespace="other")], [], FITS),
    ("anti-affinity naming that namespace", dict(labels=WEB, affinity=anti(WEB, namespaces=["other"])),
     [dict(labels=WEB, namespace="other")], [], ("node(s) didn't match pod anti-affinity rules",)),
    ("anti-affinity by zone: both nodes share zone a", dict(labels=WEB, affinity=anti(WEB, "zone")), [],
     [dict(labels=WEB)], ("node(s) didn't match pod anti-affinity rules",)),
    ("an existing pod keeps newcomers away", dict(labels=WEB), [dict(labels={"app": "db"}, affinity=anti(WEB))],
     [], ("node(s) didn't satisfy existing pods anti-affinity rules",)),
    ("an existing pod's rule for someone else", dict(labels={"app": "cache"}),
     [dict(labels={"app": "db"}, affinity=anti(WEB))], [], FITS),
    ("affinity, the match is here", dict(affinity=near({"app": "cache"})), [dict(labels={"app": "cache"})], [],
     FITS),
    ("affinity, the match is elsewhere", dict(affinity=near({"app": "cache"})), [],
     [dict(labels={"app": "cache"})], ("node(s) didn't match pod affinity rules",)),
    ("affinity, no match anywhere", dict(affinity=near({"app": "cache"})), [], [],
     ("node(s) didn't match pod affinity rules",)),
    ("affinity to its own kind, the first one", dict(labels=WEB, affinity=near(WEB)), [], [], FITS),
    ("affinity by a label the node lacks", dict(labels=WEB, affinity=near(WEB, "rack")), [], [],
     ("node(s) didn't match pod affinity rules",)),
])
def test_inter_pod_affinity(case, new_pod, on_node1, on_node2, expected_node1):
    def pods(specs, node):
        return [make_pod(f"{node}-{i}", **spec) for i, spec in enumerate(specs)]
    node1 = node_info("node1", labels={"zone": "a"}, running=pods(on_node1, "node1"))
    node2 = node_info("node2", labels={"zone": "a"}, running=pods(on_node2, "node2"))
    assert run(InterPodAffinity(), make_pod("new", **new_pod), node1, others=[node2]) == expected_node1
