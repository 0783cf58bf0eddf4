"""What does each --authorization-mode cost a request? (issue 27)

`python 02-apiserver/benchmarks/bench_authorizers.py` starts the API server
once per row, over HTTPS with certs.py's files in a temporary directory, and
times 500 GETs of /api/v1/namespaces/default/pods as `viewer` (after 50 to
warm up), one at a time over one kept-alive connection. RBAC reads the
bindings on every request, so the last rows add RoleBindings in 100 other
namespaces: the store lists every RoleBinding and keeps the namespace's.
Prints a Markdown table for BENCHMARKS.md; removes what it made.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from common.tooling.ports import free_port

CHAPTER = Path(__file__).resolve().parents[1]
ROWS = (("ABAC", 0), ("RBAC", 0), ("RBAC,ABAC", 0), ("RBAC", 1000), ("RBAC", 5000))


def measure(work: Path, certs: Path, mode: str, bindings: int) -> tuple[float, float]:
    port, secure = free_port(), free_port()
    server = subprocess.Popen(
        [sys.executable, str(CHAPTER / "apiserver.py"), "--data-dir", str(work / f"data-{mode}-{bindings}"),
         "--port", str(port), "--secure-port", str(secure), "--tls-cert-file", str(certs / "apiserver.crt"),
         "--tls-private-key-file", str(certs / "apiserver.key"), "--token-auth-file", str(certs / "tokens.csv"),
         "--authorization-mode", mode, "--authorization-policy-file", str(CHAPTER / "policy.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        insecure = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(insecure + "/readyz", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
        add_bindings(insecure, bindings)
        token = next(line.split(",")[0] for line in (certs / "tokens.csv").read_text().splitlines()
                     if line.split(",")[1] == "viewer")
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        url = f"https://127.0.0.1:{secure}/api/v1/namespaces/default/pods"
        times = []
        for i in range(550):
            start = time.perf_counter()
            answer = session.get(url, verify=str(certs / "ca.crt"))
            if i >= 50:
                times.append(time.perf_counter() - start)
            answer.raise_for_status()
        times.sort()
        return times[len(times) // 2] * 1000, times[int(len(times) * 0.99)] * 1000
    finally:
        server.terminate()
        server.wait()


def add_bindings(insecure: str, count: int) -> None:
    session = requests.Session()
    for i in range(count):
        namespace = f"team-{i % 100}"
        if i < 100:
            session.post(f"{insecure}/api/v1/namespaces", json={"metadata": {"name": namespace}})
        session.post(f"{insecure}/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", json={
            "metadata": {"name": f"b{i}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "User", "name": f"user{i}", "apiGroup": "rbac.authorization.k8s.io"}],
        }).raise_for_status()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(CHAPTER / "certs.py"), "--out", str(work / "certs"),
                        "--apiserver", "https://127.0.0.1:6443"], check=True, capture_output=True)
        print("| --authorization-mode | RoleBindings elsewhere | p50 | p99 |")
        print("|---|---|---|---|")
        for mode, bindings in ROWS:
            p50, p99 = measure(work, work / "certs", mode, bindings)
            print(f"| {mode} | {bindings:,} | {p50:.2f} ms | {p99:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
