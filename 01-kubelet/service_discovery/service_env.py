"""Service environment variables: how the seeds' pods found their database (chapter 05).

Before cluster DNS, a pod learned where a Service was from variables the
kubelet set when it started the container, one set per Service in the
pod's namespace that existed at that moment:

    DB_SERVICE_HOST=10.96.12.7         DB_SERVICE_PORT=5432
    DB_PORT=tcp://10.96.12.7:5432      (and DB_PORT_5432_TCP, _PROTO, _PORT, _ADDR,
                                        the Docker links' names, kept for old images)

Kubernetes still sets them (a Service made after the pod is missing from
them: that is why DNS won). `enableServiceLinks: false` leaves out all but
the `kubernetes` Service's, which every pod gets, from the default
namespace, so that a program in a pod can find the API server.
"""
from __future__ import annotations

import pod_config as cfg
from common.client.informer import Informer


def env_name(service_name: str) -> str:
    return service_name.upper().replace("-", "_")


# [START service-env]
def service_env(services: list[dict], pod: dict) -> dict[str, str]:
    """The variables for the pod's containers, from the Services that exist now."""
    namespace = pod["metadata"]["namespace"]
    links = pod["spec"].get("enableServiceLinks", True)
    # By name: the API server's first, so that a Service of the same name
    # in the pod's own namespace replaces it whole, as in Kubernetes.
    chosen: dict[str, dict] = {}
    for service in services:
        meta = service["metadata"]
        if (meta.get("namespace"), meta["name"]) == ("default", "kubernetes"):
            chosen.setdefault(meta["name"], service)
        elif meta.get("namespace") == namespace and links:
            chosen[meta["name"]] = service
    env: dict[str, str] = {}
    for name, service in sorted(chosen.items()):
        env.update(variables_of(env_name(name), service.get("spec") or {}))
    return env


def variables_of(name: str, spec: dict) -> dict[str, str]:
    """One Service's variables; none for a headless or ExternalName one."""
    ip, ports = spec.get("clusterIP"), [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    if not ip or ip == "None" or not ports:
        return {}
    env = {f"{name}_SERVICE_HOST": ip, f"{name}_SERVICE_PORT": str(ports[0]["port"])}
    for port in ports:
        if port.get("name"):
            env[f"{name}_SERVICE_PORT_{env_name(port['name'])}"] = str(port["port"])
        protocol = port.get("protocol", "TCP")
        prefix = f"{name}_PORT_{port['port']}_{protocol}"
        env[prefix] = f"{protocol.lower()}://{ip}:{port['port']}"
        env[f"{prefix}_PROTO"], env[f"{prefix}_PORT"], env[f"{prefix}_ADDR"] = \
            protocol.lower(), str(port["port"]), ip
    env[f"{name}_PORT"] = f"{ports[0].get('protocol', 'TCP').lower()}://{ip}:{ports[0]['port']}"
    return env
# [END service-env]


def services_env_from(client):
    """Each container's service variables, from a watched copy of every
    Service; kubelet.py sets this up when the kubelet joins a cluster.
    Until the first list has come, no container starts: its variables
    would be missing, as Kubernetes refuses too."""
    services = Informer(client, "v1", "services").start()
    services.wait_for_sync(timeout=5)      # usually at once; an API server away does not hold us

    def env_for(pod: dict) -> dict[str, str]:
        if not services.has_synced():
            raise cfg.ConfigError("services have not yet been read at least once, cannot construct envvars")
        return service_env(services.list(), pod)
    return env_for
