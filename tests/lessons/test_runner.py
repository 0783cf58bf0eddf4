"""The lesson runner's own tests, on small READMEs written for each case."""
from __future__ import annotations

import os
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
$ date -u +%Y-%m-%dT%H:%M:%SZ; echo "pod IP 10.1.2.3, age $((RANDOM % 50 + 1))s, id 0123456789ab"
2020-01-01T00:00:00Z
pod IP 172.17.0.9, age 3s, id fedcba987654
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
    assert f"{tmp_path}/README.md:6: the output of `echo two` differs from the README" in message
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
    assert "has exited; its output:\nup\ncrashed" in str(failure)


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
