"""Running foreign code (a benchmark's ``tools.py``, model-written pack code) in a sandboxed
child process with a time limit.

Foreign code may hang, crash, write where it should not, open sockets, look for secrets, fork
helpers that outlive it or try to undo its confinement. The audit, the import and the
generation gates run it in a child that:

* has no secrets: sopgym's own (the service secret, the admin token, secrets handed on a pipe)
  and any environment variable whose name says key, token, secret or password are removed,
  and no descriptor of the caller's but its answer pipe and stdio;
* works in a scratch folder of its own (removed afterwards, also ``TMPDIR``), not the
  caller's;
* has resource limits it cannot raise (hard = soft): CPU seconds (the time limit), address
  space (current + 2 GiB), file size (64 MiB), no core file and, where the kernel applies it
  (not to root), no new process or thread;
* as root (Linux), its own PID, mount and network namespaces: the code runs as PID 2 under a
  small PID 1 of ours, so every process it forks dies when it ends (the kernel kills the rest
  of a namespace when its PID 1 exits); a fresh ``/proc`` shows only the namespace (no other
  process's memory or namespace files); with ``read_only`` (the import and the audit) every
  mount is read-only but the scratch folder; the network holds only a loopback that is down;
* then holds no capability (the bounding set emptied too) and ``no_new_privs``: it cannot
  remount, mount, ``setns`` back into the caller's namespaces, trace other processes or raise
  a limit, and no program it runs gains a privilege;
* without root: a network namespace where the kernel lets unprivileged users make one (a user
  namespace around it), and no new process at all (``RLIMIT_NPROC`` = 0);
* is watched: a child that dies before answering (``os._exit``, a signal, a limit) is
  reported at once as :class:`IsolatedCrash`, one that does not answer in time is killed (its
  namespace with it) and reported as :class:`IsolatedTimeout`.

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
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TypeVar, cast

from sopgym.core.access import drop_capabilities, forbid_new_privileges, make_undumpable
from sopgym.core.exceptions import DataError, InfrastructureError

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 600.0
MAX_FILE_BYTES = 64 * 2**20
EXTRA_ADDRESS_SPACE = 2 * 2**30
EXIT_GRACE_S = 5.0  # after its answer, how long the child may take to end its namespace
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
DIED = "died"  # PID 1's word for code that died before answering, with its exit status


@dataclass(frozen=True)
class ForeignCall:
    """What the sandboxed child runs, and the sandbox it runs in."""

    function: Callable[..., Any]
    args: tuple[Any, ...]
    scratch: Path
    timeout_s: float
    read_only: bool


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
    job = ForeignCall(function, args, scratch, timeout_s, read_only)
    child = context.Process(target=_child, args=(send, job), daemon=True)
    answered = False
    try:
        child.start()
        send.close()
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            ready = wait([receive, child.sentinel], max(0.0, left)) if left > 0 else []
            if receive in ready or receive.poll(0):
                answered = True
                try:
                    kind, value = receive.recv()
                except EOFError:  # the child closed the pipe and died without a word
                    raise IsolatedCrash(_death(child)) from None
                if kind == DIED:
                    raise IsolatedCrash(_death_of(value))
                if kind == "raise":
                    raise value
                return cast(T, value)
            if child.sentinel in ready:
                raise IsolatedCrash(_death(child))
            if left <= 0:
                raise IsolatedTimeout(f"no answer within {timeout_s:g} s (killed)")
    finally:
        if answered:  # its PID 1 ends the namespace, and everything in it, before the child ends
            child.join(EXIT_GRACE_S)
        if child.is_alive():
            child.kill()  # its namespace's PID 1 dies with it (PR_SET_PDEATHSIG), then the rest
        child.join(5)
        receive.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _death(child: Any) -> str:
    child.join(1)
    return _death_of(child.exitcode)


def _death_of(code: int | None) -> str:
    """Words for an exit code as multiprocessing gives it (a signal's number negated)."""
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        why = " (CPU time limit)" if name == "SIGXCPU" else ""
        return f"the child was killed by {name}{why} before answering"
    return f"the child exited with code {code} before answering"


def _child(send: Connection, job: ForeignCall) -> None:
    """The forked child the caller watches and kills: it makes the namespaces (as root), forks
    the confined process (their PID 1 as root, else the code itself), waits for it and says
    how it died when it died without a word. It closes none of its descriptors: one of them
    tells the caller it is alive."""
    own_pids = _unshare_namespaces()
    confined = os.fork()
    if confined == 0:
        if own_pids:
            _namespace_init(send, job)
        keep = send.fileno()
        _answer(send, job, lambda: confine(job.scratch, job.timeout_s, job.read_only, keep))
        os._exit(0)
    _, status = os.waitpid(confined, 0)
    _tell_an_early_death(send, status)
    os._exit(0)


def _namespace_init(send: Connection, job: ForeignCall) -> None:
    """PID 1 of the new PID namespace: confine, fork the code as PID 2, wait for it, say how it
    died when it died without answering, and exit, which kills whatever it left behind."""
    # the caller's kill of our parent reaches us (a kill in the microseconds before this
    # line leaves the code its CPU limit, and the namespace ends with it)
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    make_undumpable()  # PID 2, same user, cannot read our memory (a copy of the caller's)
    try:
        confine(job.scratch, job.timeout_s, job.read_only, keep=send.fileno())
    except BaseException as error:  # a sandbox that cannot be made: said, never half-run
        _send(send, ("raise", error))
        os._exit(0)
    code = os.fork()
    if code == 0:
        _answer(send, job, lambda: None)
        os._exit(0)
    while True:  # reap everything; orphans of the code are re-parented to us
        pid, status = os.waitpid(-1, 0)
        if pid == code:
            break
    _tell_an_early_death(send, status)
    os._exit(0)


def _tell_an_early_death(send: Connection, status: int) -> None:
    """How the confined process died, when it died before answering (a clean exit follows
    its answer): the caller reports it as the crash."""
    exit_code = os.waitstatus_to_exitcode(status)
    if exit_code != 0:
        _send(send, (DIED, exit_code))


def _answer(send: Connection, job: ForeignCall, setup: Callable[[], Any]) -> None:
    try:
        setup()
        answer: tuple[str, Any] = ("return", job.function(*job.args))
    except BaseException as error:  # handed to the parent, never lost here
        answer = ("raise", error)
    _send(send, answer)


def _send(send: Connection, answer: tuple[str, Any]) -> None:
    try:
        payload = pickle.dumps(answer)
    except Exception:  # an unpicklable answer or exception: its words still come back
        payload = pickle.dumps(("raise", RuntimeError(f"{answer[0]}: {answer[1]!r}"[:2000])))
    send.send_bytes(payload)


def confine(
    scratch: Path, timeout_s: float, read_only: bool = False, keep: int | None = None
) -> dict[str, bool]:
    """Sandbox this process as the module says (in the namespaces :func:`_unshare_namespaces`
    made, when it made them); what held, by name. ``keep``: the one descriptor past stdio
    that stays open (the answer pipe)."""
    held = {"secrets_removed": _forget_secrets(), "scratch_folder": True}
    if keep is not None:
        _close_descriptors_but(keep)
    pid_namespace = os.getpid() == 1
    held["own_proc"] = pid_namespace and _mount_own_proc()
    held["read_only_fs"] = read_only and pid_namespace and _read_only_but(scratch)
    os.chdir(scratch)
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = str(scratch)
    held.update(_limit(timeout_s))
    held["no_new_privs"] = forbid_new_privileges()
    held["no_capabilities"] = drop_capabilities()
    return held


def _forget_secrets() -> bool:
    from sopgym.core import access

    access._handed = {}  # secrets this process was handed on a pipe
    for name in list(os.environ):  # sopgym's own are among them (SOPGYM_SERVICE_SECRET, ...)
        if any(word in name.upper() for word in SECRET_WORDS):
            del os.environ[name]
    return True


def _close_descriptors_but(keep: int) -> None:
    """Close every descriptor the caller had open (its sockets, files, namespace handles)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, max(keep + 1, os.sysconf("SC_OPEN_MAX")))


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _unshare_namespaces() -> bool:
    """As root: new PID, mount and network namespaces (the PID one for our children); whether
    they were made. Otherwise a network namespace in a new user namespace where the kernel
    lets unprivileged users make one (no PID namespace: ``RLIMIT_NPROC`` = 0 forbids forks)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if os.geteuid() == 0:
        return libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET) == 0
    libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)
    return False


def _mount_own_proc() -> bool:
    """Mounts private to our mount namespace, and a ``/proc`` of our PID namespace over the
    caller's: no other process, its memory or its namespace files in sight."""
    libc = _libc()
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    return libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0


def _read_only_but(scratch: Path) -> bool:
    """Every mount read-only but ``scratch`` (and ``/proc``, our own); whether ``/`` is."""
    libc = _libc()
    target = bytes(scratch)
    if libc.mount(target, target, None, MS_BIND, None) != 0:
        return False
    root_done = False
    for point in _mount_points():
        if point == str(scratch) or point == "/proc" or point.startswith("/proc/"):
            continue
        kept = 0  # a remount drops the flags it does not name: keep these
        with contextlib.suppress(OSError):
            kept = os.statvfs(point).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept
        done = libc.mount(None, point.encode(), None, flags, None) == 0
        root_done = root_done or (point == "/" and done)
    return root_done


def _mount_points() -> list[str]:
    """This namespace's mount points, parents first, as mountinfo lists them (unescaped)."""
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    escaped = [line.split()[4] for line in lines]
    return [point.encode().decode("unicode_escape") for point in escaped]


def _limit(timeout_s: float) -> dict[str, bool]:
    """CPU seconds, address space, file size, no core file and (where the kernel applies it)
    processes, each with its hard limit lowered to it: no raising it back."""
    held = {}
    cpu = int(timeout_s) + 1
    for name, limit, value in (
        ("cpu_limit", resource.RLIMIT_CPU, cpu),
        ("memory_limit", resource.RLIMIT_AS, _address_space() + EXTRA_ADDRESS_SPACE),
        ("file_size_limit", resource.RLIMIT_FSIZE, MAX_FILE_BYTES),
        ("no_core_file", resource.RLIMIT_CORE, 0),
    ):
        held[name] = _set_limit(limit, value)
    # root ignores RLIMIT_NPROC; for anyone else 0 means no fork and no new thread
    held["process_limit"] = os.geteuid() != 0 and _set_limit(resource.RLIMIT_NPROC, 0)
    return held


def _set_limit(limit: int, value: int) -> bool:
    _, hard = resource.getrlimit(limit)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(limit, (value, value))
        return True
    return False


def _address_space() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0
