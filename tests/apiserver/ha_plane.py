"""ha_control_plane.py (`make ha`) run as a test runs it: on free ports, in a
directory of the test's own, stopped with Ctrl-C at the end. Shared by
test_ha_leaders.py and test_ha_chaos.py."""
from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

from ha_control_plane import ROOT
from polling import free_port, wait_for
from test_ha import _free_pairs


@contextlib.contextmanager
def running_plane(directory: Path):
    """Yields (directory, HAProxy's URL); each process's pid in DIR/NAME.pid."""
    port = free_port()
    output = open(directory / "output.txt", "w")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "02-apiserver" / "ha_control_plane.py"), "--dir", str(directory),
         "--port", str(port), "--etcd-ports", ",".join(map(str, _free_pairs(3))),
         "--apiserver-ports", ",".join(str(free_port()) for _ in range(2))],
        stdout=output, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        wait_for(lambda: "Ctrl-C stops it all" in (directory / "output.txt").read_text() or process.poll() is not None,
                 timeout=90, what="the control plane to start")
        assert process.poll() is None, (directory / "output.txt").read_text()
        yield directory, f"http://127.0.0.1:{port}"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0, (directory / "output.txt").read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        output.close()
