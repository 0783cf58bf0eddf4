"""ConfigMaps, Secrets and the downward API, as volumes and as variables
(real API server, real kubelet in API mode, real Docker, real kubectl).

One API server and one kubelet serve the whole module; every test uses
names of its own, so the tests do not see each other's objects."""
from __future__ import annotations

import base64
import os
import shutil
import subprocess

import docker.errors
import pytest
import yaml

from apiserver_harness import APIServer, Client, unique
from harness import Kubelet, all_running, pod_yaml
from polling import wait_for

NS = "/api/v1/namespaces/default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client):
    tmp = tmp_path_factory.mktemp("api-volumes")
    server = APIServer(tmp / "data").start()
    root = tmp / "kubelet-root"
    kubelet = Kubelet(tmp, docker_client, None, "--apiserver", server.url, "--root-dir", str(root),
                      "--node-status-update-frequency", "1")
    try:
        kubelet.start()
        api = Client(server.url)
        wait_for(lambda: api.get(f"/api/v1/nodes/{kubelet.node_name}").status_code == 200, timeout=30,
                 what="the node to register")
        yield Cluster(api, kubelet, server, root)
    finally:
        try:
            kubelet.cleanup()
        finally:                      # the server goes even if a container would not
            server.stop()
            shutil.rmtree(f"/dev/shm/groundup-kubelet/{kubelet.node_name}", ignore_errors=True)


class Cluster:
    def __init__(self, api: Client, kubelet: Kubelet, server: APIServer, root):
        self.api, self.kubelet, self.server, self.root = api, kubelet, server, root

    def create(self, plural: str, obj: dict) -> dict:
        response = self.api.post(f"{NS}/{plural}", obj)
        assert response.status_code == 201, response.text
        return response.json()

    def config_map(self, name: str, data: dict) -> dict:
        return self.create("configmaps", {"metadata": {"name": name}, "data": data})

    def secret(self, name: str, data: dict) -> dict:
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        return self.create("secrets", {"metadata": {"name": name}, "data": encoded})

    def run(self, name: str, containers: list[dict], volumes: list[dict] | None = None, **spec) -> dict:
        pod = {"metadata": {"name": name, **spec.pop("metadata", {})},
               "spec": {"nodeName": self.kubelet.node_name, "terminationGracePeriodSeconds": 0,
                        "containers": containers, "volumes": volumes or [], **spec}}
        return self.create("pods", pod)

    def pod(self, name: str) -> dict | None:
        response = self.api.get(f"{NS}/pods/{name}")
        return response.json() if response.status_code == 200 else None

    def wait_running(self, name: str, timeout: float = 60) -> dict:
        def running():
            pod = self.pod(name)
            return pod if pod and pod.get("status") and all_running(pod) else None
        try:
            return wait_for(running, timeout, what=f"pod {name} running")
        except AssertionError as error:
            raise AssertionError(f"{error}\nstatus: {(self.pod(name) or {}).get('status')}\n"
                                 f"kubelet log:\n{self.kubelet.log()[-3000:]}") from None

    def waiting(self, name: str) -> dict | None:
        """The first container's waiting state, once the kubelet reported one."""
        statuses = ((self.pod(name) or {}).get("status") or {}).get("containerStatuses") or []
        return statuses[0]["state"].get("waiting") if statuses else None

    def events(self, name: str) -> list[dict]:
        selector = f"involvedObject.name={name},involvedObject.namespace=default"
        return self.api.get(f"{NS}/events", params={"fieldSelector": selector}).json()["items"]

    def event(self, name: str, reason: str, timeout: float = 30) -> dict:
        found = lambda: next((e for e in self.events(name) if e["reason"] == reason), None)  # noqa: E731
        return wait_for(found, timeout, what=f"a {reason} event on pod {name}")

    def sh(self, pod: str, command: str, container: str = "app") -> str:
        result = self.kubelet.container(pod, container).exec_run(["sh", "-c", command])
        return result.output.decode()

    def delete(self, plural: str, name: str) -> None:
        self.api.delete(f"{NS}/{plural}/{name}", {"gracePeriodSeconds": 0})

    def delete_pod(self, name: str) -> None:
        """Delete the pod and wait for its containers to go (a test leaves nothing behind)."""
        self.delete("pods", name)
        wait_for(lambda: self.pod(name) is None and not self.kubelet.containers(name), 60,
                 what=f"pod {name} and its containers to go")


# A plain `sleep` as a container's first process ignores SIGTERM, so every
# deletion would wait out the kubelet's two-second minimum grace; this one
# ends on SIGTERM, and a test's clean-up takes a moment.
SLEEP_UNTIL_TERM = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def sleeper(name: str = "app", **extra) -> dict:
    return {"name": name, "image": "busybox:1.35", "command": SLEEP_UNTIL_TERM, **extra}


def mounted(name: str, path: str) -> dict:
    return {"volumeMounts": [{"name": name, "mountPath": path}]}


# --- configMap and secret volumes ----------------------------------------------------------

def test_a_configmap_volume_holds_its_keys_with_their_paths_and_modes_read_only(cluster):
    name = unique("cm")
    cluster.config_map(name, {"game.properties": "lives=3\n", "ui.properties": "color=blue\n", "unused": "x"})
    volumes = [{"name": "all", "configMap": {"name": name, "defaultMode": 0o640}},
               {"name": "some", "configMap": {"name": name, "items": [
                   {"key": "game.properties", "path": "game/game.cfg", "mode": 0o600},
                   {"key": "ui.properties", "path": "ui.cfg"}]}}]
    mounts = {"volumeMounts": [{"name": "all", "mountPath": "/etc/all"},
                               {"name": "some", "mountPath": "/etc/some"}]}
    cluster.run(name, [sleeper(**mounts)], volumes)
    cluster.wait_running(name)
    assert cluster.sh(name, "ls /etc/all").split() == ["game.properties", "ui.properties", "unused"]
    assert cluster.sh(name, "ls /etc/some").split() == ["game", "ui.cfg"]
    assert cluster.sh(name, "cat /etc/some/game/game.cfg /etc/some/ui.cfg") == "lives=3\ncolor=blue\n"
    # The modes are the files' own (stat -L follows the ..data symlinks).
    modes = cluster.sh(name, "stat -L -c '%a %n' /etc/all/unused /etc/some/game/game.cfg /etc/some/ui.cfg")
    assert modes.split("\n")[:3] == ["640 /etc/all/unused", "600 /etc/some/game/game.cfg", "644 /etc/some/ui.cfg"]
    # The kubelet's layout: a timestamped directory, ..data pointing at it.
    listing = cluster.sh(name, "ls -a /etc/some; readlink /etc/some/..data; readlink /etc/some/ui.cfg").split()
    assert "..data" in listing and "..data/ui.cfg" in listing
    assert any(entry.startswith("..20") for entry in listing)
    # Read-only, though the pod did not ask: the kubelet owns these files.
    assert "Read-only file system" in cluster.sh(name, "echo changed > /etc/all/new 2>&1; touch /etc/all/unused 2>&1")
    assert "ro," in cluster.sh(name, "grep ' /etc/all ' /proc/mounts")
    cluster.delete_pod(name)


def test_a_sub_path_mounts_one_file_of_a_configmap_and_is_refused_for_an_empty_dir(cluster):
    name = unique("subpath")
    cluster.config_map(name, {"app.conf": "port=80\n", "other": "x"})
    mount = {"volumeMounts": [{"name": "c", "mountPath": "/etc/app.conf", "subPath": "app.conf"}]}
    cluster.run(name, [sleeper(**mount)], [{"name": "c", "configMap": {"name": name}}])
    cluster.wait_running(name)
    assert cluster.sh(name, "cat /etc/app.conf; ls /etc | grep -c other") == "port=80\n0\n"
    empty = f"{name}-empty"
    cluster.run(empty, [sleeper(volumeMounts=[{"name": "e", "mountPath": "/e", "subPath": "part"}])],
                [{"name": "e", "emptyDir": {}}])
    waiting = wait_for(lambda: (w := cluster.waiting(empty)) and w["reason"] == "CreateContainerConfigError" and w,
                       30, what="CreateContainerConfigError")
    assert waiting["message"] == ('volumeMounts "e": subPath is supported by this kubelet only for configMap, '
                                  "secret, downwardAPI and projected volumes")
    cluster.delete_pod(name)
    cluster.delete_pod(empty)


def test_a_secret_volume_is_on_tmpfs_never_on_disk_and_goes_with_its_pod(cluster):
    name, value = unique("secret"), f"s3cr3t-{unique('value')}"
    cluster.secret(name, {"password": value, "user": "admin"})
    volumes = [{"name": "creds", "secret": {"secretName": name, "defaultMode": 0o400}}]
    uid = cluster.run(name, [sleeper(**mounted("creds", "/etc/creds"))], volumes)["metadata"]["uid"]
    cluster.wait_running(name)
    assert cluster.sh(name, "cat /etc/creds/password") == value
    assert cluster.sh(name, "stat -L -c %a /etc/creds/user").strip() == "400"
    assert cluster.sh(name, "grep ' /etc/creds ' /proc/mounts").split()[2] == "tmpfs"
    on_shm = f"/dev/shm/groundup-kubelet/{cluster.kubelet.node_name}/pods/{uid}"
    assert os.path.isdir(on_shm)
    # Nowhere in the kubelet's own directory on disk, nor in its log.
    assert not files_containing(cluster.root, value.encode())
    assert value not in cluster.kubelet.log()
    cluster.delete_pod(name)
    wait_for(lambda: not os.path.exists(on_shm), 30, what="the secret volume to go with its pod")


def files_containing(directory, needle: bytes) -> list[str]:
    found = []
    for root, _, names in os.walk(directory):
        for file_name in names:
            path = os.path.join(root, file_name)
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    if needle in f.read():
                        found.append(path)
    return found


def test_a_missing_configmap_holds_the_pod_in_container_creating_until_it_appears(cluster):
    name = unique("late")
    cluster.run(name, [sleeper(**mounted("config", "/etc/config"))], [{"name": "config", "configMap": {"name": name}}])
    failed = cluster.event(name, "FailedMount")
    assert failed["type"] == "Warning"
    assert failed["message"] == f'MountVolume.SetUp failed for volume "config" : configmap "{name}" not found'
    assert wait_for(lambda: cluster.waiting(name), 30, what="a waiting status")["reason"] == "ContainerCreating"
    assert cluster.kubelet.containers(name) == []          # not even the sandbox
    cluster.config_map(name, {"greeting": "hello"})
    cluster.wait_running(name)
    assert cluster.sh(name, "cat /etc/config/greeting") == "hello"
    cluster.delete_pod(name)


def test_a_missing_secret_is_told_in_kubernetes_words(cluster):
    name = unique("nosecret")
    cluster.run(name, [sleeper(**mounted("creds", "/etc/creds"))], [{"name": "creds", "secret": {"secretName": name}}])
    assert cluster.event(name, "FailedMount")["message"] == \
        f'MountVolume.SetUp failed for volume "creds" : secret "{name}" not found'
    cluster.delete_pod(name)


def test_optional_missing_objects_give_empty_volumes(cluster):
    name = unique("optional")
    volumes = [{"name": "config", "configMap": {"name": f"{name}-absent", "optional": True}},
               {"name": "creds", "secret": {"secretName": f"{name}-absent", "optional": True}}]
    mounts = {"volumeMounts": [{"name": "config", "mountPath": "/etc/config"},
                               {"name": "creds", "mountPath": "/etc/creds"}]}
    cluster.run(name, [sleeper(**mounts)], volumes)
    cluster.wait_running(name)
    assert cluster.sh(name, "ls /etc/config /etc/creds") == "/etc/config:\n\n/etc/creds:\n"
    assert not any(e["reason"] == "FailedMount" for e in cluster.events(name))
    cluster.delete_pod(name)


@pytest.mark.parametrize("kind, message", [
    ("configMap", "configmap references non-existent config key: nope"),
    ("secret", "references non-existent secret key: nope")])
def test_an_item_naming_a_missing_key_fails_the_mount_unless_optional(cluster, kind, message):
    name = unique("key")
    (cluster.config_map if kind == "configMap" else cluster.secret)(name, {"there": "yes"})
    ref = {"name": name} if kind == "configMap" else {"secretName": name}
    items = [{"key": "there", "path": "there"}, {"key": "nope", "path": "nope"}]
    cluster.run(name, [sleeper(**mounted("v", "/etc/v"))], [{"name": "v", kind: {**ref, "items": items}}])
    assert cluster.event(name, "FailedMount")["message"] == f'MountVolume.SetUp failed for volume "v" : {message}'
    optional = f"{name}-optional"
    cluster.run(optional, [sleeper(**mounted("v", "/etc/v"))],
                [{"name": "v", kind: {**ref, "items": items, "optional": True}}])
    cluster.wait_running(optional)
    assert cluster.sh(optional, "ls /etc/v").split() == ["there"]
    cluster.delete_pod(name)
    cluster.delete_pod(optional)


def test_an_item_path_that_leaves_the_volume_is_refused_naming_the_field(cluster):
    """The API server refuses it (K8S validateKeyToPath), before any kubelet
    sees it; the kubelet's own check of the same rule, its second line for
    what reaches it some other way, is table-tested in
    test_api_volume_payloads.py."""
    name = unique("escape")
    cluster.config_map(name, {"k": "v"})
    volumes = [{"name": "v", "configMap": {"name": name, "items": [{"key": "k", "path": "../../escaped"}]}}]
    pod = {"metadata": {"name": name},
           "spec": {"nodeName": cluster.kubelet.node_name, "volumes": volumes,
                    "containers": [sleeper(**mounted("v", "/etc/v"))]}}
    response = cluster.api.post(f"{NS}/pods", pod)
    assert response.status_code == 422, response.text
    assert ("spec.volumes[0].configMap.items[0].path: Invalid value: \"../../escaped\": must not contain '..'"
            in response.json()["message"])
    cluster.kubelet.wait_syncs()
    assert not list(cluster.root.parent.rglob("escaped")) and not os.path.exists("/dev/shm/escaped")


# --- updates --------------------------------------------------------------------------------

READER = r"""
while true; do
  d=$(readlink /etc/c/..data) || continue
  a=$(cat /etc/c/$d/a 2>/dev/null) || continue      # the old snapshot went: read again
  b=$(cat /etc/c/$d/b 2>/dev/null) || continue
  [ "$a" = "$b" ] || echo "MIXED ${a:0:4} ${b:0:4}"
  [ ${#a} -eq 20000 ] || echo "SHORT ${#a}"
  whole=$(cat /etc/c/a)
  [ ${#whole} -eq 20000 ] || echo "SHORT ${#whole}"
  [ "${a:0:4}" = "$seen" ] || { seen=${a:0:4}; echo "SAW $seen"; }
done
"""


def version(n: int) -> str:
    return f"{n:04d}" * 5000                # 20,000 characters: a torn write would be shorter


def test_a_configmap_update_reaches_the_volume_atomically(cluster):
    """A reader loops on two keys while the ConfigMap changes five times:
    it sees every version, each file whole, and the two keys always from
    the same version (read through one ..data snapshot)."""
    name = unique("atomic")
    cluster.config_map(name, {"a": version(0), "b": version(0)})
    cluster.run(name, [{"name": "app", "image": "busybox:1.35", "command": ["sh", "-c", READER],
                        **mounted("c", "/etc/c")}], [{"name": "c", "configMap": {"name": name}}])
    cluster.wait_running(name)
    container = cluster.kubelet.container(name, "app")
    logs = lambda: container.logs().decode()          # noqa: E731
    wait_for(lambda: "SAW 0000" in logs(), 30, what="the reader to read version 0")
    for n in range(1, 6):
        current = cluster.api.get(f"{NS}/configmaps/{name}").json()
        current["data"] = {"a": version(n), "b": version(n)}
        assert cluster.api.put(f"{NS}/configmaps/{name}", current).status_code == 200
        wait_for(lambda: f"SAW {n:04d}" in logs(), 30, what=f"the reader to see version {n}")
    assert "MIXED" not in logs() and "SHORT" not in logs(), logs()[-2000:]
    assert cluster.kubelet.container(name, "app").id == container.id      # updated in place, not restarted
    cluster.delete_pod(name)


def test_the_downward_api_volume_follows_the_pods_labels(cluster):
    name = unique("dapi")
    items = [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
             {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
             {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
             {"path": "zone", "fieldRef": {"fieldPath": "metadata.labels['zone']"}},
             {"path": "mem_limit", "resourceFieldRef": {"containerName": "app", "resource": "limits.memory",
                                                        "divisor": "1Mi"}},
             {"path": "cpu_request", "resourceFieldRef": {"containerName": "app", "resource": "requests.cpu",
                                                          "divisor": "1m"}}]
    resources = {"resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}}}
    cluster.run(name, [sleeper(**mounted("podinfo", "/etc/podinfo"), **resources)],
                [{"name": "podinfo", "downwardAPI": {"items": items}}],
                metadata={"labels": {"zone": "us-est-coast", "cluster": "test-cluster1"},
                          "annotations": {"builder": 'john "doe"'}})
    cluster.wait_running(name)
    read = lambda f: cluster.sh(name, f"cat /etc/podinfo/{f}")     # noqa: E731
    assert read("labels") == 'cluster="test-cluster1"\nzone="us-est-coast"'
    assert read("annotations") == 'builder="john \\"doe\\""'
    assert (read("name"), read("zone"), read("mem_limit"), read("cpu_request")) == (name, "us-est-coast", "64", "250")
    app = cluster.kubelet.container(name, "app").id
    patch = {"metadata": {"labels": {"zone": "us-west-coast", "rack": "r1"}}}
    assert cluster.api.patch(f"{NS}/pods/{name}", patch).status_code == 200
    wait_for(lambda: read("labels") == 'cluster="test-cluster1"\nrack="r1"\nzone="us-west-coast"', 30,
             what="the labels file to follow the pod's labels")
    assert read("zone") == "us-west-coast"
    assert cluster.kubelet.container(name, "app").id == app
    cluster.delete_pod(name)


def test_a_projected_volume_merges_its_sources_and_refuses_service_account_tokens(cluster):
    name = unique("projected")
    cluster.config_map(name, {"config": "c"})
    cluster.secret(name, {"password": "p"})
    sources = [{"configMap": {"name": name, "items": [{"key": "config", "path": "my-group/my-config"}]}},
               {"secret": {"name": name, "items": [{"key": "password", "path": "my-group/my-password",
                                                    "mode": 0o400}]}},
               {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]
    cluster.run(name, [sleeper(**mounted("all-in-one", "/projected"))],
                [{"name": "all-in-one", "projected": {"sources": sources}}], metadata={"labels": {"a": "b"}})
    cluster.wait_running(name)
    assert cluster.sh(name, "cat /projected/my-group/my-config /projected/my-group/my-password") == "cp"
    assert cluster.sh(name, "cat /projected/labels; stat -L -c %a /projected/my-group/my-password") == 'a="b"400\n'
    assert cluster.sh(name, "grep ' /projected ' /proc/mounts").split()[2] == "tmpfs"
    token = unique("token")
    cluster.run(token, [sleeper(**mounted("token", "/var/run/token"))],
                [{"name": "token", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}}])
    # This module's API server has no signing key: the pod waits, and says why.
    assert cluster.event(token, "FailedMount")["message"].startswith(
        'MountVolume.SetUp failed for volume "token" : failed to fetch token: ')
    assert "--service-account-signing-key-file" in cluster.event(token, "FailedMount")["message"]
    cluster.delete_pod(name)
    cluster.delete_pod(token)


# --- environment variables ------------------------------------------------------------------

def test_env_from_configmaps_and_secrets_with_prefixes_optional_and_invalid_keys(cluster):
    name = unique("env")
    cluster.config_map(name, {"SPECIAL_LEVEL": "very", "1badkey": "x", "2alsobad": "y", "log.level": "debug"})
    cluster.secret(name, {"username": "admin", "password": "pw"})
    env = [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": name, "key": "SPECIAL_LEVEL"}}},
           {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": name, "key": "password"}}},
           {"name": "ABSENT", "valueFrom": {"configMapKeyRef": {"name": "nothing", "key": "k", "optional": True}}},
           {"name": "NOKEY", "valueFrom": {"secretKeyRef": {"name": name, "key": "nokey", "optional": True}}},
           {"name": "SAY", "value": "$(LEVEL) $(DB_username)"}]
    env_from = [{"configMapRef": {"name": name}}, {"prefix": "DB_", "secretRef": {"name": name}},
                {"configMapRef": {"name": "nothing", "optional": True}}]
    cluster.run(name, [sleeper(env=env, envFrom=env_from)])
    cluster.wait_running(name)
    # The container's own environment (a shell would drop `log.level`, which no shell can name).
    environ = cluster.sh(name, "cat /proc/1/environ").split("\0")
    seen = dict(entry.split("=", 1) for entry in environ if "=" in entry)
    assert {k: seen.get(k) for k in ("LEVEL", "PASSWORD", "SPECIAL_LEVEL", "DB_username", "DB_password",
                                     "log.level", "SAY")} == {
        "LEVEL": "very", "PASSWORD": "pw", "SPECIAL_LEVEL": "very", "DB_username": "admin", "DB_password": "pw",
        "log.level": "debug", "SAY": "very admin"}
    assert "ABSENT" not in seen and "NOKEY" not in seen and "1badkey" not in seen
    assert cluster.event(name, "InvalidEnvironmentVariableNames")["message"] == (
        f"Keys [1badkey, 2alsobad] from the EnvFrom configMap default/{name} were skipped since they are "
        "considered invalid environment variable names.")
    cluster.delete_pod(name)


@pytest.mark.parametrize("ref, message", [
    ({"configMapKeyRef": {"name": "{name}-absent", "key": "k"}}, 'configmap "{name}-absent" not found'),
    ({"secretKeyRef": {"name": "{name}-absent", "key": "k"}}, 'secret "{name}-absent" not found'),
    ({"configMapKeyRef": {"name": "{name}", "key": "nokey"}}, "couldn't find key nokey in ConfigMap default/{name}"),
    ({"secretKeyRef": {"name": "{name}", "key": "nokey"}}, "couldn't find key nokey in Secret default/{name}")])
def test_a_missing_object_or_key_for_a_variable_is_a_create_container_config_error(cluster, ref, message):
    name = unique("envmiss")
    ref = yaml.safe_load(yaml.safe_dump(ref).replace("{name}", name))
    message = message.replace("{name}", name)
    kind = "configmaps" if "configMapKeyRef" in ref else "secrets"
    make = cluster.config_map if kind == "configmaps" else cluster.secret
    make(name, {"other": "x"})                     # the object there is, without the key asked for
    cluster.run(name, [sleeper(env=[{"name": "V", "valueFrom": ref}])])
    waiting = wait_for(lambda: (w := cluster.waiting(name)) and w["reason"] == "CreateContainerConfigError" and w,
                       30, what="CreateContainerConfigError")
    assert waiting["message"] == message
    # The event is sent after the status, on its own: wait for it too.
    wait_for(lambda: any(e["reason"] == "Failed" and e["message"] == f"Error: {message}" for e in cluster.events(name)),
             10, what=f"the Failed event saying {message}")
    # Once the object (and key) is there, the container starts.
    absent = next(iter(ref.values()))["name"]
    if absent != name:
        make(absent, {"k": "v"})
    else:
        cluster.delete(kind, name)
        make(name, {"nokey": "v"})
    cluster.wait_running(name)
    assert cluster.sh(name, "echo $V") == "v\n"
    cluster.delete_pod(name)


# --- static pods -----------------------------------------------------------------------------

def test_a_static_pod_may_not_use_configmaps_or_secrets(cluster):
    name = unique("static")
    cluster.kubelet.write(f"{name}.yaml", pod_yaml(
        name, "  - name: app\n    image: busybox:1.35\n    envFrom: [{configMapRef: {name: x}}]\n"))
    wait_for(lambda: "manifest skipped: spec.containers[0].envFrom[0]: a static pod cannot use ConfigMaps or "
                     "Secrets" in cluster.kubelet.log(), 30, what="the manifest to be refused")
    cluster.kubelet.wait_syncs()
    assert cluster.kubelet.containers(f"{name}-{cluster.kubelet.node_name}") == []
    cluster.kubelet.remove(f"{name}.yaml")


def test_a_static_pod_may_use_the_downward_api_volume(cluster):
    """It needs nothing from the API server: the pod itself is the source."""
    name = unique("static-dapi")
    volumes = ("  volumes:\n  - name: podinfo\n    downwardAPI:\n      items:\n"
               "      - {path: name, fieldRef: {fieldPath: metadata.name}}\n"
               "      - {path: labels, fieldRef: {fieldPath: metadata.labels}}\n")
    manifest = pod_yaml(name, "  - name: app\n    image: busybox:1.35\n    command: [sleep, '3600']\n"
                              "    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]\n", volumes=volumes)
    cluster.kubelet.write(f"{name}.yaml", manifest.replace("metadata:\n  name:", "metadata:\n  labels: {tier: static}\n  name:"))
    full = f"{name}-{cluster.kubelet.node_name}"          # a static pod's name in a cluster
    cluster.kubelet.wait_running(full)
    assert cluster.sh(full, "cat /etc/podinfo/name; echo; cat /etc/podinfo/labels") == f'{full}\ntier="static"'
    cluster.kubelet.remove(f"{name}.yaml")
    wait_for(lambda: not cluster.kubelet.containers(full), 30, what="the static pod's containers to go")


# --- the kubernetes.io examples, unchanged -------------------------------------------------------

# content/en/examples/configmap/configmaps.yaml's special-config, used by the page
# "Configure a Pod to Use a ConfigMap" (kubernetes.io/docs/tasks/configure-pod-container/configure-pod-configmap/).
SPECIAL_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: special-config
  namespace: default
data:
  SPECIAL_LEVEL: very
  SPECIAL_TYPE: charm
"""

# content/en/examples/pods/pod-configmap-volume.yaml, from the same page ("Add ConfigMap data to a Volume").
POD_CONFIGMAP_VOLUME = """\
apiVersion: v1
kind: Pod
metadata:
  name: dapi-test-pod
spec:
  containers:
    - name: test-container
      image: registry.k8s.io/busybox
      command: [ "/bin/sh", "-c", "ls /etc/config/" ]
      volumeMounts:
      - name: config-volume
        mountPath: /etc/config
  volumes:
    - name: config-volume
      configMap:
        # Provide the name of the ConfigMap containing the files you want
        # to add to the container
        name: special-config
  restartPolicy: Never
"""

# content/en/examples/pods/inject/dapi-envars-pod.yaml, from "Expose Pod Information to Containers
# Through Environment Variables" (kubernetes.io/docs/tasks/inject-data-application/environment-variable-expose-pod-information/).
DAPI_ENVARS_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: dapi-envars-fieldref
spec:
  containers:
    - name: test-container
      image: registry.k8s.io/busybox:1.27.2
      command: ["sh", "-c"]
      args:
      - while true; do
          echo -en '\\n';
          printenv MY_NODE_NAME MY_POD_NAME MY_POD_NAMESPACE;
          printenv MY_POD_IP MY_POD_SERVICE_ACCOUNT;
          sleep 10;
        done;
      env:
        - name: MY_NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: MY_POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: MY_POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: MY_POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        - name: MY_POD_SERVICE_ACCOUNT
          valueFrom:
            fieldRef:
              fieldPath: spec.serviceAccountName
  restartPolicy: Never
"""


# The busybox:1.35 here (Debian's build) has no printenv applet, which
# dapi-envars-pod.yaml runs; the image the examples name gets this one.
PRINTENV = """\
#!/bin/sh
# printenv NAME...: each variable's value, a line each (as busybox's applet)
status=0
for name in "$@"; do
  if env | grep -q "^$name="; then env | sed -n "s/^$name=//p"; else status=1; fi
done
exit $status
"""


@pytest.fixture
def busybox_as(docker_client, tmp_path):
    """Give busybox:1.35 (plus printenv) the names the examples use (there
    is no registry here); only the names this test made are removed."""
    made = []
    (tmp_path / "printenv").write_text(PRINTENV)
    (tmp_path / "Dockerfile").write_text("FROM busybox:1.35\nCOPY printenv /bin/printenv\n"
                                         "RUN chmod 755 /bin/printenv\n")

    def tag(name: str) -> None:
        full = name if ":" in name.split("/")[-1] else f"{name}:latest"
        try:
            docker_client.images.get(full)
        except docker.errors.ImageNotFound:
            docker_client.images.build(path=str(tmp_path), tag=full, pull=False, rm=True)
            made.append(full)
    yield tag
    for name in made:
        docker_client.images.remove(name, noprune=False)


def kubectl_run(kubectl: str, cluster: Cluster, tmp_path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run([kubectl, "-s", cluster.api.url, "--cache-dir", str(tmp_path / "cache"), *args],
                            input=stdin, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_pod_configmap_volume_example_lists_its_keys(cluster, kubectl, busybox_as, tmp_path):
    busybox_as("registry.k8s.io/busybox")
    kubectl_run(kubectl, cluster, tmp_path, "apply", "-f", "-", stdin=SPECIAL_CONFIG)
    pod = yaml.safe_load(POD_CONFIGMAP_VOLUME)
    pod["spec"]["nodeName"] = cluster.kubelet.node_name        # no scheduler in this test: bind it here
    kubectl_run(kubectl, cluster, tmp_path, "apply", "-f", "-", stdin=yaml.safe_dump(pod))
    wait_for(lambda: (cluster.pod("dapi-test-pod") or {}).get("status", {}).get("phase") == "Succeeded", 60,
             what="dapi-test-pod to succeed")
    # The page: "SPECIAL_LEVEL" and "SPECIAL_TYPE", one a line.
    assert kubectl_run(kubectl, cluster, tmp_path, "logs", "dapi-test-pod") == "SPECIAL_LEVEL\nSPECIAL_TYPE\n"
    cluster.delete_pod("dapi-test-pod")
    cluster.delete("configmaps", "special-config")


def test_the_dapi_envars_example_prints_the_pods_fields(cluster, kubectl, busybox_as, tmp_path):
    busybox_as("registry.k8s.io/busybox:1.27.2")
    pod = yaml.safe_load(DAPI_ENVARS_POD)
    pod["spec"]["nodeName"] = cluster.kubelet.node_name
    pod["spec"]["terminationGracePeriodSeconds"] = 1   # its shell ignores SIGTERM: not 30 s at the end
    kubectl_run(kubectl, cluster, tmp_path, "apply", "-f", "-", stdin=yaml.safe_dump(pod))
    running = cluster.wait_running("dapi-envars-fieldref")
    logs = wait_for(lambda: (out := kubectl_run(kubectl, cluster, tmp_path, "logs", "dapi-envars-fieldref")).strip()
                    and out, 30, what="the example's first lines")
    # The page's output: the node, the pod's name, namespace and IP, and its
    # service account, `default` (the ServiceAccount admission plugin's).
    node, ip = cluster.kubelet.node_name, running["status"]["podIP"]
    assert logs.startswith(f"\n{node}\ndapi-envars-fieldref\ndefault\n{ip}\ndefault\n"), logs
    cluster.delete_pod("dapi-envars-fieldref")
