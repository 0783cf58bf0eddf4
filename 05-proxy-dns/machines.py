"""Three machines on one host: master, node1, node2, made of namespaces.

A cluster needs several machines. Without VMs, Linux namespaces give each
"machine" what makes it one for our purposes:

    network namespace   its own interfaces, address, routes and iptables rules
    UTS namespace       its own hostname (its name, or --hostnames: a VM's
                        hostname need not be its node name)
    mount namespace     its own /tmp, its own /run (so its own Docker socket),
                        its own /etc/hosts that names the other machines

and, on the nodes, its own Docker engine (own data root, socket and bridge).
The machines share the host's kernel, files and processes list: that is the
difference from VMs that matters (chapter 05's README says what else).

    host                       10.213.0.1   bridge gu-br0 (no route out)
      ├── veth ── master       10.213.0.10  eth0
      ├── veth ── node1        10.213.0.11  eth0, dockerd
      └── veth ── node2        10.213.0.12  eth0, dockerd

Usage (as root; `make machines` and friends call these):

    python3 05-proxy-dns/machines.py up            # create master, node1, node2
    python3 05-proxy-dns/machines.py on node1 -- docker ps
    python3 05-proxy-dns/machines.py shell node1   # a shell on node1 (exit to leave)
    python3 05-proxy-dns/machines.py list
    python3 05-proxy-dns/machines.py down          # remove everything; safe to run twice

The machines have no default route: nothing in them reaches beyond the host.
The tests make their own machines with another prefix and subnet.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

NAMES = ("master", "node1", "node2")
SUBNET = "10.213.0.0/24"
PREFIX = "gu"
# The images every node needs, copied from the host's engine (`make images`
# builds them offline from Debian's busybox-static).
IMAGES = ("registry.k8s.io/pause:3.9", "busybox:1.35")
REPOSITORY = Path(__file__).resolve().parents[1]     # every machine sees this checkout
FIRST_HOST = 10          # master 10.213.0.10, node1 .11, node2 .12, ...


class MachineError(Exception):
    pass


def sh(*argv: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", 120)          # a hung engine must not hang `down` for ever
    try:
        done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    except subprocess.TimeoutExpired:
        if check:
            raise MachineError(f"{' '.join(argv)}: no answer in {kwargs['timeout']} s") from None
        return subprocess.CompletedProcess(argv, 124, "", "timed out")
    if check and done.returncode != 0:
        raise MachineError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


class Machines:
    """The machines of one prefix: where their namespaces and data live,
    how to make them, enter them and remove them."""

    def __init__(self, prefix: str = PREFIX, subnet: str = SUBNET, names: tuple[str, ...] = NAMES,
                 hostnames: tuple[str, ...] | None = None):
        self.prefix, self.names = prefix, tuple(names)
        # What `hostname` says on each machine: its name unless told otherwise,
        # as on VMs called vm-1234 that play node1 (the lessons' commands
        # pass --node-name, so they must work there too).
        self.hostnames = dict(zip(self.names, hostnames or self.names))
        try:
            self.subnet = ipaddress.ip_network(subnet)
        except ValueError as error:
            raise MachineError(f"--subnet {subnet!r}: {error}") from None
        if self.subnet.version != 4 or self.subnet.num_addresses < FIRST_HOST + len(self.names) + 1:
            raise MachineError(f"--subnet {subnet}: an IPv4 network with room for {len(self.names)} machines "
                               f"from .{FIRST_HOST} on, such as {SUBNET}")
        bad = [n for n in self.names if not re.fullmatch(r"[a-z][a-z0-9-]{0,14}", n)]
        if bad or len(set(self.names)) != len(self.names):
            raise MachineError(f"--names {','.join(self.names)}: distinct hostnames, lowercase letters, digits "
                               "and dashes, starting with a letter")
        if hostnames is not None and (len(hostnames) != len(self.names) or len(set(hostnames)) != len(hostnames)
                                      or not all(re.fullmatch(r"[a-z][a-z0-9-]{0,62}", h) for h in hostnames)):
            raise MachineError(f"--hostnames {','.join(hostnames)}: one distinct hostname per machine "
                               f"({','.join(self.names)}), lowercase letters, digits and dashes")
        self.bridge = f"{prefix}-br0"
        self.state = Path("/run/groundup") / prefix        # namespace files: gone at reboot, as the namespaces are
        self.data = Path("/var/lib/groundup") / prefix     # Docker data roots and logs
        if len(self.bridge) > 15 or any(len(self.veth(n)) > 15 for n in self.names):
            raise MachineError(f"prefix {prefix!r} is too long for Linux interface names (15 characters)")

    # --- names and addresses -------------------------------------------------

    def address(self, name: str) -> str:
        return str(self.subnet.network_address + FIRST_HOST + self.names.index(name))

    def host_address(self) -> str:
        return str(self.subnet.network_address + 1)

    def netns(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def veth(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def is_node(self, name: str) -> bool:
        return name != self.names[0]           # the first machine is the master: no Docker engine

    def exists(self, name: str) -> bool:
        return Path("/run/netns", self.netns(name)).exists()

    def complete(self, name: str) -> bool:
        """Made to the end: its hostname and mount namespaces are bound to
        their files (an `up` cut short leaves a network namespace alone)."""
        mounts = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}
        return self.exists(name) and str(self.state / name / "mnt") in mounts

    # --- entering a machine -----------------------------------------------------

    # [START enter-machine]
    def enter(self, name: str, cwd: str | None = None) -> list[str]:
        """The command prefix that runs a program on a machine: in its
        network, hostname and mount namespaces, in the same directory."""
        if not self.exists(name):
            raise MachineError(f"machine {name} does not exist: run `make machines` first")
        files = self.state / name
        return ["nsenter", f"--net=/run/netns/{self.netns(name)}", f"--uts={files / 'uts'}",
                f"--mount={files / 'mnt'}", f"--wd={cwd or os.getcwd()}"]
    # [END enter-machine]

    def run(self, name: str, *argv: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        return sh(*self.enter(name), *argv, check=check, **kwargs)

    def popen(self, name: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.enter(name) + argv, **kwargs)

    # --- making them --------------------------------------------------------------

    def up(self) -> None:
        self._check_requirements()
        self._check_subnet_is_free()
        self._make_bridge()
        for name in self.names:
            if not self.complete(name):
                self._remove_machine(name)        # whatever an interrupted `up` left of it
                try:
                    self._make_machine(name)
                except MachineError:
                    self._remove_machine(name)    # all or nothing
                    raise
        for name in filter(self.is_node, self.names):
            self._start_docker(name)
        for name in filter(self.is_node, self.names):
            self._wait_for_docker(name)
            self._load_images(name)

    def _check_requirements(self) -> None:
        problem = missing_requirements()
        if problem:
            raise MachineError(problem)

    def _check_subnet_is_free(self) -> None:
        """Refuse a subnet any route of this machine already covers (its own
        network, a VPN, Docker's): our machines would hide it, or it them."""
        route = covering_route(self.subnet, host_routes(), ignore_dev=self.bridge)
        if route:
            raise MachineError(f"{self.subnet} is already routed on this host ({route}): "
                               "choose another with --subnet")

    def _forward_rules(self) -> list[list[str]]:
        """The host's firewall sees frames crossing the bridge too (Docker
        loads br_netfilter, and its FORWARD policy is DROP): let the machines
        talk to each other, and forward nothing of theirs anywhere else, so
        no machine reaches beyond the host even if it adds a default route."""
        comment = ["-m", "comment", "--comment", f"groundup machines {self.prefix}"]
        return [["FORWARD", "-i", self.bridge, "-o", self.bridge, *comment, "-j", "ACCEPT"],
                ["FORWARD", "-i", self.bridge, "!", "-o", self.bridge, *comment, "-j", "DROP"]]

    def _make_bridge(self) -> None:
        for rule in reversed(self._forward_rules()):       # -I: the first rule ends up first
            if sh("iptables", "-w", "-C", *rule, check=False).returncode != 0:
                sh("iptables", "-w", "-I", *rule)
        if not Path("/sys/class/net", self.bridge).exists():
            sh("ip", "link", "add", self.bridge, "type", "bridge")
        # replace, not add: a bridge left by an interrupted `up` gets its address too
        sh("ip", "addr", "replace", f"{self.host_address()}/{self.subnet.prefixlen}", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        route = sh("ip", "route", "get", self.address(self.names[0])).stdout
        if f"dev {self.bridge}" not in route:
            raise MachineError(f"the machines' subnet is routed elsewhere on this host: {route.strip()}")

    # [START make-machine]
    def _make_machine(self, name: str) -> None:
        files = self.state / name
        files.mkdir(parents=True, exist_ok=True)
        self._private_mount(self.state)
        for kind in ("uts", "mnt"):
            (files / kind).touch()
        (files / "hosts").write_text(self._hosts_file())
        (files / "hostname").write_text(self.hostnames[name] + "\n")
        # The network: a veth pair, one end on the host's bridge, the other
        # renamed eth0 inside the machine, with the machine's address.
        netns, veth, peer = self.netns(name), self.veth(name), f"{self.prefix}-peer"
        sh("ip", "link", "del", peer, check=False)      # left by an interrupted `up`
        sh("ip", "netns", "add", netns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", peer, "netns", netns)
        sh("ip", "link", "set", veth, "master", self.bridge, "up")
        inside = ["ip", "netns", "exec", netns]
        sh(*inside, "ip", "link", "set", peer, "name", "eth0")
        sh(*inside, "ip", "addr", "add", f"{self.address(name)}/{self.subnet.prefixlen}", "dev", "eth0")
        sh(*inside, "ip", "link", "set", "eth0", "up")
        sh(*inside, "ip", "link", "set", "lo", "up")
        # The rest: a hostname, and a private /tmp, /run, /etc/hosts. unshare
        # keeps the new namespaces alive by binding them to the two files.
        sh("nsenter", f"--net=/run/netns/{netns}", "unshare", f"--uts={files / 'uts'}",
           f"--mount={files / 'mnt'}", "--propagation", "private", "sh", "-c", self._setup_script(name))
    # [END make-machine]

    def _setup_script(self, name: str) -> str:
        """What runs once inside a new machine: its hostname, its own
        /etc/hosts, /tmp and /run. /etc first: the files it binds live under
        /run, which the last mount hides. A checkout under /tmp (a fresh
        clone in a temporary directory) stays where it is: it is held
        elsewhere while the new /tmp goes on, then put back."""
        files, q = self.state / name, shlex.quote
        steps = [f"hostname {q(self.hostnames[name])}", f"mount --bind {q(str(files / 'hosts'))} /etc/hosts",
                 f"mount --bind {q(str(files / 'hostname'))} /etc/hostname"]
        if REPOSITORY.is_relative_to("/tmp"):
            hold = self.data / name / "repository"
            hold.mkdir(parents=True, exist_ok=True)
            steps += [f"mount --bind {q(str(REPOSITORY))} {q(str(hold))}", "mount -t tmpfs tmpfs /tmp",
                      f"mkdir -p {q(str(REPOSITORY))}", f"mount --move {q(str(hold))} {q(str(REPOSITORY))}"]
        else:
            steps.append("mount -t tmpfs tmpfs /tmp")
        steps.append("mount -t tmpfs tmpfs /run")
        return " && ".join(steps)

    def _private_mount(self, directory: Path) -> None:
        """unshare can bind a mount namespace only to a file on a private
        mount; make the state directory one (once)."""
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        if not any(line.split()[4] == str(directory) for line in mounts):
            sh("mount", "--bind", str(directory), str(directory))
            sh("mount", "--make-private", str(directory))

    def _hosts_file(self) -> str:
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        # A hostname of its own resolves too, beside the name the lessons use.
        lines += [f"{self.address(n)}\t{' '.join(dict.fromkeys([n, self.hostnames[n]]))}" for n in self.names]
        return "\n".join(lines) + "\n"

    def _start_docker(self, name: str) -> None:
        if self.run(name, "docker", "info", check=False).returncode == 0:
            return
        data = self.data / name
        data.mkdir(parents=True, exist_ok=True)
        with open(data / "dockerd.log", "ab") as log:
            # start_new_session: the engine outlives this command, as a
            # machine's daemon would.
            subprocess.Popen(self.enter(name) + ["dockerd", "--data-root", str(data / "docker")],
                             stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)

    def _wait_for_docker(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.run(name, "docker", "info", check=False).returncode != 0:
            if time.monotonic() > deadline:
                log = (self.data / name / "dockerd.log").read_text()[-2000:]
                raise MachineError(f"the Docker engine on {name} did not start in {timeout:.0f}s:\n{log}")
            time.sleep(0.3)

    def _load_images(self, name: str, images: tuple[str, ...] = IMAGES) -> None:
        present = sh("docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        missing = [image for image in images if image not in present]
        if missing:
            raise MachineError(f"the host's Docker engine lacks {', '.join(missing)}: run `make images` first")
        saved = subprocess.run(["docker", "save", *images], capture_output=True, check=True).stdout
        done = subprocess.run(self.enter(name) + ["docker", "load"], input=saved, capture_output=True)
        if done.returncode != 0:
            raise MachineError(f"loading the images on {name}: {done.stderr.decode().strip()}")

    def load_image(self, image: str, names: tuple[str, ...] | None = None) -> None:
        """Copy one more image from the host's engine to the machines' engines
        (the nodes', by default): an image only some lessons need."""
        for name in names or [n for n in self.names if n != "master"]:
            self._load_images(name, (image,))

    # --- removing them ---------------------------------------------------------------

    def down(self) -> None:
        """Remove machines, engines, data and the bridge; whatever is left of
        an earlier, interrupted `up` or `down` too."""
        names = {p.name for p in self.state.iterdir() if p.is_dir()} if self.state.exists() else set()
        for name in sorted(names | {n for n in self.names if self.exists(n)}):
            self._remove_machine(name)
        sh("ip", "link", "del", self.bridge, check=False)
        for rule in self._forward_rules():
            while sh("iptables", "-w", "-D", *rule, check=False).returncode == 0:
                pass
        if self.state.exists():
            sh("umount", str(self.state), check=False)
            shutil.rmtree(self.state, ignore_errors=True)
        shutil.rmtree(self.data, ignore_errors=True)

    def _remove_machine(self, name: str) -> None:
        files, netns = self.state / name, self.netns(name)
        if self.exists(name) and (files / "mnt").exists():
            # Containers first, while their engine can still remove them.
            ids = self.run(name, "docker", "ps", "-aq", check=False).stdout.split()
            if ids:
                self.run(name, "docker", "rm", "-f", *ids, check=False)
        for pid in self._processes_of(name):
            _kill(pid, signal.SIGTERM)
        _wait_gone(lambda: self._processes_of(name), timeout=20)
        for pid in self._processes_of(name):
            _kill(pid, signal.SIGKILL)
        _wait_gone(lambda: self._processes_of(name), timeout=10)
        for kind in ("uts", "mnt"):
            sh("umount", str(files / kind), check=False)
        # Deleting one end of a veth pair deletes both at once; a deleted
        # namespace takes its end with it only later, in the background.
        sh("ip", "link", "del", self.veth(name), check=False)
        sh("ip", "netns", "del", netns, check=False)
        shutil.rmtree(files, ignore_errors=True)

    def _processes_of(self, name: str) -> list[int]:
        """Every process living in the machine's network or mount namespace
        (its engine, kubelets, anything a lesson started there)."""
        # A namespace is known by device and inode together (a plain file's
        # inode alone could match some unrelated namespace's).
        targets = set()
        for path in (Path("/run/netns", self.netns(name)), self.state / name / "mnt"):
            try:
                found = path.stat()
                targets.add((found.st_dev, found.st_ino))
            except OSError:
                pass
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            for kind in ("net", "mnt"):
                try:
                    namespace = (proc / "ns" / kind).stat()
                    if (namespace.st_dev, namespace.st_ino) in targets:
                        pids.append(int(proc.name))
                        break
                except OSError:
                    break
        return pids

    def listing(self) -> str:
        rows = [f"{'MACHINE':<10}{'ADDRESS':<16}DOCKER"]
        for name in self.names:
            if not self.exists(name):
                rows.append(f"{name:<10}{'-':<16}(not made)")
                continue
            docker = "-"
            if self.is_node(name):
                docker = "running" if self.run(name, "docker", "info", check=False).returncode == 0 else "stopped"
            rows.append(f"{name:<10}{self.address(name):<16}{docker}")
        return "\n".join(rows)


def missing_requirements() -> str | None:
    """Why machines cannot be made here (not root, a tool missing), or None:
    for `up`, and for the demo and tests, which say it and do without."""
    if os.geteuid() != 0:
        return "making machines needs root (network namespaces, bridges, mounts): run it with sudo"
    missing = [tool for tool in ("ip", "iptables", "nsenter", "unshare", "dockerd", "docker") if not shutil.which(tool)]
    return f"missing: {', '.join(missing)} (run `make setup` first)" if missing else None


def host_routes() -> list[dict]:
    return json.loads(sh("ip", "-json", "route", "show").stdout or "[]")


def covering_route(subnet, routes: list[dict], ignore_dev: str | None = None) -> str | None:
    """The first of these routes (but the default one, and those of
    ignore_dev) that overlaps subnet, as "10.213.0.0/16 dev eth0"; or None."""
    subnet = ipaddress.ip_network(subnet)
    for route in routes:
        if route["dst"] == "default" or (ignore_dev and route.get("dev") == ignore_dev):
            continue
        if ipaddress.ip_network(route["dst"], strict=False).overlaps(subnet):
            return f"{route['dst']} dev {route.get('dev')}"
    return None


def _kill(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(pids, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pids() and time.monotonic() < deadline:
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", default=PREFIX, help=f"names of namespaces and interfaces (default {PREFIX})")
    parser.add_argument("--subnet", default=SUBNET, help=f"the machines' network (default {SUBNET})")
    parser.add_argument("--names", default=",".join(NAMES), help="the machines, master first (default %(default)s)")
    parser.add_argument("--hostnames", help="what `hostname` says on each, in the same order (default: their names)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="create the machines (as root)")
    sub.add_parser("down", help="remove the machines and everything they made")
    sub.add_parser("list", help="the machines, their addresses and engines")
    on = sub.add_parser("on", help="run a command on a machine: on node1 -- docker ps")
    on.add_argument("machine")
    on.add_argument("argv", nargs=argparse.REMAINDER)
    shell = sub.add_parser("shell", help="a shell on a machine")
    shell.add_argument("machine")
    args = parser.parse_args(argv)
    try:
        hostnames = tuple(args.hostnames.split(",")) if args.hostnames else None
        machines = Machines(args.prefix, args.subnet, tuple(args.names.split(",")), hostnames)
        if args.command == "up":
            machines.up()
            print(machines.listing())
        elif args.command == "down":
            machines.down()
        elif args.command == "list":
            print(machines.listing())
        else:
            if args.machine not in machines.names:
                raise MachineError(f"no machine {args.machine!r}: the machines are {', '.join(machines.names)}")
            command = args.argv if args.command == "on" else []
            if command[:1] == ["--"]:
                command = command[1:]
            command = command or ["bash", "--norc", "-i"]
            os.environ["PS1"] = f"{args.machine}$ "
            os.execvp("nsenter", machines.enter(args.machine) + command)
    except MachineError as error:
        print(f"machines: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
