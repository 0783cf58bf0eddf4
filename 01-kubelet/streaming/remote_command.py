"""exec and attach: a WebSocket from the API server to a process's stdio in Docker.

kubectl 1.30+ speaks the channel protocol v5.channel.k8s.io: every binary
message starts with a byte naming its channel.

    0 stdin     client -> process           3 error   one Status (JSON), then the end
    1 stdout    process -> client           4 resize  {"Width": 80, "Height": 24}
    2 stderr    process -> client         255 close   v5: "channel N is done" (stdin EOF)

v4.channel.k8s.io is the same without channel 255 (so stdin cannot end).
The kubelet's query names its streams as Kubernetes' kubelet does:
input, output, error, tty (1 or 0) and command (repeated).
"""
from __future__ import annotations

import json
import socket
import struct
import threading
from dataclasses import dataclass

import docker.errors

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")     # our preference, best first
SUCCESS = {"metadata": {}, "status": "Success"}


@dataclass(frozen=True)
class Options:
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    command: tuple[str, ...]


def options_from(args) -> Options:
    flag = lambda name: args.get(name) in ("1", "true")      # noqa: E731
    tty = flag("tty")
    return Options(stdin=flag("input"), stdout=flag("output"), stderr=flag("error") and not tty,
                   tty=tty, command=tuple(args.getlist("command")))


def exit_status(code: int, command: tuple[str, ...]) -> dict:
    """What Kubernetes' kubelet writes on the error channel for a failed
    command; kubectl reads the code from the cause and exits with it."""
    return {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


class Session:
    """One exec or attach: the WebSocket on one side, Docker's socket on
    the other. The request's thread carries output and the final status;
    a second thread carries stdin, resizes and the close signal."""

    def __init__(self, ws, runtime, container_id: str, options: Options):
        self.ws, self.runtime, self.container_id, self.options = ws, runtime, container_id, options
        self.exec_id: str | None = None

    def run_exec(self) -> None:
        try:
            self.exec_id, self.docker = self.runtime.exec_stream(
                self.container_id, list(self.options.command), self.options.stdin, self.options.tty)
        except docker.errors.APIError as error:      # the container stopped a moment ago, say
            return self._fail(f"failed to exec in container: {error.explanation or error}")
        self._relay(raw=self.options.tty)
        code = self.runtime.exec_exit_code(self.exec_id)
        self._finish(SUCCESS if not code else exit_status(code, self.options.command))

    def run_attach(self) -> None:
        try:
            tty, self.docker = self.runtime.attach_stream(self.container_id)
        except docker.errors.APIError as error:
            return self._fail(f"failed to attach to container: {error.explanation or error}")
        self._relay(raw=tty)
        self._finish(SUCCESS)

    # [START exec-keystroke-in]
    def _from_client(self) -> None:
        """Client -> process: stdin bytes, terminal resizes, stdin's end."""
        try:
            while (message := self.ws.receive()) is not None:
                if not message:
                    continue
                channel, data = message[0], message[1:]
                if channel == STDIN and self.options.stdin:
                    self.docker.sock.sendall(data)             # a keystroke, into docker exec's stdin
                elif channel == RESIZE:
                    self._resize(data)
                elif channel == CLOSE and data[:1] == bytes([STDIN]):
                    self.docker.sock.shutdown(socket.SHUT_WR)   # EOF: `cat` ends, `sh` exits
        except OSError:
            pass                                   # the process's side is closed: nothing to write to
        finally:
            # kubectl has gone (or said goodbye): stop waiting for the process's output.
            _shut(self.docker.sock)
    # [END exec-keystroke-in]

    def _resize(self, data: bytes) -> None:
        """A terminal's new size, {"Width": 100, "Height": 30}; a malformed one is ignored, not fatal."""
        try:
            size = json.loads(data)
            self.runtime.resize(self.exec_id, self.container_id, int(size["Width"]), int(size["Height"]))
        except (ValueError, KeyError, TypeError, docker.errors.APIError):
            pass

    # [START exec-keystroke-out]
    def _relay(self, raw: bool) -> None:
        """Process -> client, until the process closes its output. With a
        TTY Docker sends the terminal's bytes as they are (stdout); without,
        each piece has an 8-byte header: stream (1 stdout, 2 stderr), 0, 0,
        0, then the length (big-endian)."""
        self.input = threading.Thread(target=self._from_client, daemon=True, name="exec-stdin")
        self.input.start()
        pending = b""
        try:
            while chunk := _recv(self.docker.sock):
                if raw:
                    self.ws.send(bytes([STDOUT]), chunk)       # the echo of the keystroke, back out
                    continue
                pending += chunk
                while len(pending) >= 8:
                    stream, length = struct.unpack(">BxxxI", pending[:8])
                    if len(pending) < 8 + length:
                        break
                    channel = STDERR if stream == 2 else STDOUT
                    self.ws.send(bytes([channel]), pending[8:8 + length])
                    pending = pending[8 + length:]
        except OSError:
            pass                  # kubectl went away mid-output
    # [END exec-keystroke-out]

    def _fail(self, message: str) -> None:
        """Nothing started: the Status says why, and the WebSocket closes."""
        failure = {"metadata": {}, "status": "Failure", "reason": "InternalError", "message": message}
        self.ws.send(bytes([ERROR]) + json.dumps(failure).encode())
        self.ws.close()

    def _finish(self, status: dict) -> None:
        """The Status on the error channel, then the WebSocket's close;
        kubectl reads the exit code from it and ends."""
        try:
            self.ws.send(bytes([ERROR]) + json.dumps(status).encode())
        except OSError:
            pass                          # kubectl has gone already: nobody to tell
        self.ws.close()
        self.input.join(timeout=2)        # the client's answering close frame ends the stdin thread
        for sock in (self.ws.sock, self.docker.sock):
            _shut(sock)                   # wakes a thread still blocked reading it
        self.docker.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(256 * 1024)
    except OSError:
        return b""


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
