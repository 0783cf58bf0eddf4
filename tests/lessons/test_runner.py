"""The lesson runner's own tests, on small READMEs written for each case."""
from __future__ import annotations

import os
import re
import time

import pytest

import runner
from runner import Session, lesson_document, matches


def run_lesson(tmp_path, text: str) -> tuple[Session, Exception | None]:
    readme = tmp_path / "README.md"
    readme.write_text(text)
    document = lesson_document(readme)
    session = Session(tmp_path, cwd=tmp_path)
    document.namespace["session"] = session
    try:
        for example in document.examples():
            example.evaluate()
    except AssertionError as failure:
        return session, failure
    finally:
        session.close()
    return session, None


def test_a_passing_lesson_keeps_shell_state_and_forgives_what_varies(tmp_path):
    _, failure = run_lesson(tmp_path, """\
Some prose.

```console
$ export GREETING=hello
$ cd /tmp && echo "$GREETING from $(pwd)"
hello from /tmp
$ date -u +%Y-%m-%dT%H:%M:%SZ; echo "pod IP 10.1.2.3, id 0123456789ab, age $((RANDOM % 50 + 1))s"
2020-01-01T00:00:00Z
pod IP 172.17.0.9, id fedcba987654, age 3s
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
$ echo "pod IP 10.0.0.7"
pod IP 172.17.0.2
$ echo "container sees 10.0.0.8"
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
