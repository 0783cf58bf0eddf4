"""The service proxy, userspace mode: what makes a cluster IP answer (chapter 05).

    python 05-proxy-dns/proxy.py --kubeconfig node1.kubeconfig

A Service's cluster IP (10.96.43.7) belongs to no machine: no interface
has it, nothing routes to it. On every node this proxy makes it answer,
as Kubernetes' first kube-proxy did (its "userspace" mode, removed in 1.26):

1. for every port of every Service, it listens on a port of its own on
   the node (the "proxy port");
2. an iptables rule sends connections for cluster IP:port there
   (nat PREROUTING for the pods' traffic, nat OUTPUT for the node's own):
       -d 10.96.43.7/32 -p tcp --dport 80 -j REDIRECT --to-ports 41234
   and, for a NodePort Service, connections to its node port on any of
   the node's own addresses (`-m addrtype --dst-type LOCAL`);
3. for each connection, it picks one of the Service's ready endpoints,
   round robin (or the client's last one, with sessionAffinity
   ClientIP), connects to it, and copies bytes both ways until either
   side closes.

What a learner can watch: the rules (`iptables -t nat -S`), the sockets
(`ss -ltnp`), and the proxy's log, a line per connection with -v.
Every byte crosses this process twice: that is why Kubernetes moved to
rules alone (iptables mode: the kernel rewrites the address and the
proxy is out of the data path). The endpoints come from the Endpoints
objects chapter 04's endpoints controller writes.
"""
from __future__ import annotations

import argparse
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from typing import NamedTuple
from urllib.parse import urlsplit

from common.client import kubeconfig
from common.client.client import APIClient, client_from_args
from common.client.informer import Informer
from common.log import get_logger
from common.tooling.processes import stop_on_signals
import iptables_proxy

CHAIN_PODS = "GROUNDUP-SERVICES-PODS"      # jumped to from PREROUTING: pods' connections
CHAIN_NODE = "GROUNDUP-SERVICES-NODE"      # jumped to from OUTPUT: the node's own
COPY_CHUNK = 64 * 1024
RESYNC_SECONDS = 30        # kube-proxy's --iptables-sync-period is 30 s too
# A Service with this label is someone else's to make answer, as kube-proxy
# leaves it alone: our kube-dns Service (manifests/kube-dns.yaml) is.
SERVICE_PROXY_NAME = "service.kubernetes.io/service-proxy-name"


class Shape(NamedTuple):
    """What a Service port is made of, besides its endpoints: a change in
    any of it starts the port afresh."""
    cluster_ip: str
    port: int
    node_port: int | None        # NodePort and LoadBalancer Services only
    affinity_seconds: int | None  # sessionAffinity ClientIP's timeout
    protocol: str = "TCP"         # or UDP: iptables mode only


class ServicePort:
    """One port of one Service: its listener, its endpoints, its turn."""

    def __init__(self, key: str, cluster_ip: str, port: int, node_port: int | None,
                 affinity_seconds: int | None, log):
        self.key, self.cluster_ip, self.port, self.node_port, self.log = key, cluster_ip, port, node_port, log
        self.affinity_seconds = affinity_seconds       # sessionAffinity ClientIP's timeout, or None
        self.endpoints: list[tuple[str, int]] = []
        self._turn = itertools.count()
        self._affinity: dict[str, tuple[tuple[str, int], float]] = {}
        self._swept = time.monotonic()                 # when expired affinities were last dropped
        self._lock = threading.Lock()
        self.listener = socket.create_server(("0.0.0.0", 0), backlog=128)
        self.proxy_port = self.listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True, name=f"proxy {key}").start()

    # [START round-robin-endpoint]
    def next_endpoint(self, client_ip: str) -> tuple[str, int] | None:
        """The endpoint for a new connection: the client's last one while its
        affinity lasts, else the next in turn."""
        with self._lock:
            if not self.endpoints:
                return None
            if self.affinity_seconds is not None:
                last = self._affinity.get(client_ip)
                if last and last[0] in self.endpoints and time.monotonic() - last[1] < self.affinity_seconds:
                    self._affinity[client_ip] = (last[0], time.monotonic())
                    return last[0]
            chosen = self.endpoints[next(self._turn) % len(self.endpoints)]
            if self.affinity_seconds is not None:
                self._forget_expired()
                self._affinity[client_ip] = (chosen, time.monotonic())
            return chosen
    # [END round-robin-endpoint]

    def _forget_expired(self) -> None:
        """Drop the clients whose affinity has run out, at most once per
        timeout (kube-proxy's userspace mode swept them on every sync), so
        the table holds the recent clients, not every client ever seen."""
        now = time.monotonic()
        if now - self._swept < self.affinity_seconds:
            return
        self._swept = now
        self._affinity = {ip: (endpoint, at) for ip, (endpoint, at) in self._affinity.items()
                          if now - at < self.affinity_seconds}

    def forget_affinity(self, client_ip: str) -> None:
        with self._lock:
            self._affinity.pop(client_ip, None)

    def shape(self) -> Shape:
        return Shape(self.cluster_ip, self.port, self.node_port, self.affinity_seconds)

    def set_endpoints(self, endpoints: list[tuple[str, int]]) -> None:
        with self._lock:
            self.endpoints = sorted(endpoints)

    # [START accept-and-splice]
    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, (client_ip, _) = self.listener.accept()
            except OSError:
                return                                 # closed: the Service went
            threading.Thread(target=self._serve, args=(client, client_ip), daemon=True).start()

    def _serve(self, client: socket.socket, client_ip: str) -> None:
        """Connect the client to an endpoint and copy both ways. No endpoint
        at all: close at once, so that the client fails fast, not hangs."""
        for _ in range(max(1, len(self.endpoints))):   # an endpoint that refuses: try the next
            endpoint = self.next_endpoint(client_ip)
            if endpoint is None:
                break
            try:
                upstream = socket.create_connection(endpoint, timeout=2)
            except OSError as error:
                self.log.warning("endpoint refused", obj=self.key, endpoint=f"{endpoint[0]}:{endpoint[1]}",
                                 error=str(error))
                self.forget_affinity(client_ip)          # the next try is another endpoint
                continue
            upstream.settimeout(None)
            self.log.debug("connection", obj=self.key, client=client_ip, endpoint=f"{endpoint[0]}:{endpoint[1]}")
            back = threading.Thread(target=copy, args=(upstream, client), daemon=True)
            back.start()
            copy(client, upstream)
            back.join()                                # both ways done: only now close
            upstream.close()
            client.close()
            return
        self.log.info("no ready endpoint: connection closed", obj=self.key, client=client_ip)
        client.close()
    # [END accept-and-splice]

    def close(self) -> None:
        self._closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)      # wakes the accept(): close() alone would not
        except OSError:
            pass
        self.listener.close()


def copy(source: socket.socket, target: socket.socket) -> None:
    """Bytes from source to target until source is done; then tell target
    (half-close): the client that has sent its request still gets the
    answer, and the answer's end reaches it."""
    try:
        while chunk := source.recv(COPY_CHUNK):
            target.sendall(chunk)
    except OSError:
        pass                                   # a reset: the other side must hear of it all the same
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def ready_endpoints(endpoints: dict | None, port_name: str) -> list[tuple[str, int]]:
    """The addresses and port of an Endpoints object's ready entries for one
    Service port (matched by name, as Kubernetes does)."""
    found = []
    for subset in (endpoints or {}).get("subsets") or []:
        ports = [p for p in subset.get("ports") or [] if (p.get("name") or "") == port_name]
        for port in ports:
            found += [(a["ip"], port["port"]) for a in subset.get("addresses") or [] if a.get("ip")]
    return found


class Proxy:
    def __init__(self, client: APIClient, log, mode: str = "userspace"):
        self.log, self.mode = log, mode
        self.services = Informer(client, "v1", "services")
        self.endpoints = Informer(client, "v1", "endpoints")
        for informer in (self.services, self.endpoints):
            informer.add_handler(on_add=self._changed, on_update=lambda old, new: self._changed(new),
                                 on_delete=self._changed)
        self.ports: dict[str, ServicePort] = {}
        self._lock = threading.Lock()
        self._rules: list[str] | None = None

    def _changed(self, _obj: dict) -> None:
        if self.services.has_synced() and self.endpoints.has_synced():
            self.sync()

    def sync(self) -> None:
        with self._lock:
            wanted = self.wanted()
            if self.mode == "iptables":
                self._sync_iptables(wanted)
            else:
                self._sync_userspace(wanted)

    def wanted(self) -> dict[str, tuple[Shape, list[tuple[str, int]]]]:
        """{"namespace/name:port": (its Shape, its ready endpoints)}."""
        wanted = {}
        for service in self.services.list():
            meta, spec = service["metadata"], service.get("spec") or {}
            ip = spec.get("clusterIP")
            if not ip or ip == "None" or spec.get("type") == "ExternalName":
                continue
            if SERVICE_PROXY_NAME in (meta.get("labels") or {}):
                continue                            # served by another proxy (kube-dns: by every node's DNS)
            affinity = None
            if spec.get("sessionAffinity") == "ClientIP":
                affinity = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get(
                    "timeoutSeconds", 10800)
            endpoints = self.endpoints.get(meta["namespace"], meta["name"])
            for port in spec.get("ports") or []:
                protocol = port.get("protocol", "TCP")
                if protocol not in ("TCP", "UDP"):
                    continue                        # SCTP: not proxied here
                key = f"{meta['namespace']}/{meta['name']}:{port.get('name') or port['port']}"
                node_port = port.get("nodePort") if spec.get("type") in ("NodePort", "LoadBalancer") else None
                wanted[key] = (Shape(ip, port["port"], node_port, affinity, protocol),
                               ready_endpoints(endpoints, port.get("name") or ""))
        return wanted

    # [START proxy-sync]
    def _sync_userspace(self, wanted: dict) -> None:
        """Make listeners and rules match the Services; give each its endpoints."""
        # TCP only: a UDP port needs a relay per client (iptables mode carries UDP).
        wanted = {key: value for key, value in wanted.items() if value[0].protocol == "TCP"}
        for key in set(self.ports) - set(wanted):
            self.ports.pop(key).close()
            self.log.info("service port removed", obj=key)
        for key, (shape, endpoints) in wanted.items():
            current = self.ports.get(key)
            if current and current.shape() != shape:      # an address or port changed: start afresh
                self.ports.pop(key).close()
                current = None
            if current is None:
                current = self.ports[key] = ServicePort(key, shape.cluster_ip, shape.port, shape.node_port,
                                                        shape.affinity_seconds, log=self.log)
                self.log.info("service port added", obj=key, clusterIP=f"{shape.cluster_ip}:{shape.port}",
                              proxyPort=current.proxy_port, nodePort=shape.node_port)
            current.set_endpoints(endpoints)
        self._write_rules()
    # [END proxy-sync]

    def _sync_iptables(self, wanted: dict) -> None:
        """Rules alone: iptables_proxy.py writes them, when they change."""
        nat, filter_ = iptables_proxy.rules_for(wanted)
        if (nat, filter_) == self._rules:
            return
        stale = [c for c in iptables_proxy.our_chains() if f":{c} - [0:0]" not in nat]
        done = iptables_proxy.restore(nat, filter_, stale)
        if done.returncode != 0:
            self.log.error("iptables-restore failed", error=done.stderr.strip())
            return
        for problem in iptables_proxy.ensure_jumps():
            self.log.error("iptables failed", error=problem)
        self._rules = (nat, filter_)
        self.log.info("rules written", services=len(wanted),
                      endpoints=sum(len(endpoints) for _, endpoints in wanted.values()))

    def _write_rules(self) -> None:
        """All our rules in one iptables-restore: atomic, and only when they change."""
        rules = []
        for key, p in sorted(self.ports.items()):
            for chain in (CHAIN_PODS, CHAIN_NODE):
                rules.append(f"-A {chain} -d {p.cluster_ip}/32 -p tcp -m tcp --dport {p.port} "
                             f"-m comment --comment {key} -j REDIRECT --to-ports {p.proxy_port}")
                if p.node_port:    # NodePort: the same port on every address of this node
                    rules.append(f"-A {chain} -p tcp -m tcp --dport {p.node_port} -m addrtype --dst-type LOCAL "
                                 f"-m comment --comment {key} -j REDIRECT --to-ports {p.proxy_port}")
        if rules == self._rules:
            return
        restore = iptables_proxy.restore_lines(["*nat", f":{CHAIN_PODS} - [0:0]", f":{CHAIN_NODE} - [0:0]",
                                                *rules, "COMMIT"])
        if restore.returncode != 0:
            self.log.error("iptables-restore failed", error=restore.stderr.strip())
            return
        for problem in iptables_proxy.ensure_jumps(JUMPS):
            self.log.error("iptables failed", error=problem)
        self._rules = rules

    def run(self, stop: threading.Event, service_range: str, toward: str) -> None:
        route_service_range(service_range, toward)
        # The other mode's rules go: a node runs one proxy, in one mode (as kube-proxy does at start).
        if self.mode == "userspace":
            iptables_proxy.cleanup()
        else:
            cleanup()
        self.services.start()
        self.endpoints.start()
        while not (self.services.wait_for_sync(timeout=1) and self.endpoints.wait_for_sync(timeout=1)):
            if stop.is_set():
                return
        self.sync()
        self.log.info("proxying", mode=self.mode)
        # Every 30 s, write everything again even if nothing changed here: a
        # failed write is retried, and rules someone flushed come back.
        while not stop.wait(RESYNC_SECONDS):
            with self._lock:
                self._rules = None
            self.sync()
        for port in self.ports.values():
            port.close()


JUMPS = (("nat", "PREROUTING", CHAIN_PODS), ("nat", "OUTPUT", CHAIN_NODE))


def route_service_range(service_range: str, toward: str) -> None:
    """The node's own connections to a cluster IP are rewritten in OUTPUT,
    which comes after the routing decision: on a machine with no default
    route (ours) they would fail as unreachable before any rule saw them.
    A route for the Service range out of the interface that leads to the
    API server (`toward`), with that interface's address as the source,
    gets them to the rules; nothing is ever sent to 10.96.x.x itself."""
    shown = subprocess.run(["ip", "route", "show", service_range], capture_output=True, text=True).stdout
    default = subprocess.run(["ip", "route", "show", "default"], capture_output=True, text=True).stdout
    if shown.strip() or default.strip():
        return
    host = urlsplit(toward).hostname or ""
    try:
        host = socket.gethostbyname(host)
    except OSError:
        return
    found = subprocess.run(["ip", "-json", "route", "get", host], capture_output=True, text=True).stdout
    route = (json.loads(found or "[{}]") or [{}])[0]
    if route.get("dev") and route.get("prefsrc"):
        subprocess.run(["ip", "route", "add", service_range, "dev", route["dev"], "src", route["prefsrc"]],
                       capture_output=True)


def cleanup() -> None:
    """Remove every rule and chain userspace mode made."""
    iptables_proxy.remove_chains(JUMPS, [("nat", CHAIN_PODS), ("nat", CHAIN_NODE)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="proxy.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxy-mode", choices=("userspace", "iptables"), default="userspace",
                        help="userspace: connections through this process; iptables: rules alone")
    parser.add_argument("--cleanup", action="store_true", help="remove every rule this proxy made, then exit")
    parser.add_argument("--service-cluster-ip-range", default="10.96.0.0/12",
                        help="the Services' addresses, as the API server's flag says (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per connection")
    kubeconfig.add_flags(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("proxy", "DEBUG" if args.verbose else None)
    if args.cleanup:
        cleanup()
        iptables_proxy.cleanup()
        return 0
    client = client_from_args(args, "proxy", log)
    if client is None:
        return 2
    stop = stop_on_signals()
    # The rules stay when the proxy stops, pointing at ports nobody listens
    # on: connections are refused until the next proxy writes its own.
    Proxy(client, log, args.proxy_mode).run(stop, args.service_cluster_ip_range, client.connection.server)
    log.info("proxy stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
