"""Cluster DNS: a name for every Service (chapter 05).

    python 05-proxy-dns/cluster_dns.py --kubeconfig node1.kubeconfig --address 10.96.0.10

(Not dns.py: that name would hide dnspython's `dns` package, which this
module uses for the wire format.)

Environment variables name only the Services that existed when a pod
started; DNS names them all, always current. From watched copies of the
Services and Endpoints (informers: no polling), it answers what Kubernetes'
DNS specification asks of a cluster DNS (CoreDNS implements it):

    web.shop.svc.cluster.local            A     the Service's cluster IP
    web.shop.svc.cluster.local            A     headless: each ready pod's IP
    db-0.db.shop.svc.cluster.local        A     a headless Service's pod, by its hostname
    _http._tcp.web.shop.svc.cluster.local SRV   its named ports
    mail.shop.svc.cluster.local           CNAME an ExternalName Service's name
    10-244-1-7.shop.pod.cluster.local     A     10.244.1.7
    7.43.96.10.in-addr.arpa               PTR   back from a cluster IP to the name

A name that does not exist is NXDOMAIN; a name that exists without
records of the type asked for is NODATA (no error, no answer); both carry
the zone's SOA, so that resolvers cache the absence. Names outside the
cluster domain are REFUSED: pods here have no world to reach (CoreDNS
forwards them to the node's resolver). UDP answers larger than the
client can take (512 bytes, or its EDNS size) come back truncated, and the
client asks again over TCP, which is served too.
"""
from __future__ import annotations

import argparse
import ipaddress
import socketserver
import sys
import threading

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.reversename
import dns.rrset

from common.client import kubeconfig
from common.client.client import client_from_args
from common.client.informer import Informer
from common.log import get_logger
from common.tooling.processes import stop_on_signals

TTL = 5                      # seconds: CoreDNS's kubernetes plugin's default
log = get_logger("dns")
A, CNAME, SRV, PTR, SOA = (dns.rdatatype.A, dns.rdatatype.CNAME, dns.rdatatype.SRV,
                           dns.rdatatype.PTR, dns.rdatatype.SOA)
REVERSE = dns.name.from_text("in-addr.arpa.")


class Records:
    """The cluster's names, computed on demand from the watched objects."""

    def __init__(self, services, endpoints, domain: str = "cluster.local"):
        self.services, self.endpoints = services, endpoints       # .list() / .get(namespace, name)
        self.domain = dns.name.from_text(domain)
        self.soa = dns.rdata.from_text(dns.rdataclass.IN, SOA, f"ns.dns.{domain}. hostmaster.{domain}. "
                                       f"1 7200 1800 86400 {TTL}")

    # [START dns-lookup]
    def lookup(self, name: dns.name.Name, rdtype) -> tuple[int, list[dns.rrset.RRset]]:
        """(rcode, answer) for one question."""
        if name.is_subdomain(REVERSE):
            return self._reverse(name, rdtype)
        if not name.is_subdomain(self.domain):
            return dns.rcode.REFUSED, []
        labels = [label.decode().lower() for label in name.relativize(self.domain).labels]
        if labels[-1:] == ["svc"] and len(labels) >= 3:
            records = self._service_records(labels[:-1], name)
        elif labels[-1:] == ["pod"] and len(labels) == 3:
            records = self._pod_records(labels[0], name)
        elif labels in ([], ["svc"], ["pod"]) or (len(labels) == 2 and labels[1] in ("svc", "pod")):
            records = []                                  # the zone's own structure: exists, no records
        else:
            records = None
        if records is None:
            return dns.rcode.NXDOMAIN, []
        return dns.rcode.NOERROR, [r for r in records if r.rdtype == rdtype or r.rdtype == CNAME]
    # [END dns-lookup]

    def _service_records(self, labels: list[str], name: dns.name.Name) -> list[dns.rrset.RRset] | None:
        """<svc>.<ns>, <hostname>.<svc>.<ns>, _<port>._<proto>.<svc>.<ns>."""
        *prefix, service_name, namespace = labels
        service = self.services.get(namespace, service_name)
        if service is None:
            return None
        spec = service.get("spec") or {}
        if not prefix:
            if spec.get("type") == "ExternalName":
                return [rrset(name, CNAME, spec.get("externalName", "").rstrip(".") + ".")]
            if spec.get("clusterIP") not in (None, "", "None"):
                return [rrset(name, A, spec["clusterIP"])]
            ips = [ip for ip, _ in self._ready(namespace, service_name)]
            return [rrset(name, A, *ips)] if ips else []      # headless, nobody ready: NODATA
        if len(prefix) == 2 and prefix[0].startswith("_") and prefix[1].startswith("_"):
            service_domain = f"{service_name}.{namespace}.svc.{self.domain}"
            ports = [p for p in spec.get("ports") or [] if p.get("name") == prefix[0][1:]
                     and p.get("protocol", "TCP").lower() == prefix[1][1:]]
            if not ports:
                return None
            if spec.get("clusterIP") == "None":       # headless: one record per ready pod, by its name
                targets = [f"{hostname or ip.replace('.', '-')}.{service_domain}"
                           for ip, hostname in self._ready(namespace, service_name)]
            else:
                targets = [service_domain]
            records = [f"0 100 {p['port']} {target}" for p in ports for target in targets]
            return [rrset(name, SRV, *records)] if records else []
        if len(prefix) == 1:
            ips = [ip for ip, hostname in self._ready(namespace, service_name)
                   if prefix[0] in (hostname, ip.replace(".", "-"))]
            return [rrset(name, A, *ips)] if ips else None
        return None

    def _ready(self, namespace: str, name: str) -> list[tuple[str, str]]:
        """(ip, hostname) of a Service's ready endpoints."""
        endpoints = self.endpoints.get(namespace, name) or {}
        return [(a["ip"], a.get("hostname", "")) for s in endpoints.get("subsets") or []
                for a in s.get("addresses") or [] if a.get("ip")]

    def _pod_records(self, dashed: str, name: dns.name.Name) -> list[dns.rrset.RRset] | None:
        try:
            return [rrset(name, A, str(ipaddress.IPv4Address(dashed.replace("-", "."))))]
        except ValueError:
            return None

    def _reverse(self, name: dns.name.Name, rdtype) -> tuple[int, list[dns.rrset.RRset]]:
        try:
            ip = dns.reversename.to_address(name)
        except (dns.exception.SyntaxError, ValueError):
            return dns.rcode.NXDOMAIN, []
        for service in self.services.list():
            if (service.get("spec") or {}).get("clusterIP") == ip:
                meta = service["metadata"]
                target = f"{meta['name']}.{meta['namespace']}.svc.{self.domain}"
                return dns.rcode.NOERROR, [rrset(name, PTR, target)] if rdtype == PTR else []
        return dns.rcode.NXDOMAIN, []


def rrset(name: dns.name.Name, rdtype, *values: str) -> dns.rrset.RRset:
    return dns.rrset.from_text_list(name, TTL, dns.rdataclass.IN, rdtype, list(values))


# [START dns-answer]
def answer(records: Records, wire: bytes, max_size: int | None) -> bytes | None:
    """The reply to one query, as bytes; None for what cannot be read as
    DNS at all. max_size: UDP's limit (512, or the client's EDNS size);
    a reply that does not fit is sent truncated (TC), and the client asks
    again over TCP."""
    try:
        query = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        return None
    if query.flags & dns.flags.QR:
        return None                                   # a response, not a question: never answer those
    response = dns.message.make_response(query)
    if query.opcode() != 0 or len(query.question) != 1:
        response.set_rcode(dns.rcode.NOTIMP if query.opcode() else dns.rcode.FORMERR)
        return response.to_wire()
    question = query.question[0]
    try:
        rcode, rrsets = records.lookup(question.name, question.rdtype)
    except Exception as error:   # an object we did not foresee: fail this answer, not the server
        log.error("lookup failed", name=question.name.to_text(), error=f"{type(error).__name__}: {error}")
        rcode, rrsets = dns.rcode.SERVFAIL, []
    response.set_rcode(rcode)
    response.answer = rrsets
    if rcode in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        response.flags |= dns.flags.AA                # authoritative for what it answers
        if not rrsets and question.name.is_subdomain(records.domain):
            response.authority = [rrset(records.domain, SOA, records.soa.to_text())]
    if max_size is None:
        return response.to_wire()
    limit = max(512, query.payload) if query.edns >= 0 else 512
    try:
        return response.to_wire(max_size=min(limit, max_size))
    except dns.exception.TooBig:
        response.answer, response.authority = [], []
        response.flags |= dns.flags.TC
        return response.to_wire()
# [END dns-answer]


class UDPHandler(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        reply = answer(self.server.records, data, max_size=65535)
        if reply is not None:
            sock.sendto(reply, self.client_address)


class TCPHandler(socketserver.StreamRequestHandler):
    timeout = 10          # an idle connection is closed, not kept holding a thread

    def handle(self):
        """Two-byte length, message; as many as the client sends."""
        while length := self.rfile.read(2):
            if len(length) < 2:
                return
            wire = self.rfile.read(int.from_bytes(length, "big"))
            reply = answer(self.server.records, wire, max_size=None)
            if reply is None:
                return
            self.wfile.write(len(reply).to_bytes(2, "big") + reply)


class UDPServer(socketserver.UDPServer):
    """One datagram at a time: an answer is computed from memory and never
    waits, so a thread per query would only add the cost of the thread."""
    allow_reuse_address = True


class TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(records: Records, address: str, port: int) -> list[socketserver.BaseServer]:
    servers = []
    for server_class, handler in ((UDPServer, UDPHandler), (TCPServer, TCPHandler)):
        server = server_class((address, port), handler)
        server.records = records
        threading.Thread(target=server.serve_forever, daemon=True, name=f"dns {server_class.__name__}").start()
        servers.append(server)
    return servers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cluster_dns.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", action="append", help="listen here (repeatable; default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=53, help="UDP and TCP port (default 53)")
    parser.add_argument("--cluster-domain", default="cluster.local", help="the cluster's domain (default %(default)s)")
    kubeconfig.add_flags(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    client = client_from_args(args, "dns", log)
    if client is None:
        return 2
    services, endpoints = Informer(client, "v1", "services").start(), Informer(client, "v1", "endpoints").start()
    records = Records(services, endpoints, args.cluster_domain)
    # Not a question answered before the caches are full: an existing name
    # would get NXDOMAIN, and clients would remember it (CoreDNS waits too).
    if not (services.wait_for_sync(timeout=60) and endpoints.wait_for_sync(timeout=60)):
        log.error("cannot list Services and Endpoints from the API server; serving what has come")
    try:
        servers = [s for address in args.address or ["0.0.0.0"] for s in serve(records, address, args.port)]
    except OSError as error:
        log.error("cannot listen", port=args.port, error=error.strerror)
        return 1
    stop = stop_on_signals()
    log.info("serving", domain=args.cluster_domain, addresses=",".join(args.address or ["0.0.0.0"]), port=args.port)
    stop.wait()
    for server in servers:
        server.shutdown()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
