"""The learner's StatefulSet plan() behind a small HTTP server, for the stages.

    python tests/stages/plan_server.py path/to/stateful_pods.py --port P

The starter of chapter 04's second program is a module, not a program: the
StatefulSet controller calls its plan(). So the stages start this server
with the learner's file, as the other chapters' stages start the
learner's program, and ask it over loopback HTTP:

    POST /plan {"pods": {"0": pod, ...}, "start": 0, "replicas": 3,
                "revisions": {"current": ..., "update": ..., "partition": 0, "rolling": true},
                "ordered": true, "min_ready_seconds": 0, "now": 1700000000.0}
    200 {"create": [[ordinal, revision], ...], "delete": [pod name, ...], "waiting_for": "..."}
    500 "NotImplementedError: make_and_mend() is yours to write: ..."   (and the traceback in the log)

Loading the file and every call of plan() happen in this process, never
in the grader's: a learner's plan() that loops forever or exits ends
here, and the stage says so.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHAPTER = Path(__file__).resolve().parents[2] / "04-controllers"


def load(path: Path):
    sys.path.insert(0, str(CHAPTER))        # ownership.py, pods.py: what the reference module imports
    spec = importlib.util.spec_from_file_location("your_stateful_pods", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module         # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def answer(mine, question: dict) -> dict:
    pods = {int(ordinal): pod for ordinal, pod in question["pods"].items()}
    revisions = mine.Revisions(**question["revisions"])
    result = mine.plan(pods, question["start"], question["replicas"], revisions, ordered=question["ordered"],
                       min_ready_seconds=question.get("min_ready_seconds", 0), now=question["now"])
    if not all(hasattr(result, field) for field in ("create", "delete", "waiting_for")):
        raise TypeError(f"plan() returned {result!r}, not a Plan")
    return {"create": [[int(ordinal), revision] for ordinal, revision in result.create],
            "delete": [pod["metadata"]["name"] for pod in result.delete],
            "waiting_for": str(result.waiting_for or "")}


def handler_for(mine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                status, body = 200, json.dumps(answer(mine, question))
            except Exception as error:
                traceback.print_exc()           # the learner's last lines, under the failure
                sys.stderr.flush()
                status, body = 500, f"{type(error).__name__}: {error}"
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
    return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mine", type=Path)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    mine = load(args.mine)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(mine))
    print(f"serving {args.mine}'s plan() on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
