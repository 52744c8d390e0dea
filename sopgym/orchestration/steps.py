"""Per-step progress of slow runs: every model turn of an agent worker is one line in its log
(``step task=... n=... purpose=... latency=...s in=... out=...``), and the driving process
follows the workers' logs to show those lines (on screen when output is not a terminal, in the
live display's in-flight column when it is). On a real model a step takes seconds; without
this a run shows nothing until a task ends."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from sopgym.observability.steps import STEP_PREFIX, log_step, step_line

__all__ = ["STEP_PREFIX", "StepFollower", "log_step", "step_line"]


class StepFollower:
    """Follows ``logs/worker-*.log`` in a thread and hands each new step line to ``show``."""

    interval_s = 0.5

    def __init__(self, logs: Path, show: Callable[[str], None]) -> None:
        self.logs, self.show = logs, show
        self._offsets: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> StepFollower:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(2 * self.interval_s)

    def _follow(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._read_all()
        self._read_all()  # the steps logged since the last look: a short run has only those

    def _read_all(self) -> None:
        for path in sorted(self.logs.glob("worker-*.log")):
            self._read(path)

    def _read(self, path: Path) -> None:
        offset = self._offsets.get(path, 0)
        try:
            with path.open("rb") as log:
                log.seek(offset)
                chunk = log.read()
        except OSError:
            return
        complete = chunk.rfind(b"\n") + 1  # a line still being written waits for the next look
        self._offsets[path] = offset + complete
        for raw in chunk[:complete].splitlines():
            line = raw.decode(errors="replace")
            if line.startswith(STEP_PREFIX):
                self.show(line)
