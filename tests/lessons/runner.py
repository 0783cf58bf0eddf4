"""Run a chapter's README as a lesson: every command, against its expected output.

The convention is in tests/lessons/README.md. Sybil finds the ```console
blocks (and the <!-- lesson: ... --> comment right above one); this module
runs them: one persistent bash per machine named in the prompts, background
"terminals" for long-running commands, and a comparison that forgives what
varies from run to run (times, ids, IPs, ages) but not what must stay the
same within one lesson (the same IP twice is the same IP).
"""
from __future__ import annotations

import base64
import difflib
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sybil import Document, Region, Sybil
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

import failure_report

ROOT = Path(__file__).resolve().parents[2]
MACHINES = ("master", "node1", "node2", "node3")
# `host$`: the computer itself. A lesson that types it is played on machines
# made of namespaces (05-proxy-dns/machines.py, which the lesson makes with
# `host$ make machines`): `master$`, `node1$`... then run inside those.
# Without it, every prompt is a terminal on this one computer.
HOST = "host"
PROMPT = re.compile(r"^(?:(?P<machine>[a-z][a-z0-9-]*))?\$ (?P<command>.*)$")
OPTIONS = re.compile(r"^<!--\s*lesson:\s*(?P<options>.*?)\s*-->\s*$")
HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)\1(?!<)")
STEP_TIMEOUT = 120      # one command
OUTPUT_WAIT = 30        # a background terminal's expected lines
STOP_WAIT = 10          # a background terminal after Ctrl-C

# What varies from run to run. Ids, uids and IPs are *bound*: the first
# time the README shows one, the runner notes what the real one was, and
# wherever the README repeats it the real one must repeat too. Binding is
# one-to-one: two different values in the README are two different real
# values. Fixed addresses are not bound but compared as written: loopback
# and "any" (127.x, 0.0.0.0), and every address the lesson's commands type
# (a flag, a URL, a manifest in a heredoc). They are configuration, not
# something that varies, so a README value that varies cannot stand for one.
BOUND = re.compile(r"(?P<uid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"
                   r"|(?P<id>\b[0-9a-f]{64}\b|\b[0-9a-f]{12}\b)"
                   r"|(?P<ip>\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b)")
# In a block marked `bind numbers`, whole numbers are bound too: the README
# shows `"ModRevision" : 57` and then `57`, and the real output must repeat
# its own number there, whatever it is.
BOUND_NUMBERS = re.compile(BOUND.pattern + r"|(?P<number>(?<![\d.])\d+(?![\d.]))")
LITERAL_IP = re.compile(r"^(127\.\d+\.\d+\.\d+|0\.0\.0\.0)$")
FREE = [  # replaced and forgotten: clock times, measured durations
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b"), "<time>"),
    (re.compile(r"(?<=startup=)\d+(\.\d+)?s\b"), "<duration>"),
    # kubectl's event aggregation, "(x3 over 5m)": the count matters, the age does not
    (re.compile(r"(?<=\(x)(\d+) over \d+[smhd](\d+[smhd])?\)"), r"\1 over <age>)"),
]
# Ages are forgiven only where kubectl prints an age: in a table's column
# headed AGE (or Age, LAST SEEN), found from the table's header line.
AGE_HEADERS = ("AGE", "Age", "LAST SEEN")
AGE = re.compile(r"^(\d+[smhd]){1,2}(?P<over> \(x\d+ over (\d+[smhd]){1,2}\))?$")
COLUMN_GAP = re.compile(r"\s{2,}")

# A log line the README does not show may be anything, except trouble: an
# ERROR (or CRITICAL) from our components' loggers (common/log.py's plain
# format: time, component, level) or a Python traceback. A lesson may add
# levels (`unexpected WARNING`) for a terminal that should print none.
LOG_LEVEL = re.compile(r"^\S+ \S+ (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
ALWAYS_UNEXPECTED = frozenset({"ERROR", "CRITICAL"})
TRACEBACK = "Traceback (most recent call last):"


class LessonFailure(AssertionError):
    pass


# --- comparing output -----------------------------------------------------------

def normalise(line: str, fixed=frozenset()) -> str:
    """The line as compared: varying parts replaced by placeholders."""
    line = BOUND.sub(lambda m: m.group() if _literal(m, fixed) else f"<{m.lastgroup}>", line)
    return _free(line)


def _free(line: str) -> str:
    for pattern, placeholder in FREE:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def _literal(match: re.Match, fixed=frozenset()) -> bool:
    return match.lastgroup == "ip" and _fixed_ip(match.group(), fixed)


def _fixed_ip(address: str, fixed=frozenset()) -> bool:
    return bool(LITERAL_IP.match(address)) or address in fixed


def typed_addresses(text: str) -> set[str]:
    """The IPv4 addresses a command types: fixed for the whole lesson."""
    return {m.group() for m in BOUND.finditer(text) if m.lastgroup == "ip"}


def forgive_ages(lines: list[str], header_lines: list[str] | None = None) -> list[str]:
    """Replace the cell under an AGE column with <age>, in every table row
    that follows its header. `header_lines` lets an excerpt of a terminal
    use the header its terminal printed earlier."""
    out, column = [], None
    for line in header_lines or []:
        column = _age_column(line, column)
    for line in lines:
        found = _age_column(line, None)
        if found is not None:
            column = found
            out.append(line)
            continue
        if not line.strip():
            column = None if header_lines is None else column
            out.append(line)
            continue
        cells = COLUMN_GAP.split(line.strip())
        age = AGE.match(cells[column]) if column is not None and column < len(cells) else None
        if age:
            cells[column] = "<age>" + (age.group("over") or "")    # "(x3 over 5m)": FREE keeps the count
            line = "   ".join(cells)
        out.append(line)
    return out


def _age_column(line: str, current: int | None) -> int | None:
    cells = COLUMN_GAP.split(line.strip())
    for header in AGE_HEADERS:
        if header in cells and len(cells) > 1 and all(c == c.upper() or c[:1].isupper() for c in cells):
            return cells.index(header)
    return current


def _line_pattern(expected: str, fixed=frozenset(), numbers: bool = False) -> re.Pattern:
    """The expected line as a regex over the *actual* line (times and
    durations already forgiven): `...` matches any text, and each id, uid or
    IP is a group capturing the real value, so binding sees every one."""
    pieces = []
    for part in _free(expected).split("..."):
        regex, position = "", 0
        for match in (BOUND_NUMBERS if numbers else BOUND).finditer(part):
            regex += re.escape(part[position:match.start()])
            regex += re.escape(match.group()) if _literal(match, fixed) else rf"\b({_KIND[match.lastgroup]})\b"
            position = match.end()
        pieces.append(regex + re.escape(part[position:]))
    return re.compile(".*?".join(pieces) + r"\Z")


_KIND = {"uid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
         "id": r"[0-9a-f]{64}|[0-9a-f]{12}", "ip": r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}", "number": r"\d+"}


def _shown_values(expected: str, fixed=frozenset(), numbers: bool = False) -> list[tuple[str, str]]:
    """(kind, value) of each bound value the README line shows, in order."""
    bound = BOUND_NUMBERS if numbers else BOUND
    return [(m.lastgroup, m.group()) for m in bound.finditer(_free(expected)) if not _literal(m, fixed)]


def _line_match(expected: str, actual: str, fixed=frozenset(), numbers: bool = False) -> re.Match | None:
    return _line_pattern(expected, fixed, numbers).match(_free(actual))


def _align(wanted: list[str], got: list[str], fixed=frozenset(), numbers: bool = False) -> list[tuple[int, int]] | None:
    """Pairs (expected index, actual index) of a match, or None. A line that
    is only `...` matches any number of lines."""
    patterns = [None if w.strip() == "..." else _line_pattern(w, fixed, numbers) for w in wanted]
    free = [_free(g) for g in got]

    def match(i: int, j: int) -> list[tuple[int, int]] | None:
        if i == len(wanted):
            return [] if j == len(got) else None
        if patterns[i] is None:
            for k in range(j, len(got) + 1):
                rest = match(i + 1, k)
                if rest is not None:
                    return rest
            return None
        if j < len(got) and patterns[i].match(free[j]):
            rest = match(i + 1, j + 1)
            return None if rest is None else [(i, j), *rest]
        return None
    return match(0, 0)


def bind(expected: str, actual: str, bindings: dict, numbers: bool = False) -> str | None:
    """Check the bound values of one matched pair of lines, one-to-one: a
    value the README shows again must be the same real value, and a real
    value can stand for only one README value; an address that varies
    cannot stand for a fixed one. None if they agree with everything seen
    before in the lesson (and then they are noted), else why not (and
    nothing is noted)."""
    fixed = bindings.get("fixed", frozenset())
    found = _line_match(expected, actual, fixed, numbers)
    if found is None:
        return "the line does not match"
    shown = _shown_values(expected, fixed, numbers)
    real = list(found.groups())     # in the order the README line shows them
    forward, backward = bindings.setdefault("shown", {}), bindings.setdefault("real", {})
    new: dict = {}
    for (kind, value), actual_value in zip(shown, real):
        key, real_key = (kind, value), (kind, actual_value)
        if kind == "ip" and _fixed_ip(actual_value, fixed):
            return (f"the README shows {value}, an address that varies, where the real output shows "
                    f"{actual_value}, a fixed one (loopback, 0.0.0.0 or typed in a command): "
                    "show it as written")
        before = forward.get(key, new.get(key))
        if before is not None and before != actual_value:
            return (f"the README shows {kind} {value} again, which stood for {before} "
                    f"earlier in the lesson, but now it is {actual_value}")
        owner = backward.get(real_key) or next((k[1] for k, v in new.items() if (k[0], v) == real_key), None)
        if owner is not None and owner != value:
            return (f"the README shows two different {kind}s, {owner} and {value}, "
                    f"but both are {actual_value} in the real output")
        new[key] = actual_value
    for (kind, value), actual_value in new.items():
        forward[(kind, value)] = actual_value
        backward[(kind, actual_value)] = value
    return None


def compare(expected: list[str], actual: list[str], bindings: dict, numbers: bool = False) -> str | None:
    """None if the output is what the README shows, else why not. Bindings
    are noted only if every line agrees (a failed try of an `until` step
    leaves nothing behind). `numbers`: whole numbers are bound too."""
    fixed = bindings.get("fixed", frozenset())
    # A blank line ends a table: ages are forgiven before blank lines go.
    wanted = [line for line in forgive_ages(expected) if line.strip()]
    got = [line for line in forgive_ages(actual) if line.strip()]
    pairs = _align(wanted, got, fixed, numbers)
    if pairs is None:
        return "the output differs from the README\n" + diff(wanted, got, fixed)
    trial = _copy(bindings)
    for i, j in pairs:
        problem = bind(wanted[i], got[j], trial, numbers)
        if problem:
            return problem
    bindings.update(trial)
    return None


def _copy(bindings: dict) -> dict:
    return {kind: seen.copy() for kind, seen in bindings.items()}


def matches(expected: list[str], actual: list[str], fixed=frozenset()) -> bool:
    return compare(expected, actual, {"fixed": set(fixed)}) is None


def diff(expected: list[str], actual: list[str], fixed=frozenset()) -> str:
    """A diff of what was compared (varying parts already replaced)."""
    lines = difflib.unified_diff([normalise(e, fixed) for e in expected], [normalise(a, fixed) for a in actual],
                                 "expected (README)", "actual", lineterm="", n=2)
    return "\n".join(lines) + "\n(times, ids, IPs and ages are shown as <time>, <id>, <ip>, <age>)"


def unexpected_lines(lines: list[str], levels=frozenset()) -> list[str]:
    """The lines (with a traceback's next lines, to read it by) that are
    trouble a README cannot leave out: ERRORs, tracebacks, `levels`."""
    found = []
    for index, line in enumerate(lines):
        level = LOG_LEVEL.match(line)
        if line.lstrip().startswith(TRACEBACK):
            found.extend(lines[index:index + 12])
        elif level and level.group("level") in ALWAYS_UNEXPECTED | set(levels):
            found.append(line)
    return found


# --- machines and terminals -------------------------------------------------------

class Shell:
    """One persistent bash: a machine's terminal, keeping cd, exports and
    `source .venv/bin/activate` from one command to the next. enter: the
    command prefix that puts it on a namespace machine (none: here)."""

    def __init__(self, machine: str, cwd: Path, env: dict, workdir: Path, enter: list[str] = ()):
        self.machine, self.workdir = machine, workdir
        # pipefail: `kubectl get pods | grep web` fails when kubectl does,
        # not only when grep finds nothing; a compound command cannot hide a failure.
        self.process = subprocess.Popen([*enter, "bash", "--noprofile", "--norc", "-o", "pipefail"], cwd=cwd,
                                        env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.busy = False       # a command that timed out may still be running in it
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def run(self, command: str, timeout: float = STEP_TIMEOUT) -> tuple[int, list[str]]:
        """(exit code, output lines). The command goes through a file, so a
        command that reads standard input gets end-of-file, not our marker."""
        script = self.workdir / f"command-{uuid.uuid4().hex}.sh"
        script.write_text(command + "\n")
        marker = f"__lesson_done_{uuid.uuid4().hex}__"
        self.process.stdin.write(f"source {_quote(str(script))} </dev/null; printf '\\n{marker} %d\\n' $?\n")
        self.process.stdin.flush()
        self.busy = True
        output: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise LessonFailure(f"`{command}` did not finish within {timeout:.0f} s; output so far:\n"
                                    + "\n".join(output[-30:])) from None
            if line is None:
                raise LessonFailure(f"the {self.machine} shell exited during `{command}`:\n" + "\n".join(output[-30:]))
            if line.startswith(marker):
                self.busy = False
                return int(line.split()[1]), (output[:-1] if output and output[-1] == "" else output)
            output.append(line)

    def state(self) -> tuple[str, dict]:
        """The shell's working directory and environment, for a background
        terminal opened "next to it"."""
        _, lines = self.run("pwd; env -0 | base64 -w0; echo")
        pairs = base64.b64decode(lines[1]).split(b"\0")
        env = dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)
        return lines[0], env

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait(timeout=10)


@dataclass
class Background:
    """A command left running "in its own terminal": our own child, in its
    own process group, so its exit code is real and Ctrl-C reaches it."""
    command: str
    started: str            # file:line of the step that started it (a lesson may have parts)
    process: subprocess.Popen
    machine: str
    log: Path
    seen: int = 0           # output lines already used by an earlier step
    interrupted: bool = False
    unexpected: set = field(default_factory=set)   # levels no unshown line may have (beyond ERROR)

    def check_unshown(self, lines: list[str], where: str) -> None:
        """Fail if a line the README skipped over is trouble (an ERROR, a
        traceback): a lesson that passes with errors in its logs teaches them."""
        trouble = unexpected_lines(lines, self.unexpected)
        if trouble:
            raise LessonFailure(f"{where}: the background command of {self.started} (`{self.command}`) "
                                "printed lines the README does not show, and they are trouble "
                                "(fix their cause, or show them and say why):\n" + "\n".join(trouble))

    def output(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines() if self.log.exists() else []

    def exit_code(self) -> int | None:
        return self.process.poll()

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


@dataclass
class Session:
    """Everything one lesson started; closed after the lesson, pass or fail."""
    workdir: Path
    cwd: Path = ROOT
    shells: dict[str, Shell] = field(default_factory=dict)
    backgrounds: list[Background] = field(default_factory=list)
    node_names: set[str] = field(default_factory=set)
    bindings: dict = field(default_factory=dict)
    machines: object = None     # a machines.Machines when the lesson types `host$`
    local: set = field(default_factory=set)     # machines whose terminals are on this computer
    kubectl_on: list = field(default_factory=list)  # machines whose shells typed kubectl (and so know the cluster)
    docker_events: object = None    # `docker events` followed for a failure report (failure_report.py)

    def our_kubelet(self, command: str) -> None:
        """A command runs 01-kubelet/kubelet.py: remember its node, for the
        clean-up, and follow Docker's events from its first kubelet on (a
        lesson without one makes no containers to tell of)."""
        self.node_names.update(re.findall(r"--node-name[ =](\S+)", command))
        if self.docker_events is None:
            self.docker_events = failure_report.follow_docker_events(self.workdir / "docker-events.log")

    def enter(self, machine: str, cwd) -> list[str]:
        """How a terminal gets onto a machine: on namespace machines, nsenter.
        A machine's terminals are where its first one opened: a machine that
        did not exist yet is this computer for the rest of the lesson
        (chapter 02's master runs parts 2 to 4 before part 5 makes the nodes)."""
        if self.machines is None or machine == HOST or machine in self.local:
            return []
        if machine not in self.shells and not self.machines.exists(machine):
            self.local.add(machine)
            return []
        return self.machines.enter(machine, cwd=str(cwd))

    def fix_addresses(self, command: str) -> None:
        """The addresses a command types are configuration: compared as written."""
        self.bindings.setdefault("fixed", set()).update(typed_addresses(command))

    def shell(self, machine: str) -> Shell:
        if machine not in self.shells:
            # A learner's fresh terminal: not inside our venv, nor inside `make test`
            # (whose MAKELEVEL would make the lesson's make print directories).
            hidden = ("VIRTUAL_ENV", "PYTHONPATH", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")
            env = {k: v for k, v in os.environ.items() if k not in hidden}
            env.update(LESSON_MACHINE=machine, TERM="dumb", PYTHONUNBUFFERED="1")
            self.shells[machine] = Shell(machine, self.cwd, env, self.workdir, self.enter(machine, self.cwd))
        return self.shells[machine]

    def start_background(self, machine: str, command: str, started: str) -> Background:
        cwd, env = self.shell(machine).state()
        log = self.workdir / f"background-{len(self.backgrounds)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([*self.enter(machine, cwd), "bash", "-o", "pipefail", "-c", command],
                                       cwd=cwd, env=env,
                                       stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        background = Background(command, started, process, machine, log)
        self.backgrounds.append(background)
        return background

    def failure_report(self, machine: str | None, command: str) -> str:
        """What to read after a failed step: the kubelets' last log lines,
        and the pods as kubectl describes them (failure_report.py)."""
        sections = failure_report.kubelet_logs(self.backgrounds)
        endings = failure_report.docker_endings(self.node_names, self.workdir / "docker-events.log")
        if endings:
            sections.append("--- the lesson's containers as Docker saw them start and end "
                            "(start, kill, die, oom, destroy):\n" + endings)
        shells = [self.shells[m] for m in sorted(self.kubectl_on, key=lambda m: m != machine)
                  if m in self.shells and not self.shells[m].busy]
        if shells:
            describe = failure_report.describe_command(command)
            for asked in ["kubectl get pods -A -o wide"] + ([describe] if describe else []):
                sections.append(f"--- {shells[0].machine}$ {asked}\n" + self._ask(shells[0], asked))
        return "".join(f"\n\n{section}" for section in sections)

    @staticmethod
    def _ask(shell: Shell, command: str) -> str:
        try:
            _, lines = shell.run(command + " 2>&1", timeout=30)
        except LessonFailure as failure:        # the cluster may be what failed
            return str(failure)
        return failure_report.trimmed(lines)

    def check_backgrounds(self) -> None:
        for background in self.backgrounds:
            code = None if background.interrupted else background.exit_code()
            if code is not None:
                raise LessonFailure(f"the background command of {background.started} "
                                    f"(`{background.command}`) has exited with code {code}; its output:\n"
                                    + "\n".join(background.output()[-30:]))

    def close(self) -> None:
        if self.docker_events is not None:
            self.docker_events.terminate()
            self.docker_events.wait(10)
        for background in self.backgrounds:
            background.signal(signal.SIGTERM)
        for background in self.backgrounds:
            try:
                background.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                background.signal(signal.SIGKILL)
                background.process.wait(timeout=10)
        for shell in self.shells.values():
            shell.close()
        if self.machines is not None:     # machines, engines, containers: all of it
            self.machines.down()
            if self.workdir.name.startswith("groundup-lesson-"):
                shutil.rmtree(self.workdir, ignore_errors=True)
            return
        # Containers a lesson's kubelets left: only of nodes whose kubelet
        # was ours (01-kubelet/kubelet.py). A runner test once named a stand-in
        # "kubelet.py --node-name node1", and its clean-up removed every
        # container of the lesson running beside it on node1 (CI, 2026-12-07).
        for node in self.node_names:
            subprocess.run([str(ROOT / ".venv/bin/python"), str(ROOT / "01-kubelet/kubelet.py"), "--cleanup",
                            "--node-name", node], capture_output=True, timeout=120, check=False)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# --- parsing a README ---------------------------------------------------------------

@dataclass
class Command:
    machine: str
    text: str
    line: int
    expected: list[str]


@dataclass
class Step:
    line: int
    options: dict              # background, interrupt, kill, skip, any order: True; until: seconds; exits: code
    commands: list[Command]
    expected: list[str]        # a block with no command: what a background terminal shows


def parse_options(text: str, where: str) -> dict:
    """One marker's options; several are separated by commas
    (`background, any order`)."""
    if "," in text:
        options: dict = {}
        for part in text.split(","):
            options.update(parse_options(part, where))
        return options
    words = text.split()
    if not words:
        raise ValueError(f"{where}: an empty lesson marker")
    kind = words[0]
    if kind == "skip":
        return {"skip": True}   # the rest is the reason, for the reader
    if kind in ("background", "interrupt", "kill") and len(words) == 1:
        return {kind: True}
    if kind == "interrupt" and len(words) == 3 and words[1] == "exits" and re.fullmatch(r"\d+", words[2]):
        return {"interrupt": True, "exits": int(words[2])}
    if kind == "interrupt" and len(words) == 3 and words[1] == "on" and words[2] in MACHINES:
        return {"interrupt": True, "on": words[2]}
    if kind == "interrupt" and len(words) > 3 and words[1] == "on" and words[2] in MACHINES:
        return {"interrupt": True, "on": words[2], "running": " ".join(words[3:])}
    if words == ["any", "order"]:
        return {"any order": True}
    if words == ["bind", "numbers"]:
        return {"bind numbers": True}
    if kind == "unexpected" and len(words) > 1 and set(words[1:]) <= {"DEBUG", "INFO", "WARNING"}:
        return {"unexpected": set(words[1:])}
    if kind == "until" and len(words) == 2 and re.fullmatch(r"\d+s", words[1]):
        return {"until": float(words[1][:-1])}
    raise ValueError(f"{where}: unknown lesson marker {text!r}; use background, interrupt, "
                     "interrupt exits N, interrupt on MACHINE [COMMAND TEXT], kill, any order, bind numbers, "
                     "unexpected LEVEL (WARNING, INFO, DEBUG), until 60s (seconds) or skip (why)")


def parse_block(source: str, first_line: int, options: dict, where: str) -> Step:
    lines = source.splitlines()
    step = Step(first_line, options, [], [])
    i = 0
    while i < len(lines):
        prompt = PROMPT.match(lines[i])
        if not prompt:
            (step.commands[-1].expected if step.commands else step.expected).append(lines[i])
            i += 1
            continue
        machine = prompt.group("machine") or MACHINES[0]
        if machine not in MACHINES + (HOST,):
            raise ValueError(f"{where.rsplit(':', 1)[0]}:{first_line + i}: unknown machine {machine!r}; "
                             f"use one of {', '.join(MACHINES + (HOST,))}")
        text, line = prompt.group("command"), first_line + i
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + "\n" + lines[i]
        heredoc = HEREDOC.search(text)
        while heredoc and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
            if lines[i].strip() == heredoc.group("word"):
                break
        step.commands.append(Command(machine, text, line, []))
        i += 1
    if step.commands and any(line.strip() for line in step.expected):
        raise ValueError(f"{where}: text before the block's first command; "
                         "a block is either commands with their output, or output alone")
    if "until" in options and len(step.commands) != 1:
        raise ValueError(f"{where}: an `until` block holds exactly one command, the one to run again")
    return step


class LessonParser:
    """Sybil parser: each ```console block, with the options of the
    <!-- lesson: ... --> comment on the line right above it, is one step.
    A marker with no block under it (`kill`, `interrupt`: steps that print
    nothing) is a step of its own, so the page shows no empty box."""

    def __init__(self):
        self.lexer = FencedCodeBlockLexer("console")

    def __call__(self, document: Document):
        blocks = list(self.lexer(document))
        marked_blocks = set()
        for region in blocks:
            above = document.text[:region.start].splitlines()[-1:] or [""]
            first_line = document.text.count("\n", 0, region.start) + 2
            where = f"{document.path}:{first_line - 1}"
            found = OPTIONS.match(above[0].strip())
            if found:
                marked_blocks.add(first_line - 2)
            options = parse_options(found.group("options"), f"{document.path}:{first_line - 2}") if found else {}
            step = parse_block(region.lexemes["source"], first_line, options, where)
            yield Region(region.start, region.end, step, evaluate_step)
        position = 0
        for number, line in enumerate(document.text.splitlines(keepends=True), 1):
            start, position = position, position + len(line)
            found = OPTIONS.match(line.strip())
            if not found or number in marked_blocks:
                continue
            options = parse_options(found.group("options"), f"{document.path}:{number}")
            if not (options.keys() & {"kill", "interrupt", "skip"}):
                raise ValueError(f"{document.path}:{number}: the marker {line.strip()} must be right above "
                                 "the ```console block it is for (no blank line between)")
            if "skip" not in options:
                yield Region(start, start + len(line.rstrip("\n")), Step(number, options, [], []), evaluate_step)


def lesson_document(readme: Path) -> Document:
    return Sybil(parsers=[LessonParser()]).parse(readme)


def lesson_files(chapter: Path) -> list[Path]:
    """A chapter's lesson, in the order it is played as one session: the
    README (if it has steps) and then lesson-1-*.md, lesson-2-*.md, ..."""
    def number(path: Path) -> int:
        return int(re.match(r"lesson-(\d+)-", path.name).group(1))
    parts = sorted((p for p in chapter.glob("lesson-*.md") if re.match(r"lesson-\d+-", p.name)), key=number)
    readme = chapter / "README.md"
    return ([readme] if readme.exists() and "```console" in readme.read_text() else []) + parts


def play(files: list[Path], session: Session) -> str | None:
    """Play the files in order in one session; None, or the first failure
    (which names its file and line)."""
    from sybil.example import SybilFailure
    documents = [lesson_document(path) for path in files]  # a mistake in any part fails before anything runs
    for document in documents:      # what the lesson types is fixed from its first step
        for example in document.examples():
            for command in ([] if example.parsed.options.get("skip") else example.parsed.commands):
                session.fix_addresses(command.text)
                if command.machine == HOST and session.machines is None:
                    session.machines = namespace_machines()
                    if any(session.machines.exists(name) for name in session.machines.names):
                        session.machines = None       # not ours: leave them be
                        return ("the lesson makes machines with `make machines`, and they exist already "
                                "(yours?): remove them with `make machines-down` and run again")
                    # Each machine has its own /tmp: the terminals' command
                    # files must be where every machine sees them.
                    if str(session.workdir).startswith("/tmp/"):
                        session.workdir = Path(tempfile.mkdtemp(prefix="groundup-lesson-", dir="/var/tmp"))
    for document in documents:
        document.namespace["session"] = session
        try:
            for example in document.examples():
                example.evaluate()      # stops at the first step that fails
        except SybilFailure as failure:
            return failure.result       # file:line, command, diff: nothing more
    return _trouble_left_running(session)


def _trouble_left_running(session: Session) -> str | None:
    """The terminals still running at the end (stopped after the lesson) had
    lines no excerpt reached: an ERROR among them fails the lesson too."""
    for background in session.backgrounds:
        if background.interrupted:
            continue
        try:
            background.check_unshown(background.output()[background.seen:], f"{background.started} (end of the lesson)")
        except LessonFailure as failure:
            return str(failure)
    return None


def uses_machines(files: list[Path]) -> bool:
    """Does the lesson type `host$`, and so play on namespace machines?"""
    return any(re.search(r"^host\$ ", path.read_text(), re.M) for path in files)


def namespace_machines():
    """The machines a learner makes with `make machines` (the defaults)."""
    import sys
    sys.path.insert(0, str(ROOT / "05-proxy-dns"))
    from machines import Machines
    return Machines()


# --- running a step -----------------------------------------------------------------

def evaluate_step(example) -> str | None:
    """Sybil's evaluator: None if the step did what the README says, else
    one message that starts with the README file and line."""
    session: Session = example.namespace["session"]
    step: Step = example.parsed
    if step.options.get("skip"):
        return None
    path = _display(example.path)
    where = f"{path}:{step.line}"
    machine, text = None, ""               # the command at fault, for the failure report
    try:
        session.check_backgrounds()
        if step.options.get("interrupt"):
            _interrupt(session, step.expected, where, exit_code=step.options.get("exits", 0),
                       machine=step.options.get("on"), running=step.options.get("running"))
        elif step.options.get("kill"):
            _interrupt(session, step.expected, where, signal.SIGKILL, exit_code=None)
        elif not step.commands:
            if session.backgrounds:
                session.backgrounds[-1].unexpected |= step.options.get("unexpected", set())
                machine, text = session.backgrounds[-1].machine, session.backgrounds[-1].command
            _background_shows(session, step.expected, where, any_order=step.options.get("any order", False))
        for command in step.commands:
            where = f"{path}:{command.line}"
            machine, text = command.machine, command.text
            session.fix_addresses(command.text)
            if "kubectl" in command.text and command.machine not in session.kubectl_on:
                session.kubectl_on.append(command.machine)
            if "01-kubelet/kubelet.py" in command.text:      # our kubelet: close() removes its containers
                session.our_kubelet(command.text)
            if command.machine == HOST and "machines-down" in command.text:
                for background in session.backgrounds:       # their machines are going: so are they
                    on_machine = background.machine != HOST and background.machine not in session.local
                    background.interrupted = background.interrupted or on_machine
            if step.options.get("background"):
                background = session.start_background(command.machine, command.text, where)
                background.unexpected |= step.options.get("unexpected", set())
                _background_shows(session, command.expected, where, background,
                                  any_order=step.options.get("any order", False))
            else:
                _run(session, command, where, step.options.get("until", 0.0), step.options.get("bind numbers", False))
        session.check_backgrounds()   # a terminal that died during this step
    except LessonFailure as failure:
        message = str(failure) if str(failure).startswith(path) else f"{where}: {failure}"
        return message + session.failure_report(machine, text)
    return None


def _display(path: str) -> str:
    """A lesson file as a learner names it: relative to the repository."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _run(session: Session, command: Command, where: str, patience: float, numbers: bool = False) -> None:
    """Run it; with patience (`until`), again once a second until it shows
    what the README shows, and never past the deadline."""
    deadline = time.monotonic() + patience
    while True:
        code, actual = session.shell(command.machine).run(command.text)
        problem = f"`{command.text}` exited with code {code}" if code else None
        problem = problem or compare(command.expected, actual, session.bindings, numbers)
        if problem is None:
            return
        if time.monotonic() >= deadline:
            waited = f" (still, after {patience:.0f} s of retrying)" if patience else ""
            raise LessonFailure(f"{where}: {problem}{waited}\ncommand: {command.text}\nits output:\n"
                                + "\n".join(actual[-30:]))
        session.check_backgrounds()
        time.sleep(1)


def _background_shows(session: Session, expected: list[str], where: str,
                      background: Background | None = None, any_order: bool = False) -> None:
    """Wait until a background terminal has printed the expected lines, in
    the README's order (other lines may come between them), after the lines
    earlier steps already used; each real line stands for one README line.
    `any_order` (the `any order` marker) accepts them in any order, for logs
    of work done in parallel."""
    if background is None:
        if not session.backgrounds:
            raise LessonFailure(f"{where}: output with no command, but no background terminal is running")
        background = session.backgrounds[-1]
    wanted = [line for line in expected if line.strip() and line.strip() != "..."]
    deadline = time.monotonic() + OUTPUT_WAIT
    while True:
        output = background.output()
        found = _find_lines(wanted, output, background.seen, session.bindings, any_order)
        if isinstance(found, list):
            end = max(found, default=background.seen - 1) + 1
            background.check_unshown([output[k] for k in range(background.seen, end) if k not in found], where)
            background.seen = end
            return
        exited = background.exit_code() is not None and not background.interrupted
        if exited or time.monotonic() >= deadline:
            why = "exited" if exited else f"did not print them within {OUTPUT_WAIT} s"
            raise LessonFailure(f"{where}: the background command of {background.started} "
                                f"(`{background.command}`) {why}; missing lines:\n{found}\n"
                                "its last output:\n" + "\n".join(output[-20:]))
        time.sleep(0.2)


def _find_lines(wanted: list[str], output: list[str], start: int, bindings: dict,
                any_order: bool) -> list[int] | str:
    """The index of the real line used for each wanted line, all from
    `start` on, each used once and, unless any_order, increasing; or the
    wanted lines not found (from the first one missing), as text. Bindings
    are noted only if every line is found."""
    wanted = forgive_ages(wanted, header_lines=output)
    actual = forgive_ages(output)
    trial = _copy(bindings)
    fixed = trial.get("fixed", frozenset())
    used: set[int] = set()
    indexes: list[int] = []
    position = start
    for number, line in enumerate(wanted):
        candidates = range(start if any_order else position, len(actual))
        index = next((k for k in candidates if k not in used and _line_match(line, actual[k], fixed)
                      and bind(line, actual[k], _copy(trial)) is None),
                     None)
        if index is None:
            return "\n".join(wanted[number:])
        bind(line, actual[index], trial)
        used.add(index)
        indexes.append(index)
        position = index + 1
    bindings.update(trial)
    return indexes


def _interrupt(session: Session, expected: list[str], where: str, signum=signal.SIGINT,
               exit_code: int | None = 0, machine: str | None = None, running: str | None = None) -> None:
    """Ctrl-C (or, with SIGKILL, a pulled plug) in the latest background
    terminal (of that machine, with `interrupt on node2`; and whose command
    has that text in it, with `interrupt on node2 kubelet.py`): it must
    print the README's lines, stop, and (after Ctrl-C) exit with the code
    the README states: 0 unless the marker says `interrupt exits N`."""
    background = next((b for b in reversed(session.backgrounds)
                       if not b.interrupted and machine in (None, b.machine)
                       and (running is None or running in b.command)), None)
    if background is None:
        running_what = f" running `{running}`" if running else ""
        raise LessonFailure(f"{where}: nothing running in the background{running_what} to interrupt")
    background.interrupted = True
    background.signal(signum)
    _background_shows(session, expected, where, background)
    try:
        code = background.process.wait(timeout=STOP_WAIT)
        code = 128 - code if code < 0 else code     # killed by signal N: a shell says 128 + N
    except subprocess.TimeoutExpired:
        raise LessonFailure(f"{where}: the background command of {background.started} printed its "
                            f"last words but was still running {STOP_WAIT} s after Ctrl-C") from None
    # Its last lines, which no later excerpt can show: no ERROR among them either.
    background.check_unshown(background.output()[background.seen:], where)
    if exit_code is not None and code != exit_code:
        raise LessonFailure(f"{where}: the background command of {background.started} "
                            f"(`{background.command}`) exited with code {code} after Ctrl-C, "
                            f"but the README expects {exit_code}; its last output:\n"
                            + "\n".join(background.output()[-20:]))
