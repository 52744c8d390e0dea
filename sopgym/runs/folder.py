"""One run folder as its writers hold it: where each file is, the lock that keeps a second
writer out, ``config.json`` and ``summary.json`` stamped with the folder's format version, and
the results appender.

``sopgym run`` (:class:`sopgym.orchestration.runner.Runner`), ``sopgym score`` and the
recorder of episodes played elsewhere (``sopgym env-serve --run-dir``) all write through a
:class:`RunFolder`, so a folder's files and their format are decided in one place.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sopgym.core.exceptions import UsageError
from sopgym.core.jsonio import JsonlAppender, dumps, write_atomic
from sopgym.runs.records import FORMAT_VERSION, RunConfig, RunSummary
from sopgym.types import JSON


class RunLocked(UsageError, RuntimeError):
    """Another runner holds this run."""


@dataclass
class RunPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def traces(self) -> Path:
        return self.root / "traces"

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    @property
    def tokens(self) -> Path:
        """Each model turn's token ids and logprobs, with --record-tokens (docs/tokens.md)."""
        return self.root / "tokens.jsonl"

    @property
    def injections(self) -> Path:
        """The scripted model's log of the mistakes it injected, per task."""
        return self.root / "injections.jsonl"


class RunFolder:
    """The run folder ``root`` for one writer: :meth:`lock` before writing, :meth:`release`
    when done (the kernel lets go of the lock when the process dies, even by SIGKILL)."""

    def __init__(self, root: Path) -> None:
        self.paths = RunPaths(root)
        self._lock_fd: int | None = None
        self._results: JsonlAppender | None = None

    @property
    def root(self) -> Path:
        return self.paths.root

    def lock(self) -> None:
        """Create the folder and hold ``run.lock`` for this process's life;
        :class:`RunLocked` when another runner holds it (a second writer would run or record
        every pending task twice)."""
        if self._lock_fd is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.paths.lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunLocked(
                f"run {self.root.name} is in use by another runner (pid {holder})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def release(self) -> None:
        """Let go of ``run.lock`` (a process that lives on: the folder then reads as
        finished, not running) and close the results appender."""
        self.close_results()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def write_config(self, config: RunConfig, **recorded: Any) -> None:
        """``config.json`` once: the config's fields, then ``recorded`` (``created``,
        ``task_count``, ``provenance``, ...) and the format version; a resumed run keeps the
        one it has."""
        if not self.paths.config.exists():
            data = {**config.to_json(), **recorded, "format_version": FORMAT_VERSION}
            write_atomic(self.paths.config, dumps(data))

    def update_config(self, **recorded: Any) -> None:
        """Add or replace keys of the written ``config.json`` (a run's source, a replanned
        selection)."""
        config = orjson.loads(self.paths.config.read_bytes())
        write_atomic(self.paths.config, dumps({**config, **recorded}))

    def append_result(self, row: JSON) -> None:
        """One results row, appended whole (a crash leaves at most a torn last line, which
        the readers leave out)."""
        if self._results is None:
            self._results = JsonlAppender(self.paths.results)
        self._results.append(row)

    def close_results(self) -> None:
        """Close the results appender (the next :meth:`append_result` opens it again)."""
        if self._results is not None:
            self._results.close()
            self._results = None

    def write_results(self, rows: list[JSON]) -> None:
        """Replace ``results.jsonl`` with ``rows`` at once (a merge, dropped rows)."""
        write_atomic(self.paths.results, b"".join(dumps(row) + b"\n" for row in rows))

    def write_summary(self, summary: RunSummary) -> RunSummary:
        """``summary.json``, stamped with this format's version; the summary."""
        summary.format_version = FORMAT_VERSION
        write_atomic(self.paths.summary, dumps(summary.to_json()))
        return summary
