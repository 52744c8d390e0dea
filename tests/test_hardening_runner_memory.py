"""Hardening (issue 41, point 3): the runner holds the stack's secrets and every task's gold,
and it is the agent workers' parent. A worker of its user attached to it and read its memory
(the service secret, the admin token). The process that starts the stack is now non-dumpable
before any worker starts, and a worker drops every privilege before any agent code runs, so
it can read neither the runner's memory nor a sibling worker's.

The runner here is a process of a plain user: root with every capability dropped (a process
without capabilities cannot trace one that has them, whatever its flag, so a root runner would
hide the flag), running the real stack and a real agent worker. The reader is a worker-like
child of it, started as the runner starts workers. (Not ``nobody`` via setuid: the interpreter
lies under a 0700 /root, so a stack whose servers run as nobody cannot start, and a setuid
itself turns a process non-dumpable, which would hide the runner's own flag too.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import DATA_ROOT, domain_data

UNPRIVILEGED = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# no capability at all, the bounding set too: what a process of a plain user has
for capability in range(int(open("/proc/sys/kernel/cap_last_cap").read()) + 1):
    libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP
libc.capset((ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)())
"""

READER = (
    UNPRIVILEGED
    + r"""
import json, os, sys
secret, sibling = sys.argv[1].encode(), int(sys.argv[2])

def scan(pid):
    try:
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
        regions = open(f"/proc/{pid}/maps").read().splitlines()
    except OSError as error:
        return str(error)
    read = 0
    for line in regions:
        span, mode = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if not mode.startswith("rw") or end - start > 2**28:
            continue
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except OSError:
            continue
        read += len(chunk)
        if secret in chunk:
            return "found the secret"
    return f"read {read} bytes"

def attach(pid):  # PTRACE_SEIZE: attaches without stopping; our exit detaches
    return libc.ptrace(0x4206, pid, 0, 0) == 0 or os.strerror(ctypes.get_errno())

print(json.dumps({
    "runner memory": scan(os.getppid()), "runner attach": attach(os.getppid()),
    "sibling memory": scan(sibling), "sibling attach": attach(sibling),
}))
"""
)

# the runner's part, in a process of a plain user (no capability): the stack, a real agent
# worker started as the runner starts one, then the worker-like reader beside it
RUNNER = (
    UNPRIVILEGED
    + r"""
import json, os, sys, time
from pathlib import Path
from sopgym.orchestration.processes import sopgym_command
from sopgym.orchestration.runner import worker_folder
from sopgym.orchestration.stack import embedded_stack

logs, data_root, reader = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

def status(pid):
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)

with embedded_stack(["triage"], logs, data_root) as stack:
    worker = stack.group.start(
        "worker-0",
        sopgym_command("agent-worker", "--gateway", stack.gateway_url, "--agent", "oracle"),
        logs / "worker-0.log", env=stack.env, pipes=True, cwd=worker_folder(),
    )
    deadline = time.monotonic() + 20
    while status(worker.popen.pid).get("NoNewPrivs") != "1" and time.monotonic() < deadline:
        time.sleep(0.1)  # until its entry has run (or long past it)
    worker_status = status(worker.popen.pid)
    probe = stack.group.start(
        "worker-1", [sys.executable, "-c", reader, stack.admin_token, str(worker.popen.pid)],
        logs / "worker-1.log", env=stack.env, pipes=True, cwd=worker_folder(),
    )
    found, _ = probe.popen.communicate(timeout=120)
    print(json.dumps({
        "runner": os.getpid(), "worker": worker.popen.pid,
        "found": json.loads(found),
        "worker status": {k: worker_status.get(k) for k in ("NoNewPrivs", "CapEff", "CapBnd")},
    }))
"""
)


@pytest.mark.slow  # the stack's start and a real worker's: ~10 s on the shared machine
def test_a_worker_reads_neither_the_runners_memory_nor_a_siblings(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("prctl, capabilities and /proc/<pid>/mem are Linux's")
    domain_data("triage")  # tool-free: the stack is the gateway alone
    runner = subprocess.run(
        [sys.executable, "-c", RUNNER, str(tmp_path / "logs"), str(DATA_ROOT), READER],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert runner.returncode == 0, runner.stderr[-3000:]
    seen = orjson.loads(runner.stdout.splitlines()[-1])
    worker = seen["worker"]
    # the worker dropped every privilege before any agent code could run
    assert seen["worker status"] == {
        "NoNewPrivs": "1", "CapEff": "0" * 16, "CapBnd": "0" * 16,
    }, seen  # fmt: skip
    # the kernel refuses the runner's and the sibling's memory and any attach: no search
    assert seen["found"] == {
        "runner memory": f"[Errno 13] Permission denied: '/proc/{seen['runner']}/mem'",
        "runner attach": "Operation not permitted",
        "sibling memory": f"[Errno 13] Permission denied: '/proc/{worker}/mem'",
        "sibling attach": "Operation not permitted",
    }, seen
