"""--authorization-mode Node,RBAC with NodeRestriction: two kubelets' credentials,
each trying its own objects and the other node's, over real HTTPS."""
from __future__ import annotations


import pytest

import node_authorizer
from apiserver_harness import make_certs, unique
from test_gauntlet import SecureServer, as_user  # as_user: a client signed in with a user's token

PLUGINS = "NamespaceLifecycle,LimitRanger,DenyPrivileged,NoControllerManager,NodeRestriction"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"), nodes='node1,node2,node3')   # node3: not registered
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs):
    started = SecureServer(tmp_path_factory.mktemp("node") / "data", certs, "--authorization-mode", "Node,RBAC",
                           "--enable-admission-plugins", PLUGINS).start()
    yield started
    started.stop()



@pytest.fixture(scope="module")
def world(server, certs):
    """Per node: a Node, a Lease, and a pod bound to it that uses a Secret and a ConfigMap of its own."""
    admin = as_user(server, certs, "admin")
    ns = unique("nodes")
    assert admin.post("/api/v1/namespaces", {"metadata": {"name": ns}}).status_code == 201
    for node in ("node1", "node2"):
        assert admin.post("/api/v1/nodes", {"metadata": {"name": node}}).status_code == 201
        assert admin.post(f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": f"{node}-secret"},
                                                               "stringData": {"k": "v"}}).status_code == 201
        assert admin.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": f"{node}-config"},
                                                                  "data": {"k": "v"}}).status_code == 201
        pod = {"metadata": {"name": f"on-{node}"}, "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "busybox:1.35",
                            "envFrom": [{"configMapRef": {"name": f"{node}-config"}}]}],
            "volumes": [{"name": "s", "secret": {"secretName": f"{node}-secret"}}]}}
        assert admin.post(f"/api/v1/namespaces/{ns}/pods", pod).status_code == 201
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": node},
                 "spec": {"holderIdentity": node, "leaseDurationSeconds": 40}}
        assert admin.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease).status_code \
            in (201, 409)
    return ns


def test_a_node_reads_only_its_own_pods_secrets_and_config_maps(server, certs, world):
    node1 = as_user(server, certs, "system:node:node1")
    assert node1.get(f"/api/v1/namespaces/{world}/secrets/node1-secret").status_code == 200
    assert node1.get(f"/api/v1/namespaces/{world}/configmaps/node1-config").status_code == 200
    refused = node1.get(f"/api/v1/namespaces/{world}/secrets/node2-secret")
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        f'secrets "node2-secret" is forbidden: User "system:node:node1" cannot get resource "secrets" in API '
        f"group \"\" in the namespace \"{world}\": no relationship found between node 'node1' and this object")
    assert node1.get(f"/api/v1/namespaces/{world}/configmaps/node2-config").status_code == 403
    assert node1.get(f"/api/v1/namespaces/{world}/secrets").status_code == 403          # no listing them all
    # What is not a Secret or ConfigMap follows system:node: every pod may be read, no namespace deleted.
    assert node1.get(f"/api/v1/namespaces/{world}/pods/on-node2").status_code == 200
    assert node1.delete(f"/api/v1/namespaces/{world}").status_code == 403


def test_a_node_reads_only_the_claims_its_pods_mount_and_their_volumes(server, certs, world):
    admin = as_user(server, certs, "admin")
    for node in ("node1", "node2"):
        assert admin.post("/api/v1/persistentvolumes", {"metadata": {"name": f"{world}-{node}-pv"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "hostPath": {"path": "/tmp/x"}}}).status_code == 201
        assert admin.post(f"/api/v1/namespaces/{world}/persistentvolumeclaims", {
            "metadata": {"name": f"{node}-data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": f"{world}-{node}-pv",
                "resources": {"requests": {"storage": "1Gi"}}}}).status_code == 201
        assert admin.post(f"/api/v1/namespaces/{world}/pods", {"metadata": {"name": f"db-{node}"}, "spec": {
            "nodeName": node, "containers": [{"name": "db", "image": "busybox:1.35"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": f"{node}-data"}}]}}).status_code == 201
    node1 = as_user(server, certs, "system:node:node1")
    assert node1.get(f"/api/v1/namespaces/{world}/persistentvolumeclaims/node1-data").status_code == 200
    assert node1.get(f"/api/v1/persistentvolumes/{world}-node1-pv").status_code == 200
    refused = node1.get(f"/api/v1/namespaces/{world}/persistentvolumeclaims/node2-data")
    assert refused.status_code == 403
    assert refused.json()["message"].endswith("no relationship found between node 'node1' and this object")
    assert node1.get(f"/api/v1/persistentvolumes/{world}-node2-pv").status_code == 403
    assert node1.get("/api/v1/persistentvolumes").status_code == 403          # no listing them all


def test_a_node_changes_only_its_own_node_and_lease(server, certs, world):
    node1 = as_user(server, certs, "system:node:node1")
    label = {"metadata": {"labels": {"checked": "yes"}}}
    assert node1.patch("/api/v1/nodes/node1", label).status_code == 200
    refused = node1.patch("/api/v1/nodes/node2", label)
    assert refused.status_code == 403
    assert refused.json()["message"] == 'nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"'
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    assert node1.patch(f"{leases}/node1", {"spec": {"holderIdentity": "node1"}}).status_code == 200
    refused = node1.get(f"{leases}/node2")                     # the authorizer's refusal; admission sees no reads
    assert refused.status_code == 403
    assert refused.json()["message"].endswith(": can only access node lease with the same name as the requesting node")
    refused = node1.patch(f"{leases}/node2", {"spec": {"holderIdentity": "node1"}})
    assert refused.status_code == 403
    assert refused.json()["message"].endswith(": can only access node lease with the same name as the requesting node")
    # A create names no lease to the authorizer; NodeRestriction checks the name.
    stolen = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node3"}, "spec": {}}
    refused = node1.post(leases, stolen)
    assert refused.status_code == 403 and "same name as the requesting node" in refused.json()["message"]


@pytest.mark.parametrize("labels, refused", [
    ({"node-restriction.kubernetes.io/trusted": "yes"}, "node-restriction.kubernetes.io/trusted"),
    ({"tier.node-restriction.kubernetes.io/pci": "yes"}, "tier.node-restriction.kubernetes.io/pci"),
    ({"node-role.kubernetes.io/control-plane": ""}, "node-role.kubernetes.io/control-plane"),
    ({"example.k8s.io/x": "y", "kubernetes.io/hostname": "other"}, "example.k8s.io/x"),
    ({"kubernetes.io/os": None}, None),                          # removing its own os label is its business
    ({"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "big",
      "kubelet.kubernetes.io/x": "y", "team": "a"}, None),     # what kubelets say about themselves
])
def test_a_node_may_not_set_labels_that_steer_workloads(server, certs, world, labels, refused):
    admin, node1 = as_user(server, certs, "admin"), as_user(server, certs, "system:node:node1")
    assert admin.patch("/api/v1/nodes/node1", {"metadata": {"labels": {"kubernetes.io/os": "linux"}}}).ok
    response = node1.patch("/api/v1/nodes/node1", {"metadata": {"labels": labels}})
    if refused is None:
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 403, response.text
    assert response.json()["message"] == f'nodes "node1" is forbidden: is not allowed to modify labels: {refused}'
    # An administrator may set them; the node may not take them away either.
    assert admin.patch("/api/v1/nodes/node1", {"metadata": {"labels": labels}}).status_code == 200
    removal = node1.patch("/api/v1/nodes/node1", {"metadata": {"labels": {refused: None}}})
    assert removal.status_code == 403 and removal.json()["message"].endswith(f"modify labels: {refused}")


def test_a_node_registers_only_with_labels_a_kubelet_may_set(server, certs):
    node3 = as_user(server, certs, "system:node:node3")
    labels = {"kubernetes.io/hostname": "node3", "node-restriction.kubernetes.io/trusted": "yes",
              "node-role.kubernetes.io/worker": ""}
    refused = node3.post("/api/v1/nodes", {"metadata": {"name": "node3", "labels": labels}})
    assert refused.status_code == 403
    assert refused.json()["message"] == ('nodes "node3" is forbidden: node "node3" is not allowed to set the '
                                         "following labels: node-restriction.kubernetes.io/trusted, "
                                         "node-role.kubernetes.io/worker")
    # Taints at registration are allowed (kubelet --register-with-taints).
    tainted = {"metadata": {"name": "node3", "labels": {"kubernetes.io/hostname": "node3"}},
               "spec": {"taints": [{"key": "new", "effect": "NoSchedule"}]}}
    assert node3.post("/api/v1/nodes", tainted).status_code == 201


def test_a_node_may_not_change_its_taints(server, certs, world):
    admin, node1 = as_user(server, certs, "admin"), as_user(server, certs, "system:node:node1")
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    assert admin.patch("/api/v1/nodes/node1", {"spec": {"taints": [taint]}}).status_code == 200
    for change in ({"spec": {"taints": None}}, {"spec": {"taints": [{**taint, "effect": "PreferNoSchedule"}]}}):
        refused = node1.patch("/api/v1/nodes/node1", change)
        assert refused.status_code == 403, refused.text
        assert refused.json()["message"] == 'nodes "node1" is forbidden: node "node1" is not allowed to modify taints'
    # Its heartbeat (the status) and its other fields still go through.
    assert node1.patch("/api/v1/nodes/node1/status", {"status": {"phase": "Running"}}).status_code == 200
    assert node1.patch("/api/v1/nodes/node1", {"spec": {"unschedulable": False}}).status_code == 200
    assert admin.get("/api/v1/nodes/node1").json()["spec"]["taints"] == [taint]
    assert admin.patch("/api/v1/nodes/node1", {"spec": {"taints": None}}).status_code == 200


def test_a_node_writes_only_its_own_pods_status(server, certs, world):
    node1 = as_user(server, certs, "system:node:node1")
    status = {"status": {"phase": "Running"}}
    pods = f"/api/v1/namespaces/{world}/pods"
    assert node1.patch(f"{pods}/on-node1/status", status).status_code == 200
    refused = node1.patch(f"{pods}/on-node2/status", status)
    assert refused.status_code == 403
    assert refused.json()["message"] == ('pods "on-node2" is forbidden: node "node1" can only update pod status '
                                         "for pods with spec.nodeName set to itself")
    refused = node1.delete(f"{pods}/on-node2")
    assert refused.status_code == 403 and "can only delete pods with spec.nodeName set to itself" in refused.text
    plain = {"metadata": {"name": "sneaky"}, "spec": {"nodeName": "node1",
                                                      "containers": [{"name": "a", "image": "busybox:1.35"}]}}
    refused = node1.post(pods, plain)
    assert refused.status_code == 403 and "can only create mirror pods" in refused.json()["message"]


MIRROR = {"kubernetes.io/config.mirror": "hash"}
APP = {"name": "app", "image": "busybox:1.35"}


def mirror_pod(name: str, node: str = "node1", container: dict | None = None, **spec) -> dict:
    return {"metadata": {"name": name, "annotations": MIRROR},
            "spec": {"nodeName": node, "containers": [{**APP, **(container or {})}], **spec}}


@pytest.mark.parametrize("container, spec, refers_to", [
    ({}, {"volumes": [{"name": "s", "secret": {"secretName": "private"}}]}, "secrets"),
    ({"env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "private", "key": "k"}}}]}, {}, "secrets"),
    ({"envFrom": [{"secretRef": {"name": "private"}}]}, {}, "secrets"),
    ({}, {"imagePullSecrets": [{"name": "private"}]}, "secrets"),
    ({}, {"volumes": [{"name": "p", "projected": {"sources": [{"secret": {"name": "private"}}]}}]}, "secrets"),
    ({}, {"volumes": [{"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "private"}}}]},
     "secrets"),
    ({}, {"initContainers": [{**APP, "name": "init", "envFrom": [{"secretRef": {"name": "private"}}]}]}, "secrets"),
    ({}, {"volumes": [{"name": "c", "configMap": {"name": "private"}}]}, "configmaps"),
    ({"env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "private", "key": "k"}}}]}, {}, "configmaps"),
    ({"envFrom": [{"configMapRef": {"name": "private"}}]}, {}, "configmaps"),
    ({}, {"volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": "private"}}]}}]},
     "configmaps"),
    ({}, {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "private"}}]}, "persistentvolumeclaims"),
    ({}, {"serviceAccountName": "default"}, "a service account"),
    ({}, {"serviceAccount": "default"}, "a service account"),
])
def test_a_node_cannot_create_a_mirror_pod_that_refers_to_other_objects(server, certs, world, container, spec,
                                                                         refers_to):
    """Else the Node authorizer would let it read whatever its pod names."""
    admin, node1 = as_user(server, certs, "admin"), as_user(server, certs, "system:node:node1")
    for kind, body in (("secrets", {"stringData": {"k": "v"}}), ("configmaps", {"data": {"k": "v"}})):
        assert admin.post(f"/api/v1/namespaces/{world}/{kind}", {"metadata": {"name": "private"}, **body}) \
            .status_code in (201, 409)
    name = unique("mirror")
    refused = node1.post(f"/api/v1/namespaces/{world}/pods", mirror_pod(name, container=container, **spec))
    assert refused.status_code == 403, refused.text
    assert refused.json()["message"] == (f'pods "{name}" is forbidden: node "node1" can not create pods that '
                                         f"reference {refers_to}")
    assert node1.get(f"/api/v1/namespaces/{world}/secrets/private").status_code == 403
    assert node1.get(f"/api/v1/namespaces/{world}/configmaps/private").status_code == 403


def test_a_node_creates_a_mirror_pod_that_refers_to_nothing(server, certs, world):
    node1 = as_user(server, certs, "system:node:node1")
    pods = f"/api/v1/namespaces/{world}/pods"
    plain = mirror_pod(unique("mirror"), volumes=[{"name": "scratch", "emptyDir": {}}])
    assert node1.post(pods, plain).status_code == 201
    refused = node1.post(pods, mirror_pod(unique("mirror"), node="node2"))
    assert refused.status_code == 403
    assert refused.json()["message"].endswith('node "node1" can only create pods with spec.nodeName set to itself')


def test_other_users_are_left_to_rbac(server, certs, world):
    viewer = as_user(server, certs, "viewer")
    assert viewer.get(f"/api/v1/namespaces/{world}/pods").status_code == 200         # RBAC's view
    assert viewer.get(f"/api/v1/namespaces/{world}/secrets/node1-secret").status_code == 403
    # With the Node authorizer, the binding that gave every node system:node is not made.
    admin = as_user(server, certs, "admin")
    assert admin.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/groundup:nodes").status_code == 404


def test_the_binding_for_nodes_goes_when_the_node_authorizer_comes(tmp_path, certs):
    """A cluster that ran RBAC alone had groundup:nodes (every node: system:node, every Secret)."""
    for mode, code in (("RBAC", 200), ("Node,RBAC", 404)):
        started = SecureServer(tmp_path / "data", certs, "--authorization-mode", mode).start()
        try:
            found = as_user(started, certs, "admin").get(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/groundup:nodes")
            assert found.status_code == code, mode
        finally:
            started.stop()


@pytest.mark.parametrize("pod, kind, names", [
    ({"spec": {"volumes": [{"secret": {"secretName": "a"}}, {"configMap": {"name": "b"}}]}}, "secret", {"a"}),
    ({"spec": {"volumes": [{"projected": {"sources": [{"configMap": {"name": "c"}}]}}]}}, "configMap", {"c"}),
    ({"spec": {"containers": [{"env": [{"valueFrom": {"secretKeyRef": {"name": "d", "key": "k"}}}]}]}},
     "secret", {"d"}),
    ({"spec": {"initContainers": [{"envFrom": [{"configMapRef": {"name": "e"}}]}]}}, "configMap", {"e"}),
    ({"spec": {"imagePullSecrets": [{"name": "f"}]}}, "secret", {"f"}),
    ({"spec": {"imagePullSecrets": [{"name": "f"}]}}, "configMap", set()),
    # Storage plugins' credentials, as Kubernetes' VisitPodSecretNames lists them.
    ({"spec": {"volumes": [{"azureFile": {"secretName": "g"}}, {"cephfs": {"secretRef": {"name": "h"}}},
                           {"csi": {"nodePublishSecretRef": {"name": "i"}}}]}}, "secret", {"g", "h", "i"}),
    ({"spec": {"ephemeralContainers": [{"env": [{"valueFrom": {"configMapKeyRef": {"name": "j"}}}]}]}},
     "configMap", {"j"}),
    ({"spec": {"imagePullSecrets": [{"name": ""}], "volumes": "not a list"}}, "secret", set()),
])
def test_what_a_pod_refers_to(pod, kind, names):
    assert node_authorizer.referenced(pod, kind) == names
