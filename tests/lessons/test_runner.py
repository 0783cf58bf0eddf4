"""The lesson runner's own tests, on small READMEs written for each case."""
from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

import runner
from runner import Session, lesson_document, matches


# An address a lesson's command types is fixed (compared as written), so
# these tests print "real" addresses without typing them whole:
# printf 'pod 172.17.0.%s\n' 2 prints an address no command typed.

def run_lesson(tmp_path, text: str) -> tuple[Session, str | None]:
    """Play one README as test_lessons.py plays a chapter: (session, the
    failure's message or None)."""
    readme = tmp_path / "README.md"
    readme.write_text(text)
    session = Session(tmp_path, cwd=tmp_path)
    try:
        return session, runner.play([readme], session)
    finally:
        session.close()


def test_a_passing_lesson_keeps_shell_state_and_forgives_what_varies(tmp_path):
    _, failure = run_lesson(tmp_path, """\
Some prose.

```console
$ export GREETING=hello
$ cd /tmp && echo "$GREETING from $(pwd)"
hello from /tmp
$ date -u +%Y-%m-%dT%H:%M:%SZ; printf 'pod IP 10.1.2.%s, id 0123456789ab\\n' 3
2020-01-01T00:00:00Z
pod IP 172.17.0.9, id fedcba987654
$ printf 'NAME   IP         AGE\\nweb    10.1.2.%s   %ss\\n' 4 $((RANDOM % 50 + 1))
NAME   IP           AGE
web    172.17.0.3   3s
$ printf 'a   b\\tc\\n'
a b c
$ seq 1 5
1
...
5
```
""")
    assert failure is None


def test_a_changed_output_fails_with_file_line_and_diff(tmp_path):
    _, failure = run_lesson(tmp_path, "Intro\n\n```console\n$ echo one\none\n$ echo two\nthree\n```\n")
    message = str(failure)
    assert f"{tmp_path}/README.md:6: the output differs from the README" in message
    assert "-three" in message and "+two" in message


@pytest.mark.parametrize("expected, actual", [
    ("hello ... world", "hello there planet"),
    ("10.0.0.1 up", "10.0.0.1 down"),
    ("restarts=1 at 2020-01-01T00:00:00Z", "restarts=2 at 2021-02-02T00:00:00Z"),
    ("...\nlast", "first\nnot last"),
])
def test_a_wildcard_never_hides_a_real_difference(expected, actual):
    assert not matches(expected.splitlines(), actual.splitlines())


def test_a_background_command_that_dies_is_reported_not_waited_for(tmp_path):
    started = time.monotonic()
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ sh -c 'echo starting; exit 3'
ready to serve
```
""")
    assert "exited; missing lines:\nready to serve" in str(failure)
    assert "starting" in str(failure)
    assert time.monotonic() - started < runner.OUTPUT_WAIT / 2


def test_a_background_command_that_dies_later_fails_the_next_step(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ sh -c 'echo up; sleep 0.5; echo crashed; exit 1'
up
```

```console
$ sleep 1
```
""")
    assert "has exited with code 1; its output:\nup\ncrashed" in str(failure)


def test_an_eventual_state_that_never_comes_fails_at_its_deadline(tmp_path):
    started = time.monotonic()
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: until 3s -->
```console
$ echo still waiting
ready
```
""")
    elapsed = time.monotonic() - started
    assert "(still, after 3 s of retrying)" in str(failure) and "+still waiting" in str(failure)
    assert 3 <= elapsed < 10


def test_an_eventual_state_that_comes_passes(tmp_path):
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: until 20s -->
```console
$ test -e {tmp_path}/flag && echo ready || (touch {tmp_path}/flag; echo not yet)
ready
```
""")
    assert failure is None


def test_interrupt_and_log_blocks_read_the_background_terminal(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ python3 -c "import signal, sys, time; signal.signal(signal.SIGINT, lambda *a: (print('bye', flush=True), sys.exit(0))); print('serving', flush=True); time.sleep(0.3); print('tick 1', flush=True); time.sleep(60)"
serving
```

```console
tick 1
```

<!-- lesson: interrupt -->
```console
bye
```
""")
    assert failure is None


# A server that says "up NAME", and "bye NAME" as Ctrl-C stops it.
NAMED_SERVER = ("python3 -c \"import signal, sys, time; signal.signal(signal.SIGINT, lambda *a: (print('bye {name}', "
                "flush=True), sys.exit(0))); print('up {name}', flush=True); time.sleep(60)\"")


def test_interrupt_on_a_machine_stops_that_machines_latest_terminal_and_leaves_the_later_one(tmp_path):
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
node1$ {NAMED_SERVER.format(name='one')}
up one
```

<!-- lesson: background -->
```console
node2$ {NAMED_SERVER.format(name='two')}
up two
```

<!-- lesson: interrupt on node1 -->
```console
bye one
```

<!-- lesson: interrupt -->
```console
bye two
```
""")
    assert failure is None, failure


def test_interrupt_on_a_machine_with_a_command_text_stops_the_terminal_running_it(tmp_path):
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
node1$ {NAMED_SERVER.format(name='kubelet')}
up kubelet
```

<!-- lesson: background -->
```console
node1$ {NAMED_SERVER.format(name='proxy')}
up proxy
```

<!-- lesson: interrupt on node1 up kubelet -->
```console
bye kubelet
```

<!-- lesson: interrupt on node1 up proxy -->
```console
bye proxy
```
""")
    assert failure is None, failure
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
node1$ {NAMED_SERVER.format(name='proxy')}
up proxy
```

<!-- lesson: interrupt on node1 kubelet.py -->
""")
    assert "nothing running in the background running `kubelet.py` to interrupt" in str(failure)


def test_everything_is_stopped_after_a_failure(tmp_path):
    pid_file = tmp_path / "pid"
    session, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
$ sh -c 'echo $$ > {pid_file}; echo up; exec sleep 300'
up
```

```console
$ echo wrong
right
```
""")
    assert failure is not None
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}") or runner._zombie(pid)
    assert all(shell.process.poll() is not None for shell in session.shells.values())


def test_machines_named_in_prompts_get_their_own_shells(tmp_path):
    _, failure = run_lesson(tmp_path, """\
```console
node1$ export ROLE=worker
master$ echo "${ROLE:-none} on $LESSON_MACHINE"
none on master
node1$ echo "$ROLE on $LESSON_MACHINE"
worker on node1
```
""")
    assert failure is None


def test_heredocs_and_skipped_blocks(tmp_path):
    _, failure = run_lesson(tmp_path, """\
```console
$ cat > note.txt <<'EOF'
line one
EOF
$ cat note.txt
line one
```

<!-- lesson: skip -->
```console
$ false
this is never checked
```
""")
    assert failure is None


def test_the_same_value_shown_twice_must_be_the_same_value(tmp_path):
    _, failure = run_lesson(tmp_path, """\
```console
$ printf 'pod IP 10.0.0.%s\\n' 7
pod IP 172.17.0.2
$ printf 'container sees 10.0.0.%s\\n' 8
container sees 172.17.0.2
```
""")
    assert "the README shows ip 172.17.0.2 again, which stood for 10.0.0.7" in str(failure)


def test_an_interrupted_terminal_must_stop(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ python3 -c "import signal, time; signal.signal(signal.SIGINT, lambda *a: print('stopping', flush=True)); print('up', flush=True); time.sleep(60)"
up
```

<!-- lesson: interrupt -->
```console
stopping
```
""")
    assert "was still running 10 s after Ctrl-C" in str(failure)


def test_a_command_reading_stdin_gets_end_of_file_and_exit_codes_count(tmp_path):
    _, failure = run_lesson(tmp_path, "```console\n$ cat\n$ tr a-z A-Z <<< hello\nHELLO\n```\n")
    assert failure is None
    _, failure = run_lesson(tmp_path, "```console\n$ grep -q nothing /dev/null\n```\n")
    assert "`grep -q nothing /dev/null` exited with code 1" in str(failure)


@pytest.mark.parametrize("text, message", [
    ("<!-- lesson: until 1m -->\n```console\n$ true\n```\n", "README.md:1: unknown lesson marker 'until 1m'"),
    ("<!-- lesson: backgroud -->\n```console\n$ true\n```\n", "README.md:1: unknown lesson marker 'backgroud'"),
    ("<!-- lesson: until 5s -->\n```console\n$ true\n$ true\n```\n", "an `until` block holds exactly one command"),
    ("```console\nstray\n$ true\n```\n", "README.md:1: text before the block's first command"),
    ("```console\nnod1$ true\n```\n", "README.md:2: unknown machine 'nod1'"),
])
def test_mistakes_in_a_lesson_are_reported_with_their_line(tmp_path, text, message):
    readme = tmp_path / "README.md"
    readme.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        list(lesson_document(readme).examples())


def test_a_marker_applies_only_to_the_block_right_below_it(tmp_path):
    _, failure = run_lesson(tmp_path, "<!-- lesson: skip (not here) -->\n\n```console\n$ echo run\nrun\n```\n")
    assert failure is None
    _, failure = run_lesson(tmp_path, "<!-- lesson: skip (not here) -->\n\n```console\n$ false\n```\n")
    assert "exited with code 1" in str(failure)


# --- the audit's false passes (issue 25): each passed before the runner was made strict ---

def test_binding_holds_on_lines_with_a_wildcard(tmp_path):
    """(a) A `...` forgives only the text it covers: the two nodes' IPs are
    still bound, so two nodes shown with different IPs but really sharing
    one fail."""
    _, failure = run_lesson(tmp_path, """\
```console
$ printf 'node1   Ready   10.0.0.%s   v1\\nnode2   Ready   10.0.0.%s   v1\\n' 5 5
node1   Ready   10.0.0.11   ...
node2   Ready   10.0.0.12   ...
```
""")
    assert failure is not None and "two different ips, 10.0.0.11 and 10.0.0.12" in str(failure)


def test_binding_is_one_to_one(tmp_path):
    """(b) Two different README values cannot stand for one real value."""
    _, failure = run_lesson(tmp_path, """\
```console
$ printf 'pod a 172.17.0.%s\\npod b 172.17.0.%s\\n' 2 2
pod a 10.0.0.2
pod b 10.0.0.3
```
""")
    assert failure is not None and "both are 172.17.0.2" in str(failure)
    _, failure = run_lesson(tmp_path, """\
```console
$ printf 'pod a 172.17.0.%s\\npod b 172.17.0.%s\\n' 2 3
pod a 10.0.0.2
pod b 10.0.0.3
```
""")
    assert failure is None


@pytest.mark.parametrize("expected, actual, same", [
    ("Warning  BackOff  back-off 10s", "Warning  BackOff  back-off 40s", False),
    ("restarted after 3s", "restarted after 9s", False),
    ("NAME   AGE\nweb    3s", "NAME   AGE\nweb    2m10s", True),
    ("Normal  Pulled  2m (x3 over 5m)  kubelet", "Normal  Pulled  7s (x3 over 9s)  kubelet", False),
])
def test_ages_are_forgiven_only_in_an_age_column(expected, actual, same):
    """(c) A line's last word is not an age unless it sits under AGE."""
    assert matches(expected.split("\n"), actual.split("\n")) is same


def test_a_table_ends_at_a_blank_line():
    """(c) Below a table and a blank line, a word in the AGE column's place
    is not an age: `back-off 10s` is not `back-off 40s`."""
    table = ["NAME   AGE", "web    3s", ""]
    assert not matches(table + ["back-off   10s"], ["NAME   AGE", "web    9s", "", "back-off   40s"])
    assert matches(table + ["back-off   10s"], ["NAME   AGE", "web    9s", "", "back-off   10s"])


def test_an_events_age_column_forgives_the_age_but_not_the_count():
    """(c) In `(xN over AGE)` the count matters, the age does not."""
    header = "  Type    Reason  Age              From     Message"
    shown = [header, "  Normal  Pulled  2m (x3 over 5m)  kubelet  pulled"]
    assert matches(shown, [header, "  Normal  Pulled  7s (x3 over 9s)  kubelet  pulled"])
    assert not matches(shown, [header, "  Normal  Pulled  7s (x4 over 9s)  kubelet  pulled"])


def test_background_excerpts_match_in_order(tmp_path, monkeypatch):
    """(d) Pending -> ContainerCreating -> Running is checked in that order."""
    monkeypatch.setattr(runner, "OUTPUT_WAIT", 3)   # a missing line fails at the deadline: keep it short
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ echo Running; echo Pending; echo ContainerCreating; sleep 30
```

```console
Pending
ContainerCreating
Running
```
""")
    assert failure is not None and "missing lines:\nRunning" in str(failure)


def test_one_real_line_stands_for_one_readme_line(tmp_path, monkeypatch):
    """(d) Two "container died" lines need two real ones, and an excerpt
    cannot use a line a later excerpt needs twice."""
    monkeypatch.setattr(runner, "OUTPUT_WAIT", 3)   # a missing line fails at the deadline: keep it short
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ echo 'container died'; echo next; sleep 30
```

```console
container died
container died
```
""")
    assert failure is not None and "missing lines:\ncontainer died" in str(failure)
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ echo 'container died'; echo next; sleep 30
```

```console
container died
```

```console
container died
```
""")
    assert failure is not None


def test_an_any_order_excerpt_still_uses_each_line_once(tmp_path):
    """(d) Logs of parallel work may say so; each real line is still used once."""
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ echo 'b done'; echo 'a done'; sleep 30
```

<!-- lesson: any order -->
```console
a done
b done
```
""")
    assert failure is None


def test_an_interrupted_terminal_must_exit_with_the_code_the_readme_says(tmp_path):
    """(e) After Ctrl-C the exit code counts: 0 unless `interrupt exits N`."""
    lesson = """\
<!-- lesson: background -->
```console
$ trap 'echo bye; exit 3' INT; echo up; while true; do sleep 0.1; done
up
```

<!-- lesson: {marker} -->
```console
bye
```
"""
    _, failure = run_lesson(tmp_path, lesson.format(marker="interrupt"))
    assert failure is not None and "exited with code 3 after Ctrl-C, but the README expects 0" in str(failure)
    _, failure = run_lesson(tmp_path, lesson.format(marker="interrupt exits 3"))
    assert failure is None


def test_a_loopback_or_any_address_is_compared_as_written(tmp_path):
    """(f) 127.0.0.1:8080 is not 0.0.0.0:8080, even the first time."""
    assert not matches(["listening on 127.0.0.1:8080"], ["listening on 0.0.0.0:8080"])
    assert matches(["listening on 127.0.0.1:8080"], ["listening on 127.0.0.1:8080"])
    assert matches(["pod at 10.0.0.2"], ["pod at 172.17.0.4"])


@pytest.mark.parametrize("real", ["127.0.0.1", "0.0.0.0"])
def test_an_address_that_varies_cannot_stand_for_a_fixed_one(real):
    """(f) The other way round: a README address that varies binds only to
    a real one that varies, so `10.0.0.2:8080` is not `127.0.0.1:8080`."""
    assert not matches(["listening on 10.0.0.2:8080"], [f"listening on {real}:8080"])


def test_an_address_a_command_types_is_compared_as_written(tmp_path):
    """(f) An address the lesson types (a flag, a URL, a manifest) is
    configuration, fixed from the lesson's first step: the README cannot
    show it for an address it is not, nor another address for it."""
    lesson = """\
```console
$ printf 'Service kube-dns has IP 10.96.0.%s\\n' {octet}
Service kube-dns has IP {shown}
```

A later part of the lesson types the address:

```console
$ echo dig @10.96.0.10 > /dev/null
```
"""
    _, failure = run_lesson(tmp_path, lesson.format(octet=53, shown="10.96.0.10"))
    assert failure is not None and "README.md:2: the output differs" in failure
    _, failure = run_lesson(tmp_path, lesson.format(octet=10, shown="10.96.0.77"))
    assert failure is not None and "the README shows 10.96.0.77, an address that varies" in failure
    _, failure = run_lesson(tmp_path, lesson.format(octet=10, shown="10.96.0.10"))
    assert failure is None


def test_a_marker_alone_is_a_step_with_no_empty_box(tmp_path):
    """`kill` (and `interrupt`) with nothing printed need no empty block."""
    session, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ echo up; sleep 60
up
```

<!-- lesson: kill -->

Prose after the step.
""")
    assert failure is None
    assert session.backgrounds[0].exit_code() == -9


def test_a_lesson_in_parts_is_one_session_and_failures_name_the_part(tmp_path):
    """README.md then lesson-1-*.md, lesson-2-*.md ... (numeric order) are
    played as one session: state and background terminals carry over."""
    (tmp_path / "README.md").write_text("An index, no steps.\n")
    (tmp_path / "lesson-1-start.md").write_text("""\
```console
$ export COLOUR=blue
```

<!-- lesson: background -->
```console
$ echo serving; sleep 60
serving
```
""")
    (tmp_path / "lesson-2-go-on.md").write_text("""\
```console
$ echo "$COLOUR"
blue
```

<!-- lesson: interrupt exits 130 -->
""")
    (tmp_path / "lesson-10-last.md").write_text("""\
Some prose.

```console
$ echo red
green
```
""")
    files = runner.lesson_files(tmp_path)
    assert [f.name for f in files] == ["lesson-1-start.md", "lesson-2-go-on.md", "lesson-10-last.md"]
    session = Session(tmp_path, cwd=tmp_path)
    try:
        problem = runner.play(files, session)
    finally:
        session.close()
    assert problem is not None and problem.startswith(f"{tmp_path / 'lesson-10-last.md'}:4")
    assert session.backgrounds[0].interrupted


def test_markers_combine_with_commas(tmp_path):
    """`background, any order`: a program that starts several things at once."""
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background, any order -->
```console
$ echo 'node registered'; echo 'kubelet started'; sleep 30
kubelet started
node registered
```
""")
    assert failure is None


def test_a_failed_try_of_an_until_step_binds_nothing(tmp_path):
    """A try that fails leaves no bindings behind: the first try's 10.0.0.2
    (which failed on its second line) does not hold the second try to it."""
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: until 20s -->
```console
$ if test -e {tmp_path}/tried; then printf 'a 172.17.0.%s\\nb 172.17.0.%s\\n' 6 7; \\
  else touch {tmp_path}/tried; printf 'a 172.17.0.%s\\nb 172.17.0.%s\\n' 5 5; fi
a 10.0.0.2
b 10.0.0.3
```
""")
    assert failure is None


def test_a_mistake_in_a_later_part_fails_before_anything_runs(tmp_path):
    """Every part is read before the first step runs, so a marker the runner
    does not know in part 2 stops the lesson before part 1 starts a cluster."""
    (tmp_path / "lesson-1-start.md").write_text("```console\n$ touch started\n```\n")
    (tmp_path / "lesson-2-more.md").write_text("<!-- lesson: backgroud -->\n```console\n$ true\n```\n")
    session = Session(tmp_path, cwd=tmp_path)
    try:
        with pytest.raises(ValueError, match=re.escape("lesson-2-more.md:1: unknown lesson marker 'backgroud'")):
            runner.play(runner.lesson_files(tmp_path), session)
    finally:
        session.close()
    assert not (tmp_path / "started").exists()


def test_a_terminal_started_in_one_part_is_named_by_its_part(tmp_path):
    """A background command that dies in part 2 is named by the part and
    line that started it (part 1), and the failure by the step in part 2."""
    (tmp_path / "lesson-1-start.md").write_text(
        "<!-- lesson: background -->\n```console\n$ echo up; sleep 1; exit 4\nup\n```\n")
    (tmp_path / "lesson-2-wait.md").write_text("Wait.\n\n```console\n$ sleep 2\n```\n")
    session = Session(tmp_path, cwd=tmp_path)
    try:
        problem = runner.play(runner.lesson_files(tmp_path), session)
    finally:
        session.close()
    assert problem.startswith(f"{tmp_path / 'lesson-2-wait.md'}:4: the background command of "
                              f"{tmp_path / 'lesson-1-start.md'}:3 (`echo up; sleep 1; exit 4`) has exited with code 4")


def test_a_failure_names_a_chapter_file_as_the_learner_sees_it():
    """Inside the repository, `02-apiserver/lesson-2-x.md:123`, not an absolute path."""
    assert runner._display(str(runner.ROOT / "02-apiserver" / "lesson-2-x.md")) == "02-apiserver/lesson-2-x.md"
    assert runner._display("/elsewhere/README.md") == "/elsewhere/README.md"


# --- what a lesson may not pass with (issue 35) ---

# A background program that logs as common/log.py does, then waits.
def logging_server(*lines: str) -> str:
    printed = "; ".join(f"echo '2020-01-01T00:00:00Z demo {line}'" for line in lines)
    return f"sh -c \"{printed}; sleep 30\""


def test_an_error_the_readme_does_not_show_fails_the_excerpt(tmp_path):
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
$ {logging_server('INFO starting', 'ERROR cannot bind', 'INFO serving')}
... demo INFO starting
... demo INFO serving
```
""")
    assert "printed lines the README does not show, and they are trouble" in str(failure)
    assert "demo ERROR cannot bind" in str(failure)


def test_an_error_the_readme_shows_passes(tmp_path):
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
$ {logging_server('INFO starting', 'ERROR manifest skipped', 'INFO serving')}
... demo INFO starting
... demo ERROR manifest skipped
... demo INFO serving
```
""")
    assert failure is None


def test_a_traceback_between_excerpt_lines_fails_with_its_lines(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ python3 -c "import threading, time; print('up', flush=True); threading.Thread(target=lambda: 1/0).start(); time.sleep(0.5); print('still up', flush=True); time.sleep(30)"
up
still up
```
""")
    assert "Traceback (most recent call last):" in str(failure)
    assert "ZeroDivisionError" in str(failure)


def test_a_level_the_lesson_marks_unexpected_fails_and_others_pass(tmp_path):
    lesson = """\
<!-- lesson: background{marker} -->
```console
$ {server}
... demo INFO serving
```
"""
    server = logging_server("WARNING slow disk", "INFO serving")
    _, failure = run_lesson(tmp_path, lesson.format(marker="", server=server))
    assert failure is None
    _, failure = run_lesson(tmp_path, lesson.format(marker=", unexpected WARNING", server=server))
    assert "demo WARNING slow disk" in str(failure)


def test_an_error_in_a_terminals_last_words_fails_the_interrupt(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ python3 -c "import signal, sys, time; signal.signal(signal.SIGINT, lambda *a: (print('x demo ERROR lost a write', flush=True), sys.exit(0))); print('serving', flush=True); time.sleep(60)"
serving
```

<!-- lesson: interrupt -->
""")
    assert "x demo ERROR lost a write" in str(failure)


def test_a_pipeline_fails_when_any_of_its_commands_fails(tmp_path):
    _, failure = run_lesson(tmp_path, "```console\n$ false | cat\n```\n")
    assert "exited with code 1" in str(failure)


@pytest.mark.parametrize("second, passes", [("$((10 + 47))", True), ("58", False)])
def test_bound_numbers_must_repeat_as_the_readme_repeats_them(tmp_path, second, passes):
    """`bind numbers`: "resourceVersion equals ModRevision" is checked."""
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: bind numbers -->
```console
$ echo '"CreateRevision" : 56'; echo '"ModRevision" : 57'
"CreateRevision" : 12
"ModRevision" : 13
$ echo {second}
13
```
""")
    assert (failure is None) == passes, failure


def test_bound_numbers_that_differ_in_the_readme_must_differ(tmp_path):
    _, failure = run_lesson(tmp_path, """\
<!-- lesson: bind numbers -->
```console
$ echo 'created 57, modified 57'
created 12, modified 13
```
""")
    assert "two different numbers, 12 and 13, but both are 57" in str(failure)


def test_a_failure_report_keeps_the_kubelets_log_and_describes_the_pods(tmp_path, monkeypatch):
    """A flake leaves what a maintainer needs: the kubelet's last lines and
    `kubectl describe` of the pods the failing command was about."""
    monkeypatch.setattr(runner, "OUTPUT_WAIT", 3)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text("#!/bin/sh\necho \"kubectl was asked: $*\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    (bin_dir / "kubelet.py").write_text("#!/bin/sh\necho 'x kubelet INFO default/web: pod started'\nsleep 30\n")
    (bin_dir / "kubelet.py").chmod(0o755)
    _, failure = run_lesson(tmp_path, f"""\
```console
$ export PATH={bin_dir}:$PATH
```

<!-- lesson: background -->
```console
$ kubelet.py --node-name runner-test-node
... kubelet INFO default/web: pod started
```

```console
$ kubectl logs -n website-system -l app=website-controller
controllers running
```
""")
    report = str(failure)
    assert "the output differs from the README" in report
    assert "the kubelet on master" in report and "default/web: pod started" in report
    assert "kubectl was asked: get pods -A -o wide" in report
    assert "kubectl was asked: describe pods -n website-system -l app=website-controller" in report


def test_an_error_after_a_terminals_last_excerpt_fails_the_lesson(tmp_path):
    """A terminal left running to the end is stopped after the lesson; what
    it printed after its last excerpt is checked then."""
    _, failure = run_lesson(tmp_path, f"""\
<!-- lesson: background -->
```console
$ {logging_server('INFO serving', 'ERROR lost the watch')}
... demo INFO serving
```

```console
$ echo done
done
```
""")
    assert "(end of the lesson)" in str(failure) and "demo ERROR lost the watch" in str(failure)


def test_a_failure_report_says_how_docker_ended_the_lessons_containers(tmp_path):
    """Docker's start, kill, die, oom and destroy events of the lesson's
    nodes' containers (followed from the lesson's start into a file), at the
    kubelets' time format: who killed them shows as a signal, an exit code
    or an OOM (other nodes' containers left out)."""
    import failure_report

    events = tmp_path / "docker-events.log"
    events.write_text("1796680935 kill node1 web-1 httpd exitCode= signal=9\n"
                      "1796680935 die node1 web-1 httpd exitCode=137 signal=\n"
                      "1796680936 die test-5d1e other app exitCode=0 signal=\n")
    report = failure_report.docker_endings({"node1", "node2"}, events)
    assert report.splitlines() == ["2026-12-07T22:02:15Z kill node1 web-1 httpd exitCode= signal=9",
                                   "2026-12-07T22:02:15Z die node1 web-1 httpd exitCode=137 signal="]
    assert failure_report.docker_endings(set(), events) is None      # no kubelets, nothing to tell


def test_only_our_kubelets_nodes_are_cleaned_up_after_a_lesson(tmp_path):
    """After a lesson the runner removes the containers its kubelets left,
    by node name: only for kubelets that were 01-kubelet/kubelet.py. A
    stand-in named like a lesson's node once had the runner remove every
    container of the lesson running beside it (CI, 2026-12-07)."""
    session, failure = run_lesson(tmp_path, """\
<!-- lesson: background -->
```console
$ sh -c 'echo kubelet.py --node-name node1 started; sleep 30'
kubelet.py --node-name node1 started
```

```console
$ echo 'python 01-kubelet/kubelet.py --node-name would-be-ours --help' > /dev/null
```
""")
    assert failure is None, failure
    assert session.node_names == {"would-be-ours"}
