"""The runs the viewer serves: each argument a run folder or a folder of runs, read through
:class:`sopgym.orchestration.runs.RunReader` (the one reader of run folders)."""

from __future__ import annotations

import os
from pathlib import Path

from sopgym.evaluation.sources import is_run_dir
from sopgym.orchestration.runs import RunReader


class RunCatalog:
    """The served runs, re-listed on every request (so new runs appear); each folder keeps
    its :class:`RunReader` (and so its cache) across requests."""

    def __init__(self, sources: list[Path]) -> None:
        self.sources = sources
        self._folders: dict[Path, RunReader] = {}

    def runs(self) -> list[RunReader]:
        found: dict[str, RunReader] = {}
        for source in self.sources:
            candidates = [source] if is_run_dir(source) else _children(source)
            for path in candidates:
                if is_run_dir(path):
                    folder = self._folders.setdefault(path.resolve(), RunReader(path))
                    found.setdefault(folder.id, folder)
        return sorted(found.values(), key=lambda r: r.created(), reverse=True)

    def get(self, run_id: str) -> RunReader | None:
        return next((r for r in self.runs() if r.id == run_id), None)


def _children(folder: Path) -> list[Path]:
    try:
        return [folder / name for name in os.listdir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []
