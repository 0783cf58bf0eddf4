"""Run a chapter's README as a lesson: every command, against its expected output.

The convention is in tests/lessons/README.md. Sybil finds the ```console
blocks (and the <!-- lesson: ... --> comment before one); this module runs
them: one persistent bash per machine named in the prompts, background
"terminals" for long-running commands, and a comparison that forgives what
varies from run to run (times, ids, IPs, durations, spacing).
"""
from __future__ import annotations

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
PROMPT = re.compile(r"^(?:(?P<machine>[a-z][a-z0-9-]*))?\$ (?P<command>.*)$")
OPTIONS = re.compile(r"^<!--\s*lesson:\s*(?P<options>.*?)\s*-->\s*$")
HEREDOC = re.compile(r"<<-?\s*'?(?P<word>[A-Za-z_]+)'?")
DEFAULT_MACHINE = "master"
STEP_TIMEOUT = 120      # one command
OUTPUT_WAIT = 30        # a background terminal's expected lines

# What varies from run to run, replaced by a placeholder on both sides
# before comparing. Order matters: a uid contains hex runs, a time digits.
VARYING = [
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uid>"),
    (re.compile(r"\b[0-9a-f]{64}\b|\b[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b"), "<ip>"),
    (re.compile(r"\b\d+(\.\d+)?(ms|s|m|h|d)\b"), "<duration>"),
    (re.compile(r"[ \t]+"), " "),
]


class LessonFailure(AssertionError):
    pass


# --- comparing output -----------------------------------------------------------

def normalise(line: str) -> str:
    for pattern, placeholder in VARYING:
        line = pattern.sub(placeholder, line)
    return line.strip()


def _line_pattern(expected: str) -> re.Pattern:
    """`...` inside a line matches any text."""
    return re.compile(".*".join(re.escape(part) for part in normalise(expected).split("...")) + r"\Z")


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line after normalising; a line that is only `...` matches
    any number of lines. Blank lines are ignored on both sides."""
    wanted = [line for line in expected if line.strip()]
    got = [normalise(line) for line in actual if line.strip()]

    def match(i: int, j: int) -> bool:
        if i == len(wanted):
            return j == len(got)
        if wanted[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and bool(_line_pattern(wanted[i]).match(got[j])) and match(i + 1, j + 1)
    return match(0, 0)


def contains(expected: list[str], actual: list[str]) -> list[str]:
    """The expected lines that appear nowhere in actual (order free: the
    lines of a background terminal may interleave)."""
    got = [normalise(line) for line in actual]
    return [line for line in expected if line.strip() and line.strip() != "..."
            and not any(_line_pattern(line).match(g) for g in got)]


def diff(expected: list[str], actual: list[str]) -> str:
    lines = difflib.unified_diff(expected, actual, "expected (README)", "actual", lineterm="", n=2)
    return "\n".join(lines) + "\n(compared after replacing times, ids, IPs and durations, and spacing)"


# --- machines and terminals -------------------------------------------------------

class Shell:
    """One persistent bash: a machine's terminal, keeping cd, exports and
    `source .venv/bin/activate` from one command to the next."""

    def __init__(self, machine: str, cwd: Path, env: dict):
        self.machine = machine
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def run(self, command: str, timeout: float = STEP_TIMEOUT) -> list[str]:
        marker = f"__lesson_done_{uuid.uuid4().hex}__"
        self.process.stdin.write(f"{command}\nprintf '\\n{marker}\\n'\n")
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
            if line == marker:
                return output[:-1] if output and output[-1] == "" else output
            output.append(line)

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)


@dataclass
class Background:
    """A command left running "in its own terminal"."""
    command: str
    line: int
    pid: int
    log: Path
    interrupted: bool = False

    def output(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines() if self.log.exists() else []

    def exit_code(self) -> int | None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:   # not our child (started through the shell): ask the kernel
            return None if Path(f"/proc/{self.pid}").exists() and not _zombie(self.pid) else 0
        return None if pid == 0 else os.waitstatus_to_exitcode(status)

    def signal(self, signum: int) -> None:
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            pass


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@dataclass
class Session:
    """Everything one lesson started; closed after the lesson, pass or fail."""
    workdir: Path
    cwd: Path = ROOT
    shells: dict[str, Shell] = field(default_factory=dict)
    backgrounds: list[Background] = field(default_factory=list)
    node_names: set[str] = field(default_factory=set)

    def shell(self, machine: str) -> Shell:
        if machine not in self.shells:
            # A learner's fresh terminal: not inside our venv, nor inside `make test`
            # (whose MAKELEVEL would make the lesson's make print directories).
            hidden = ("VIRTUAL_ENV", "PYTHONPATH", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")
            env = {k: v for k, v in os.environ.items() if k not in hidden}
            env.update(LESSON_MACHINE=machine, TERM="dumb", PYTHONUNBUFFERED="1")
            self.shells[machine] = Shell(machine, self.cwd, env)
        return self.shells[machine]

    def start_background(self, machine: str, command: str, line: int) -> Background:
        log = self.workdir / f"background-{len(self.backgrounds)}.log"
        # setsid: its own process group, so Ctrl-C (SIGINT) reaches it, and
        # so everything it started can be stopped at the end.
        pid = self.shell(machine).run(f"setsid bash -c {_quote(command)} > {log} 2>&1 & echo $!")[-1]
        background = Background(command, line, int(pid), log)
        self.backgrounds.append(background)
        return background

    def check_backgrounds(self) -> None:
        for background in self.backgrounds:
            code = None if background.interrupted else background.exit_code()
            if code is not None:
                raise LessonFailure(f"the background command of line {background.line} "
                                    f"(`{background.command}`) has exited; its output:\n"
                                    + "\n".join(background.output()[-30:]))

    def close(self) -> None:
        for background in self.backgrounds:
            background.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for background in self.backgrounds:
            while background.exit_code() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            background.signal(signal.SIGKILL)
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
    options: list[str]
    commands: list[Command]
    output: list[str]          # a block with no command: what a background terminal shows


def parse_block(source: str, first_line: int, options: list[str]) -> Step:
    lines = source.splitlines()
    step = Step(first_line, options, [], [])
    i = 0
    while i < len(lines):
        prompt = PROMPT.match(lines[i])
        if not prompt:
            (step.commands[-1].expected if step.commands else step.output).append(lines[i])
            i += 1
            continue
        text, line = prompt.group("command"), first_line + i
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + "\n" + lines[i]
        heredoc = HEREDOC.search(text)
        if heredoc:
            while i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
                if lines[i].strip() == heredoc.group("word"):
                    break
        step.commands.append(Command(prompt.group("machine") or DEFAULT_MACHINE, text, line, []))
        i += 1
    return step


class LessonParser:
    """Sybil parser: each ```console block, with the options of the
    <!-- lesson: ... --> comment right above it, becomes one step."""

    def __init__(self):
        self.lexer = FencedCodeBlockLexer("console")

    def __call__(self, document: Document):
        for region in self.lexer(document):
            before = document.text[:region.start].rstrip("\n").rsplit("\n", 1)[-1]
            found = OPTIONS.match(before.strip())
            options = found.group("options").split() if found else []
            first_line = document.text.count("\n", 0, region.start) + 2
            yield Region(region.start, region.end, parse_block(region.lexemes["source"], first_line, options),
                         evaluate_step)


def lesson_document(readme: Path) -> Document:
    return Sybil(parsers=[LessonParser()]).parse(readme)


# --- running a step -----------------------------------------------------------------

def evaluate_step(example) -> str | None:
    session: Session = example.namespace["session"]
    step: Step = example.parsed
    where = f"{example.path}:{step.line}"
    if "skip" in step.options:
        return None
    try:
        session.check_backgrounds()
        if "interrupt" in step.options:
            return _interrupt(session, step, where)
        if not step.commands:
            return _background_shows(session, step.output, where)
        for command in step.commands:
            session.node_names.update(re.findall(r"--node-name[ =](\S+)", command.text))
            if "background" in step.options:
                background = session.start_background(command.machine, command.text, command.line)
                problem = _background_shows(session, command.expected, f"{example.path}:{command.line}",
                                            background)
            else:
                problem = _run_until(session, command, f"{example.path}:{command.line}", _deadline(step.options))
            if problem:
                return problem
        session.check_backgrounds()   # a terminal that died during this step
    except LessonFailure as failure:
        return f"{where}: {failure}"
    return None


def _deadline(options: list[str]) -> float:
    """`until 60s`: run the step again until its output matches, up to 60 s."""
    if "until" in options:
        return float(options[options.index("until") + 1].rstrip("s"))
    return 0.0


def _run_until(session: Session, command: Command, where: str, patience: float) -> str | None:
    deadline = time.monotonic() + patience
    while True:
        actual = session.shell(command.machine).run(command.text)
        if matches(command.expected, actual):
            return None
        if time.monotonic() >= deadline:
            waited = f" (still, after {patience:.0f} s of retrying)" if patience else ""
            return (f"{where}: the output of `{command.text}` differs from the README{waited}\n"
                    + diff(command.expected, actual))
        time.sleep(1)


def _background_shows(session: Session, expected: list[str], where: str,
                      background: Background | None = None) -> str | None:
    """Wait until a background terminal has printed every expected line."""
    if background is None:
        if not session.backgrounds:
            return f"{where}: output with no command, but no background terminal is running"
        background = session.backgrounds[-1]
    deadline = time.monotonic() + OUTPUT_WAIT
    while True:
        missing = contains(expected, background.output())
        if not missing:
            return None
        exited = background.exit_code() is not None
        if exited or time.monotonic() >= deadline:
            why = "exited" if exited else f"did not print them within {OUTPUT_WAIT} s"
            return (f"{where}: the background command of line {background.line} (`{background.command}`) {why}; "
                    "missing lines:\n" + "\n".join(missing) + "\nits last output:\n"
                    + "\n".join(background.output()[-20:]))
        time.sleep(0.2)


def _interrupt(session: Session, step: Step, where: str) -> str | None:
    """Ctrl-C in the latest background terminal, then expect its last words."""
    background = next((b for b in reversed(session.backgrounds) if not b.interrupted), None)
    if background is None:
        return f"{where}: nothing running in the background to interrupt"
    background.interrupted = True
    background.signal(signal.SIGINT)
    return _background_shows(session, step.output, where, background)
