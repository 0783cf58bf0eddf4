"""Chapter 05's stages: a cluster DNS server, graded one capability at a time.

Each stage gets a fresh API server, creates Services (and, for a headless
one, the Endpoints the endpoints controller would write), starts the
learner's server with `--apiserver URL --address 127.0.0.1 --port P` on a
free port (no root: not 53) and asks it questions over UDP and TCP with
dnspython. A check that an answer goes away (a deleted Service) waits for
the server to answer something first, so a server that never answers
never passes one.
"""
from __future__ import annotations

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from common.tooling.ports import free_port
from stage_runner import Hint, Stage, StageFailure, WithAPIServer

PART2 = "05-proxy-dns/lesson-2-services.md"
NAMES = Hint("Names: cluster DNS", PART2)

NAMESPACE = "shop"


class WithDNS(WithAPIServer):
    """A fresh API server, and a free port on loopback for the learner's DNS."""

    def __init__(self, mine, workdir):
        super().__init__(mine, workdir)
        self.port = free_port()
        response = self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NAMESPACE}})
        assert response.status_code == 201, response.text

    def mine_args(self) -> list[str]:
        return [*super().mine_args(), "--address", "127.0.0.1", "--port", str(self.port)]


CONTEXT = WithDNS


# ---------------------------------------------------------------- objects

def create_service(ctx: WithDNS, name: str, *, headless: bool = False, ports: list | None = None) -> dict:
    spec = {"selector": {"app": name}, "ports": ports or [{"name": "http", "port": 80, "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
    response = ctx.api.post(f"/api/v1/namespaces/{NAMESPACE}/services",
                            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    assert response.status_code == 201, response.text
    return response.json()


def subset(port: int, ready: list[str], not_ready: list[str] = ()) -> dict:
    """The pods of an Endpoints object that share one set of ports."""
    return {"addresses": [{"ip": ip} for ip in ready], "notReadyAddresses": [{"ip": ip} for ip in not_ready],
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}


def create_endpoints(ctx: WithDNS, name: str, subsets: list[dict]) -> None:
    """What the endpoints controller writes for a Service's pods (no
    "subsets" key at all when there are none, as Kubernetes leaves it out)."""
    response = ctx.api.post(f"/api/v1/namespaces/{NAMESPACE}/endpoints",
                            {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name},
                             **({"subsets": subsets} if subsets else {})})
    assert response.status_code == 201, response.text


def fqdn(service: str) -> str:
    return f"{service}.{NAMESPACE}.svc.cluster.local."


# ---------------------------------------------------------------- questions

class Answer:
    def __init__(self, response: dns.message.Message | None, error: str = ""):
        self.response, self.error = response, error

    @property
    def rcode(self) -> str:
        return dns.rcode.to_text(self.response.rcode()) if self.response else ""

    def values(self, rdtype: str) -> list[str]:
        """The answer's records of this type, as text, sorted."""
        if self.response is None:
            return []
        return sorted(item.to_text() for rrset in self.response.answer
                      if rrset.rdtype == dns.rdatatype.from_text(rdtype) for item in rrset)

    def __str__(self) -> str:
        if self.response is None:
            return f"no answer ({self.error})"
        records = [f"{dns.rdatatype.to_text(r.rdtype)} {item.to_text()}" for r in self.response.answer for item in r]
        return f"{self.rcode} with answer {records or 'empty'}"


def ask(ctx: WithDNS, name: str, rdtype: str = "A", tcp: bool = False) -> Answer:
    query = dns.message.make_query(name, rdtype)
    try:
        send = dns.query.tcp if tcp else dns.query.udp
        return Answer(send(query, "127.0.0.1", port=ctx.port, timeout=0.5))
    except dns.exception.FormError as error:
        return Answer(None, f'FormError "{error}": a reply dnspython cannot read (an rrset with no records makes one)')
    except (dns.exception.DNSException, OSError) as error:
        return Answer(None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)


def wait_for_answer(ctx: WithDNS, name: str, rdtype: str, wanted: list[str] | None, *, rcode: str = "NOERROR",
                    why: str, tcp: bool = False, timeout: float = 10, hint: Hint | None = None) -> Answer:
    """Ask until the answer has this rcode and these records (wanted None:
    an empty answer), or fail saying what the last answer was."""
    last = [Answer(None, "not asked yet")]

    def check():
        last[0] = ask(ctx, name, rdtype, tcp)
        return last[0].rcode == rcode and last[0].values(rdtype) == sorted(wanted or []) \
            and (wanted or not last[0].response.answer)
    shown = f"{rdtype} {', '.join(wanted)}" if wanted else f"{rcode} and no records"
    return ctx.wait_until(check, expected=f"{name} {rdtype}{' over TCP' if tcp else ''}: {shown} ({why})",
                          happened=lambda: f"the answer was {last[0]}", timeout=timeout, hint=hint) and last[0]


# ---------------------------------------------------------------- the stages

def stage_service_address(ctx: WithDNS) -> None:
    web = create_service(ctx, "web")["spec"]["clusterIP"]
    ctx.start_mine()
    wait_for_answer(ctx, fqdn("web"), "A", [web], why="Service web's cluster IP")
    wait_for_answer(ctx, fqdn("web"), "A", [web], why="the same question, over TCP", tcp=True)
    db = create_service(ctx, "db")["spec"]["clusterIP"]
    wait_for_answer(ctx, fqdn("db"), "A", [db], why="Service db, made after your server started: "
                                                    "the watch brings it", timeout=5)


def stage_nxdomain_nodata(ctx: WithDNS) -> None:
    web = create_service(ctx, "web")["spec"]["clusterIP"]
    create_service(ctx, "old")
    ctx.start_mine()
    wait_for_answer(ctx, fqdn("web"), "A", [web], why="Service web's cluster IP")
    wait_for_answer(ctx, fqdn("nothere"), "A", None, rcode="NXDOMAIN",
                    why="no Service is called nothere: the name does not exist")
    wait_for_answer(ctx, fqdn("web"), "AAAA", None,
                    why="web exists but has no IPv6 address: NODATA, not NXDOMAIN and not its A record")
    wait_for_answer(ctx, fqdn("web"), "TXT", None, why="web exists but has no TXT record: NODATA")
    assert ctx.api.delete(f"/api/v1/namespaces/{NAMESPACE}/services/old").status_code == 200
    wait_for_answer(ctx, fqdn("old"), "A", None, rcode="NXDOMAIN",
                    why="Service old was deleted: its name goes with it", timeout=5)


def stage_headless(ctx: WithDNS) -> None:
    create_service(ctx, "db", headless=True)
    # Two subsets: db's pods listen on two different ports (say, during a
    # rollout that changed the port), so the endpoints controller groups them.
    create_endpoints(ctx, "db", [subset(8080, ["10.244.1.7"], not_ready=["10.244.1.8"]),
                                 subset(8443, ["10.244.2.9"])])
    create_service(ctx, "empty", headless=True)
    create_endpoints(ctx, "empty", [])
    create_service(ctx, "new", headless=True)             # no Endpoints object yet
    ctx.start_mine()
    wait_for_answer(ctx, fqdn("db"), "A", ["10.244.1.7", "10.244.2.9"],
                    why="db is headless (clusterIP None): one record per ready pod, in every subset of its "
                        "Endpoints (10.244.2.9 is in the second), and 10.244.1.8 is not ready")
    wait_for_answer(ctx, fqdn("empty"), "A", None,
                    why="a headless Service whose Endpoints has no subsets, no pod: it exists, with no address: NODATA")
    wait_for_answer(ctx, fqdn("new"), "A", None,
                    why="a headless Service with no Endpoints object yet exists, with no address: NODATA")


def stage_srv(ctx: WithDNS) -> None:
    create_service(ctx, "web", ports=[{"name": "http", "port": 80, "targetPort": 8080},
                                      {"name": "metrics", "port": 9090, "protocol": "TCP"},
                                      {"name": "dns", "port": 53, "protocol": "UDP"}])
    ctx.start_mine()
    target = fqdn("web")
    wait_for_answer(ctx, f"_http._tcp.{target}", "SRV", [f"0 100 80 {target}"],
                    why="web's port named http, TCP by default, is 80")
    wait_for_answer(ctx, f"_metrics._tcp.{target}", "SRV", [f"0 100 9090 {target}"],
                    why="web's port named metrics is 9090")
    wait_for_answer(ctx, f"_dns._udp.{target}", "SRV", [f"0 100 53 {target}"], why="web's UDP port named dns")
    wait_for_answer(ctx, f"_dns._tcp.{target}", "SRV", None, rcode="NXDOMAIN",
                    why="web's port named dns is UDP, not TCP")


def stage_ptr(ctx: WithDNS) -> None:
    web = create_service(ctx, "web")["spec"]["clusterIP"]
    ctx.start_mine()
    reverse = ".".join(reversed(web.split("."))) + ".in-addr.arpa."
    wait_for_answer(ctx, reverse, "PTR", [fqdn("web")], why=f"{web} is Service web's cluster IP")
    wait_for_answer(ctx, "99.99.99.10.in-addr.arpa.", "PTR", None, rcode="NXDOMAIN",
                    why="10.99.99.99 is nobody's cluster IP")
    answer = ask(ctx, fqdn("web"), "A")
    if answer.values("A") != [web]:
        raise StageFailure(f"{fqdn('web')} A {web} still", f"the answer was {answer}")


STAGES = [
    Stage(1, "a Service's name answers with its cluster IP", stage_service_address, NAMES,
          terms=("`web.shop.svc.cluster.local` A", "the Service's cluster IP", "over UDP and over TCP",
                 "as soon as the watch brings it")),
    Stage(2, "NXDOMAIN for no such name, NODATA for no such record", stage_nxdomain_nodata, NAMES,
          terms=("NXDOMAIN", "NODATA", "AAAA", "a deleted Service's name")),
    Stage(3, "a headless Service answers with its ready pods", stage_headless, NAMES,
          terms=("headless", "one A record per ready address", "in every subset", "`notReadyAddresses` left out",
                 "no Endpoints object yet")),
    Stage(4, "SRV records for named ports", stage_srv, NAMES,
          terms=("SRV", "`0 100 80 web.shop.svc.cluster.local.`", "the port named `http`", "_udp",
                 "A port with no protocol is TCP")),
    Stage(5, "PTR: from a cluster IP back to its name", stage_ptr, NAMES,
          terms=("PTR", "in-addr.arpa", "the name of the Service whose cluster IP", "no Service's cluster IP")),
]
