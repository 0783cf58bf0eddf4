"""Services' cluster IPs and node ports: handed out once, never twice (chapter 05).

A Service's cluster IP is a virtual address that no machine owns: the
proxy on every node catches connections to it and sends them to a pod. So
the only thing that makes it unique is the API server, which gives each
Service one from --service-cluster-ip-range (10.96.0.0/12 by default) when
it is created, and node ports (a port every node opens for the Service)
from --service-node-port-range (30000-32767). A clusterIP or nodePort the
client asks for is honoured if free and in range, refused (422) if not;
`clusterIP: None` (headless) and ExternalName services get no IP.

How the uniqueness is kept differs from Kubernetes, on purpose. Kubernetes
keeps a bitmap of each range in etcd beside the Services; a Service and
its bit are two writes, not one, so a crash between them leaks an address,
and a repair controller walks all Services at start-up and every few
minutes to put the bitmap right. Here the stored Services are the record:
to allocate, we look at the addresses every stored Service holds, plus
those of creates still on their way to the store. Nothing else to keep in
step, so nothing to repair after a crash or a restart; the price is a scan
of the Services per allocation, which a bitmap avoids at Kubernetes' scale.

Addresses are drawn at random from the upper part of the range first, as
Kubernetes does since 1.26 (ServiceIPStaticSubrange): the lower part stays
free for addresses people choose, such as 10.96.0.10 for cluster DNS. The
first address, 10.96.0.1, is the `kubernetes` Service's: the API server
itself.
"""
from __future__ import annotations

import ipaddress
import random
import threading
from contextlib import contextmanager

import api_errors
import registry
from common.model.field_errors import go_string_slice, invalid
from common.model.validation import is_ip
from . import kubernetes_service

SERVICES = registry.for_kind("", "Service")
NEEDS_NODE_PORTS = ("NodePort", "LoadBalancer")


def cluster_ips(service: dict) -> list[str]:
    spec = service.get("spec") or {}
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [ip for ip in ips if isinstance(ip, str) and ip not in ("", "None")]


def node_ports(service: dict) -> list[int]:
    return [p["nodePort"] for p in _port_list(service.get("spec") or {})
            if isinstance(p.get("nodePort"), int) and p["nodePort"]]


def _port_list(spec: dict) -> list[dict]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def init_app(app) -> None:
    """Every Service write gets its addresses here; and the `kubernetes` Service exists."""
    server = app.extensions["apiserver"]
    allocator = ServiceAllocator(server.store, app.config["SERVICE_CLUSTER_IP_RANGE"],
                                 app.config["SERVICE_NODE_PORT_RANGE"])
    server.hooks.allocators.append(allocator.for_write)
    kubernetes_service.ensure(server.store, allocator, app.config["ADVERTISE_ADDRESS"], app.config["SECURE_PORT"])


class ServiceAllocator:
    def __init__(self, store, ip_range: str = "10.96.0.0/12", port_range: str = "30000-32767"):
        self.store = store
        self.network = ipaddress.ip_network(ip_range)
        first, _, last = port_range.partition("-")
        self.ports = range(int(first), int(last) + 1)
        self.port_range = port_range
        # The range's usable addresses: not the network's own, nor (IPv4) its broadcast.
        self.first_ip = int(self.network.network_address) + 1
        self.last_ip = int(self.network.broadcast_address) - (1 if self.network.version == 4 else 0)
        size = self.last_ip - self.first_ip + 1
        # Kubernetes' split of the range: a sixteenth kept for chosen
        # addresses, at least 16 and at most 256; none in a tiny range.
        self.static_band = 0 if size < 16 else min(max(16, size // 16), 256)
        self._lock = threading.Lock()
        self._pending_ips: set[str] = set()
        self._pending_ports: set[int] = set()

    @property
    def api_server_ip(self) -> str:
        """The `kubernetes` Service's address: the first of the range."""
        return str(ipaddress.ip_address(self.first_ip))

    def for_write(self, resource, subresource: str, obj: dict, old: dict | None, dry_run: bool):
        """The hook writes.py asks: a Service's addresses, held until stored; None for other writes."""
        if (resource.group, resource.kind) == ("", "Service") and subresource != "status":
            return self.allocating(obj, old, dry_run=dry_run)
        return None

    # [START allocate-service]
    @contextmanager
    def allocating(self, service: dict, old: dict | None = None, dry_run: bool = False):
        """Fill in what the Service needs (its cluster IP, its node ports),
        keeping what it had (an update that left them out keeps them, as in
        Kubernetes). The new values stay reserved until the block ends: by
        then the caller has stored the Service, or failed to."""
        if not isinstance(service.get("spec"), dict) or not isinstance(service.get("metadata"), dict):
            yield service                         # malformed: validation says what is wrong
            return
        with self._lock:
            ips_taken, ports_taken = self._taken(exclude=old)
            keep_allocated(service, old)
            new_ips = self._assign_ip(service, ips_taken)
            new_ports = self._assign_node_ports(service, ports_taken)
            if not dry_run:
                self._pending_ips |= new_ips
                self._pending_ports |= new_ports
        try:
            yield service
        finally:
            with self._lock:
                self._pending_ips -= new_ips
                self._pending_ports -= new_ports
    # [END allocate-service]

    def _taken(self, exclude: dict | None) -> tuple[set[str], set[int]]:
        """Every stored Service's addresses and ports, and those being stored
        now; not the ones of `exclude` (the Service being updated)."""
        services, _ = self.store.list(SERVICES)
        skip = (exclude or {}).get("metadata", {}).get("uid")
        stored = [s for s in services if s["metadata"].get("uid") != skip]
        ips = {ip for s in stored for ip in cluster_ips(s)} | self._pending_ips | {self.api_server_ip}
        ports = {port for s in stored for port in node_ports(s)} | self._pending_ports
        return ips, ports

    def _assign_ip(self, service: dict, taken: set[str]) -> set[str]:
        spec = service["spec"]
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            return set()
        wanted = spec.get("clusterIP") or ""
        if not isinstance(wanted, str) or (wanted and not is_ip(wanted)):
            return set()                          # malformed: validation says what is wrong
        name = service["metadata"].get("name", "")
        if wanted:
            if wanted in cluster_ips_of_kubernetes(service, self.api_server_ip):
                return set()                      # the kubernetes Service's own address
            problem = self._ip_problem(wanted, taken)
            if problem:
                raise api_errors.invalid(SERVICES, "Service", name, [invalid(
                    "spec.clusterIPs", go_string_slice(spec.get("clusterIPs") or [wanted]),
                    f"failed to allocate IP {wanted}: {problem}")])
            ip = wanted
        else:
            ip = self._next_free_ip(taken)
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        spec.setdefault("ipFamilies", ["IPv4" if self.network.version == 4 else "IPv6"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        return {ip}

    def _ip_problem(self, wanted: str, taken: set[str]) -> str | None:
        address = ipaddress.ip_address(wanted)
        if not self.first_ip <= int(address) <= self.last_ip:
            return (f"the provided IP ({wanted}) is not in the valid range. "
                    f"The range of valid IPs is {self.network}")
        return "provided IP is already allocated" if wanted in taken else None

    def _next_free_ip(self, taken: set[str]) -> str:
        """At random from the dynamic band (above the static one), then the
        static band: a full scan only when the random tries miss."""
        static_end = self.first_ip + self.static_band
        for low, high in ((static_end, self.last_ip), (self.first_ip, min(static_end, self.last_ip + 1) - 1)):
            if low > high:
                continue
            for _ in range(32):
                ip = str(ipaddress.ip_address(random.randint(low, high)))
                if ip not in taken:
                    return ip
            for value in range(low, high + 1):
                if str(ipaddress.ip_address(value)) not in taken:
                    return str(ipaddress.ip_address(value))
        raise api_errors.internal("Internal error occurred: failed to allocate a serviceIP: range is full")

    def _assign_node_ports(self, service: dict, taken: set[int]) -> set[int]:
        spec = service["spec"]
        ports = _port_list(spec)
        if spec.get("type") not in NEEDS_NODE_PORTS:
            return set()
        assigned: set[int] = set()
        for i, port in enumerate(ports):
            wanted = port.get("nodePort")
            if wanted is not None and (not isinstance(wanted, int) or isinstance(wanted, bool)):
                continue                          # malformed: validation says what is wrong
            if wanted:
                if wanted not in self.ports:
                    problem = ("provided port is not in the valid range. "
                               f"The range of valid ports is {self.port_range}")
                elif wanted in taken or wanted in assigned:
                    problem = "provided port is already allocated"
                else:
                    assigned.add(wanted)
                    continue
                raise api_errors.invalid(SERVICES, "Service", service["metadata"].get("name", ""),
                                         [invalid(f"spec.ports[{i}].nodePort", wanted, problem)])
            free = [p for p in self.ports if p not in taken and p not in assigned]
            if not free:
                raise api_errors.internal("Internal error occurred: failed to allocate a nodePort: range is full")
            port["nodePort"] = random.choice(free)
            assigned.add(port["nodePort"])
        return assigned


def keep_allocated(service: dict, old: dict | None) -> None:
    """An update that leaves out what was allocated keeps it (a `kubectl
    replace` of a manifest without clusterIP must not move the Service)."""
    if old is None:
        return
    spec, old_spec = service["spec"], old.get("spec") or {}
    same_kind = (spec.get("type") == "ExternalName") == (old_spec.get("type") == "ExternalName")
    if same_kind and not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"], spec["clusterIPs"] = old_spec["clusterIP"], list(old_spec.get("clusterIPs") or [])
    if spec.get("type") in NEEDS_NODE_PORTS:
        before = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in _port_list(old_spec)}
        for port in _port_list(spec):
            if not port.get("nodePort"):
                kept = before.get((port.get("port"), port.get("protocol")))
                if kept:
                    port["nodePort"] = kept


def cluster_ips_of_kubernetes(service: dict, api_server_ip: str) -> list[str]:
    """The reserved first address belongs to default/kubernetes alone."""
    meta = service["metadata"]
    return [api_server_ip] if (meta.get("namespace"), meta.get("name")) == ("default", "kubernetes") else []
