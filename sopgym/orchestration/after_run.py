"""What ``sopgym run`` prints once a run is done, after its figures: the first few failed
tasks with why each failed, and the commands to look further."""

from __future__ import annotations

import re
from pathlib import Path

from rich.markup import escape

from sopgym.evaluation.explain import because_line
from sopgym.evaluation.report import print_two_stage
from sopgym.evaluation.run_figures import teller_view
from sopgym.orchestration.runs import results
from sopgym.runs.folder import RunPaths
from sopgym.terminal import console, stdout

SLOW_STEP_S = 10.0  # a real model's turn this slow prints its step line off a terminal
_LATENCY = re.compile(r"\blatency=([0-9.]+)s\b")
FAILED_SHOWN = 5
REASON_CHARS = 150  # a reason cut for one terminal line; `sopgym show` prints it whole


def print_after_run(run_dir: Path, runs_dir: Path) -> None:
    """The first :data:`FAILED_SHOWN` failed tasks (why, in a line) and the next commands."""
    rows = results(RunPaths(run_dir))
    teller = teller_view(rows)
    if teller:  # the banking family's own view, as `sopgym report` and the viewer show it
        print_two_stage(teller, stdout())
    failed = [
        r for r in rows if not r["score"].get("success") and not r["score"].get("infra_error")
    ]
    failed.sort(key=lambda r: (r["domain"], r["task_id"], r.get("trial") or 0))
    run = run_dir.name
    where = "" if runs_dir == Path("runs") else f" --runs-dir {runs_dir}"
    if failed:
        console.print(f"[bold]failed[/]: {len(failed)} of {len(rows)} episodes")
        for row in failed[:FAILED_SHOWN]:
            reason = because_line(row)
            if len(reason) > REASON_CHARS:
                reason = reason[: REASON_CHARS - 1] + "…"
            trial = f" trial {row['trial']}" if row.get("trial") else ""
            console.print(f"  {escape(row['task_id'])}{trial}: {escape(reason)}")  # at spaces
        if len(failed) > FAILED_SHOWN:
            console.print(f"  ... and {len(failed) - FAILED_SHOWN} more")
    first = failed[0] if failed else None
    show = (
        f"sopgym show {run} {first['task_id']}{where}"
        + (f" --trial {first['trial']}" if first.get("trial") else "")
        if first
        else None
    )
    commands = [f"sopgym view {run}{where}", *([show] if show else []),
                f"sopgym report {run}{where}"]  # fmt: skip
    line = "next: " + "  ·  ".join(commands)
    if len(line) <= console.width:
        console.print(escape(line), soft_wrap=True)
    else:  # a narrow terminal: a command a line, each whole (to copy), none cut at the edge
        for number, command in enumerate(commands):
            console.print(f"{'next:' if number == 0 else '     '} {escape(command)}",
                          soft_wrap=True)  # fmt: skip


def slow_step(line: str) -> bool:
    """Whether a step line (``step task=... latency=12.3s ...``) took :data:`SLOW_STEP_S`
    or more: worth a line in a log, where a run with a real model may seem stuck."""
    found = _LATENCY.search(line)
    return found is not None and float(found.group(1)) >= SLOW_STEP_S
