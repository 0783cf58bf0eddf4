"""The controller manager: `python 04-controllers/controller_manager.py --apiserver URL`.

One process that runs many small controllers, as kube-controller-manager
does: each a reconcile loop over its own kind, all sharing one set of
informers (one watch per kind for the whole process) and one API client.
Which ones run is `--controllers`: `*` for all, `-name` to leave one out,
as in Kubernetes (`--controllers '*,-replicaset'`).
"""
from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import threading
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common.client import kubeconfig, leader_election  # noqa: E402
from common.client.client import APIClient  # noqa: E402
from common.client.events import EventRecorder  # noqa: E402
from common.log import get_logger  # noqa: E402
from common.times import duration  # noqa: E402
from controller import Informers  # noqa: E402
from cronjob import CronJobController  # noqa: E402
from daemonset import DaemonSetController  # noqa: E402
from deployment import DeploymentController  # noqa: E402
from endpoints import EndpointsController  # noqa: E402
from endpointslice import MAX_ENDPOINTS_PER_SLICE, EndpointSliceController  # noqa: E402
from garbage_collector import GarbageCollector  # noqa: E402
from job import JobController  # noqa: E402
from local_path import DEFAULT_ROOT, LocalPathProvisioner  # noqa: E402
from namespace import NamespaceController  # noqa: E402
from pvc_protection import PVCProtectionController  # noqa: E402
from node_ipam import NodeIpamController  # noqa: E402
from node_lifecycle import NodeLifecycleController  # noqa: E402
from replicaset import ReplicaSetController, ReplicationControllerController  # noqa: E402
from serviceaccounts import RootCACertPublisher, ServiceAccountsController  # noqa: E402
from statefulset import StatefulSetController  # noqa: E402
from volume_binder import VolumeBinderController  # noqa: E402

# Kubernetes' names, in the order they start.
CONTROLLERS = {
    "replicaset": ReplicaSetController,
    "replicationcontroller": ReplicationControllerController,
    "deployment": DeploymentController,
    "endpoints": EndpointsController,
    "endpointslice": EndpointSliceController,
    "daemonset": DaemonSetController,
    "statefulset": StatefulSetController,
    "job": JobController,
    "cronjob": CronJobController,
    "nodelifecycle": NodeLifecycleController,
    "nodeipam": NodeIpamController,
    "garbagecollector": GarbageCollector,
    "namespace": NamespaceController,
    "serviceaccount": ServiceAccountsController,
    "root-ca-cert-publisher": RootCACertPublisher,
    "persistentvolume-binder": VolumeBinderController,
    "local-path-provisioner": LocalPathProvisioner,     # ours: Kubernetes runs a provisioner as an add-on
    "pvc-protection": PVCProtectionController,
}


def chosen(spec: str) -> list[str]:
    """'*,-job' -> every controller but job; 'replicaset' -> just that one."""
    names: list[str] = []
    for item in (part.strip() for part in spec.split(",") if part.strip()):
        if item == "*":
            names += [n for n in CONTROLLERS if n not in names]
        elif item.startswith("-"):
            names = [n for n in names if n != item[1:]]
        else:
            names.append(item)
    unknown = [n for n in names if n not in CONTROLLERS]
    if unknown:
        raise ValueError(f"unknown controller(s) {', '.join(unknown)}: choose from {', '.join(CONTROLLERS)}")
    return names


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="controller_manager.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--controllers", default="*",
                        help=f"which controllers run: '*' for all, '-name' to leave one out ({', '.join(CONTROLLERS)})")
    parser.add_argument("--workers", type=int, default=2, help="reconcile threads per controller (default 2)")
    parser.add_argument("--node-monitor-period", type=duration, default=5.0, metavar="DURATION",
                        help="how often every node's heartbeat is looked at (default 5s)")
    parser.add_argument("--node-monitor-grace-period", type=duration, default=40.0, metavar="DURATION",
                        help="how long without a heartbeat before a node is Ready=Unknown (default 40s)")
    parser.add_argument("--default-toleration-seconds", type=int, default=300,
                        help="how long a pod that says nothing stays on a not-ready or unreachable node (default 300)")
    parser.add_argument("--cluster-cidr", default="10.244.0.0/16", help="the pod network, cut into node ranges")
    parser.add_argument("--node-cidr-mask-size", type=int, default=24, help="prefix length of each node's range")
    parser.add_argument("--max-endpoints-per-slice", type=int, default=MAX_ENDPOINTS_PER_SLICE,
                        help=f"endpoints in one EndpointSlice at most (default {MAX_ENDPOINTS_PER_SLICE})")
    parser.add_argument("--root-ca-file", help="the CA published in every namespace as the kube-root-ca.crt "
                                               "ConfigMap (make certs: .certs/ca.crt); without it, none is")
    parser.add_argument("--local-path-root", default=DEFAULT_ROOT,
                        help=f"where on a node the local-path provisioner puts volumes (default {DEFAULT_ROOT})")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    kubeconfig.add_flags(parser)
    leader_election.add_flags(parser, "kube-controller-manager")
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> dict[str, dict]:
    """Flags that belong to one controller, by its name (Kubernetes keeps a
    configuration struct per controller for the same reason)."""
    return {"nodelifecycle": {"monitor_period": args.node_monitor_period,
                              "grace_period": args.node_monitor_grace_period,
                              "default_toleration_seconds": args.default_toleration_seconds},
            "nodeipam": {"cluster_cidr": args.cluster_cidr, "node_cidr_mask_size": args.node_cidr_mask_size},
            "endpointslice": {"max_endpoints_per_slice": args.max_endpoints_per_slice},
            "root-ca-cert-publisher": {"root_ca_file": args.root_ca_file},
            "local-path-provisioner": {"root": args.local_path_root}}


def start_controllers(controllers: list, log) -> None:
    for controller in controllers:
        controller.start()
    log.info("caches synced, controllers running")


def stop_controllers(controllers: list) -> None:
    """Stop every worker and flush the events; a second call does nothing more."""
    for controller in controllers:
        controller.stop()
        controller.events.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("controller-manager", "DEBUG" if args.verbose else None)
    try:
        names = chosen(args.controllers)
        connection = kubeconfig.from_args(args)
        election = leader_election.config_from_args(args) if args.leader_elect else None
    except (ValueError, kubeconfig.KubeconfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    client = APIClient(connection, user_agent="controller-manager")
    informers = Informers(client)
    # Each controller signs its events with its own name, as in Kubernetes
    # ("replicaset-controller"), so `kubectl describe` says who acted.
    controllers = [CONTROLLERS[name](client, informers, EventRecorder(client, f"{name}-controller", log=log).start(),
                                     log, workers=args.workers, **settings(args).get(name, {})) for name in names]

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    faulthandler.register(signal.SIGUSR1)      # `kill -USR1 PID` prints every thread's stack

    log.info("starting", controllers=",".join(names), apiserver=connection.server,
             identity=election.identity if election else None)
    informers.start()
    # Reconciling on a half-filled cache would, for instance, create pods
    # that already exist: wait for every informer's first list.
    while not informers.wait_for_sync(timeout=1):
        if stop.is_set():
            break
    else:
        if election is None:
            start_controllers(controllers, log)
        else:
            # Every copy keeps its caches warm, so a new leader starts at
            # once; only the leader's controllers act.
            elector = leader_election.LeaderElector(
                leader_election.lease_client(connection, election, "controller-manager"), election,
                on_started_leading=partial(start_controllers, controllers, log),
                on_stopped_leading=partial(stop_controllers, controllers),
                events=EventRecorder(client, "controller-manager", log=log).start(), log=log)
            if not elector.run(stop):
                # Our controllers may be mid-reconcile and another copy may
                # take over at any moment: go now, as kube-controller-manager does.
                log.error("leaderelection lost")
                logging.shutdown()
                os._exit(1)
            elector.events.stop()
    stop.wait()
    stop_controllers(controllers)
    log.info("stopped")
    logging.shutdown()
    os._exit(0)        # informer threads may sit in a socket read; nothing of ours is left to flush


if __name__ == "__main__":
    sys.exit(main())
