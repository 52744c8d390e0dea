"""The typed record of a run's ``results.jsonl`` rows, and the one check every reader applies.

A row is valid JSON of the wrong shape when it lacks ``task_id``, carries a ``score`` missing
fields, or holds a value of the wrong type: every reader (``sopgym run --resume`` and
``--repair``, ``show``, ``report``, ``eval`` of an untraced run, the viewer) reads rows through
:func:`read_results`, which checks each against :class:`ResultRow` and raises
:class:`~sopgym.core.jsonio.CorruptRow` naming the file and line (``--repair`` drops such
rows: their tasks run again). A row recorded twice for one task and trial, or one for a task
the run did not select (:class:`RowCheck` given the run's planned attempts), is refused the
same way instead of being silently kept or ignored.

:class:`ResultRow` is the seed of the typed results record: the fields every reader relies
on are typed here, the rest pass through untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from sopgym.core.exceptions import DataError
from sopgym.core.jsonio import read_jsonl_prefix
from sopgym.evaluation.scoring import TaskScore


class ResultRow(msgspec.Struct, kw_only=True):
    """One recorded episode as readers rely on it (other keys are kept, not typed here)."""

    task_id: str
    domain: str
    trial: int = 0
    status: str | None = None
    error: str | None = None
    score: TaskScore
    llm_calls: list[dict[str, Any]] | None = None


_SCORE_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskScore))


def result_row_problem(row: dict[str, Any]) -> str | None:
    """Why ``row`` is not a :class:`ResultRow` (msgspec's words, with the JSON path), or
    None when it is one."""
    try:
        msgspec.convert(row, ResultRow)
    except msgspec.ValidationError as error:
        return f"not a result row: {error}"
    unknown = sorted(set(row["score"]) - _SCORE_FIELDS)
    if unknown:  # a score of another version: its figures cannot be read as ours
        return f"not a result row: unknown score field(s) {', '.join(unknown)} - at `$.score`"
    if row["score"]["task_id"] != row["task_id"] or row["score"]["domain"] != row["domain"]:
        return "not a result row: its score is another task's"
    return None


class RowCheck:
    """Checks rows in file order: each is a :class:`ResultRow`, no (domain, task, trial) is
    recorded twice, and, given ``planned`` (the run's attempts), each belongs to the run."""

    def __init__(self, planned: Iterable[tuple[str, str, int]] | None = None) -> None:
        self.planned = set(planned) if planned is not None else None
        self.seen: set[tuple[str, str, int]] = set()

    def __call__(self, row: dict[str, Any]) -> str | None:
        problem = result_row_problem(row)
        if problem is not None:
            return problem
        key = (row["domain"], row["task_id"], row.get("trial") or 0)
        if key in self.seen:
            return f"task {key[1]} trial {key[2]} is recorded twice (the first row is kept)"
        if self.planned is not None and key not in self.planned:
            return f"task {key[0]}/{key[1]} trial {key[2]} is not one of this run's"
        self.seen.add(key)
        return None


def read_results(
    path: Path,
    repair: bool = False,
    drop_corrupt: bool = False,
    planned: Iterable[tuple[str, str, int]] | None = None,
) -> list[dict[str, Any]]:
    """A results.jsonl's rows, each checked by a fresh :class:`RowCheck` (``planned``: the
    run's (domain, task, trial) attempts, when the reader knows them); the first row that
    fails raises :class:`~sopgym.core.jsonio.CorruptRow` naming file and line, or with
    ``drop_corrupt`` every such row is removed from the file."""
    return read_jsonl_prefix(path, repair, drop_corrupt, check=RowCheck(planned))


class UnreadableConfig(DataError, ValueError):
    """A run folder's ``config.json`` that cannot be read as one: names the file and why."""


def read_config_object(path: Path) -> dict[str, Any]:
    """A run's ``config.json`` as a JSON object with a list of domain names, or
    :class:`UnreadableConfig` saying why not (a truncated file, another shape)."""
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UnreadableConfig(f"{path} is not JSON: {error}") from None
    domains = data.get("domains") if isinstance(data, dict) else None
    if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
        raise UnreadableConfig(f"{path} is not a run config (no list of domain names)")
    return data
