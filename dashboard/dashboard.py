"""A live page of the cluster: nodes as columns, their pods, Services, Events.

    python dashboard/dashboard.py --apiserver http://127.0.0.1:8080      # then open http://127.0.0.1:9090
    python dashboard/dashboard.py --kubeconfig .certs/admin.kubeconfig --port 9090
    make dashboard

One more client of the API server: it sees what its kubeconfig or
ServiceAccount may list, and says so on the page when it may not.
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading

from werkzeug.serving import make_server

from common.client.client import client_from_args
from common.client.kubeconfig import add_flags
from common.log import get_logger
from common.tooling.processes import stop_on_signals

from cluster_view import ClusterView
from web import create_app

log = get_logger("dashboard")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_flags(parser)
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to serve the page on (default 127.0.0.1: this machine only; "
                             "0.0.0.0 in a pod)")
    parser.add_argument("--port", type=int, default=9090, help="port to serve the page on (default 9090)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    client = client_from_args(args, user_agent="groundup-dashboard", log=log)
    if client is None:
        return 2
    stop = stop_on_signals()
    view = ClusterView(client).start()
    try:
        server = make_server(args.address, args.port, create_app(view), threaded=True)
    except OSError as error:
        log.error("cannot serve the page", address=f"{args.address}:{args.port}", error=str(error))
        view.stop()
        return 1
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # a line per request would drown the log
    threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    log.info("serving", url=f"http://{args.address}:{args.port}/", apiserver=client.connection.server)
    stop.wait()
    log.info("stopping")
    view.stop()                                       # ends every tab's stream
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
