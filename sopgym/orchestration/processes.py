"""Starting sopgym's servers as real subprocesses on free loopback ports, and stopping them.

Every child runs in its own process group and is killed with it, on normal exit, on an
exception, on Ctrl-C and on SIGTERM, so a run never leaves servers behind.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from sopgym.core.access import hand_over
from sopgym.core.exceptions import InfrastructureError


class StartupError(InfrastructureError, RuntimeError):
    """A child process exited or never became ready; carries the tail of its log."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ManagedProcess:
    """A child process whose output goes to a log file.

    With ``pipes`` its stdin and stdout are pipes instead (agent workers take jobs and give
    reports as JSON lines on them: :mod:`.dispatch`); stderr still goes to the log.
    ``secrets`` reach the child on a pipe, never in its environment
    (:func:`sopgym.core.access.hand_over`); ``cwd`` is its working folder.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        ready_url: str | None = None,
        pipes: bool = False,
        secrets: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name, self.argv, self.log_path, self.ready_url = name, list(argv), log_path, ready_url
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the process
        handed_env, handed = hand_over(secrets) if secrets else ({}, None)
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE if pipes else self._log,
                stderr=self._log if pipes else subprocess.STDOUT,
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                env={**os.environ, **(env or {}), **handed_env},
                preexec_fn=functools.partial(_detach_but_die_with_parent, os.getpid()),
                text=pipes,
                bufsize=1 if pipes else -1,
                pass_fds=(handed,) if handed is not None else (),
                cwd=cwd,
            )
        finally:
            if handed is not None:
                os.close(handed)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.popen.poll() is not None:
                    raise StartupError(
                        f"{self.name} exited with code {self.popen.returncode}:\n{self.log_tail()}"
                    )
                try:
                    if self.ready_url is None or client.get(self.ready_url).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
        raise StartupError(f"{self.name} not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def note(self, text: str) -> None:
        """Add a line of the parent's own to the child's log."""
        with contextlib.suppress(OSError, ValueError):
            self._log.write(text.encode(errors="replace") + b"\n")
            self._log.flush()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = 5.0) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()


def _detach_but_die_with_parent(parent: int) -> None:
    """Own process group (so a group kill reaches the child's own children), yet die with us.

    On Linux, PR_SET_PDEATHSIG makes the kernel SIGTERM the child when its parent dies, even
    by SIGKILL, so servers are never orphaned. A parent that died between the fork and the
    prctl sent no signal: the child sees it has been re-parented and leaves at once. Elsewhere
    only the process group is set.
    """
    os.setsid()
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
        if os.getppid() != parent:
            os._exit(1)


def sopgym_command(*args: str) -> list[str]:
    """The argv that runs a sopgym CLI command in a child Python process."""
    return [sys.executable, "-m", "sopgym", *args]


class ProcessGroup:
    """Owns a set of children; ``with`` guarantees they are all stopped."""

    def __init__(self) -> None:
        self.children: list[ManagedProcess] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        ready_url: str | None = None,
        pipes: bool = False,
        secrets: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        child = ManagedProcess(name, argv, log_path, env, ready_url, pipes, secrets, cwd)
        self.children.append(child)
        return child

    def stop_all(self) -> None:
        for child in reversed(self.children):
            child.stop()
        self.children.clear()

    def __enter__(self) -> ProcessGroup:
        self._previous = signal.getsignal(signal.SIGTERM)
        if self._previous in (signal.SIG_DFL, None):
            # SIGTERM would otherwise kill us without running __exit__ and orphan the children
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
        if self._previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
