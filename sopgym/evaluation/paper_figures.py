"""The papers' own figures, computed from result rows: SOP-Maze's table and TOD-ProcBench's
task-1 table, so a run can be set beside them.

A row is a result row (``task_id``, ``domain``, ``score``: ``{"scores": {...}, ...}``, and
``tags``: what the gold's decisions say of the task, :func:`sopgym.evaluation.breakdown.tags`).
An episode the infrastructure failed (``score.infra_error``) is neither right nor wrong: it is
counted apart (``infra_failed``), never in a mean; an episode with no answer scores 0.

**SOP-Maze** (rows tagged with a ``shape``; the grade is ``answer_schema``: 1.0 / 0.2 / 0):

- per scenario (domain): its mean;
- ``shape_average`` per shape: the mean of its scenarios' means, as the paper's "HRS OA" and
  "LRS OA" columns are (they equal the mean of the scenario columns); scenarios of shape
  ``unknown`` are in no shape average but in the overall;
- ``overall``: the item-level mean over every item (the paper's "Overall"), and
  ``mean_of_shapes``: the mean of the two shape averages. (Our older ``sop_maze_score`` in the
  breakdown is the mean of the two shapes' item-level means: a third figure, labelled apart.)
- ``tally``: how many items scored 1.0, 0.2 and 0 (the paper's Table 1).

Each figure is given over the scorable items (``scorable``) and over all items (``all_items``:
an item the audit called unscorable counts 0). Beside them, the official grade
(``answer_official``, every item graded by the published scorer's rule, unscorable ones
included): ``official`` (the same figures), ``official_tally`` (``{"1.0", "0.2", "0"}`` over
every item) and ``overall_official`` (the item-level mean in percent); ``None`` where no row
carries that grade (our own SOP-Maze-style packs have no published target to grade against).

**TOD-ProcBench task 1** (rows tagged ``procbench``: ``position``, ``format``, ``language``;
scores ``first_action``, ``section_top1``, ``section_top2``): ``overall_k1`` / ``overall_k2``
(the next action right AND the right instruction section among the top k, the paper's
"Overall"), ``retrieval_k1`` / ``retrieval_k2`` (the section alone, its "Instruction
Retrieval"), ``action`` (the action alone), overall and by conversation third, instruction
format and language.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from sopgym.core.ordering import natural_key
from sopgym.types import JSON

GRADE: Final = "answer_schema"
OFFICIAL: Final = "answer_official"  # SOP-Maze's own grade (scorers/maze_official.py)
SHAPES: Final = ("HRS", "LRS")
GRADES: Final = (("1.0", 1.0), ("0.2", 0.2), ("0", 0.0))
PROCBENCH_DIMENSIONS: Final = ("position", "format", "language")
PROCBENCH_SCORES: Final = ("first_action", "section_top1", "section_top2")


def paper_figures(rows: Iterable[JSON]) -> JSON | None:
    """``{"sop_maze": ..., "tod_procbench": ...}`` for the families the rows hold (``None``
    when they hold neither)."""
    rows = list(rows)
    found = {"sop_maze": sop_maze_figures(rows), "tod_procbench": procbench_figures(rows)}
    kept = {name: figures for name, figures in found.items() if figures is not None}
    return kept or None


def _value(row: JSON, scorer: str) -> float | None:
    score = (row["score"].get("scores") or {}).get(scorer) or {}
    return score.get("value")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def sop_maze_figures(rows: Iterable[JSON]) -> JSON | None:
    tagged = [r for r in rows if "shape" in (r.get("tags") or {})]
    if not tagged:
        return None
    played = [r for r in tagged if not r["score"].get("infra_error")]
    shape_of: dict[str, str] = {}
    grades: dict[str, list[float | None]] = defaultdict(list)  # None: unscorable
    for row in played:
        shape_of[row["domain"]] = row["tags"]["shape"]
        if row["tags"].get("unscorable"):
            grades[row["domain"]].append(None)
        else:
            grade = _value(row, GRADE)
            grades[row["domain"]].append(float(grade) if grade is not None else 0.0)
    out: JSON = {
        "scenarios": {
            domain: {
                "shape": shape_of[domain],
                "items": len(values),
                "scorable": sum(v is not None for v in values),
            }
            for domain, values in sorted(grades.items(), key=lambda kv: natural_key(kv[0]))
        },
        "infra_failed": len(tagged) - len(played),
        "unscorable": [r["task_id"] for r in played if r["tags"].get("unscorable")],
    }
    for over, keep in (("scorable", False), ("all_items", True)):
        means: dict[str, float | None] = {}
        items: list[float] = []
        for domain, values in grades.items():
            kept = [v if v is not None else 0.0 for v in values if keep or v is not None]
            means[domain] = _mean(kept)
            out["scenarios"][domain][f"mean_{over}"] = means[domain]
            items += kept
        out[over] = _averages(means, shape_of, items)
    scored = [v for values in grades.values() for v in values if v is not None]
    out["tally"] = {label: sum(v == grade for v in scored) for label, grade in GRADES}
    out["tally"]["n/a"] = len(out["unscorable"])
    out.update(_official_figures(played, shape_of, out["scenarios"]))
    return out


def _official_figures(
    played: list[JSON], shape_of: dict[str, str], scenarios: JSON
) -> JSON:
    """The official grade's figures over every item that carries it (imported items: all of
    them, unscorable ones included): per scenario ``mean_official``, ``official`` (shape
    averages, item-level overall, mean of shapes), ``official_tally`` and ``overall_official``
    in percent, as the official scorer prints its accuracy."""
    grades: dict[str, list[float]] = defaultdict(list)
    for row in played:
        grade = _value(row, OFFICIAL)
        if grade is not None:
            grades[row["domain"]].append(float(grade))
    if not grades:  # no item with the official grade (our own SOP-Maze-style packs)
        return {"official": None, "official_tally": None, "overall_official": None}
    means = {domain: _mean(values) for domain, values in grades.items()}
    for domain, mean in means.items():
        scenarios[domain]["mean_official"] = mean
    items = [v for values in grades.values() for v in values]
    official = _averages(dict(means), shape_of, items)
    return {
        "official": official,
        "official_tally": {label: sum(v == grade for v in items) for label, grade in GRADES},
        "overall_official": 100.0 * official["overall"],
    }


def _averages(means: dict[str, float | None], shape_of: dict[str, str], items: list[float]
              ) -> JSON:  # fmt: skip
    """The shape averages (each the mean of its scenarios' means), the item-level overall and
    the mean of the two shapes, from per-scenario means and every item's grade."""
    shapes = {
        shape: _mean([m for d, m in means.items() if shape_of[d] == shape and m is not None])
        for shape in SHAPES
        if any(shape_of[d] == shape for d in means)
    }
    present = [v for v in shapes.values() if v is not None]
    return {
        "shape_average": shapes,
        "overall": _mean(items),
        "mean_of_shapes": _mean(present) if len(present) == len(SHAPES) else None,
        "items": len(items),
    }


def procbench_figures(rows: Iterable[JSON]) -> JSON | None:
    tagged = [r for r in rows if "procbench" in (r.get("tags") or {})]
    if not tagged:
        return None
    played = [r for r in tagged if not r["score"].get("infra_error")]
    groups: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for row in played:
        right = {name: float(_value(row, name) or 0.0) for name in PROCBENCH_SCORES}
        cell = {
            "overall_k1": right["first_action"] * right["section_top1"],
            "overall_k2": right["first_action"] * right["section_top2"],
            "retrieval_k1": right["section_top1"],
            "retrieval_k2": right["section_top2"],
            "action": right["first_action"],
        }
        groups["all", "all"].append(cell)
        for dimension in PROCBENCH_DIMENSIONS:
            groups[dimension, str(row["tags"]["procbench"].get(dimension))].append(cell)
    out: JSON = {"infra_failed": len(tagged) - len(played)}
    for (dimension, value), cells in sorted(
        groups.items(), key=lambda kv: (natural_key(kv[0][0]), natural_key(kv[0][1]))
    ):
        out.setdefault(dimension, {})[value] = _cell(cells)
    return out


def _cell(cells: list[dict[str, float]]) -> JSON:
    return {"tasks": len(cells), **{key: _mean([c[key] for c in cells]) for key in cells[0]}}


def summary_figures(
    tasks: list[Any], scores: list[Any], tags_of: Mapping[tuple[str, str], JSON]
) -> JSON | None:
    """The figures of a run's summary: ``scores`` are its episodes' scores, ``tasks`` repeated
    once per trial in the same order; ``tags_of`` by (domain, task id)."""
    rows = [
        {
            "task_id": task.id,
            "domain": task.domain,
            "score": vars(score),
            "tags": tags_of.get((task.domain, task.id)) or {},
        }
        for task, score in zip(tasks * (len(scores) // max(len(tasks), 1)), scores, strict=True)
    ]
    return paper_figures(rows)
