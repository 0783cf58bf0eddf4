"""`kubectl get pods` for chapter 01, before there is an API server.

    python 01-kubelet/get_pods.py [--kubelet http://127.0.0.1:10255]

Reads the kubelet's read-only /pods and prints one line per pod, with
READY, STATUS and RESTARTS worked out the way kubectl does it (a waiting or
terminated container's reason wins over the pod's phase; Init:1/2 while
init containers run), by the same function as the API server's tables
(common/model/pod_summary.py).
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone

import requests

from common.model.pod_summary import summarize


def ready(pod: dict) -> str:
    summary = summarize(pod)
    return f"{summary.ready}/{summary.total}"


def restarts(pod: dict) -> int:
    return summarize(pod).restarts


def status_column(pod: dict) -> str:
    """kubectl's STATUS: the phase, unless a container has a reason to show."""
    return summarize(pod).status


def age(pod: dict, now: float) -> str:
    started = pod["status"].get("startTime")
    if not started:
        return "<unknown>"
    seconds = int(now - datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def table(pods: list[dict], now: float | None = None) -> str:
    now = time.time() if now is None else now
    rows = [("NAME", "READY", "STATUS", "RESTARTS", "IP", "AGE")]
    for pod in pods:
        rows.append((pod["metadata"]["name"], ready(pod), status_column(pod), str(restarts(pod)),
                     pod["status"].get("podIP", "<none>"), age(pod, now)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubelet", default="http://127.0.0.1:10255", help="the kubelet's read-only address")
    args = parser.parse_args(argv)
    try:
        pods = requests.get(f"{args.kubelet}/pods", timeout=5).json()["items"]
    except requests.RequestException as error:
        print(f"cannot reach the kubelet at {args.kubelet}: {error}", file=sys.stderr)
        return 1
    print(table(pods) if pods else "No resources found.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
