"""status.loadBalancer.ingress: where the Ingresses we serve can be reached.

`kubectl get ingress` shows it in the ADDRESS column, and tools that make
DNS records from Ingresses (external-dns) read it. One controller runs on
every node, so the address list is every node where one runs: each copy
adds its own node's address to each Ingress it serves, removes it from
Ingresses it no longer serves, and from all of them when it stops.
"""
from __future__ import annotations

import copy
import threading

from common.client.client import APIClient, APIConnectionError, APIStatusError, Conflict, NotFound

GROUP_VERSION = "networking.k8s.io/v1"


def addresses_with(ingress: dict, address: str, present: bool) -> list[dict] | None:
    """The new status.loadBalancer.ingress list with address in (or out),
    or None when it already is as wanted."""
    current = [e for e in ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
               if isinstance(e, dict)]
    has = any(e.get("ip") == address for e in current)
    if has == present:
        return None
    if present:
        return sorted(current + [{"ip": address}], key=lambda e: e.get("ip") or e.get("hostname") or "")
    return [e for e in current if e.get("ip") != address]


class StatusWriter:
    """Writes our address into the status of the Ingresses we serve, in a
    thread of its own, so that a slow API server never delays routing."""

    def __init__(self, client: APIClient, address: str, log):
        self.client, self.address, self.log = client, address, log
        self._wanted: dict[tuple[str, str], bool] = {}     # (namespace, name) -> should list our address
        self._dirty = threading.Event()
        self._lock = threading.Lock()

    def want(self, ours: list[dict], all_ingresses: list[dict]) -> None:
        """Ours should list our address; every other Ingress should not."""
        served = {(i["metadata"].get("namespace"), i["metadata"]["name"]) for i in ours}
        wanted = {}
        for ingress in all_ingresses:
            key = (ingress["metadata"].get("namespace"), ingress["metadata"]["name"])
            present = key in served
            if addresses_with(ingress, self.address, present) is not None:
                wanted[key] = present
        with self._lock:
            self._wanted = wanted
        if wanted:
            self._dirty.set()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if not self._dirty.wait(timeout=1):
                continue
            self._dirty.clear()
            with self._lock:
                work = dict(self._wanted)
            for (namespace, name), present in work.items():
                self.write(namespace, name, present)

    def write(self, namespace: str, name: str, present: bool) -> None:
        """Read, change, write back; a conflict means someone wrote first: the
        next change of the Ingress brings us back here with the new version."""
        try:
            ingress = self.client.get(GROUP_VERSION, "ingresses", namespace, name)
            addresses = addresses_with(ingress, self.address, present)
            if addresses is None:
                return
            ingress = copy.deepcopy(ingress)
            ingress.setdefault("status", {})["loadBalancer"] = {"ingress": addresses} if addresses else {}
            self.client.update_status(GROUP_VERSION, "ingresses", ingress)
            self.log.info("status written", obj=f"{namespace}/{name}", address=self.address,
                          action="added" if present else "removed")
        except (NotFound, Conflict):
            self._dirty.set()             # try again with what the informer sees next
        except (APIStatusError, APIConnectionError) as error:
            self.log.warning("status not written", obj=f"{namespace}/{name}", error=str(error))

    def withdraw(self, ingresses: list[dict]) -> None:
        """On the way out: this node no longer serves anything."""
        for ingress in ingresses:
            if addresses_with(ingress, self.address, False) is not None:
                self.write(ingress["metadata"].get("namespace"), ingress["metadata"]["name"], False)
