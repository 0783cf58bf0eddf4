"""The ingress controller: one address for many HTTP applications (chapter 05).

    python 05-proxy-dns/ingress_controller.py --kubeconfig node1.kubeconfig --port 80 --https-port 443

A Service gives a set of pods one address inside the cluster, for any
protocol, by port. HTTP asks for more: many applications behind one
address, told apart by the host name and the path in each request, and TLS
ended at the door. An Ingress writes that down as an API object; this program
makes it happen: a reverse proxy on every node that

1. keeps local copies of Ingresses, IngressClasses, Services,
   EndpointSlices and Secrets (informers, as every component here does);
2. after any change, builds its routing table again from them
   (ingress/routes.py): only the Ingresses of its class (--ingress-class),
   oldest first;
3. for each request, finds the route by host and path (ingress/match.py)
   and streams it straight to one of the Service's ready pods, in turn
   (ingress/forward.py): not through the cluster IP, so a pod that is
   not ready gets nothing and the proxy's own choice of pod is final;
4. writes its node's address into the status of the Ingresses it serves
   (ingress/status.py), which `kubectl get ingress` shows as ADDRESS.
"""
from __future__ import annotations

import argparse
import sys
import threading
from typing import Callable

from common.addresses import this_machines_address
from common.client import kubeconfig
from common.client.client import APIClient, client_from_args
from common.client.informer import Informer
from common.log import get_logger
from common.model.quantity import parse_quantity
from common.tooling.processes import stop_on_signals
from ingress import routes
from ingress.certificates import Certificates
from ingress.forward import IngressServer
from ingress.status import StatusWriter

NETWORKING = "networking.k8s.io/v1"
DEFAULT_CLASS = "groundup"


class IngressController:
    def __init__(self, client: APIClient, class_name: str, address: str, log):
        self.class_name, self.log = class_name, log
        self.informers = {
            "ingresses": Informer(client, NETWORKING, "ingresses"),
            "ingressclasses": Informer(client, NETWORKING, "ingressclasses"),
            "services": Informer(client, "v1", "services"),
            "endpointslices": Informer(client, "discovery.k8s.io/v1", "endpointslices"),
            "secrets": Informer(client, "v1", "secrets"),
        }
        self.table = routes.RoutingTable()
        self.certificates = Certificates(log)
        self.status = StatusWriter(client, address, log)
        self._lock = threading.Lock()
        self._conflicts: set[str] = set()
        self.on_rebuild: list[Callable[[routes.RoutingTable], None]] = []   # e.g. a pool dropping gone pods
        for informer in self.informers.values():
            informer.add_handler(on_add=self.changed, on_update=lambda old, new: self.changed(new),
                                 on_delete=self.changed)

    def changed(self, _obj: dict | None = None) -> None:
        if all(i.has_synced() for i in self.informers.values()):
            self.rebuild()

    # [START rebuild]
    def rebuild(self) -> None:
        """A new routing table from the caches, swapped in whole: a request
        in flight keeps the table it started with."""
        with self._lock:
            cache = {name: informer.list() for name, informer in self.informers.items()}
            table = routes.build(cache["ingresses"], cache["ingressclasses"], cache["services"],
                                 cache["endpointslices"], self.class_name)
            self.certificates.update(table.tls, self.informers["secrets"].get)
            self.table = table
            self.status.want(table.ingresses, cache["ingresses"])
            for conflict in set(table.conflicts) - self._conflicts:
                self.log.warning("rule conflict", detail=conflict)
            self._conflicts = set(table.conflicts)
            for listener in self.on_rebuild:
                listener(table)
    # [END rebuild]

    def current_table(self) -> routes.RoutingTable:
        return self.table

    def start(self, stop: threading.Event) -> bool:
        """Informers started and synced; False if stopped first."""
        for informer in self.informers.values():
            informer.start()
        while not all(i.wait_for_sync(timeout=1) for i in self.informers.values()):
            if stop.is_set():
                return False
        self.rebuild()
        threading.Thread(target=self.status.run, args=(stop,), daemon=True, name="status").start()
        return True

    def stop(self) -> None:
        self.status.withdraw(self.informers["ingresses"].list())
        for informer in self.informers.values():
            informer.stop()


def serve(server: IngressServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    return thread


def byte_count(text: str) -> int:
    """"1Gi" -> 1073741824; "0": no limit."""
    return int(parse_quantity(text).amount)


def main(argv: list[str] | None = None, match=None) -> int:
    """match: the routing rules, if not ingress/match.py's (Build it yourself's starter passes its own)."""
    parser = argparse.ArgumentParser(prog="ingress_controller.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=80, help="the HTTP port (default %(default)s)")
    parser.add_argument("--https-port", type=int, default=443,
                        help="the HTTPS port, TLS ended here (default %(default)s; 0: none)")
    parser.add_argument("--bind-address", default="0.0.0.0", help="the address to listen on (default %(default)s)")
    parser.add_argument("--ingress-class", default=DEFAULT_CLASS,
                        help="serve the Ingresses of this IngressClass (default %(default)s), and those "
                             "naming none if this class is the default one")
    parser.add_argument("--publish-address", default=None,
                        help="the address written to the Ingresses' status (default: this machine's)")
    parser.add_argument("--max-body-size", default="1Gi",
                        help="refuse larger request bodies with 413 (default %(default)s; 0: no limit)")
    parser.add_argument("--upstream-timeout", type=float, default=60,
                        help="seconds a pod may take to answer, or between two pieces of its answer (504)")
    parser.add_argument("--connect-timeout", type=float, default=5,
                        help="seconds a pod may take to accept a connection before the next one is tried "
                             "(default %(default)s)")
    parser.add_argument("--client-timeout", type=float, default=60,
                        help="seconds a client may stay silent before its connection is closed")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per request: host, path, pod, status")
    kubeconfig.add_flags(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("ingress", "DEBUG" if args.verbose else None)
    client = client_from_args(args, "ingress-controller", log)
    if client is None:
        return 2
    try:
        max_body = byte_count(args.max_body_size)
    except ValueError:
        parser.error(f"--max-body-size {args.max_body_size!r} is not a size such as 1Gi or 500Mi")
    stop = stop_on_signals()
    controller = IngressController(client, args.ingress_class, args.publish_address or this_machines_address(), log)
    if not controller.start(stop):
        return 0
    options = dict(max_body_size=max_body, upstream_timeout=args.upstream_timeout,
                   connect_timeout=args.connect_timeout,
                   client_timeout=args.client_timeout, log=log, **({"match": match} if match else {}))
    servers = [IngressServer((args.bind_address, args.port), controller.current_table, **options)]
    if args.https_port:
        servers.append(IngressServer((args.bind_address, args.https_port), controller.current_table,
                                     tls=controller.certificates.default, **options))
    for server in servers:
        controller.on_rebuild.append(server.pool.keep_only)
        serve(server)
    log.info("serving", ingressClass=args.ingress_class, http=servers[0].server_address[1],
             https=args.https_port or None, address=controller.status.address)
    stop.wait()
    for server in servers:
        server.shutdown()
        server.server_close()
    controller.stop()
    log.info("ingress controller stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
