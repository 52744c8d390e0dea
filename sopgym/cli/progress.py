"""What ``sopgym run`` shows while a run goes: its preparation's refusals as one line, the
progress bar with the success count so far, a line per task off a terminal, the model's turns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sopgym.agents.models import is_scripted
from sopgym.cli.common import fail
from sopgym.orchestration.after_run import slow_step
from sopgym.orchestration.steps import STEP_PREFIX
from sopgym.terminal import console, printable

if TYPE_CHECKING:  # loaded when the command runs: the CLI starts without the runner
    from sopgym.evaluation.records import RunSummary
    from sopgym.orchestration.api import PreparedRun
    from sopgym.orchestration.runner import Runner


def progress_bar(disable: bool = False) -> Progress:
    """The run's bar: tasks done of all, success so far, time, the step in flight."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tsr]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[step]}"),
        console=console,
        disable=disable,
    )


def execute_with_progress(
    runner: Runner, prepared: PreparedRun, quiet: bool, verbose: bool
) -> RunSummary:
    """:func:`sopgym.orchestration.api.execute` under the progress bar: the success count so
    far, a line per task off a terminal (a log, CI), the model's turns (``--verbose``, or a
    real model's slow ones)."""
    from sopgym.orchestration import api

    config = runner.config
    with progress_bar(disable=quiet) as bar:
        handle = bar.add_task("tasks", total=len(prepared.todo), tsr="", step="")
        solved = [0, 0]

        def on_result(row: dict) -> None:
            solved[0] += 1
            solved[1] += bool(row["score"]["success"])
            bar.update(handle, advance=1, tsr=f"success {solved[1]}/{solved[0]}")
            if not console.is_terminal and not quiet:  # a log or CI: a line per task
                console.print(f"done task={printable(row['task_id'])} status={row['status']} "
                              f"success={row['score']['success']}", markup=False)  # fmt: skip

        def on_step(line: str) -> None:  # a model turn in flight somewhere
            if quiet:
                return
            if console.is_terminal:
                bar.update(handle, step=line.removeprefix(STEP_PREFIX)[:60])
            elif verbose or (not is_scripted(config.model) and slow_step(line)):
                console.print(line, markup=False, soft_wrap=True)

        return api.execute(runner, prepared, on_result, on_step)


def prepare_run(runner: Runner, repair: bool, retry_infra: bool) -> PreparedRun:
    """:func:`sopgym.orchestration.api.prepare`, its refusals as one line and exit 2: a run
    held by another runner, a corrupt row, a selection of no task."""
    from sopgym.core.jsonio import CorruptRow
    from sopgym.orchestration import api
    from sopgym.orchestration.runner import RunLocked
    from sopgym.orchestration.selection import SelectionError

    try:
        prepared = api.prepare(runner, repair=repair, retry_infra=retry_infra)
    except RunLocked as error:
        fail(str(error))
    except CorruptRow as error:
        fail(f"{error}; rerun with --repair to drop it (its task runs again)")
    except SelectionError as error:
        fail(str(error))
    if prepared.infra_retried is not None:
        console.print(f"retrying {prepared.infra_retried} infrastructure error(s)")
    return prepared
