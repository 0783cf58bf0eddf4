"""The stage runner: grades a learner's component one capability at a time.

A chapter's stages are an ordered list. Each stage starts from nothing (a
fresh directory, and for a client of the API server a fresh API server of
ours: the chapter's CONTEXT), starts the learner's program with its
command line, and talks to it only over HTTP, so any implementation that
keeps the contract passes, and none is imported. The first stage that
fails stops the run, because later stages build on earlier ones.

A failing check raises StageFailure with three things a learner can act
on: what the stage expected, what happened instead, and the lesson section
that explains it (a Hint: a heading that exists in the chapter's lesson;
tests/stages/test_stage_hints.py holds every hint to that).
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import requests
from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "apiserver"))
sys.path.insert(0, str(ROOT / "tests"))
from apiserver_harness import APIServer, Client  # noqa: E402
from common.tooling.processes import stop_within
from common.tooling.your_program import display, environment, last_lines

# What a starter raises where the learner has not written a part yet, as
# the program logs it (in a traceback, or quoted in a log line's error=).
UNWRITTEN = re.compile(r"NotImplementedError: ([^'\"\n]+)")


@dataclass(frozen=True)
class Hint:
    """Where the lesson explains a stage: a heading in a lesson page."""

    section: str        # the heading's text, without the #s
    page: str           # the page, from the repository root

    def __str__(self) -> str:
        return f'see "{self.section}" in {self.page}'


class StageFailure(Exception):
    """A check that did not hold: what was expected, what happened, where to read."""

    def __init__(self, expected: str, happened: str, hint: Hint | None = None, *, unreadable: bool = False):
        super().__init__(f"expected {expected}; {happened}")
        self.expected, self.happened, self.hint = expected, happened, hint
        self.unreadable = unreadable    # the stage could not read an answer, rather than found it wrong


@dataclass(frozen=True)
class Stage:
    number: int
    title: str
    run: Callable[["StageContext"], None]
    hint: Hint                      # the lesson section for the stage as a whole
    # The words of the rules the stage grades ("Exists", "NoSchedule"): the
    # hint's section must state each (test_stage_hints.py), so a learner
    # sent there finds the rule, not only a walk-through.
    terms: tuple[str, ...] = ()


class Program:
    """The learner's program as a process, its output in a log file."""

    def __init__(self, path: Path, args: list[str], log_path: Path):
        self.path, self.args, self.log_path = path, args, log_path
        self.killed = False             # by the stage, on purpose (a crash it then recovers from)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen([sys.executable, str(path), *args], stdout=log,
                                            stderr=subprocess.STDOUT, cwd=ROOT, env=environment())

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self) -> str:
        """The last lines of the program's log (shown under a failure)."""
        return last_lines(self.log_text())

    def exited(self) -> int | None:
        return self.process.poll()

    def unwritten(self) -> str | None:
        """The starter's "... is yours to write" NotImplementedError, once
        the program has logged one: the part the stage needs is not
        written yet, and waiting out the deadline would tell nothing more."""
        found = UNWRITTEN.search(self.log_text())
        return found.group(1).strip() if found else None

    def kill(self) -> None:
        """SIGKILL: no clean-up at all, as a crash or a power cut."""
        self.killed = True
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            stop_within(self.process, 10)


class StageContext:
    """What every stage works with: a scratch directory and the learner's program."""

    def __init__(self, mine: Path, workdir: Path):
        self.mine = mine
        self.workdir = workdir
        # Every wait's deadline is multiplied by this: 1 for a learner; less
        # where a test expects the stage to fail (honesty.py).
        self.patience = 1.0
        self.programs: list[Program] = []

    def mine_args(self) -> list[str]:
        """The flags every start of the learner's program gets."""
        return []

    def start_mine(self, *args: str) -> Program:
        log_path = self.workdir / f"mine-{len(self.programs) + 1}.log"
        program = Program(self.mine, [*self.mine_args(), *args], log_path)
        self.programs.append(program)
        return program

    def wait_until(self, check: Callable[[], object], *, expected: str, happened: Callable[[], str],
                   timeout: float = 10, hint: Hint | None = None, late_hint: Hint | None = None):
        """Poll check() until it returns something truthy, or fail with
        expected/happened(). A program of the learner's that exits fails at once.
        late_hint: where to read when the program ran to the deadline without
        doing it (a rule it got wrong), if not the same place as a crash's."""
        timeout *= self.patience
        deadline = time.monotonic() + timeout
        while True:
            for program in self.programs:
                if program.exited() is not None and not program.killed:
                    raise StageFailure(expected, f"your program exited with code {program.exited()}", hint)
                unwritten = None if program.killed else program.unwritten()
                if unwritten:
                    raise StageFailure(expected, f"your program raised NotImplementedError: {unwritten}", hint)
            try:
                result = check()
            except requests.RequestException:
                result = None
            if result:
                return result
            if time.monotonic() > deadline:
                raise StageFailure(expected, f"{happened()} (after {timeout:g} s)", late_hint or hint)
            time.sleep(0.1)

    def close(self) -> None:
        for program in self.programs:
            program.stop()


class WithAPIServer(StageContext):
    """For a component that is a client of the API server: a fresh API
    server of ours, which the learner's program is pointed at."""

    def __init__(self, mine: Path, workdir: Path):
        super().__init__(mine, workdir)
        self.server = APIServer(workdir / "data").start()
        self.api = Client(self.server.url)

    def mine_args(self) -> list[str]:
        return ["--apiserver", self.server.url]

    def close(self) -> None:
        super().close()
        self.server.stop()


@dataclass
class Result:
    stage: Stage
    seconds: float
    failure: StageFailure | None = None
    log: str = ""


def run_stage(stage: Stage, mine: Path, context_class: type[StageContext] = WithAPIServer,
              patience: float = 1.0) -> Result:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"stage-{stage.number}-") as tmp:
        context = context_class(mine, Path(tmp))
        context.patience = patience
        try:
            try:
                stage.run(context)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
                # An answer of an unexpected shape (a list where an object
                # belongs, a field missing): the learner's to fix, so say so
                # rather than end in a traceback.
                raise StageFailure("answers in Kubernetes' shapes, which the stage can read",
                                   f"reading one failed with {type(error).__name__}: {error}", unreadable=True)
        except StageFailure as failure:
            failure.hint = failure.hint or stage.hint
            log = "\n\n".join(p.log_tail() for p in context.programs)
            return Result(stage, time.monotonic() - started, failure, log)
        finally:
            context.close()
    return Result(stage, time.monotonic() - started)


def run_stages(title: str, stages: list[Stage], mine: Path, only: int | None = None,
               context_class: type[StageContext] = WithAPIServer, console: Console | None = None) -> list[Result]:
    """Run the stages in order up to the first failure (or only stage `only`),
    printing progress; return what ran."""
    # Into a file or a pipe, lines are not wrapped at 80 columns: a hint's
    # path stays on its line, where a learner (or grep) finds it.
    console = console or Console(soft_wrap=not sys.stdout.isatty())
    chosen = [s for s in stages if only is None or s.number == only]
    if not chosen:
        raise SystemExit(f"there is no stage {only}: the stages are 1 to {len(stages)}")
    console.rule(f"{title}: grading {display(mine)}")
    results = []
    for stage in chosen:
        with console.status(f"stage {stage.number}: {stage.title}"):
            result = run_stage(stage, mine, context_class)
        results.append(result)
        if result.failure is None:
            console.print(f"[green]✓[/green] stage {stage.number}  {stage.title}  [dim]{result.seconds:.1f} s[/dim]")
            continue
        console.print(f"[red]✗[/red] stage {stage.number}  {stage.title}  [dim]{result.seconds:.1f} s[/dim]")
        for label, value in (("expected", result.failure.expected), ("happened", result.failure.happened),
                             ("hint", result.failure.hint)):
            console.print(Text.assemble(f"    {label:<9}", (str(value), "bold" if label == "hint" else "")))
        if result.log.strip():
            console.print("    your program's last lines:", style="dim")
            console.print(Text(textwrap.indent(result.log, "    "), style="dim"))
        break
    passed = sum(1 for r in results if r.failure is None)
    if only is None and passed == len(stages):
        console.print(f"[bold green]all {len(stages)} stages pass[/bold green]")
    elif only is None:
        console.print(f"{passed} of {len(stages)} stages pass; fix stage {passed + 1} and run again")
    return results
