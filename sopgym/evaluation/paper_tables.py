"""The papers' tables (:mod:`sopgym.evaluation.paper_figures`) as report tables and terminal
lines, for ``sopgym report`` and ``sopgym eval``."""

from __future__ import annotations

from sopgym.evaluation.paper_figures import PROCBENCH_DIMENSIONS
from sopgym.evaluation.report import Table, num
from sopgym.types import JSON

PROCBENCH_COLUMNS = ("overall_k1", "overall_k2", "retrieval_k1", "retrieval_k2", "action")


def paper_tables(found: JSON | None) -> list[Table]:
    if not found:
        return []
    out = []
    if maze := found.get("sop_maze"):
        out.append(sop_maze_table(maze))
    if tod := found.get("tod_procbench"):
        out.append(procbench_table(tod))
    return out


def sop_maze_table(maze: JSON) -> Table:
    """Per scenario, the shape averages, Overall, the mean of the shapes and the tally: the
    official grade over every item first, then ours over the scorable items and over all
    items."""
    official = maze.get("official") or {}
    rows: list[list[str | tuple[str, str]]] = [
        [
            name,
            s["shape"],
            f"{s['scorable']}/{s['items']}",
            num(s.get("mean_official")),
            num(s["mean_scorable"]),
            num(s["mean_all_items"]),
        ]
        for name, s in maze["scenarios"].items()
    ]
    scorable, every = maze["scorable"], maze["all_items"]
    for shape in sorted(set(scorable["shape_average"]) | set(every["shape_average"])):
        rows.append(
            [
                f"{shape} average",
                "mean of its scenarios",
                "",
                num((official.get("shape_average") or {}).get(shape)),
                num(scorable["shape_average"].get(shape)),
                num(every["shape_average"].get(shape)),
            ]
        )
    rows.append(
        [
            "Overall",
            "item-level mean",
            f"{scorable['items']}/{every['items']}",
            num(official.get("overall")),
            num(scorable["overall"]),
            num(every["overall"]),
        ]
    )
    rows.append(
        [
            "mean of HRS and LRS",
            "",
            "",
            num(official.get("mean_of_shapes")),
            num(scorable["mean_of_shapes"]),
            num(every["mean_of_shapes"]),
        ]
    )
    if maze.get("official_tally"):
        rows.append(["tally, official (every item)", _tally(maze["official_tally"]), "", "", "",
                     ""])  # fmt: skip
    rows.append(["tally, ours", _tally(maze["tally"]), "", "", "", ""])
    if maze["infra_failed"]:
        rows.append(["infrastructure failed (left out)", "", str(maze["infra_failed"]), "", "",
                     ""])  # fmt: skip
    return Table(
        "SOP-Maze, as the paper reports it (1.0 / 0.2 / 0; official: the published scorer's "
        "rule on every item; ours: answer_schema, unscorable items apart)",
        [
            "scenario",
            "shape",
            "items scored (ours)",
            "official (every item)",
            "ours (scorable)",
            "ours (all items, unscorable = 0)",
        ],
        rows,
    )


def _tally(tally: JSON) -> str:
    return ", ".join(f"{label}: {count}" for label, count in tally.items())


def procbench_table(tod: JSON) -> Table:
    """Overall and instruction retrieval at k = 1 and 2, and the next action alone, overall and
    by conversation third, instruction format and language."""
    rows: list[list[str | tuple[str, str]]] = []
    for dimension in ("all", *PROCBENCH_DIMENSIONS):
        for value, cell in (tod.get(dimension) or {}).items():
            rows.append(
                [dimension, value, str(cell["tasks"]), *(num(cell[k]) for k in PROCBENCH_COLUMNS)]
            )
    if tod["infra_failed"]:
        rows.append(
            [
                "infrastructure failed (left out)",
                "",
                str(tod["infra_failed"]),
                *[""] * len(PROCBENCH_COLUMNS),
            ]
        )
    return Table(
        "TOD-ProcBench task 1, as the paper reports it (Overall: next action right "
        "and the instruction in the top k)",
        [
            "by",
            "group",
            "tasks",
            "Overall k=1",
            "Overall k=2",
            "retrieval k=1",
            "retrieval k=2",
            "next action",
        ],
        rows,
    )


def paper_lines(found: JSON | None) -> list[str]:
    """One line per family for the terminal summary."""
    lines = []
    if found and (maze := found.get("sop_maze")):
        if maze.get("overall_official") is not None:
            lines.append(
                f"SOP-Maze (official grade, every item): Overall "
                f"{maze['overall_official']:.2f}%; tally {_tally(maze['official_tally'])}"
            )
        figures = maze["scorable"]
        shapes = ", ".join(f"{k} {num(v)}" for k, v in figures["shape_average"].items())
        lines.append(
            f"SOP-Maze (paper, ours over the scorable items): Overall {num(figures['overall'])}, "
            f"{shapes}, mean of shapes {num(figures['mean_of_shapes'])}; tally "
            f"{_tally(maze['tally'])}"
        )
    if found and (tod := found.get("tod_procbench")):
        cell = tod["all"]["all"]
        lines.append(
            f"TOD-ProcBench task 1 (paper): Overall k=1 {num(cell['overall_k1'])}, "
            f"k=2 {num(cell['overall_k2'])}; retrieval k=1 "
            f"{num(cell['retrieval_k1'])}"
        )
    return lines
