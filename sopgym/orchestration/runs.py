"""Run folders as ``sopgym run`` writes them, read back: the one reader of ``sopgym runs |
show | export``, ``sopgym view`` and the report's header.

Only the folder's own files are read (``config.json``, ``results.jsonl``, ``summary.json``,
``run.lock``, ``traces/``), so a folder copied from another machine or a Kubernetes volume
reads the same. A :class:`RunReader` re-reads a file only when its size or modification time
changed, so a page over a large run stays quick while a run still appends to it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from sopgym.agents import uses_model
from sopgym.core.exceptions import UsageError
from sopgym.core.outcomes import outcome as episode_outcome
from sopgym.evaluation.scoring import TaskScore, aggregate, summarize
from sopgym.runs.folder import RunPaths
from sopgym.runs.records import RunConfig, read_results
from sopgym.types import JSON

RUNNING, FINISHED, INTERRUPTED = "running", "finished", "interrupted"

# what a stored summary.json must hold to be trusted (else one of another version: the
# figures are computed from the results instead)
SUMMARY_KEYS = frozenset({"tasks", "completed", "ecr", "c_tsr", "tsr", "tool_f1", "errors",
                          "domains"})  # fmt: skip


class RunFolderError(UsageError, ValueError):
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
    or ``interrupted`` (stopped before its summary, or rows recorded or replaced after it: a
    resume or a --retry-infra that did not finish).

    Whether the summary covers the rows is read from the files' contents, never from their
    modification times: ``cp -r`` (without ``-p``) stamps each copy with the time it was
    copied, so a copied folder's results.jsonl may look newer than its summary."""
    if is_running(paths):
        return RUNNING
    return FINISHED if summary_is_current(paths, lambda: results(paths)) else INTERRUPTED


def summary_is_current(paths: RunPaths, rows: Callable[[], list[JSON]]) -> bool:
    """Whether the run's summary.json was computed over exactly its recorded ``rows()``."""
    stored = _json_file(paths.summary)
    if not isinstance(stored, dict):
        return False
    try:
        recorded = rows() if paths.results.exists() else []
    except (ValueError, KeyError, TypeError):
        return False  # a corrupt row: whatever the summary says, it is not over these rows
    return summary_covers(stored, recorded)


# the overall figures a summary and its recorded rows must agree on, besides the errors
_COVERED = ("completed", "correct", "infra_errors")


def summary_covers(stored: JSON, rows: list[JSON]) -> bool:
    """Whether ``stored`` (a summary.json object) was computed over exactly ``rows``.

    The summary counts every planned episode, each one never recorded as incomplete (one
    ``incomplete`` error and nothing else), so the rows are at most its ``tasks``, and the
    figures the rows decide must be the summary's less those missing episodes: a row appended
    by a resume or replaced by --retry-infra changes them.
    """
    tasks = stored.get("tasks")
    if not isinstance(tasks, int) or len(rows) > tasks:
        return False
    figures = aggregate(TaskScore(**row["score"]) for row in rows)
    errors = dict(figures["errors"])
    if unrecorded := tasks - len(rows):
        errors["incomplete"] = errors.get("incomplete", 0) + unrecorded
    return stored.get("errors") == errors and all(
        stored.get(key) == figures[key] for key in _COVERED
    )


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
    row (not JSON, not a :class:`sopgym.runs.records.ResultRow`, or a task recorded
    twice) raises :class:`sopgym.core.jsonio.CorruptRow` naming file and line."""
    return read_results(paths.results)


def outcome(row: JSON) -> str:
    """How a recorded episode ended (:func:`sopgym.core.outcomes.outcome`)."""
    score = row["score"]
    return episode_outcome(score["completed"], score["success"], score.get("infra_error"))


def task_key(row: JSON) -> tuple[str, str, int]:
    return row["domain"], row["task_id"], int(row.get("trial") or 0)


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


def total_tokens(rows: Iterable[JSON]) -> int | None:
    """The episodes' tokens together; None where no episode recorded any."""
    counts = [t for t in map(episode_tokens, rows) if t is not None]
    return sum(counts) if counts else None


def describe_config(config: RunConfig) -> str:
    """The whole config of a run in one line: the run banner, the report and the viewer state
    what the run measures."""
    model = config.model if uses_model(config.agent) else "none"
    parts = [
        f"agent={config.agent}",
        f"model={model}" + (f" at {config.base_url}" if config.base_url else ""),
        f"sop={config.sop_variant}",
        f"distractors={config.distractors}",
        f"transport={config.transport}",
        f"seed={config.seed}",
        f"trials={config.trials}",
        f"faults={config.faults or 'none'}",
        f"trace={'on' if config.trace else 'off'}",
        f"workers={config.workers}",
        f"task-timeout={config.task_timeout:g}s",
        f"tasks={describe_selection(config)}",
    ]
    return " ".join(parts)


def describe_selection(config: RunConfig) -> str:
    chosen = []
    if config.task_ids is not None:
        ids = config.task_ids
        chosen.append(",".join(ids) if len(ids) <= 5 else f"{len(ids)} ids")
    if config.match is not None:
        chosen.append(f"matching {config.match}")
    if config.sample is not None:
        chosen.append(f"sample {config.sample}/domain")
    if config.limit is not None:
        chosen.append(f"first {config.limit}/domain")
    return " ".join(chosen) or "all"


def _stamp(paths: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    found = []
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


_Value = TypeVar("_Value")


@dataclass
class _Cached:
    stamp: tuple[tuple[str, int, int], ...]
    value: Any


class RunReader:
    """One run folder, read lazily and re-read when its files change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.paths = RunPaths(path)
        self._cache: dict[str, _Cached] = {}

    @property
    def id(self) -> str:
        return self.path.name

    def cached(self, name: str, paths: list[Path], load: Callable[[], _Value]) -> _Value:
        """``load()``, kept under ``name`` until one of ``paths`` changes (or appears)."""
        stamp = _stamp(paths)
        hit = self._cache.get(name)
        if hit is None or hit.stamp != stamp:
            hit = self._cache[name] = _Cached(stamp, load())
        return hit.value

    def config(self) -> JSON:
        """The stored config as it is ({} when unreadable: the pages still show the rows)."""
        path = self.paths.config

        def load() -> JSON:
            data = _json_file(path)
            return data if isinstance(data, dict) else {}

        return self.cached("config", [path], load)

    def run_config(self) -> RunConfig:
        """The stored config as a :class:`RunConfig`; :class:`RunFolderError` saying why it
        is not one."""
        read_json_object(self.paths.config)  # not JSON, or not an object: says which
        try:
            return RunConfig.read(self.paths.config)
        except ValueError as error:
            raise RunFolderError(str(error)) from None

    def describe(self) -> str:
        """:func:`describe_config` of the run, or why its config cannot be read."""
        try:
            return describe_config(self.run_config())
        except (RunFolderError, OSError) as error:
            return f"config unreadable: {error}"

    def rows(self) -> list[JSON]:
        """Every recorded episode (:func:`results`)."""
        return self.cached("rows", [self.paths.results], lambda: results(self.paths))

    def row(self, domain: str, task_id: str, trial: int) -> JSON | None:
        return next((r for r in self.rows() if task_key(r) == (domain, task_id, trial)), None)

    def state(self) -> str:
        """:func:`run_state`: running, finished or interrupted (over the rows read once)."""
        if is_running(self.paths):
            return RUNNING
        files = [self.paths.summary, self.paths.results]
        current = self.cached("current", files, lambda: summary_is_current(self.paths, self.rows))
        return FINISHED if current else INTERRUPTED

    def summary(self) -> JSON:
        """The run's summary when it finished; else (running, interrupted, or a summary that
        is unreadable or of another version) the same figures over the episodes recorded so
        far, marked ``partial``."""
        if self.state() == FINISHED:
            path = self.paths.summary
            stored = self.cached("summary", [path], lambda: _json_file(path))
            if isinstance(stored, dict) and stored.keys() >= SUMMARY_KEYS:
                return stored
        computed = summarize(TaskScore(**row["score"]) for row in self.rows())
        return {**computed, "partial": True}

    def created(self) -> str:
        """When the run started (ISO 8601 UTC): its config's ``created``, or for a run that
        did not record it when its config was written (written once)."""
        created = self.config().get("created")
        if isinstance(created, str):
            return created
        path = self.paths.config if self.paths.config.exists() else self.path
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))


def _json_file(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


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
    folder = RunReader(root)
    config = folder.run_config()
    rows = folder.rows()
    summary = folder.summary()
    partial = bool(summary.get("partial"))
    task_count = folder.config().get("task_count")
    return RunInfo(
        run_id=folder.id,
        created=folder.created(),
        config=config,
        state=folder.state(),
        recorded=len(rows),
        planned=task_count * config.trials if isinstance(task_count, int) else None,
        tsr=summary["tsr"] if rows or not partial else None,
        tsr_partial=partial,
        tokens=total_tokens(rows),
    )


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
