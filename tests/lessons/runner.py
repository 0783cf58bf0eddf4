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
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sybil import Document, Region, Sybil
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[2]
MACHINES = ("master", "node1", "node2", "node3")
PROMPT = re.compile(r"^(?:(?P<machine>[a-z][a-z0-9-]*))?\$ (?P<command>.*)$")
OPTIONS = re.compile(r"^<!--\s*lesson:\s*(?P<options>.*?)\s*-->\s*$")
HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)\1(?!<)")
STEP_TIMEOUT = 120      # one command
OUTPUT_WAIT = 30        # a background terminal's expected lines
STOP_WAIT = 10          # a background terminal after Ctrl-C

# What varies from run to run. Ids, uids and IPs are *bound*: the first
# time the README shows one, the runner notes what the real one was, and
# wherever the README repeats it the real one must repeat too.
BOUND = re.compile(r"(?P<uid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"
                   r"|(?P<id>\b[0-9a-f]{64}\b|\b[0-9a-f]{12}\b)"
                   r"|(?P<ip>\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b)")
FREE = [  # replaced and forgotten: clock times, measured durations, ages in a table's last column
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b"), "<time>"),
    (re.compile(r"(?<=startup=)\d+(\.\d+)?s\b"), "<duration>"),
    (re.compile(r"\s\d+[smhd]\s*$"), " <age>"),
]


class LessonFailure(AssertionError):
    pass


# --- comparing output -----------------------------------------------------------

def normalise(line: str) -> str:
    line = BOUND.sub(lambda m: f"<{m.lastgroup}>", line)
    for pattern, placeholder in FREE:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def _line_pattern(expected: str) -> re.Pattern:
    """`...` inside a line matches any text."""
    return re.compile(".*".join(re.escape(part) for part in normalise(expected).split("...")) + r"\Z")


def _align(wanted: list[str], got: list[str]) -> list[tuple[int, int]] | None:
    """Pairs (expected index, actual index) of a match, or None. A line that
    is only `...` matches any number of lines."""
    patterns = [None if w.strip() == "..." else _line_pattern(w) for w in wanted]
    normal = [normalise(g) for g in got]

    def match(i: int, j: int) -> list[tuple[int, int]] | None:
        if i == len(wanted):
            return [] if j == len(got) else None
        if patterns[i] is None:
            for k in range(j, len(got) + 1):
                rest = match(i + 1, k)
                if rest is not None:
                    return rest
            return None
        if j < len(got) and patterns[i].match(normal[j]):
            rest = match(i + 1, j + 1)
            return None if rest is None else [(i, j), *rest]
        return None
    return match(0, 0)


def bind(expected: str, actual: str, bindings: dict) -> str | None:
    """Check the bound values of one matched pair of lines; None if they
    agree with everything seen before in the lesson, else why not."""
    if "..." in expected:
        return None  # a wildcard may have swallowed some: nothing to pair reliably
    for shown, real in zip(BOUND.finditer(expected), BOUND.finditer(actual)):
        kind = shown.lastgroup
        before = bindings.setdefault(kind, {}).setdefault(shown.group(), real.group())
        if before != real.group():
            return (f"the README shows {kind} {shown.group()} again, which stood for {before} "
                    f"earlier in the lesson, but now it is {real.group()}")
    return None


def compare(expected: list[str], actual: list[str], bindings: dict) -> str | None:
    """None if the output is what the README shows, else why not."""
    wanted = [line for line in expected if line.strip()]
    got = [line for line in actual if line.strip()]
    pairs = _align(wanted, got)
    if pairs is None:
        return "the output differs from the README\n" + diff(wanted, got)
    for i, j in pairs:
        problem = bind(wanted[i], got[j], bindings)
        if problem:
            return problem
    return None


def matches(expected: list[str], actual: list[str]) -> bool:
    return compare(expected, actual, {}) is None


def diff(expected: list[str], actual: list[str]) -> str:
    """A diff of what was compared (varying parts already replaced)."""
    lines = difflib.unified_diff([normalise(e) for e in expected], [normalise(a) for a in actual],
                                 "expected (README)", "actual", lineterm="", n=2)
    return "\n".join(lines) + "\n(times, ids, IPs and ages are shown as <time>, <id>, <ip>, <age>)"


# --- machines and terminals -------------------------------------------------------

class Shell:
    """One persistent bash: a machine's terminal, keeping cd, exports and
    `source .venv/bin/activate` from one command to the next."""

    def __init__(self, machine: str, cwd: Path, env: dict, workdir: Path):
        self.machine, self.workdir = machine, workdir
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
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
    line: int
    process: subprocess.Popen
    log: Path
    seen: int = 0           # output lines already used by an earlier step
    interrupted: bool = False

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

    def shell(self, machine: str) -> Shell:
        if machine not in self.shells:
            # A learner's fresh terminal: not inside our venv, nor inside `make test`
            # (whose MAKELEVEL would make the lesson's make print directories).
            hidden = ("VIRTUAL_ENV", "PYTHONPATH", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")
            env = {k: v for k, v in os.environ.items() if k not in hidden}
            env.update(LESSON_MACHINE=machine, TERM="dumb", PYTHONUNBUFFERED="1")
            self.shells[machine] = Shell(machine, self.cwd, env, self.workdir)
        return self.shells[machine]

    def start_background(self, machine: str, command: str, line: int) -> Background:
        cwd, env = self.shell(machine).state()
        log = self.workdir / f"background-{len(self.backgrounds)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        background = Background(command, line, process, log)
        self.backgrounds.append(background)
        return background

    def check_backgrounds(self) -> None:
        for background in self.backgrounds:
            code = None if background.interrupted else background.exit_code()
            if code is not None:
                raise LessonFailure(f"the background command of line {background.line} "
                                    f"(`{background.command}`) has exited with code {code}; its output:\n"
                                    + "\n".join(background.output()[-30:]))

    def close(self) -> None:
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
        for node in self.node_names:  # containers a lesson's kubelets left
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
    options: dict              # background, interrupt, kill, skip: True; until: seconds
    commands: list[Command]
    expected: list[str]        # a block with no command: what a background terminal shows


def parse_options(text: str, where: str) -> dict:
    words = text.split()
    if not words:
        raise ValueError(f"{where}: an empty lesson marker")
    kind = words[0]
    if kind == "skip":
        return {"skip": True}   # the rest is the reason, for the reader
    if kind in ("background", "interrupt", "kill") and len(words) == 1:
        return {kind: True}
    if kind == "until" and len(words) == 2 and re.fullmatch(r"\d+s", words[1]):
        return {"until": float(words[1][:-1])}
    raise ValueError(f"{where}: unknown lesson marker {text!r}; use background, interrupt, kill, "
                     "until 60s (seconds) or skip (why)")


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
        if machine not in MACHINES:
            raise ValueError(f"{where.rsplit(':', 1)[0]}:{first_line + i}: unknown machine {machine!r}; "
                             f"use one of {', '.join(MACHINES)}")
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
    <!-- lesson: ... --> comment on the line right above it, is one step."""

    def __init__(self):
        self.lexer = FencedCodeBlockLexer("console")

    def __call__(self, document: Document):
        for region in self.lexer(document):
            above = document.text[:region.start].splitlines()[-1:] or [""]
            first_line = document.text.count("\n", 0, region.start) + 2
            where = f"{document.path}:{first_line - 1}"
            found = OPTIONS.match(above[0].strip())
            options = parse_options(found.group("options"), f"{document.path}:{first_line - 2}") if found else {}
            step = parse_block(region.lexemes["source"], first_line, options, where)
            yield Region(region.start, region.end, step, evaluate_step)


def lesson_document(readme: Path) -> Document:
    return Sybil(parsers=[LessonParser()]).parse(readme)


# --- running a step -----------------------------------------------------------------

def evaluate_step(example) -> str | None:
    """Sybil's evaluator: None if the step did what the README says, else
    one message that starts with the README file and line."""
    session: Session = example.namespace["session"]
    step: Step = example.parsed
    if step.options.get("skip"):
        return None
    where = f"{example.path}:{step.line}"
    try:
        session.check_backgrounds()
        if step.options.get("interrupt"):
            _interrupt(session, step.expected, where)
        elif step.options.get("kill"):
            _interrupt(session, step.expected, where, signal.SIGKILL)
        elif not step.commands:
            _background_shows(session, step.expected, where)
        for command in step.commands:
            where = f"{example.path}:{command.line}"
            session.node_names.update(re.findall(r"--node-name[ =](\S+)", command.text))
            if step.options.get("background"):
                background = session.start_background(command.machine, command.text, command.line)
                _background_shows(session, command.expected, where, background)
            else:
                _run(session, command, where, step.options.get("until", 0.0))
        session.check_backgrounds()   # a terminal that died during this step
    except LessonFailure as failure:
        return str(failure) if str(failure).startswith(str(example.path)) else f"{where}: {failure}"
    return None


def _run(session: Session, command: Command, where: str, patience: float) -> None:
    """Run it; with patience (`until`), again once a second until it shows
    what the README shows, and never past the deadline."""
    deadline = time.monotonic() + patience
    while True:
        code, actual = session.shell(command.machine).run(command.text)
        problem = f"`{command.text}` exited with code {code}" if code else None
        problem = problem or compare(command.expected, actual, session.bindings)
        if problem is None:
            return
        if time.monotonic() >= deadline:
            waited = f" (still, after {patience:.0f} s of retrying)" if patience else ""
            raise LessonFailure(f"{where}: {problem}{waited}\ncommand: {command.text}\nits output:\n"
                                + "\n".join(actual[-30:]))
        session.check_backgrounds()
        time.sleep(1)


def _background_shows(session: Session, expected: list[str], where: str,
                      background: Background | None = None) -> None:
    """Wait until a background terminal has printed every expected line
    (in any order), after the lines earlier steps already used."""
    if background is None:
        if not session.backgrounds:
            raise LessonFailure(f"{where}: output with no command, but no background terminal is running")
        background = session.backgrounds[-1]
    wanted = [line for line in expected if line.strip() and line.strip() != "..."]
    deadline = time.monotonic() + OUTPUT_WAIT
    while True:
        output = background.output()
        found = _find_each(wanted, output, background.seen, session.bindings)
        if isinstance(found, list):
            background.seen = min(found, default=background.seen)
            return
        exited = background.exit_code() is not None and not background.interrupted
        if exited or time.monotonic() >= deadline:
            why = "exited" if exited else f"did not print them within {OUTPUT_WAIT} s"
            raise LessonFailure(f"{where}: the background command of line {background.line} "
                                f"(`{background.command}`) {why}; missing lines:\n{found}\n"
                                "its last output:\n" + "\n".join(output[-20:]))
        time.sleep(0.2)


def _find_each(wanted: list[str], output: list[str], start: int, bindings: dict) -> list[int] | str:
    """The index of a line matching each wanted line, from `start` on; or
    the wanted lines not found, as text."""
    normal = [normalise(line) for line in output]
    indexes, missing = [], []
    for line in wanted:
        pattern = _line_pattern(line)
        index = next((k for k in range(start, len(output)) if pattern.match(normal[k])
                      and bind(line, output[k], {kind: dict(seen) for kind, seen in bindings.items()}) is None),
                     None)
        if index is None:
            missing.append(line)
        else:
            bind(line, output[index], bindings)
            indexes.append(index)
    return "\n".join(missing) if missing else indexes


def _interrupt(session: Session, expected: list[str], where: str, signum=signal.SIGINT) -> None:
    """Ctrl-C (or, with SIGKILL, a pulled plug) in the latest background
    terminal: it must print the README's lines and stop."""
    background = next((b for b in reversed(session.backgrounds) if not b.interrupted), None)
    if background is None:
        raise LessonFailure(f"{where}: nothing running in the background to interrupt")
    background.interrupted = True
    background.signal(signum)
    _background_shows(session, expected, where, background)
    try:
        background.process.wait(timeout=STOP_WAIT)
    except subprocess.TimeoutExpired:
        raise LessonFailure(f"{where}: the background command of line {background.line} printed its "
                            f"last words but was still running {STOP_WAIT} s after Ctrl-C") from None
