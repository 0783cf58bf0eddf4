"""The service proxy, iptables mode: rules alone, no process in the data path (chapter 05).

    python 05-proxy-dns/proxy.py --proxy-mode iptables --kubeconfig node1.kubeconfig

The userspace proxy copies every byte through itself. Kubernetes' second
kube-proxy (its default on Linux from 1.2, and still in 1.32; nftables
mode is beta in 1.31, GA in 1.33) only writes rules, and
the kernel rewrites each connection's destination as its first packet
passes; connection tracking then rewrites the rest of the connection, both
ways, with no process involved. The rules, as kube-proxy names them:

    nat PREROUTING, OUTPUT  -j GROUNDUP-SERVICES           (KUBE-SERVICES)
    GROUNDUP-SERVICES   -d 10.96.43.7/32 -p tcp --dport 80 -j GROUNDUP-SVC-<hash>
    GROUNDUP-SVC-<hash> -m statistic --mode random --probability 0.33333 -j GROUNDUP-SEP-<hash>
                        -m statistic --mode random --probability 0.50000 -j GROUNDUP-SEP-<hash>
                                                                   -j GROUNDUP-SEP-<hash>
    GROUNDUP-SEP-<hash> -p tcp -j DNAT --to-destination 10.244.1.7:80

One chain per Service port, one per endpoint; the endpoints are chosen at
random, each with the probability that makes them equal (1/3, then 1/2
of the rest, then all of what is left). A Service without endpoints gets
a REJECT in the filter table, so that its clients fail at once. The whole
set is written with one iptables-restore, and only when it changed; a
restarted proxy rewrites the same rules, and connections already open
never notice (their translation lives in conntrack, not in the rules).
Node-port connections are marked and masqueraded, as kube-proxy does, and
so is a pod's connection to itself through its own Service (hairpin).
sessionAffinity ClientIP uses the `recent` match, as kube-proxy does: each
endpoint chain remembers the source addresses it sent there (a list per
chain in the kernel), and the Service chain first sends a client seen
within the timeout to the endpoint it had. UDP ports get the same rules
with `-p udp` (the userspace mode proxies TCP only). Left out: kube-proxy
also deletes the conntrack entries of a UDP endpoint that went (`conntrack
-D`), since a UDP "connection" has no end; ours lets them time out, and
every packet restarts the entry's timer (30 s, 120 s once answered both
ways), so a client that keeps sending from one port keeps reaching a gone
endpoint for as long as it keeps sending.
"""
from __future__ import annotations

import base64
import hashlib
import subprocess

CHAIN = "GROUNDUP-SERVICES"
FILTER_CHAIN = "GROUNDUP-SERVICES-REJECT"
MARK_CHAIN, POSTROUTING_CHAIN = "GROUNDUP-MARK-MASQ", "GROUNDUP-POSTROUTING"
MASQ_MARK = "0x4000"            # kube-proxy's bit: "masquerade this one on the way out"
JUMPS = (("nat", "PREROUTING", CHAIN), ("nat", "OUTPUT", CHAIN), ("nat", "POSTROUTING", POSTROUTING_CHAIN),
         ("filter", "INPUT", FILTER_CHAIN), ("filter", "FORWARD", FILTER_CHAIN), ("filter", "OUTPUT", FILTER_CHAIN))
# A connection to a node port may be sent to a pod on another node, which
# would answer the client directly, from an address the client never
# called: it is masqueraded, so that the answer comes back through us.
MASQUERADING = [f":{MARK_CHAIN} - [0:0]", f":{POSTROUTING_CHAIN} - [0:0]",
                f"-A {MARK_CHAIN} -j MARK --or-mark {MASQ_MARK}",
                f"-A {POSTROUTING_CHAIN} -m mark --mark {MASQ_MARK}/{MASQ_MARK} -j MASQUERADE"]


def chain_name(prefix: str, *parts: str) -> str:
    """A short, stable chain name (iptables allows 28 characters), as
    kube-proxy makes KUBE-SVC-<16 characters of a hash>."""
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return f"GROUNDUP-{prefix}-" + base64.b32encode(digest).decode()[:12]


# [START iptables-rules]
def rules_for(ports: dict) -> tuple[list[str], list[str]]:
    """(nat lines, filter lines) for {key: (shape, endpoints)}; a shape
    (proxy.Shape) has cluster_ip, port, node_port, affinity_seconds, protocol."""
    nat = [f":{CHAIN} - [0:0]", *MASQUERADING]
    chains, rules, rejects = [], [], []
    for key, (shape, endpoints) in sorted(ports.items()):
        proto, affinity = shape.protocol.lower(), shape.affinity_seconds
        matches = [f"-d {shape.cluster_ip}/32 -p {proto} -m {proto} --dport {shape.port}"]
        if shape.node_port:
            matches.append(f"-p {proto} -m {proto} --dport {shape.node_port} -m addrtype --dst-type LOCAL")
        if not endpoints:
            rejects += [f"-A {FILTER_CHAIN} {m} -m comment --comment \"{key} has no endpoints\" "
                        f"-j REJECT --reject-with icmp-port-unreachable" for m in matches]
            continue
        service_chain = chain_name("SVC", key)
        chains.append(f":{service_chain} - [0:0]")
        if shape.node_port:
            rules.append(f"-A {CHAIN} {matches[1]} -m comment --comment {key} -j {MARK_CHAIN}")
        rules += [f"-A {CHAIN} {m} -m comment --comment {key} -j {service_chain}" for m in matches]
        endpoint_chains = [chain_name("SEP", key, f"{e_ip}:{e_port}") for e_ip, e_port in endpoints]
        chains += [f":{chain} - [0:0]" for chain in endpoint_chains]
        if affinity is not None:       # a client seen lately goes where it went before
            rules += [f"-A {service_chain} -m comment --comment {key} -m recent --name {chain} "
                      f"--rcheck --seconds {affinity} --reap -j {chain}" for chain in endpoint_chains]
        for i, ((endpoint_ip, endpoint_port), endpoint_chain) in enumerate(zip(endpoints, endpoint_chains)):
            left = len(endpoints) - i                 # this one, and those after it
            pick = f"-m statistic --mode random --probability {1 / left:.5f} " if left > 1 else ""
            rules.append(f"-A {service_chain} -m comment --comment {key} {pick}-j {endpoint_chain}")
            # A pod sent to itself (hairpin) is masqueraded, or its answer
            # would go straight back inside it, never translated.
            rules.append(f"-A {endpoint_chain} -s {endpoint_ip}/32 -m comment --comment {key} -j {MARK_CHAIN}")
            remember = f"-m recent --name {endpoint_chain} --set " if affinity is not None else ""
            rules.append(f"-A {endpoint_chain} -p {proto} -m comment --comment {key} {remember}"
                         f"-j DNAT --to-destination {endpoint_ip}:{endpoint_port}")
    return nat + chains + rules, [f":{FILTER_CHAIN} - [0:0]"] + rejects
# [END iptables-rules]


def restore(nat: list[str], filter_: list[str], stale_chains: list[str]) -> subprocess.CompletedProcess:
    """Write both tables at once; chains of Services that went are flushed,
    then deleted."""
    return restore_lines(["*nat", *nat, *[f":{c} - [0:0]" for c in stale_chains],
                          *[f"-X {c}" for c in stale_chains], "COMMIT", "*filter", *filter_, "COMMIT"])


# --- what both proxy modes do with iptables -------------------------------------

def restore_lines(lines: list[str]) -> subprocess.CompletedProcess:
    """One iptables-restore: atomic. --noflush leaves everyone else's rules;
    each chain declared (`:CHAIN - [0:0]`) is flushed and refilled."""
    return subprocess.run(["iptables-restore", "--noflush", "-w"], input="\n".join(lines + [""]), text=True,
                          capture_output=True)


def iptables(table: str, action: str, chain: str, *rule: str) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables", "-w", "-t", table, action, chain, *rule], capture_output=True, text=True)


def jump_to(chain: str) -> list[str]:
    return ["-m", "comment", "--comment", "groundup services", "-j", chain]


def our_chains() -> list[str]:
    """The per-Service and per-endpoint chains now in the nat table."""
    listed = subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    return sorted({line.split()[1] for line in listed.splitlines()
                   if line.startswith("-N GROUNDUP-SVC-") or line.startswith("-N GROUNDUP-SEP-")})


def ensure_jumps(jumps=JUMPS) -> list[str]:
    """The built-in chains jump to ours: (table, built-in chain, our chain).
    Returns what could not be done, for the caller to log."""
    failed = []
    for table, parent, chain in jumps:
        if iptables(table, "-C", parent, *jump_to(chain)).returncode:
            done = iptables(table, "-I", parent, *jump_to(chain))
            if done.returncode:
                failed.append(f"-t {table} -I {parent} ... -j {chain}: {done.stderr.strip()}")
    return failed


def remove_chains(jumps, chains) -> None:
    """The jumps to our chains, then the chains (table, chain) themselves."""
    for table, parent, chain in jumps:
        while iptables(table, "-D", parent, *jump_to(chain)).returncode == 0:
            pass
    for action in ("-F", "-X"):             # emptied first: a chain still referenced cannot go
        for table, chain in chains:
            iptables(table, action, chain)


def cleanup() -> None:
    """Remove every rule and chain iptables mode made."""
    remove_chains(JUMPS, [("nat", CHAIN), ("nat", MARK_CHAIN), ("nat", POSTROUTING_CHAIN), ("filter", FILTER_CHAIN),
                          *(("nat", c) for c in our_chains())])
