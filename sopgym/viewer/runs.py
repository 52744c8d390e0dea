"""What the viewer reads: run folders as a run writes them (``config.json``, ``results.jsonl``,
``summary.json``, ``traces/``), nothing else, so a folder copied from another machine or a
Kubernetes volume shows the same pages.

Files are re-read only when their size or modification time changed, so a page over a large
run stays quick while a run still appends to it (live progress).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from sopgym.core.jsonio import read_jsonl_prefix
from sopgym.core.outcomes import outcome as episode_outcome
from sopgym.evaluation.scoring import TaskScore, summarize
from sopgym.evaluation.sources import is_run_dir, trace_files
from sopgym.observability import semconv as sc
from sopgym.observability.otlp import SpanRecord, read_spans
from sopgym.types import JSON

# what the viewer needs of a trace: roots (trace ids), chat spans (messages), gateway calls
TRACE_SCOPES = frozenset({sc.SCOPE_AGENT, sc.SCOPE_AGENT_LLM, sc.SCOPE_GATEWAY})


# what the pages read of a summary.json (a run's own, or one computed from its results)
SUMMARY_KEYS = frozenset({"tasks", "completed", "ecr", "c_tsr", "tsr", "tool_f1", "errors",
                          "domains"})  # fmt: skip


def outcome(row: JSON) -> str:
    """How a recorded episode ended (:func:`sopgym.core.outcomes.outcome`)."""
    score = row["score"]
    return episode_outcome(score["completed"], score["success"], score.get("infra_error"))


def tokens(row: JSON) -> int:
    return sum(int(c.get("input_tokens") or 0) + int(c.get("output_tokens") or 0)
               for c in row.get("llm_calls") or [])  # fmt: skip


def task_key(row: JSON) -> tuple[str, str, int]:
    return row["domain"], row["task_id"], int(row.get("trial") or 0)


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


@dataclass
class ChatTurn:
    """One LLM call of an episode, from its ``chat`` span (messages only when captured)."""

    start_ns: int
    duration_ms: float
    model: str
    input_tokens: int | None
    output_tokens: int | None
    input_messages: Any  # parsed gen_ai.input.messages, None when not captured
    output_messages: Any


@dataclass
class EpisodeTrace:
    trace_id: str
    chats: list[ChatTurn] = field(default_factory=list)
    call_starts: dict[int, int] = field(default_factory=dict)  # call index -> start (ns)


def _json_attribute(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value  # cut to fit its span: shown as the text it is


def index_traces(spans: list[SpanRecord]) -> dict[str, EpisodeTrace]:
    """Per episode id: its trace id, its LLM calls in order and when each tool call began."""
    roots = {
        s.trace_id: s.attributes[sc.EPISODE_ID]
        for s in spans
        if s.scope == sc.SCOPE_AGENT and sc.EPISODE_ID in s.attributes
    }
    episodes = {episode: EpisodeTrace(trace) for trace, episode in roots.items()}
    for span in sorted(spans, key=lambda s: s.start_ns):
        attributes = span.attributes
        if span.scope == sc.SCOPE_AGENT_LLM and span.trace_id in roots:
            episodes[roots[span.trace_id]].chats.append(
                ChatTurn(
                    start_ns=span.start_ns,
                    duration_ms=span.duration_ms,
                    model=str(attributes.get(sc.GEN_AI_REQUEST_MODEL, "")),
                    input_tokens=attributes.get(sc.GEN_AI_INPUT_TOKENS),
                    output_tokens=attributes.get(sc.GEN_AI_OUTPUT_TOKENS),
                    input_messages=_json_attribute(attributes.get(sc.GEN_AI_INPUT_MESSAGES)),
                    output_messages=_json_attribute(attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)),
                )
            )
        elif span.scope == sc.SCOPE_GATEWAY and attributes.get(sc.GATEWAY_OP) == sc.OP_CALL:
            episode = episodes.get(str(attributes.get(sc.EPISODE_ID)))
            if episode is not None and sc.CALL_INDEX in attributes:
                episode.call_starts[int(attributes[sc.CALL_INDEX])] = span.start_ns
    return episodes


class RunFolder:
    """One run folder, read lazily and re-read when its files change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: dict[str, _Cached] = {}

    @property
    def id(self) -> str:
        return self.path.name

    def _cached(self, name: str, paths: list[Path], load: Callable[[], _Value]) -> _Value:
        stamp = _stamp(paths)
        hit = self._cache.get(name)
        if hit is None or hit.stamp != stamp:
            hit = self._cache[name] = _Cached(stamp, load())
        return hit.value

    def config(self) -> JSON:
        path = self.path / "config.json"

        def load() -> JSON:
            data = _json_file(path)
            return data if isinstance(data, dict) else {}

        return self._cached("config", [path], load)

    def rows(self) -> list[JSON]:
        """Every recorded episode (a torn last line, still being written, is left out)."""
        path = self.path / "results.jsonl"
        return self._cached("rows", [path], lambda: read_jsonl_prefix(path))

    @property
    def running(self) -> bool:
        """Still recording: no summary yet, or results written after it (a resumed run)."""
        summary, results = self.path / "summary.json", self.path / "results.jsonl"
        if not summary.exists():
            return True
        return results.exists() and results.stat().st_mtime_ns > summary.stat().st_mtime_ns

    def summary(self) -> JSON:
        """The run's summary; while it runs, the same figures over the episodes so far
        (``partial``)."""
        path = self.path / "summary.json"
        if not self.running:
            stored = self._cached("summary", [path], lambda: _json_file(path))
            if isinstance(stored, dict) and stored.keys() >= SUMMARY_KEYS:
                return stored  # else unreadable or of another version: computed below
        computed = summarize(TaskScore(**row["score"]) for row in self.rows())
        return {**computed, "partial": True}

    def row(self, domain: str, task_id: str, trial: int) -> JSON | None:
        return next((r for r in self.rows() if task_key(r) == (domain, task_id, trial)), None)

    def traces(self) -> dict[str, EpisodeTrace]:
        """Per episode id, what its trace adds (empty for a ``--no-trace`` run)."""
        folder = self.path / "traces"
        if not folder.is_dir():
            return {}
        files = trace_files(self.path)
        return self._cached(
            "traces", files, lambda: index_traces(read_spans(files, TRACE_SCOPES).spans)
        )

    def started(self) -> float:
        path = self.path / "config.json"
        return path.stat().st_mtime if path.exists() else self.path.stat().st_mtime


class RunCatalog:
    """The runs the viewer serves: each argument a run folder or a folder of runs
    (re-listed on every request, so new runs appear)."""

    def __init__(self, sources: list[Path]) -> None:
        self.sources = sources
        self._folders: dict[Path, RunFolder] = {}

    def runs(self) -> list[RunFolder]:
        found: dict[str, RunFolder] = {}
        for source in self.sources:
            candidates = [source] if is_run_dir(source) else _children(source)
            for path in candidates:
                if is_run_dir(path):
                    folder = self._folders.setdefault(path.resolve(), RunFolder(path))
                    found.setdefault(folder.id, folder)
        return sorted(found.values(), key=lambda r: r.started(), reverse=True)

    def get(self, run_id: str) -> RunFolder | None:
        return next((r for r in self.runs() if r.id == run_id), None)


def _json_file(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _children(folder: Path) -> list[Path]:
    try:
        return [folder / name for name in os.listdir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []
