"""Next-action accuracy by conversation third, instruction format and language (the paper's
breakdowns), from a run's per-task results and the tasks' inputs."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Final

from sopgym.core.tasks import Task
from sopgym.types import JSON

DIMENSIONS: Final = ("position", "format", "language")
MEASURES: Final = ("first_action", "actions", "section_top1", "section_top2")
NEXT_ACTION: Final = "tod/next_action"


def breakdown(tasks: Mapping[str, Task], results: Iterable[JSON]) -> JSON:
    """``{dimension: {value: {"tasks", "success", <measure>: mean}}}`` plus ``overall``.

    ``results`` are a run's ``results.jsonl`` rows (``task_id``, ``score``: ``success``,
    ``scores``); a row whose task is unknown is an error, never skipped."""
    groups: dict[tuple[str, str], list[JSON]] = {}
    for row in results:
        task = tasks.get(row["task_id"])
        if task is None:
            raise KeyError(f"result for unknown task {row['task_id']!r}")
        groups.setdefault(("overall", "all"), []).append(row)
        for dimension in DIMENSIONS:
            groups.setdefault((dimension, str(task.inputs[dimension])), []).append(row)
    out: JSON = {}
    for (dimension, value), rows in sorted(groups.items()):
        scores = [r["score"] for r in rows]
        cell: JSON = {"tasks": len(rows),
                      "success": sum(bool(s["success"]) for s in scores) / len(rows)}  # fmt: skip
        for measure in MEASURES:
            values = [s["scores"][measure]["value"] for s in scores if measure in s["scores"]]
            cell[measure] = sum(values) / len(values) if values else None
        out.setdefault(dimension, {})[value] = cell
    return out


def main(argv: list[str]) -> int:
    """``python -m sopgym.domains.tod.report RUN_DIR``: the breakdown of a run's
    ``tod/next_action`` results, as JSON."""
    import json
    from pathlib import Path

    from sopgym.core.dataset import load
    from sopgym.core.registry import load_domain

    if len(argv) != 1 or not (Path(argv[0]) / "results.jsonl").is_file():
        print("usage: python -m sopgym.domains.tod.report RUN_DIR (a folder with results.jsonl)",
              file=sys.stderr)  # fmt: skip
        return 2
    lines = (Path(argv[0]) / "results.jsonl").read_text().splitlines()
    rows = [row for row in map(json.loads, lines) if row["domain"] == NEXT_ACTION]
    tasks = {t.id: t for t in load(load_domain(NEXT_ACTION)).tasks}
    print(json.dumps(breakdown(tasks, rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
