"""Your cluster DNS: chapter 05's name server for Services, written by you.

    python 05-proxy-dns/build-it-yourself/cluster_dns.py --apiserver http://127.0.0.1:8080 \\
        --address 127.0.0.1 --port 5353

Written for you (the machinery, read it once): the command line, watched
copies of the Services and Endpoints (two informers from common/), the
DNS wire format (dnspython reads the question and writes the reply), the
UDP and TCP servers, and turning a name into its labels. Yours to write,
in the order the stages ask for it, are the places marked TODO(stage N):
a Service's address, NXDOMAIN and NODATA, a headless Service's pods, SRV
records for named ports and the reverse lookup. Each TODO names the
lesson section that explains it.

Grade your work with `make stage-05` (every stage up to the first that
fails) or `make stage-05 STAGE=3` (one stage); with your own copy of this
file, add MINE=path/to/it.py. The stages only ask your server questions
over UDP and TCP, so change anything you like, as long as it keeps this
command line.
"""
from __future__ import annotations

import argparse
import socketserver
import sys
import threading

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.reversename
import dns.rrset

from common.client import kubeconfig
from common.client.client import APIClient
from common.client.informer import Informer
from common.log import get_logger

TTL = 5
DOMAIN = dns.name.from_text("cluster.local.")
REVERSE = dns.name.from_text("in-addr.arpa.")
A, SRV, PTR, SOA = dns.rdatatype.A, dns.rdatatype.SRV, dns.rdatatype.PTR, dns.rdatatype.SOA
log = get_logger("dns")


def rrset(name: dns.name.Name | str, rdtype, *values: str) -> dns.rrset.RRset:
    """Records of one name and type: rrset(name, A, "10.96.0.7", ...),
    rrset(name, SRV, "0 100 80 web.shop.svc.cluster.local."). Its .rdtype
    is the type (A, SRV, PTR: compare with ==)."""
    if not values:
        # dnspython would build it, and write a reply no client can read.
        raise ValueError(f"rrset({name}, {dns.rdatatype.to_text(rdtype)}) with no values: a name with no "
                         "records of a type is NODATA, an answer with no rrset, so leave the rrset out ([])")
    return dns.rrset.from_text_list(name, TTL, dns.rdataclass.IN, rdtype, list(values))


class Records:
    """The cluster's names, computed from the watched Services and Endpoints
    (each informer has .get(namespace, name) and .list(): dicts as the API
    server sends them)."""

    def __init__(self, services: Informer, endpoints: Informer):
        self.services, self.endpoints = services, endpoints

    def service_records(self, namespace: str, service_name: str, name: dns.name.Name) -> list | None:
        # TODO(stage 1): the records of <service>.<namespace>.svc.cluster.local:
        # None when there is no such Service (self.services.get()); else
        # [rrset(name, A, its spec.clusterIP)]. A headless Service
        # (clusterIP "None") has no address of its own: from stage 3, the A
        # records of self.ready_ips(), or [] when there is none; until
        # then, []. Lesson: "Names: cluster DNS" in
        # 05-proxy-dns/lesson-2-services.md.
        raise NotImplementedError("service_records() is yours to write: see TODO(stage 1)")

    def only(self, records: list | None, rdtype) -> tuple[int, list]:
        # TODO(stage 2): the rcode and the answer. records None: the name
        # does not exist, NXDOMAIN and no answer. Otherwise the name exists,
        # NOERROR, and the answer is only the records of the type asked for
        # (each rrset in records has .rdtype, to compare with rdtype):
        # none of them is "NODATA" (NOERROR, empty answer), which tells a
        # resolver to try AAAA elsewhere but not to give up on the name.
        # Lesson: "Names: cluster DNS" in lesson-2-services.md.
        return dns.rcode.NOERROR, records or []

    def ready_ips(self, namespace: str, service_name: str) -> list[str]:
        # TODO(stage 3): the IPs of the Service's ready pods: its Endpoints
        # object of the same name (self.endpoints.get(): None until the
        # endpoints controller writes it), the "addresses" (not
        # "notReadyAddresses") of every one of its "subsets" (one per set
        # of ports: pods whose ports differ are in different subsets; no
        # "subsets" at all when no pod is there), each {"ip": ...}.
        # Lesson: "Names: cluster DNS" in lesson-2-services.md.
        return []

    def srv_records(self, namespace: str, service_name: str, port: str, protocol: str,
                    name: dns.name.Name) -> list | None:
        # TODO(stage 4): _<port>._<protocol>.<service>.<namespace>.svc.cluster.local
        # (port and protocol given without their "_", in lower case:
        # lookup() lowers every label, so "tcp"; a Service's spec.ports say
        # "TCP", which the API server fills in when a Service leaves it
        # out): for each
        # of the Service's spec.ports with that name and protocol, the SRV
        # record "0 100 <port> <service>.<namespace>.svc.cluster.local."
        # None when there is no such Service or port. Lesson: "Names:
        # cluster DNS" in lesson-2-services.md.
        return None

    def reverse(self, ip: str, name: dns.name.Name) -> list | None:
        # TODO(stage 5): back from an address (10.96.0.7, asked as
        # 7.0.96.10.in-addr.arpa) to a name: the Service whose
        # spec.clusterIP it is gives [rrset(name, PTR,
        # "<service>.<namespace>.svc.cluster.local.")]; none: None.
        # Lesson: "Names: cluster DNS" in lesson-2-services.md.
        return None

    # ------------------------------------------------ from a name to the parts (written for you)

    def lookup(self, name: dns.name.Name, rdtype) -> tuple[int, list]:
        """(rcode, answer) for one question."""
        if name.is_subdomain(REVERSE):
            try:
                return self.only(self.reverse(dns.reversename.to_address(name), name), rdtype)
            except (dns.exception.SyntaxError, ValueError):
                return dns.rcode.NXDOMAIN, []
        if not name.is_subdomain(DOMAIN):
            return dns.rcode.REFUSED, []     # not ours to answer (CoreDNS would forward it)
        labels = [label.decode().lower() for label in name.relativize(DOMAIN).labels]
        if len(labels) == 3 and labels[2] == "svc":          # web.shop.svc
            return self.only(self.service_records(labels[1], labels[0], name), rdtype)
        if len(labels) == 5 and labels[4] == "svc" and labels[0][:1] == labels[1][:1] == "_":
            return self.only(self.srv_records(labels[3], labels[2], labels[0][1:], labels[1][1:], name), rdtype)
        if labels in ([], ["svc"]) or labels[1:] == ["svc"]:
            return self.only([], rdtype)     # the zone's own structure: it exists, with no records
        return self.only(None, rdtype)


# ---------------------------------------------------------------- the wire (written for you)

def answer(records: Records, wire: bytes) -> bytes | None:
    """The reply to one query as bytes; None for what is not a DNS question."""
    try:
        query = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        return None
    if query.flags & dns.flags.QR or len(query.question) != 1:
        return None
    response = dns.message.make_response(query)
    question = query.question[0]
    try:
        rcode, response.answer = records.lookup(question.name, question.rdtype)
    except Exception as error:           # a bug in a TODO: this answer fails, not the server
        log.error("lookup failed", name=question.name.to_text(), error=f"{type(error).__name__}: {error}")
        rcode, response.answer = dns.rcode.SERVFAIL, []
    response.set_rcode(rcode)
    if rcode in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        response.flags |= dns.flags.AA   # authoritative: we own cluster.local
        if not response.answer and question.name.is_subdomain(DOMAIN):
            # The zone's SOA says how long a resolver may remember "nothing here".
            response.authority = [rrset(DOMAIN, SOA, f"ns.dns.{DOMAIN} hostmaster.{DOMAIN} 1 7200 1800 86400 {TTL}")]
    return response.to_wire()


class UDPHandler(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        reply = answer(self.server.records, data)
        if reply is not None:
            sock.sendto(reply, self.client_address)


class TCPHandler(socketserver.StreamRequestHandler):
    timeout = 10

    def handle(self):
        """Over TCP each message is preceded by its length, two bytes."""
        while len(length := self.rfile.read(2)) == 2:
            reply = answer(self.server.records, self.rfile.read(int.from_bytes(length, "big")))
            if reply is None:
                return
            self.wfile.write(len(reply).to_bytes(2, "big") + reply)


class TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main() -> int:
    parser = argparse.ArgumentParser(description="Your cluster DNS (chapter 05, build it yourself).")
    parser.add_argument("--address", default="0.0.0.0", help="listen here (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=53, help="UDP and TCP port (default 53)")
    kubeconfig.add_flags(parser)
    args = parser.parse_args()
    client = APIClient(kubeconfig.from_args(args), user_agent="dns")
    services, endpoints = Informer(client, "v1", "services").start(), Informer(client, "v1", "endpoints").start()
    # Answer nothing before the caches are full: a name that exists would
    # get NXDOMAIN, and resolvers would remember that.
    services.wait_for_sync()
    endpoints.wait_for_sync()
    records = Records(services, endpoints)
    servers = [socketserver.UDPServer((args.address, args.port), UDPHandler),
               TCPServer((args.address, args.port), TCPHandler)]
    for server in servers:
        server.records = records
        threading.Thread(target=server.serve_forever, daemon=True).start()
    log.info("serving", address=args.address, port=args.port)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
