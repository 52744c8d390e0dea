"""What a run does when one part of its stack dies mid-way: kill it after a few tasks and
report how the remaining tasks were recorded and how long they took.

    SOPGYM_DOMAIN_PACKAGES=tests.testpacks python bench/bench_faults.py VICTIM

VICTIM is ``tools`` (the ledger tool service), ``worker`` (the agent worker), ``collector``
(the trace receiver), ``model`` (the scripted model server) or ``gateway``, killed in a
one-worker run of the ledger test pack (16 tasks, react on the scripted model) with traces on;
the figures are the ones in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson

VICTIMS = {"tools": ("serve-tools", "ledger"), "worker": ("agent-worker",),
           "collector": ("collector",), "model": ("model-server",),
           "gateway": ("gateway",)}  # fmt: skip


def children(parent: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and int((proc / "stat").read_text().rsplit(")")[1].split()[1]) == parent
            ):
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def child(parent: int, words: tuple[str, ...]) -> int:
    for pid in children(parent):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if all(w.encode() in argv for w in words):
            return pid
    raise SystemExit(f"no child runs {words}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("victim", choices=sorted(VICTIMS))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        argv = [sys.executable, "-m", "sopgym", "run", "ledger", "--runs-dir", runs,
                "--run-id", "r", "--workers", "1"]  # fmt: skip
        started = time.monotonic()
        runner = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results = Path(runs) / "r" / "results.jsonl"
        while not results.exists() or results.read_bytes().count(b"\n") < 3:
            if runner.poll() is not None:
                raise SystemExit("the run ended before the kill")
            time.sleep(0.01)
        os.kill(child(runner.pid, VICTIMS[options.victim]), signal.SIGKILL)
        killed_at = time.monotonic()
        before = results.read_bytes().count(b"\n")
        runner.wait()
        ended = time.monotonic()
        last_row = ended - (time.time() - results.stat().st_mtime)
        rows = [orjson.loads(line) for line in results.read_bytes().splitlines()]
        summary = orjson.loads((Path(runs) / "r" / "summary.json").read_bytes())
    after = rows[before:]
    print(f"killed {options.victim} after {before} tasks ({killed_at - started:.1f} s in)")
    print(f"remaining {len(after)} tasks recorded in {last_row - killed_at:.1f} s "
          f"(run ended {ended - killed_at:.1f} s after the kill): "
          f"{dict(Counter(r['status'] for r in after))}")  # fmt: skip
    infra = [r["elapsed_s"] for r in after if r["status"] == "infra_error" and r["elapsed_s"]]
    if infra:
        print(f"an infra_error task took {max(infra):.3f} s at most (worker-side elapsed)")
    print(f"successes among tasks after the kill: {sum(r['score']['success'] for r in after)}")
    print(f"causes: {dict(Counter((r['error'] or '')[:60] for r in after))}")
    print(f"summary: infra_errors={summary['infra_errors']} tsr={summary['tsr']:.3f} "
          f"trace_loss={summary['trace_loss']}")  # fmt: skip


if __name__ == "__main__":
    main()
