"""SOP-Maze's breakdown of the graded answer score (``answer_schema``: 1.0 / 0.2 / 0): by
scenario, by procedure shape (LRS wide / HRS deep) and by difficulty source, plus the SOP-Maze
score, the mean of the LRS and HRS means (so the shape with more tasks does not dominate).

The tags come from the gold's ``decisions`` (``shape``, ``sources``), which the agent never
sees. Items an audit called unscorable (``decisions.unscorable``) are counted apart and
excluded from every mean, never scored as failures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sopgym.core.ordering import natural_key
from sopgym.core.tasks import Gold
from sopgym.types import JSON

GRADE = "answer_schema"
SHAPES = ("LRS", "HRS")


def tags(gold: Gold) -> JSON:
    """What a result row keeps of the gold for the breakdown (empty for untagged domains)."""
    keys = ("shape", "sources", "unscorable", "procbench")  # procbench: paper_figures
    return {k: gold.decisions[k] for k in keys if k in gold.decisions}


def breakdown(rows: Iterable[JSON]) -> JSON | None:
    """The graded score's means per scenario, shape and source; ``None`` when no row has a
    graded score and a shape (no SOP-Maze-style domain was evaluated)."""
    groups: dict[str, defaultdict[str, list[float]]] = {
        "scenario": defaultdict(list),
        "shape": defaultdict(list),
        "source": defaultdict(list),
    }
    unscorable: list[str] = []
    for row in rows:
        tagged = row.get("tags") or {}
        if "shape" not in tagged:
            continue
        if tagged.get("unscorable"):
            unscorable.append(row["task_id"])
            continue
        grade = (row["score"].get("scores") or {}).get(GRADE, {}).get("value")
        value = float(grade) if grade is not None else 0.0  # incomplete: no answer, 0
        groups["scenario"][row["domain"]].append(value)
        groups["shape"][tagged["shape"]].append(value)
        for source in tagged.get("sources") or ["none"]:
            groups["source"][source].append(value)
    if not groups["shape"] and not unscorable:
        return None
    means = {
        name: {
            key: {"tasks": len(v), "mean": sum(v) / len(v)}
            for key, v in sorted(g.items(), key=_by_name)
        }
        for name, g in groups.items()
    }
    shapes = [means["shape"][s]["mean"] for s in SHAPES if s in means["shape"]]
    return {
        **means,
        "sop_maze_score": sum(shapes) / len(shapes) if shapes else None,
        "sop_maze_score_shapes": [s for s in SHAPES if s in means["shape"]],
        "unscorable": unscorable,
    }


def _by_name(item: tuple[str, list[float]]) -> tuple[tuple[int, int | str], ...]:
    return natural_key(item[0])
