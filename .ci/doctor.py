"""Is this machine ready for the lessons? One line per thing they need here.

    make doctor                      one computer: chapters 01-04 on it alone
    make doctor ROLE=master [NODES=node1,node2]
    make doctor ROLE=node NODE=node1 [MASTER=10.0.0.10]

On one computer (chapter 01, and everything up to 02 part 5 that runs on
one machine) the first form checks what it needs: the virtualenv, Docker,
the images, kubectl. With machines (02 part 5 on), run it on each: on the
master before its API server starts, on each node once it has. Each line
says what was checked (✓), what is wrong and the command that fixes it
(✗), what works but will surprise (!), or what could not be checked
because of an earlier line (-). Exit code 0 only when nothing is wrong.
Without ROLE, a machine named `master` is the master, one named like a
node in NODES is that node, and any other is one computer.

Standard library only: the virtualenv is one of the things it checks, so
it runs with the system's python3.
"""
from __future__ import annotations

import argparse
import email.utils
import http.client
import ipaddress
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ("busybox:1.35", "registry.k8s.io/pause:3.9")       # what `make images` builds
KUBECTL = (27, 33)                                           # 02-apiserver/kubectl_compat/kubectl-versions.md
API_PORT = 6443
# The kubelets' read-only ports, where the API server asks for logs: the
# lessons give node1 10255, and node2 10256 in chapters 02-04 (so that both
# kubelets fit on one computer); a firewall must let the master reach both.
KUBELET_PORTS = (10255, 10256)
RANGES = {"pod range": "10.244.0.0/16",          # the controller manager's --cluster-cidr
          "service range": "10.96.0.0/12"}       # the API server's --service-cluster-ip-range
OURS = {"proto": "213", "dev": "cbr0"}           # the route agent's routes, the kubenet bridge: the cluster's own
MAX_SKEW = 5.0                                   # seconds; node heartbeats are judged by the master's clock
TIMEOUT = 3.0                                    # seconds for a connection: a dropped packet never answers

OK, WRONG, NOTE, SKIPPED = "✓", "✗", "!", "-"


@dataclass
class Finding:
    mark: str           # OK, WRONG, NOTE or SKIPPED
    item: str           # what was checked: "Docker engine"
    detail: str         # what was found
    fix: str = ""       # the command (or step) that mends it


@dataclass
class Machine:
    role: str                      # "one" (a computer on its own), "master" or "node"
    node: str = ""                 # a node's name, as the lessons give it (--node-name)
    master: str = ""               # where a node finds the API server
    nodes: tuple[str, ...] = ()    # what the master must reach


def run(*argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"no answer in {timeout:.0f} s")
    except OSError as error:
        return subprocess.CompletedProcess(argv, 127, "", str(error))


def as_root(command: str) -> str:
    return command if os.geteuid() == 0 else f"sudo {command}"


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# --- what every machine needs -------------------------------------------------

def virtualenv(machine: Machine) -> Finding:
    python, stamp = ROOT / ".venv" / "bin" / "python", ROOT / ".venv" / ".installed"
    if not python.exists() or not stamp.exists():
        return Finding(WRONG, "virtualenv", "no .venv in this checkout", "make setup")
    if (ROOT / "requirements.txt").stat().st_mtime > stamp.stat().st_mtime:
        return Finding(WRONG, "virtualenv", ".venv is older than requirements.txt", "make setup")
    done = run(str(python), "-c", "import docker, requests, yaml, flask; import sys; print(sys.version.split()[0])")
    if done.returncode != 0:
        return Finding(WRONG, "virtualenv", f".venv is broken: {first_line(done.stderr)}", "make clean setup")
    return Finding(OK, "virtualenv", f".venv, Python {done.stdout.strip()}, with requirements.txt")


def routes() -> list[dict]:
    return json.loads(run("ip", "-json", "route", "show").stdout or "[]")


def covering(cidr: str, table: list[dict]) -> list[str]:
    """The routes of table (but the default route and the cluster's own)
    that overlap cidr, as `ip route` writes them."""
    found = []
    for route in table:
        if route["dst"] == "default" or route.get("protocol") == OURS["proto"] or route.get("dev") == OURS["dev"]:
            continue
        if ipaddress.ip_network(route["dst"], strict=False).overlaps(ipaddress.ip_network(cidr)):
            found.append(f"{route['dst']} dev {route.get('dev')}")
    return found


def free_ranges(machine: Machine) -> list[Finding]:
    if not shutil.which("ip"):
        return [Finding(WRONG, "routes", "no `ip` command (iproute2)", as_root("make setup"))]
    table = routes()
    findings = []
    for item, cidr in RANGES.items():
        taken = covering(cidr, table)
        if taken:
            findings.append(Finding(WRONG, f"{item} {cidr}", f"this machine already routes {', '.join(taken)}",
                                    f"{as_root('ip route del ' + taken[0].split()[0])} if it is a leftover; if it is "
                                    "your network's, give the cluster another range (--cluster-cidr, "
                                    "--service-cluster-ip-range)"))
        else:
            findings.append(Finding(OK, f"{item} {cidr}", "no route of this machine covers it"))
    return findings


# --- the master -----------------------------------------------------------------

def kubectl_version(machine: Machine) -> Finding:
    fix = 'install kubectl 1.32: "Getting kubectl" in README.md'
    if not shutil.which("kubectl"):
        return Finding(WRONG, "kubectl", "not on the PATH", fix)
    done = run("kubectl", "version", "--client", "-o", "json")
    found = re.search(r"v(\d+)\.(\d+)[.\d]*", done.stdout)
    if not found:
        return Finding(WRONG, "kubectl", f"`kubectl version` said no version: {first_line(done.stderr)}", fix)
    minor, version = int(found.group(2)), found.group(0)
    if found.group(1) != "1" or not KUBECTL[0] <= minor <= KUBECTL[1]:
        return Finding(WRONG, "kubectl", f"{version} is not one of 1.{KUBECTL[0]}-1.{KUBECTL[1]}", fix)
    return Finding(OK, "kubectl", f"{version} (1.{KUBECTL[0]}-1.{KUBECTL[1]} work)")


def probe(host: str, port: int) -> str:
    """"answers", "refused" (the machine said nothing listens there),
    "silent" (no answer at all: a firewall that drops, or no such machine)
    or "unreachable" (no route to it)."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT):
            return "answers"
    except ConnectionRefusedError:
        return "refused"
    except (socket.timeout, TimeoutError):
        return "silent"
    except OSError:
        return "unreachable"


def kubelet_ports(machine: Machine) -> list[Finding]:
    """Each node's kubelet ports, from here. Before the kubelets run nothing
    listens there, and a refusal still shows the node reachable (its kernel
    answered); silence is a firewall dropping the packets. One that rejects
    them instead looks like a refusal: this catches the dropping kind (a
    cloud's security group, ufw's default)."""
    findings = []
    for node in machine.nodes:
        item = f"{node}'s kubelet ports"
        try:
            address = socket.gethostbyname(node)
        except OSError:
            findings.append(Finding(WRONG, item, f"{node} does not resolve",
                                    "add it to /etc/hosts, or name the nodes by address: make doctor NODES=10.0.0.11,..."))
            continue
        answers = {port: probe(address, port) for port in KUBELET_PORTS}
        bad = [port for port, answer in answers.items() if answer in ("silent", "unreachable")]
        said = ", ".join(f"{port} {answer}" for port, answer in answers.items())
        if bad:
            findings.append(Finding(WRONG, item, f"{address}: {said}",
                                    f"let the master in on {node}: {as_root(f'iptables -I INPUT -p tcp --dport {bad[0]} -j ACCEPT')} "
                                    "(or the cloud's firewall); the machines must share one network"))
        else:
            why = " (refused: reachable, no kubelet there yet)" if "refused" in answers.values() else ""
            findings.append(Finding(OK, item, f"{address}: {said}{why}"))
    return findings


# --- a node ----------------------------------------------------------------------

def docker_engine(machine: Machine) -> Finding:
    if not shutil.which("docker"):
        return Finding(WRONG, "Docker engine", "no docker command", as_root("make setup"))
    done = run("docker", "info", "--format", "{{.ServerVersion}}")
    if done.returncode == 0 and done.stdout.strip():
        return Finding(OK, "Docker engine", f"Docker {done.stdout.strip()} answers")
    said = first_line(done.stderr) or first_line(done.stdout)
    if "permission denied" in said.lower():
        return Finding(WRONG, "Docker engine", "this user may not use it (permission denied on its socket)",
                       f"sudo usermod -aG docker {os.environ.get('USER', '$USER')}, then log in again")
    return Finding(WRONG, "Docker engine", f"the client is there, no engine answers: {said}",
                   f"{as_root('make setup')} (starts it, or installs it if only the client is there)")


def images(machine: Machine) -> Finding:
    missing = [image for image in IMAGES if run("docker", "image", "inspect", image).returncode != 0]
    if missing:
        return Finding(WRONG, "images", f"{', '.join(missing)} missing from this machine's engine", "make images")
    return Finding(OK, "images", ", ".join(IMAGES))


def hostname(machine: Machine) -> Finding:
    name = socket.gethostname()
    if name == machine.node:
        return Finding(OK, "hostname", f"{name}, the node name")
    return Finding(NOTE, "hostname", f"{name}, not {machine.node}: the kubelet and the route agent would call "
                   f"this node {name}", f"give them --node-name {machine.node} (the lessons' commands do), "
                   f"or: {as_root('hostnamectl set-hostname ' + machine.node)}")


def iptables(machine: Machine) -> Finding:
    if not shutil.which("iptables"):
        return Finding(WRONG, "iptables", "no iptables command", as_root("make setup"))
    done = run("iptables", "-w", "-t", "nat", "-S", "POSTROUTING")
    if done.returncode != 0 and os.geteuid() != 0:
        # Chapters 02-04 need no root; chapter 05's kubelet and proxy do.
        return Finding(NOTE, "iptables", "only root may use it, and chapter 05's kubelet and proxy run as root",
                       "before chapter 05, check again with sudo make doctor")
    if done.returncode != 0:
        return Finding(WRONG, "iptables", first_line(done.stderr), "modprobe iptable_nat")
    return Finding(OK, "iptables", f"{first_line(run('iptables', '--version').stdout)}, the nat table reads")


def master_address(machine: Machine) -> str:
    """MASTER, else the server this node's kubeconfig names, else `master`."""
    if machine.master:
        return machine.master
    kubeconfig = ROOT / ".certs" / f"{machine.node}.kubeconfig"
    if kubeconfig.exists():
        found = re.search(r"server:\s*https?://\[?([^\]/:\s]+)", kubeconfig.read_text())
        if found:
            return found.group(1)
    return "master"


def api_server(machine: Machine) -> Finding:
    master, item = master_address(machine), f"master's API server (port {API_PORT})"
    try:
        address = socket.gethostbyname(master)
    except OSError:
        return Finding(WRONG, item, f"{master} does not resolve", "make doctor MASTER=<the master's address>")
    answer = probe(address, API_PORT)
    if answer == "answers":
        mine = source_address(address)
        return Finding(OK, item, f"{address}:{API_PORT} answers; this node reaches it from {mine}, "
                       "the address its kubelet will report")
    if answer == "refused":
        return Finding(WRONG, item, f"nothing listens on {address}:{API_PORT}",
                       "start the API server on the master (chapter 02 part 5, step 1), then run this again")
    return Finding(WRONG, item, f"{address}:{API_PORT} is {answer}",
                   f"open {API_PORT}/tcp on the master ({as_root(f'iptables -I INPUT -p tcp --dport {API_PORT} -j ACCEPT')}"
                   " there); the machines must share one network")


def source_address(address: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_socket:
        probe_socket.connect((address, API_PORT))          # picks a route; sends nothing
        return probe_socket.getsockname()[0]


def skew(before: float, after: float, date_header: str) -> float:
    """How far this clock is ahead of the server's (negative: behind).
    The Date header counts whole seconds, so its middle is half a second on."""
    theirs = email.utils.parsedate_to_datetime(date_header).timestamp() + 0.5
    return (before + after) / 2 - theirs


def clock(machine: Machine) -> Finding:
    address = master_address(machine)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE     # only its Date is read
    connection = http.client.HTTPSConnection(address, API_PORT, timeout=TIMEOUT, context=context)
    try:
        before = time.time()
        connection.request("GET", "/healthz")
        date = connection.getresponse().getheader("Date")
        after = time.time()
    except (OSError, http.client.HTTPException) as error:
        return Finding(SKIPPED, "clock", f"not compared: the master's API server did not answer ({error})")
    finally:
        connection.close()
    if not date:
        return Finding(SKIPPED, "clock", "not compared: the master's answer had no Date")
    ahead = skew(before, after, date)
    if abs(ahead) > MAX_SKEW:
        return Finding(WRONG, "clock", f"{abs(ahead):.0f} s {'ahead of' if ahead > 0 else 'behind'} the master's",
                       as_root("timedatectl set-ntp true") + " on every machine (the same time server for all)")
    return Finding(OK, "clock", f"within {max(abs(ahead), 1):.0f} s of the master's")


# --- which checks a role runs ------------------------------------------------------

CHECKS = {
    "one": (virtualenv, docker_engine, images, kubectl_version),
    "master": (virtualenv, kubectl_version, free_ranges, kubelet_ports),
    "node": (virtualenv, docker_engine, images, hostname, iptables, free_ranges, api_server, clock),
}
# A check that makes no sense once another failed: not run, and said so.
NEEDS = {images: docker_engine, clock: api_server}


def examine(machine: Machine) -> list[Finding]:
    findings, failed = [], set()
    for check in CHECKS[machine.role]:
        if NEEDS.get(check) in failed:
            findings.append(Finding(SKIPPED, check.__name__.replace("_", " "),
                                    f"not checked: {NEEDS[check].__name__.replace('_', ' ')} failed"))
            continue
        try:
            found = check(machine)
        except Exception as error:      # a doctor that crashes tells nobody anything
            found = Finding(WRONG, check.__name__.replace("_", " "), f"the check itself failed: {error!r}")
        found = found if isinstance(found, list) else [found]
        if any(f.mark == WRONG for f in found):
            failed.add(check)
        findings += found
    return findings


def show(findings: list[Finding], out=sys.stdout) -> None:
    colour = out.isatty() and os.environ.get("TERM", "dumb") != "dumb" and not os.environ.get("NO_COLOR")
    paint = {OK: "32", WRONG: "31", NOTE: "33", SKIPPED: "2"}
    width = max(len(f.item) for f in findings)
    for f in findings:
        mark = f"\033[{paint[f.mark]}m{f.mark}\033[0m" if colour else f.mark
        print(f"{mark} {f.item:<{width}}  {f.detail}{'; fix: ' + f.fix if f.fix else ''}", file=out)


def which_machine(args: argparse.Namespace) -> Machine | str:
    """The Machine the arguments describe, or why they describe none."""
    nodes = tuple(n for n in args.nodes.split(",") if n)
    role, node, me = args.role, args.node, socket.gethostname()
    if not role:
        role = "node" if node or me in nodes else "master" if me == "master" else "one"
    if role == "node":
        node = node or (me if me in nodes else "")
        if not node:
            return "which node is this? make doctor ROLE=node NODE=node1"
        return Machine("node", node=node, master=args.master or "")
    if role == "master":
        return Machine("master", nodes=nodes)
    return Machine("one")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="doctor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("one", "master", "node"),
                        help="what this machine is in the lessons: one computer on its own (the default), "
                        "the master, or a node")
    parser.add_argument("--node", default="", help="a node's name in the lessons (node1, node2)")
    parser.add_argument("--master", default="", help="the master's address or name, for a node "
                        "(default: what .certs/<node>.kubeconfig names, else `master`)")
    parser.add_argument("--nodes", default="node1,node2", help="the nodes the master must reach (names or addresses)")
    machine = which_machine(parser.parse_args(argv))
    if isinstance(machine, str):
        print(f"doctor: {machine}", file=sys.stderr)
        return 2
    what = {"node": f"the node {machine.node}", "master": "the master",
            "one": "one computer (machines? ROLE=master or ROLE=node NODE=node1)"}[machine.role]
    print(f"doctor: {socket.gethostname()} as {what}")
    findings = examine(machine)
    show(findings)
    wrong = sum(f.mark == WRONG for f in findings)
    print(f"doctor: {'ready' if not wrong else f'{wrong} to fix, then run this again'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
