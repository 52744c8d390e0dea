"""Hardening (issue 36, point 2): a published tools.py runs in a sandboxed child. One that
reads the service secret, writes outside its folder, opens a socket or calls os._exit is
blocked or reported at once (the real loader, sopgym.importers.bridge.unimplemented)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from sopgym.importers.bridge import unimplemented
from sopgym.importers.isolated import IsolatedCrash, run_isolated

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
