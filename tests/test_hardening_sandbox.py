"""Hardening (issue 36, point 2): a published tools.py runs in a sandboxed child. One that
reads the service secret, writes outside its folder, opens a socket or calls os._exit is
blocked or reported at once (the real loader, sopgym.importers.bridge.unimplemented). Issue 41,
point 4: as root too, one that remounts, goes back into the caller's network, leaves forked
children behind, raises its limits or reads another process's memory is stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from sopgym.core.access import hand_over
from sopgym.core.isolated import IsolatedCrash, run_isolated
from sopgym.importers.bridge import unimplemented

NOSY = """
import json, os, socket
seen = {{"secret": os.environ.get("SOPGYM_SERVICE_SECRET"), "cwd": os.getcwd()}}
try:
    open({outside!r}, "w").write("written by tools.py")
    seen["wrote"] = True
except OSError as error:
    seen["wrote"] = str(error)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    seen["connected"] = True
except OSError as error:
    seen["connected"] = str(error)
raise RuntimeError("SEEN" + json.dumps(seen))
"""


def _benchmark(tmp_path: Path, code: str) -> Path:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "tools.py").write_text(code)
    return folder


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def test_a_nosy_tools_py_sees_no_secret_writes_nothing_outside_and_reaches_no_socket(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOPGYM_SERVICE_SECRET", "the-stack-secret")
    outside = tmp_path / "outside.txt"
    code = NOSY.format(outside=str(outside), port=listener.getsockname()[1])
    folder = _benchmark(tmp_path, code)
    with pytest.raises(Exception, match="SEEN") as raised:
        run_isolated(unimplemented, (folder, ["a_tool"]), 60, read_only=True)
    seen = orjson.loads(str(raised.value).split("SEEN", 1)[1].split("\n")[0].rstrip("'\")"))
    assert seen["secret"] is None
    assert seen["cwd"] != os.getcwd() and "sopgym-foreign-" in seen["cwd"]
    if os.geteuid() != 0:
        pytest.skip("read-only mounts and the network namespace need root here (documented)")
    assert seen["wrote"] is not True and not outside.exists()
    assert seen["connected"] is not True


def test_a_tools_py_that_exits_is_a_crash_reported_at_once(tmp_path: Path) -> None:
    folder = _benchmark(tmp_path, "import os\nos._exit(3)\n")
    # a limit far past the test's: waiting for it would be the old behaviour's timeout
    with pytest.raises(IsolatedCrash, match="exited with code 3"):
        run_isolated(unimplemented, (folder, ["a_tool"]), 3600, read_only=True)


def _answer(value: int) -> int:
    return value * 2


def _fail() -> None:
    raise KeyError("missing")


def test_answers_and_exceptions_come_back_as_before() -> None:
    assert run_isolated(_answer, (21,), 60) == 42
    with pytest.raises(KeyError, match="missing"):
        run_isolated(_fail, (), 60)


# ---- issue 41, point 4: the sandbox holds as root ----
# Each hostile tools.py below tries one escape that worked as root before (the sandbox then
# kept every capability and shared the caller's PID namespace and /proc) and reports what it
# saw; the real loader runs it, as the import and the audit do.

ESCAPE_PRELUDE = """
import ctypes, json, os, resource, socket, time
libc = ctypes.CDLL(None, use_errno=True)
seen = {}
def report():
    raise RuntimeError("SEEN" + json.dumps(seen))
"""

REMOUNT_AND_WRITE = """
MS_REMOUNT, MS_BIND = 32, 4096
for point in ("/", {folder!r}):
    done = libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND, None)
    seen["remount " + point] = done == 0 or os.strerror(ctypes.get_errno())
try:
    open({outside!r}, "w").write("written by tools.py")
    seen["wrote"] = True
except OSError as error:
    seen["wrote"] = str(error)
report()
"""

BACK_INTO_THE_NETWORK = """
CLONE_NEWNET = 0x40000000
for how, opener in (("path", lambda: os.open("/proc/{pid}/ns/net", os.O_RDONLY)),
                    ("inherited descriptor", lambda: {fd})):
    try:
        fd = opener()
        joined = libc.setns(fd, CLONE_NEWNET)
        seen["setns by " + how] = joined == 0 or os.strerror(ctypes.get_errno())
    except OSError as error:
        seen["setns by " + how] = str(error)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    seen["connected"] = True
except OSError as error:
    seen["connected"] = str(error)
report()
"""

FORK_SURVIVORS = """
for _ in range(20):
    if os.fork() == 0:
        libc.prctl(15, b"{name}", 0, 0, 0)  # PR_SET_NAME: how the test finds them
        time.sleep(5)
        os._exit(0)
seen["forked"] = 20
report()
"""

RAISE_LIMITS_AND_MAP = """
import mmap
for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE"):
    limit = getattr(resource, name)
    soft, hard = resource.getrlimit(limit)
    try:
        resource.setrlimit(limit, (hard, hard))
        resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass
    seen[name] = resource.getrlimit(limit)[0] != soft  # raised?
try:
    mmap.mmap(-1, 20 * 2**30)
    seen["mapped 20 GiB"] = True
except (OSError, MemoryError, OverflowError) as error:
    seen["mapped 20 GiB"] = str(error)
report()
"""

READ_ANOTHER_PROCESS = """
found = False
try:
    mem = open("/proc/{pid}/mem", "rb", buffering=0)
    for line in open("/proc/{pid}/maps").read().splitlines():
        span, mode = line.split()[:2]
        if mode.startswith("rw"):
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                found = found or {secret!r}.encode() in mem.read(end - start)
            except OSError:
                pass
    seen["read"] = found
except OSError as error:
    seen["read"] = str(error)
report()
"""


def _escape(tmp_path: Path, code: str) -> dict:
    """What a hostile tools.py running ``code`` in the sandbox saw (as root only)."""
    if os.geteuid() != 0:
        pytest.skip("the sandbox's namespaces and dropped capabilities are its root mode")
    folder = _benchmark(tmp_path, ESCAPE_PRELUDE + code)
    with pytest.raises(Exception, match="SEEN") as raised:
        run_isolated(unimplemented, (folder, ["a_tool"]), 60, read_only=True)
    return orjson.loads(str(raised.value).split("SEEN", 1)[1].split("\n")[0].rstrip("'\")"))


def test_no_remount_as_root_and_no_write_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    seen = _escape(tmp_path, REMOUNT_AND_WRITE.format(folder=str(tmp_path), outside=str(outside)))
    assert seen["remount /"] == seen[f"remount {tmp_path}"] == "Operation not permitted", seen
    assert seen["wrote"] is not True and not outside.exists(), seen


def test_no_way_back_into_the_callers_network(tmp_path: Path, listener: socket.socket) -> None:
    own_network = os.open("/proc/self/ns/net", os.O_RDONLY)  # a descriptor the child inherits
    try:
        code = BACK_INTO_THE_NETWORK.format(
            pid=os.getpid(), fd=own_network, port=listener.getsockname()[1]
        )
        seen = _escape(tmp_path, code)
    finally:
        os.close(own_network)
    assert seen["setns by path"] is not True and seen["setns by inherited descriptor"] is not True
    assert seen["connected"] is not True, seen


def _named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
    return found


def test_no_forked_child_outlives_the_import(tmp_path: Path) -> None:
    name = f"sbx{os.getpid() % 100000}"
    seen = _escape(tmp_path, FORK_SURVIVORS.format(name=name))
    assert seen["forked"] == 20
    survivors = _named(name)
    for pid in survivors:  # the old sandbox's: stopped here, not left to act
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert survivors == []


def test_no_limit_raised_and_no_20_gib_mapping(tmp_path: Path) -> None:
    seen = _escape(tmp_path, RAISE_LIMITS_AND_MAP)
    assert not (seen["RLIMIT_AS"] or seen["RLIMIT_CPU"] or seen["RLIMIT_FSIZE"]), seen
    assert seen["mapped 20 GiB"] is not True, seen


def test_no_other_process_memory_read(tmp_path: Path) -> None:
    """A stand-in for the live gateway: handed a secret on a pipe, non-dumpable, as the
    servers are; the sandboxed code cannot see it, let alone read its memory."""
    secret = "gateway-secret-" + os.urandom(8).hex()
    env, fd = hand_over({"SOPGYM_SERVICE_SECRET": secret})
    holder_code = (
        "import sys, time; from sopgym.core.access import handed_secret; "
        "held = handed_secret('SOPGYM_SERVICE_SECRET'); print('ready', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holder_code], env={**os.environ, **env}, pass_fds=(fd,),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(fd)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        seen = _escape(tmp_path, READ_ANOTHER_PROCESS.format(pid=holder.pid, secret=secret))
    finally:
        holder.kill()
        holder.wait()
    assert seen["read"] is not True, seen
