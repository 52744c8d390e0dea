"""What ``sopgym run`` shows while a run goes: its preparation's refusals as one line, the
progress bar with the success count so far, a line per task off a terminal, the model's turns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from sopgym.agents.models import is_scripted
from sopgym.cli.common import fail
from sopgym.core.untrusted import printable
from sopgym.orchestration.after_run import slow_step
from sopgym.orchestration.steps import STEP_PREFIX
from sopgym.terminal import console

if TYPE_CHECKING:  # loaded when the command runs: the CLI starts without the runner
    from sopgym.orchestration.api import PreparedRun
    from sopgym.orchestration.runner import Runner
    from sopgym.runs.records import RunSummary


class RateColumn(ProgressColumn):
    """Tasks per minute so far (``-`` before the first is done)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        shown = "-/min" if speed is None else f"{speed * 60:.1f}/min"
        return Text(shown, style="progress.data.speed")


# what the bar's figures take at most (description, bar, counts, success, elapsed, rate,
# time left, with their spaces): the step in flight gets what is left of the line
FIGURES_WIDTH = 78


def step_text(line: str, width: int) -> str:
    """A step's log line cut to what the line has left after the figures (none at 80
    columns): a long step must never push the figures off the line or squeeze them."""
    text, room = line.removeprefix(STEP_PREFIX), width - FIGURES_WIDTH
    if room < 8:
        return ""
    return text if len(text) <= room else text[: room - 1] + "…"


def progress_bar(disable: bool = False) -> Progress:
    """The run's bar: tasks done of all, success so far, elapsed, rate, time left, and the
    step in flight in whatever width is left (at 80 columns the figures all fit; the step
    is cut, never them)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=16),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tsr]}"),
        TimeElapsedColumn(),
        RateColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[step]}", table_column=Column(no_wrap=True)),
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
                bar.update(handle, step=step_text(line, console.width))
            elif verbose or (not is_scripted(config.model) and slow_step(line)):
                console.print(line, markup=False, soft_wrap=True)

        try:
            return api.execute(runner, prepared, on_result, on_step)
        finally:  # the bar stays on screen: without the last step's log fragment
            bar.update(handle, step="")


def prepare_run(runner: Runner, repair: bool, retry_infra: bool) -> PreparedRun:
    """:func:`sopgym.orchestration.api.prepare`, its refusals as one line and exit 2: a run
    held by another runner, a corrupt row, a selection of no task."""
    from sopgym.core.jsonio import CorruptRow
    from sopgym.orchestration import api
    from sopgym.orchestration.selection import SelectionError
    from sopgym.runs.folder import RunLocked

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
