"""Grade your component, stage by stage: `make stage-NN` runs this.

    python tests/stages/run.py 03 [--stage N] [--mine path/to/your_scheduler.py]

Without --mine it grades the chapter's starting file; without --stage it
runs every stage in order up to the first that fails.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from stage_runner import ROOT, run_stages

# chapter -> (title, the module with its STAGES, the starting file)
CHAPTERS = {
    "01": ("Chapter 01: the kubelet", "kubelet_stages", "01-kubelet/build-it-yourself/kubelet.py"),
    "02": ("Chapter 02: the API server", "apiserver_stages", "02-apiserver/build-it-yourself/apiserver.py"),
    "03": ("Chapter 03: the scheduler", "scheduler_stages", "03-scheduler/build-it-yourself/scheduler.py"),
    "04": ("Chapter 04: a ReplicaSet controller", "controller_stages",
           "04-controllers/build-it-yourself/replicaset_controller.py"),
    # Chapter 04's second program (make stage-04-statefulset): part 4's StatefulSet plan.
    "04-statefulset": ("Chapter 04: the StatefulSet plan", "statefulset_stages",
                       "04-controllers/build-it-yourself/stateful_pods.py"),
    "05": ("Chapter 05: cluster DNS", "dns_stages", "05-proxy-dns/build-it-yourself/cluster_dns.py"),
    # Chapter 05's second program (make stage-05-ingress), as bench-05-ingress is its second bench.
    "05-ingress": ("Chapter 05: the ingress routing rules", "ingress_stages",
                   "05-proxy-dns/build-it-yourself/ingress_match.py"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", choices=sorted(CHAPTERS))
    parser.add_argument("--stage", type=int, help="run this stage only")
    parser.add_argument("--mine", help="the file to grade (default: the chapter's starting file)")
    args = parser.parse_args(argv)
    title, module, starter = CHAPTERS[args.chapter]
    mine = Path(args.mine) if args.mine else ROOT / starter
    if not mine.is_file():
        parser.error(f"{mine} is not a file")
    chapter = importlib.import_module(module)
    results = run_stages(title, chapter.STAGES, mine, args.stage, chapter.CONTEXT)
    return 0 if all(r.failure is None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
