"""Service environment variables (01-kubelet/service_discovery/service_env.py), table-driven,
against what Kubernetes' kubelet sets (pkg/kubelet/envvars)."""
from __future__ import annotations

from service_discovery.service_env import service_env


def svc(name: str, ip: str, *ports: dict, namespace: str = "shop") -> dict:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterIP": ip, "ports": list(ports)}}


API = svc("kubernetes", "10.96.0.1", {"name": "https", "port": 443, "protocol": "TCP"}, namespace="default")
POD = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {}}


def test_a_service_in_the_pods_namespace_gives_the_seed_posts_variables():
    env = service_env([svc("db", "10.96.12.7", {"port": 5432, "protocol": "TCP"})], POD)
    assert env == {
        "DB_SERVICE_HOST": "10.96.12.7", "DB_SERVICE_PORT": "5432",
        "DB_PORT": "tcp://10.96.12.7:5432", "DB_PORT_5432_TCP": "tcp://10.96.12.7:5432",
        "DB_PORT_5432_TCP_PROTO": "tcp", "DB_PORT_5432_TCP_PORT": "5432", "DB_PORT_5432_TCP_ADDR": "10.96.12.7"}


def test_named_ports_dashes_and_several_ports():
    env = service_env([svc("my-web", "10.96.3.3", {"name": "http", "port": 80, "protocol": "TCP"},
                           {"name": "dns-udp", "port": 53, "protocol": "UDP"})], POD)
    assert env["MY_WEB_SERVICE_PORT"] == "80"                  # the first port
    assert env["MY_WEB_SERVICE_PORT_HTTP"] == "80" and env["MY_WEB_SERVICE_PORT_DNS_UDP"] == "53"
    assert env["MY_WEB_PORT"] == "tcp://10.96.3.3:80" and env["MY_WEB_PORT_53_UDP"] == "udp://10.96.3.3:53"


def test_only_the_pods_namespace_and_the_api_server():
    others = [svc("db", "10.96.12.7", {"port": 5432}, namespace="elsewhere"), API]
    env = service_env(others, POD)
    assert "DB_SERVICE_HOST" not in env
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"


def test_enable_service_links_false_keeps_only_the_api_server():
    pod = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"enableServiceLinks": False}}
    env = service_env([svc("db", "10.96.12.7", {"port": 5432}), API], pod)
    assert {k for k in env if k.endswith("_SERVICE_HOST")} == {"KUBERNETES_SERVICE_HOST"}


def test_headless_and_external_name_services_give_nothing():
    headless = svc("peers", "None", {"port": 80})
    external = {"metadata": {"name": "ext", "namespace": "shop"}, "spec": {"type": "ExternalName"}}
    assert service_env([headless, external], POD) == {}


def test_a_service_called_kubernetes_in_the_pods_namespace_replaces_the_api_servers_whole():
    mine = svc("kubernetes", "10.96.9.9", {"port": 8080})
    for order in ([mine, API], [API, mine]):
        env = service_env(order, POD)
        assert env["KUBERNETES_SERVICE_HOST"] == "10.96.9.9"
        assert "KUBERNETES_SERVICE_PORT_HTTPS" not in env          # nothing left of the other one
