"""What each container, and the whole machine, uses: read where the kernel counts it.

    /proc/<pid>/cgroup       the cgroup a container's first process is in
    cgroup v1                cpuacct/<cgroup>/cpuacct.usage                  CPU time, nanoseconds
                             memory/<cgroup>/memory.usage_in_bytes, memory.stat
    cgroup v2                <cgroup>/cpu.stat (usage_usec), memory.current, memory.stat
    /proc/stat, /proc/meminfo   the machine

Docker starts every container in a cgroup of its own, and the kernel keeps
that cgroup's counters whether anyone reads them or not: reading them is a
few small files, microseconds. Docker's stats call reads the same files but
answers only when its collector next samples (about a second per container
here), and the real kubelet asks cAdvisor or the CRI runtime, which read
these files too.

CPU time is a counter that only grows; a rate needs two readings
(stats_summary.py). Memory is a level, read once: the working set, Kubernetes'
figure, is the memory in use minus the file pages the kernel could drop at
once (inactive_file), what eviction and `kubectl top` look at.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Usage:
    """One reading of a cgroup's (or the machine's) counters."""
    at: float                   # when, in seconds since the epoch
    cpu_ns: int                 # CPU time used since the start, on all cores together
    memory_bytes: int           # all memory charged, page cache included
    working_set_bytes: int      # memory_bytes minus inactive file pages
    rss_bytes: int | None = None  # anonymous memory (None for the machine)


class UsageUnreadable(OSError):
    """The counters cannot be read: the process is gone, or this kubelet
    does not see the host's /proc and /sys/fs/cgroup (a Docker engine in a
    VM, as Docker Desktop runs it)."""


# ----- containers: their cgroups ---------------------------------------------

@dataclass(frozen=True)
class CgroupMount:
    root: str                 # the part of the hierarchy this mount shows ("/" unless in a cgroup namespace)
    mount_point: str
    controllers: frozenset[str]   # empty for the v2 (unified) hierarchy
    v2: bool


@functools.lru_cache(maxsize=1)
def cgroup_mounts() -> tuple[CgroupMount, ...]:
    """The cgroup hierarchies mounted here, from /proc/self/mountinfo
    (fields: id parent dev root mount-point options ... - type source super-options)."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, (fs_type, options) = before.split(), after.split()[0:3:2]
        if fs_type in ("cgroup", "cgroup2"):
            controllers = frozenset(options.split(",")) if fs_type == "cgroup" else frozenset()
            mounts.append(CgroupMount(fields[3], fields[4], controllers, fs_type == "cgroup2"))
    return tuple(mounts)


def cgroup_dir(pid: int, controller: str) -> Path | None:
    """Where a process's cgroup for one controller is on disk: the v1
    hierarchy that has the controller, else the v2 one (a hybrid machine
    mounts both, and counts in v1)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError as error:
        raise UsageUnreadable(f"process {pid}: {error.strerror}") from None
    paths = {}                           # controller ("" for v2) -> path in the hierarchy
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    for mount in sorted(cgroup_mounts(), key=lambda m: m.v2):     # v1 first
        wanted = "" if mount.v2 else controller
        if (mount.v2 or controller in mount.controllers) and wanted in paths:
            relative = os.path.relpath(paths[wanted], mount.root)
            if relative.startswith(".."):
                continue                 # outside what this mount shows
            return Path(mount.mount_point, relative)
    return None


def _stat_file(path: Path) -> dict[str, int]:
    """memory.stat and cpu.stat: one `name value` a line."""
    pairs = (line.split() for line in path.read_text().splitlines())
    return {name: int(value) for name, value in pairs}


def container_usage(pid: int) -> Usage:
    """The counters of the cgroup the container's first process is in."""
    cpu, memory = cgroup_dir(pid, "cpuacct"), cgroup_dir(pid, "memory")
    if cpu is None or memory is None:
        raise UsageUnreadable(f"process {pid}: no cpuacct or memory cgroup is mounted here")
    try:
        if (cpu / "cpuacct.usage").exists():                        # cgroup v1
            cpu_ns = int((cpu / "cpuacct.usage").read_text())
        else:                                                       # cgroup v2: microseconds
            cpu_ns = _stat_file(cpu / "cpu.stat")["usage_usec"] * 1000
        stats = _stat_file(memory / "memory.stat")
        if (memory / "memory.usage_in_bytes").exists():
            used = int((memory / "memory.usage_in_bytes").read_text())
            inactive_file, rss = stats.get("total_inactive_file", 0), stats.get("total_rss")
        else:
            used = int((memory / "memory.current").read_text())
            inactive_file, rss = stats.get("inactive_file", 0), stats.get("anon")
    except (OSError, KeyError, ValueError) as error:
        raise UsageUnreadable(f"process {pid}: cannot read its cgroup ({error})") from None
    return Usage(time.time(), cpu_ns, used, max(0, used - inactive_file), rss)


# ----- the machine ---------------------------------------------------------------

def machine_usage() -> Usage:
    """The whole machine, from /proc: every process, not only the pods.

    CPU: the time /proc/stat's first line counts as busy (all but idle and
    iowait), in clock ticks. Memory: in use is total minus free, page cache
    included; the working set leaves out inactive file pages, as for a
    container. The real kubelet reads the root cgroup instead, which counts
    nearly the same."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in (fields + ["0"] * 8)[:8])
    busy_ticks = user + nice + system + irq + softirq + steal
    cpu_ns = busy_ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    info = meminfo()
    used = info["MemTotal"] - info["MemFree"]
    return Usage(time.time(), cpu_ns, used, max(0, used - info.get("Inactive(file)", 0)))


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (it says kB, meaning KiB)."""
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        value, *unit = rest.split()
        out[name] = int(value) * (1024 if unit else 1)
    return out


def boot_time() -> float:
    """When the machine started (/proc/stat's btime): the node's startTime."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0
