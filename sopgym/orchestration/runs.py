"""Run folders as ``sopgym run`` writes them, read back for ``sopgym runs | show | export``.

Only the folder's own files are read (``config.json``, ``results.jsonl``, ``summary.json``,
``run.lock``), so a folder copied from another machine or a Kubernetes volume reads the same.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sopgym.core.jsonio import read_jsonl_prefix
from sopgym.evaluation.scoring import TaskScore, summarize
from sopgym.orchestration.runner import RunConfig, RunPaths
from sopgym.types import JSON

RUNNING, FINISHED, INTERRUPTED = "running", "finished", "interrupted"


class RunFolderError(ValueError):
    """A folder that is not a readable run: says which and why."""


def is_running(paths: RunPaths) -> bool:
    """Whether a runner holds the run's lock now (on this machine: a copied folder's lock is
    held by no one). A shared lock is taken for an instant only and never blocks."""
    try:
        fd = os.open(paths.lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock, if it was taken
    return False


def run_state(paths: RunPaths) -> str:
    """``running`` (a runner holds it), ``finished`` (its summary covers every recorded row)
    or ``interrupted`` (stopped before its summary, or results written after it: a resume
    or a --retry-infra that did not finish)."""
    if is_running(paths):
        return RUNNING
    if not paths.summary.exists():
        return INTERRUPTED
    if paths.results.exists() and paths.results.stat().st_mtime_ns > (
        paths.summary.stat().st_mtime_ns
    ):
        return INTERRUPTED
    return FINISHED


def read_json_object(path: Path) -> JSON:
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise RunFolderError(f"{path} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise RunFolderError(f"{path} is not a JSON object")
    return data


def results(paths: RunPaths) -> list[JSON]:
    """Every recorded episode (a torn last line, still being written, is left out); a corrupt
    row raises :class:`sopgym.core.jsonio.CorruptRow` naming file and line."""
    return read_jsonl_prefix(paths.results)


def episode_tokens(row: JSON) -> int | None:
    """Input plus output tokens of the episode's model calls; None where none were recorded
    (a model-free agent, or a provider that reports no usage)."""
    counts = [
        int(call[key])
        for call in row.get("llm_calls") or []
        for key in ("input_tokens", "output_tokens")
        if call.get(key) is not None
    ]
    return sum(counts) if counts else None


@dataclass
class RunInfo:
    """One line of ``sopgym runs``."""

    run_id: str
    created: str  # ISO 8601 UTC
    config: RunConfig
    state: str
    recorded: int  # episodes in results.jsonl
    planned: int | None  # tasks x trials; None for a run that did not record it
    tsr: float | None
    tsr_partial: bool  # over the recorded episodes only (no summary of them yet)
    tokens: int | None


def read_run(root: Path) -> RunInfo:
    """The run in ``root``; :class:`RunFolderError` when its config cannot be read."""
    paths = RunPaths(root)
    stored = read_json_object(paths.config)
    try:
        config = RunConfig.read(paths.config)
    except ValueError as error:
        raise RunFolderError(str(error)) from None
    rows = results(paths)
    state = run_state(paths)
    summary = read_json_object(paths.summary) if state == FINISHED else None
    if summary is not None:
        tsr = summary.get("tsr")
    else:  # running or interrupted: the same figure over what is recorded so far
        tsr = summarize(TaskScore(**row["score"]) for row in rows)["tsr"] if rows else None
    tokens = [t for t in map(episode_tokens, rows) if t is not None]
    task_count = stored.get("task_count")
    return RunInfo(
        run_id=root.name,
        created=stored.get("created") or _mtime_iso(paths.config),
        config=config,
        state=state,
        recorded=len(rows),
        planned=task_count * config.trials if isinstance(task_count, int) else None,
        tsr=tsr,
        tsr_partial=summary is None,
        tokens=sum(tokens) if tokens else None,
    )


def _mtime_iso(path: Path) -> str:
    """When a run that did not record its creation wrote its config (written once)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))


def list_runs(runs_dir: Path) -> tuple[list[RunInfo], list[tuple[Path, str]]]:
    """The runs under ``runs_dir``, newest first, and the run folders that could not be read
    with why. Folders without a ``config.json`` (load-test reports, say) are not runs."""
    runs: list[RunInfo] = []
    unreadable: list[tuple[Path, str]] = []
    for root in sorted(p for p in runs_dir.iterdir() if (p / "config.json").is_file()):
        try:
            runs.append(read_run(root))
        except (RunFolderError, ValueError, OSError, KeyError, TypeError) as error:
            unreadable.append((root, str(error)))
    runs.sort(key=lambda r: r.created, reverse=True)
    return runs, unreadable


def flat_row(row: JSON) -> dict[str, Any]:
    """A results row as one flat record for ``sopgym export``: the episode, its scores (each
    scorer's value under ``score.<name>``), error counts (``errors.<kind>``), each output field
    given, expected and whether it matched (``output.<field>``, ``gold.<field>``,
    ``field_ok.<field>``), and the model's calls and tokens."""
    score = row["score"]
    calls = row.get("llm_calls") or []
    flat: dict[str, Any] = {
        "task_id": row["task_id"],
        "trial": row.get("trial", 0),
        "domain": row["domain"],
        "agent": row.get("agent"),
        "model": row.get("model"),
        "episode_id": row.get("episode_id"),
        "status": row.get("status"),
        "error": row.get("error"),
        "success": score["success"],
        "completed": score["completed"],
        "infra_error": score.get("infra_error"),
        "elapsed_s": row.get("elapsed_s"),
        "tool_calls": score.get("calls"),
        "gold_tool_calls": score.get("gold_calls"),
        "tool_precision": score.get("tool_precision"),
        "tool_recall": score.get("tool_recall"),
        "tool_f1": score.get("tool_f1"),
        "order_violations": score.get("order_violations"),
        "faults": score.get("faults"),
        "llm_calls": len(calls),
        "input_tokens": _token_sum(calls, "input_tokens"),
        "output_tokens": _token_sum(calls, "output_tokens"),
    }
    for name, value in (score.get("scores") or {}).items():
        flat[f"score.{name}"] = value.get("value")
    for kind, count in (score.get("errors") or {}).items():
        flat[f"errors.{kind}"] = count
    given, expected = row.get("outputs") or {}, row.get("gold_outputs") or {}
    for name, ok in (score.get("fields") or {}).items():
        flat[f"field_ok.{name}"] = ok
        flat[f"output.{name}"] = _cell(given.get(name))
        flat[f"gold.{name}"] = _cell(expected.get(name))
    return flat


def _token_sum(calls: list[JSON], key: str) -> int | None:
    counts = [int(c[key]) for c in calls if c.get(key) is not None]
    return sum(counts) if counts else None


def _cell(value: Any) -> Any:
    """A scalar as it is; a list or object as its JSON text, so every format holds it."""
    return orjson.dumps(value).decode() if isinstance(value, dict | list) else value
