"""The API server: `python 02-apiserver/apiserver.py --data-dir DIR`.

Every other component talks only to this process. It keeps the objects (as
JSON files under --data-dir), checks every write, and tells watchers about
every change.

Why this WSGI server: each watch is a response that stays open for minutes,
and kubectl, every kubelet, the scheduler and the controllers each hold
several. A server with a fixed pool of worker threads (waitress, gunicorn's
sync workers) stops answering once the pool is full of watches. Werkzeug's
threaded server starts one thread per connection, so a thousand watches are a
thousand mostly sleeping threads, and new requests are still served.
"""
from __future__ import annotations

import argparse
import gc
import ipaddress
import logging
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # for `common`, when run as a script

from werkzeug.serving import WSGIRequestHandler, make_server  # noqa: E402

from app import DEFAULTS, create_app  # noqa: E402
from file_store import StoreError  # noqa: E402
from common.log import get_logger  # noqa: E402

log = get_logger("apiserver")


class HTTP11Handler(WSGIRequestHandler):
    # HTTP/1.1 gives chunked responses, which a watch needs to stream events
    # one by one. (Werkzeug still closes each connection after one response:
    # no keep-alive, so every request pays for a connection and a thread.)
    protocol_version = "HTTP/1.1"

    def log_request(self, code="-", size="-"):
        if self.server.log_requests:
            super().log_request(code, size)


def keep_stored_objects_out_of_full_collections() -> None:
    """Python's full garbage collection walks every live object: with 10,000
    stored pods that is a pause of 50-150 ms in the middle of some request.
    Stored objects are plain dicts and lists with no reference cycles, so
    reference counting frees them; once a second, survivors are moved out of
    the collector's sight (gc.freeze). Young objects are still collected."""
    def freeze_survivors():
        while True:
            gc.collect(1)
            gc.freeze()
            threading.Event().wait(1)
    gc.freeze()
    threading.Thread(target=freeze_survivors, daemon=True, name="gc-freeze").start()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The API server: the cluster's one source of truth.")
    parser.add_argument("--data-dir", required=True, help="directory of the JSON object files (created if missing)")
    parser.add_argument("--insecure-port", "--port", dest="port", type=int, default=8080,
                        help="port of the plain-HTTP API, with no authentication (default 8080)")
    parser.add_argument("--insecure-bind-address", default="127.0.0.1",
                        help="address of the plain-HTTP API (default 127.0.0.1: this machine only)")
    parser.add_argument("--watch-cache-size", type=int, default=DEFAULTS["WATCH_CACHE_SIZE"],
                        help="events kept for reconnecting watches (older: 410 Gone)")
    parser.add_argument("--max-watches", type=int, default=DEFAULTS["MAX_WATCHES"],
                        help="open watches allowed at once (more: 429)")
    parser.add_argument("--max-request-bytes", type=int, default=DEFAULTS["MAX_BODY_BYTES"],
                        help="largest request body accepted (more: 413)")
    parser.add_argument("--watch-bookmark-seconds", type=float, default=DEFAULTS["BOOKMARK_SECONDS"],
                        help="how often an idle watch that allows bookmarks gets one")
    parser.add_argument("--log-requests", action="store_true", help="log one line per HTTP request")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        ipaddress.ip_address(args.insecure_bind_address)
    except ValueError:
        print(f"error: --insecure-bind-address {args.insecure_bind_address!r} is not an IP address", file=sys.stderr)
        return 2
    if not ipaddress.ip_address(args.insecure_bind_address).is_loopback:
        log.info("WARNING: the insecure port has no authentication: anyone who can reach "
                 f"{args.insecure_bind_address}:{args.port} can read and change everything")
    try:
        app = create_app({"DATA_DIR": args.data_dir, "WATCH_CACHE_SIZE": args.watch_cache_size,
                          "MAX_WATCHES": args.max_watches, "MAX_BODY_BYTES": args.max_request_bytes,
                          "BOOKMARK_SECONDS": args.watch_bookmark_seconds})
    except StoreError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    logging.getLogger("werkzeug").setLevel(logging.INFO if args.log_requests else logging.WARNING)
    try:
        server = make_server(args.insecure_bind_address, args.port, app, threaded=True,
                             request_handler=HTTP11Handler)
    except OSError as error:
        print(f"error: cannot listen on {args.insecure_bind_address}:{args.port}: {error.strerror}", file=sys.stderr)
        return 1
    server.log_requests = args.log_requests
    keep_stored_objects_out_of_full_collections()
    server.daemon_threads = True          # open watches do not hold up a shutdown

    def stop(signum, frame):
        threading.Thread(target=server.shutdown).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("serving", address=f"http://{args.insecure_bind_address}:{server.port}", data_dir=args.data_dir)
    server.serve_forever()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
