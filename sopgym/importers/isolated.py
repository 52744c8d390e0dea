"""Running foreign code (a benchmark's ``tools.py``, model-written pack code) in a sandboxed
child process with a time limit.

Foreign code may hang, crash, write where it should not, open sockets or look for secrets.
The audit, the import and the generation gates run it in a child that:

* has no secrets: sopgym's own (the service secret, the admin token, secrets handed on a pipe)
  and any environment variable whose name says key, token, secret or password are removed;
* works in a scratch folder of its own (removed afterwards), not the caller's;
* has resource limits: CPU seconds (the time limit), address space (current + 2 GiB), file
  size (64 MiB) and, where the kernel applies it (not to root), no new process or thread;
* has no network where the OS allows: a network namespace of its own (root, or unprivileged
  user namespaces), holding only a loopback that is down;
* sees the file system read-only but for its scratch folder, where it runs as root (a mount
  namespace of its own) and ``read_only`` is asked (the import and the audit; the generation
  gates write the pack's data);
* is watched: a child that dies before answering (``os._exit``, a signal, a limit) is
  reported at once as :class:`IsolatedCrash`, one that does not answer in time is killed and
  reported as :class:`IsolatedTimeout`.

The child is forked
(milliseconds, with sopgym already imported) where the platform can, spawned elsewhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TypeVar, cast

from sopgym.core.exceptions import DataError, InfrastructureError

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 600.0
MAX_FILE_BYTES = 64 * 2**20
EXTRA_ADDRESS_SPACE = 2 * 2**30
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18


class IsolatedTimeout(InfrastructureError, TimeoutError):
    """The child did not finish in time (and was killed)."""


class IsolatedCrash(DataError, RuntimeError):
    """The child died before answering (it exited, or a signal or a limit killed it)."""


def run_isolated(
    function: Callable[..., T],
    args: tuple[Any, ...],
    timeout_s: float,
    read_only: bool = False,
) -> T:
    """``function(*args)`` in a sandboxed child; its exceptions re-raise here, a child that
    dies before answering raises :class:`IsolatedCrash` at once, and past ``timeout_s`` the
    child is killed and :class:`IsolatedTimeout` raised."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context: Any = multiprocessing.get_context(method)
    scratch = Path(tempfile.mkdtemp(prefix="sopgym-foreign-"))
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_child, args=(send, function, args, scratch, timeout_s, read_only), daemon=True
    )
    try:
        child.start()
        send.close()
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            ready = wait([receive, child.sentinel], max(0.0, left)) if left > 0 else []
            if receive in ready or receive.poll(0):
                try:
                    kind, value = receive.recv()
                except EOFError:  # the child closed the pipe and died without a word
                    raise IsolatedCrash(_death(child)) from None
                if kind == "raise":
                    raise value
                return cast(T, value)
            if child.sentinel in ready:
                raise IsolatedCrash(_death(child))
            if left <= 0:
                raise IsolatedTimeout(f"no answer within {timeout_s:g} s (killed)")
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _death(child: Any) -> str:
    child.join(1)
    code = child.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        why = " (CPU time limit)" if name == "SIGXCPU" else ""
        return f"the child was killed by {name}{why} before answering"
    return f"the child exited with code {code} before answering"


def _child(
    send: Connection,
    function: Callable[..., Any],
    args: tuple[Any, ...],
    scratch: Path,
    timeout_s: float,
    read_only: bool,
) -> None:
    try:
        confine(scratch, timeout_s, read_only)
        answer: tuple[str, Any] = ("return", function(*args))
    except BaseException as error:  # handed to the parent, never lost here
        answer = ("raise", error)
    try:
        payload = pickle.dumps(answer)
    except Exception:  # an unpicklable answer or exception: its words still come back
        payload = pickle.dumps(("raise", RuntimeError(f"{answer[0]}: {answer[1]!r}"[:2000])))
    send.send_bytes(payload)


def confine(scratch: Path, timeout_s: float, read_only: bool = False) -> dict[str, bool]:
    """Sandbox this (child) process as the module says; what held, by name."""
    held = {"secrets_removed": _forget_secrets(), "scratch_folder": True}
    held["network_namespace"] = _unshare_network()
    held["read_only_fs"] = read_only and _read_only_but(scratch)
    os.chdir(scratch)
    held.update(_limit(timeout_s))
    return held


def _forget_secrets() -> bool:
    from sopgym.core import access

    access._handed = {}  # secrets this process was handed on a pipe
    for name in list(os.environ):  # sopgym's own are among them (SOPGYM_SERVICE_SECRET, ...)
        if any(word in name.upper() for word in SECRET_WORDS):
            del os.environ[name]
    return True


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _unshare_network() -> bool:
    """A network namespace of our own: as root, or in a new user namespace where the kernel
    lets unprivileged users make one."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if os.geteuid() == 0 and libc.unshare(CLONE_NEWNET) == 0:
        return True
    return os.geteuid() != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0


def _read_only_but(scratch: Path) -> bool:
    """Every mount read-only in a mount namespace of our own, but ``scratch`` (root only)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    target = bytes(scratch)
    if libc.mount(target, target, None, MS_BIND, None) != 0:
        return False
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    root_done = False
    for point in mounts:
        if point == str(scratch) or point.startswith(("/proc", "/dev", "/sys")):
            continue
        done = libc.mount(None, point.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None) == 0
        root_done = root_done or (point == "/" and done)
    return root_done


def _limit(timeout_s: float) -> dict[str, bool]:
    """CPU seconds, address space, file size and (where the kernel applies it) processes."""
    held = {}
    cpu = int(timeout_s) + 1
    for name, limit, value in (
        ("cpu_limit", resource.RLIMIT_CPU, cpu),
        ("memory_limit", resource.RLIMIT_AS, _address_space() + EXTRA_ADDRESS_SPACE),
        ("file_size_limit", resource.RLIMIT_FSIZE, MAX_FILE_BYTES),
    ):
        held[name] = _set_limit(limit, value)
    # root ignores RLIMIT_NPROC; for anyone else 0 means no fork and no new thread
    held["process_limit"] = os.geteuid() != 0 and _set_limit(resource.RLIMIT_NPROC, 0)
    return held


def _set_limit(limit: int, value: int) -> bool:
    _, hard = resource.getrlimit(limit)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(limit, (value, hard))
        return True
    return False


def _address_space() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0
