"""``sopgym score``: responses produced elsewhere, read by a reader of
:mod:`sopgym.evaluation.external`, scored against the tasks a run config selects, into a new
run folder written as ``sopgym run`` writes one (through the runner's
:class:`~sopgym.runs.folder.RunFolder`)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from sopgym.core.tasks import Task
from sopgym.evaluation.external import (
    MAX_TRIALS,
    READER_PLUGINS,
    Located,
    Response,
    ScoreRefused,
    Tally,
    Unreadable,
    detect_format,
    trajectory_of,
)
from sopgym.orchestration.runner import Runner
from sopgym.runs.records import RunConfig, RunSummary, WorkerReport
from sopgym.types import JSON


def score_responses(
    runner: Runner,
    tasks: list[Task],
    items: Iterable[Response | Unreadable],
    tally: Tally,
) -> RunSummary:
    """Score ``items`` against ``tasks`` (prepared by ``runner``, whose folder is new), write
    ``results.jsonl`` and ``summary.json`` (with the ``responses`` block) through its run
    folder, and return the summary."""
    all_tasks = {name: data.tasks for name, data in runner.data.items()}
    located = Located(all_tasks, tasks)
    rows: dict[tuple[str, str, int], JSON] = {}
    for item in items:
        tally.read += 1
        if isinstance(item, Unreadable):
            tally.unreadable.append(f"{item.where}: {item.why}")
            continue
        if not 0 <= item.trial < MAX_TRIALS:  # any reader's: the run plans every trial below
            tally.unreadable.append(f"{item.where}: trial {item.trial} is not 0..{MAX_TRIALS - 1}")
            continue
        task, problem = located.find(item)
        key = f"{item.where}: {item.task_id}" + (f" trial {item.trial}" if item.trial else "")
        if task is None:
            getattr(tally, problem or "unknown").append(key)
            continue
        if (task.domain, task.id, item.trial) in rows:
            tally.duplicates.append(key)
            continue
        rows[task.domain, task.id, item.trial] = _row(runner, task, item, tally, key)
    trials = 1 + max((trial for _, _, trial in rows), default=0)
    if trials != runner.config.trials:  # the trials the responses hold, every one summarised
        runner.replan(tasks, trials=trials)
    tally.missing = [
        f"{task.domain} {task.id}" + (f" trial {trial}" if trial else "")
        for trial in range(trials)
        for task in tasks
        if (task.domain, task.id, trial) not in rows
    ]
    tally.scored = len(rows)
    runner.folder.write_results(list(rows.values()))
    summary = runner.write_summary(tasks)
    summary.responses = tally.to_json()
    return runner.folder.write_summary(summary)


def _row(runner: Runner, task: Task, response: Response, tally: Tally, key: str) -> JSON:
    data = runner.data[task.domain]
    gold = data.gold[task.id]
    trajectory, problem = trajectory_of(response, task, gold, data.domain)
    if problem:
        tally.unreadable.append(f"{key}: {problem}")
    if response.calls is None and data.domain.tools and task.kind != "json_answer":
        tally.no_trajectory.append(key)
    model = runner.config.model  # a usage record that names no model: the --model label
    llm_calls = [{**call, "model": call.get("model") or model} for call in response.llm_calls]
    report = WorkerReport(
        task_id=task.id,
        domain=task.domain,
        episode_id=trajectory.episode_id,
        status="finished" if problem is None else "failed",
        error=problem,
        elapsed_s=response.elapsed_s,
        llm_calls=llm_calls,
    )
    return runner.result_row(task, report, trajectory.to_json(), response.trial)


def source_of(path: Path, reader: str) -> JSON:
    """What ``config.json`` says of the run's source."""
    return {
        "kind": "responses",
        "path": str(path.resolve()),
        "format": reader,
        "scored_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def score_into_run(
    config: RunConfig,
    run_dir: Path,
    responses: Path,
    reader_name: str | None,
    data_root: Path | None = None,
) -> RunSummary:
    """``sopgym score``: read ``responses`` with the named reader, score them against the
    tasks ``config`` selects, and write the
    run folder ``run_dir``; the summary. :class:`ScoreRefused` before anything is written when
    the format is unknown, the path unreadable or the folder already a run. With no
    ``reader_name`` the format is detected (:func:`detect_format`)."""
    reader_name = reader_name or detect_format(responses)
    reader = READER_PLUGINS.resolve(reader_name)
    if (run_dir / "config.json").exists():
        raise ScoreRefused(f"{run_dir} exists: name another --run-id")
    try:
        items = list(reader.read(responses))  # read whole before the folder exists
    except OSError as error:
        raise ScoreRefused(f"cannot read {responses}: {error.strerror or error}") from None
    runner = Runner(config, run_dir, data_root)
    try:
        tasks = runner.prepare()
        runner.folder.update_config(source=source_of(responses, reader_name))
        return score_responses(runner, tasks, items, Tally(str(responses), reader_name))
    finally:
        runner.release()
