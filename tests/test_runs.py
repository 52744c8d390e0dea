"""Run folders: resume after SIGKILL, whole lines only, clear CLI errors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from sopgym.orchestration.processes import free_port
from tests.helpers import DATA_ROOT, domain_data

SUMMARY_KEYS = (
    "tasks",
    "completed",
    "correct",
    "ecr",
    "c_tsr",
    "tsr",
    "tool_precision",
    "tool_recall",
    "tool_f1",
    "errors",
    "domains",
    "missing",
)


def sopgym(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sopgym", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def run_args(runs: Path, *extra: str) -> list[str]:
    return [
        "run",
        "patient_intake",
        "--agent",
        "oracle",
        "--runs-dir",
        str(runs),
        "--data-root",
        str(DATA_ROOT),
        *extra,
    ]


def test_sigkill_then_resume_gives_the_uninterrupted_summary(tmp_path: Path) -> None:
    tasks = len(domain_data("patient_intake").tasks)
    reference = sopgym(*run_args(tmp_path, "--run-id", "straight", "--workers", "2"))
    assert reference.wait(300) == 0, reference.communicate()[1]

    victim = sopgym(*run_args(tmp_path, "--run-id", "killed", "--workers", "1"))
    results = tmp_path / "killed" / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and results.read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.02)
    children = _children_of(victim.pid)
    assert children, "the runner should have started servers and workers"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    done_before = results.read_bytes().count(b"\n")
    assert 10 <= done_before < tasks, "the run must be killed mid-way"
    _wait_for_exit(children)

    resumed = sopgym(*run_args(tmp_path, "--resume", "killed"))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err

    lines = results.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a newline: no torn line
    rows = [orjson.loads(line) for line in lines[:-1]]
    assert sorted(r["task_id"] for r in rows) == sorted(
        t.id for t in domain_data("patient_intake").tasks
    )
    straight = orjson.loads((tmp_path / "straight" / "summary.json").read_bytes())
    killed = orjson.loads((tmp_path / "killed" / "summary.json").read_bytes())
    assert {k: killed[k] for k in SUMMARY_KEYS} == {k: straight[k] for k in SUMMARY_KEYS}
    assert killed["tsr"] == 1.0


def _children_of(parent: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == parent]


def _wait_for_exit(pids: list[int]) -> None:
    """Children die with the runner (PR_SET_PDEATHSIG), even when it is SIGKILLed."""
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and not _zombie(p)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"children outlived the killed runner: {alive}"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _ppid(proc: Path) -> int:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def test_resume_repairs_a_torn_last_line(tmp_path: Path) -> None:
    first = sopgym(*run_args(tmp_path, "--run-id", "torn", "--limit", "6"))
    assert first.wait(300) == 0
    results = tmp_path / "torn" / "results.jsonl"
    rows = results.read_bytes().splitlines()
    results.write_bytes(b"\n".join(rows[:4]) + b"\n" + rows[4][:25])  # a line cut mid-way
    again = sopgym(*run_args(tmp_path, "--resume", "torn"))
    assert again.wait(300) == 0, again.communicate()[1]
    repaired = results.read_bytes()
    assert repaired.endswith(b"\n")
    assert len([orjson.loads(r) for r in repaired.splitlines()]) == 6
    summary = orjson.loads((tmp_path / "torn" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["tsr"]) == (6, 1.0)


def test_cli_errors_are_one_clear_line(tmp_path: Path) -> None:
    for name, config in (("torn", b"{bad"), ("list", b"[]")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_bytes(config)
    for args in (
        ["run", "no_such_domain", "--runs-dir", str(tmp_path)],
        ["run", "--resume", "nothing-here", "--runs-dir", str(tmp_path)],
        ["run", "--resume", "torn", "--runs-dir", str(tmp_path)],
        ["run", "--resume", "list", "--runs-dir", str(tmp_path)],
        ["run", "--agent", "nobody", "--runs-dir", str(tmp_path)],
        ["agent-worker", "--gateway", "nope"],
        ["agent-worker", "--gateway", "http://127.0.0.1:9", "--options", "[1"],
        ["collector", "--out", str(tmp_path / "torn" / "config.json" / "traces")],
        ["loadtest", "--domain", "no_such_domain", "--out", str(tmp_path / "lt")],
    ):
        process = sopgym(*args)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2, (args, err)
        assert "Traceback" not in err and "Error:" in err, err


def test_cli_prints_user_text_as_typed(tmp_path: Path) -> None:
    """A model spec such as ``openai:x`` followed by ``:`` is no emoji code, and piped tables
    keep whole domain names (rich would cut them to 80 columns off a terminal)."""
    process = sopgym(
        "run", "--model", "openai:x", "--base-url", f"http://127.0.0.1:{free_port()}",
        "--runs-dir", str(tmp_path),
    )  # fmt: skip
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert "model unavailable: openai:x: cannot reach" in err, err
    process = sopgym("list", "--data-root", str(DATA_ROOT))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert re.search(r"│ warehouse_package_inspection +│", out), out  # whole, padded


def test_eval_names_trace_data_it_cannot_read(tmp_path: Path) -> None:
    """A file that is not OTLP JSON is an error naming file and line, never scored as empty."""
    for content, problem in ((b"garbage\n", "line 1 is not JSON"),
                             (b"[]\n", "the document is not OTLP JSON traces")):  # fmt: skip
        path = tmp_path / "traces.jsonl"
        path.write_bytes(content)
        process = sopgym("eval", str(path), "--data-root", str(DATA_ROOT))
        out, err = process.communicate(timeout=60)
        assert process.returncode == 1, err
        assert f"unreadable traces: {path}: {problem}" in err and "Traceback" not in err, err
        assert out == ""
    process = sopgym("eval", "--jaeger", f"http://127.0.0.1:{free_port()}")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1 and "Connection refused" in err and "Traceback" not in err
