"""The dashboard's web side: the page, its files, and the stream of changes.

    GET /             the page (static/index.html)
    GET /static/...   its CSS and JavaScript, served from this folder: no CDN,
                      no build step, nothing fetched from elsewhere
    GET /events       Server-Sent Events: a snapshot, then every change
    GET /api/state    the same snapshot as one JSON document, and the tabs open (curl, tests)
    GET /healthz      ok

Server-Sent Events rather than a WebSocket: the news flows one way, from
the cluster to the page, and SSE is plain HTTP that the browser reconnects
by itself (EventSource), which is what a projector left on all day needs.
"""
from __future__ import annotations

import queue
from pathlib import Path

from flask import Flask, Response, jsonify, send_from_directory

from cluster_view import ClusterView

STATIC = Path(__file__).resolve().parent / "static"
KEEPALIVE_SECONDS = 15         # a comment line now and then: a closed tab is noticed, proxies keep the line open

# Everything the page loads comes from this server; nothing inline runs. A
# name such as <script>alert(1)</script> is text to the page (it only ever
# sets textContent), and this policy would stop it even if it were not.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def create_app(view: ClusterView) -> Flask:
    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")

    @app.get("/")
    def page():
        return send_from_directory(STATIC, "index.html")

    @app.get("/favicon.ico")
    def favicon():
        return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml")

    @app.get("/healthz")
    def healthz():
        return "ok"

    @app.get("/api/state")
    def state():
        return jsonify({**view.snapshot(), "tabs": view.tabs})

    @app.get("/events")
    def events():
        return Response(stream(view), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.after_request
    def secure(response):
        response.headers.update(SECURITY_HEADERS)
        return response

    return app


# [START sse-stream]
def stream(view: ClusterView):
    """One tab's stream: the snapshot and changes its subscription queues up.
    It ends when the dashboard stops or the tab falls too far behind; the
    browser's EventSource then connects again and gets a fresh snapshot."""
    subscription = view.subscribe()
    try:
        yield "retry: 1000\n\n"                       # reconnect after 1 s, not the default 3
        while not subscription.cut_off:
            try:
                message = subscription.messages.get(timeout=KEEPALIVE_SECONDS)
            except queue.Empty:
                yield ": keepalive\n\n"               # a comment: the browser ignores it
                continue
            if message is None:
                return
            yield message
    finally:
        view.unsubscribe(subscription)                # also when the tab closed (the write failed)
# [END sse-stream]
