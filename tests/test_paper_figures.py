"""The papers' own figures from result rows: SOP-Maze's per-scenario means, shape averages
(mean of the scenarios' means), item-level Overall, mean of the shapes and 1.0/0.2/0 tally,
beside our older breakdown score (a different definition, pinned here); TOD-ProcBench's
Overall (action AND section in the top k) and its breakdowns; infrastructure failures left
out of every mean."""

from __future__ import annotations

from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.evaluation.breakdown import breakdown, tags
from sopgym.evaluation.paper_figures import paper_figures, procbench_figures, sop_maze_figures
from sopgym.evaluation.paper_tables import paper_lines, paper_tables
from sopgym.types import JSON


def maze_row(
    domain: str, shape: str, grade: float | None, official: float | None = None, **extra: object
) -> JSON:
    tags: JSON = {"shape": shape, "sources": []}
    if grade is None:
        tags["unscorable"] = "target invalid in a compared key"
    scores: JSON = {"answer_schema": {"value": grade}}
    if official is not None:
        scores["answer_official"] = {"value": official}
    score: JSON = {"scores": scores, **extra}
    return {"task_id": f"{domain}-{id(score)}", "domain": domain, "score": score, "tags": tags}


def test_sop_maze_figures_follow_the_papers_definitions() -> None:
    rows = [
        # H1: 3 items, mean 0.6; H2: 1 item, mean 0.2 -> HRS average 0.4 (item mean: 0.5)
        maze_row("h1", "HRS", 1.0), maze_row("h1", "HRS", 0.2), maze_row("h1", "HRS", 0.6),
        maze_row("h2", "HRS", 0.2),
        maze_row("l1", "LRS", 0.0), maze_row("l1", "LRS", None),  # one unscorable
        maze_row("x", "unknown", 1.0),
        maze_row("h2", "HRS", 0.0, infra_error="worker died"),
    ]  # fmt: skip
    found = sop_maze_figures(rows)
    assert found is not None
    scorable = found["scorable"]
    assert abs(scorable["shape_average"]["HRS"] - (0.6 + 0.2) / 2) < 1e-9
    assert scorable["shape_average"]["LRS"] == 0.0
    assert "unknown" not in scorable["shape_average"]
    # Overall: every scorable item, the unknown-shape one included
    assert abs(scorable["overall"] - (1.0 + 0.2 + 0.6 + 0.2 + 0.0 + 1.0) / 6) < 1e-9
    assert abs(scorable["mean_of_shapes"] - 0.2) < 1e-9
    assert found["all_items"]["items"] == 7 and found["all_items"]["shape_average"]["LRS"] == 0
    assert found["tally"] == {"1.0": 2, "0.2": 2, "0": 1, "n/a": 1}
    assert found["infra_failed"] == 1 and found["scenarios"]["h2"]["items"] == 1
    # our older score: the mean of the two shapes' item-level means, a different figure
    older = breakdown([r for r in rows if not r["score"].get("infra_error")])
    assert older is not None
    assert abs(older["shape"]["HRS"]["mean"] - 0.5) < 1e-9  # item-level, not 0.4
    assert abs(older["sop_maze_score"] - 0.25) < 1e-9  # the paper's mean of shapes: 0.2
    table = paper_tables({"sop_maze": found})[0]
    assert ["HRS average", "mean of its scenarios", "", "n/a", "0.400", "0.400"] in table.rows
    assert paper_lines({"sop_maze": found})[0].startswith(
        "SOP-Maze (paper, ours over the scorable items): Overall 0.500"
    )
    # no row carries the official grade (our own packs): no official figure is made up
    assert found["official_tally"] is None and found["overall_official"] is None


def test_the_official_grade_counts_every_item_where_ours_leaves_the_unscorable_out() -> None:
    """The official scorer grades an item whose target breaks its own schema (here 0.2, as
    all 13 such published items are for the published replies); ours leaves it out: the two
    Overalls differ, each named, the official one first in the table."""
    rows = [
        maze_row("h1", "HRS", 1.0, official=1.0),
        maze_row("h1", "HRS", 0.2, official=0.2),
        maze_row("l1", "LRS", 0.0, official=0.0),
        maze_row("l1", "LRS", None, official=0.2),  # unscorable for us, graded officially
    ]
    found = sop_maze_figures(rows)
    assert found is not None
    assert found["official_tally"] == {"1.0": 1, "0.2": 2, "0": 1}
    assert abs(found["overall_official"] - 100 * (1.0 + 0.2 + 0.0 + 0.2) / 4) < 1e-9
    assert abs(found["all_items"]["overall"] - (1.0 + 0.2 + 0.0 + 0.0) / 4) < 1e-9  # ours: 0
    assert abs(found["scorable"]["overall"] - 0.4) < 1e-9  # ours: 3 items
    assert found["official"]["shape_average"]["LRS"] == 0.1
    table = paper_tables({"sop_maze": found})[0]
    assert table.headers[3] == "official (every item)"
    assert ["Overall", "item-level mean", "3/4", "0.350", "0.400", "0.300"] in table.rows
    assert paper_lines({"sop_maze": found})[0] == (
        "SOP-Maze (official grade, every item): Overall 35.00%; tally 1.0: 1, 0.2: 2, 0: 1"
    )


def procbench_row(position: str, action: float, top1: float, top2: float) -> JSON:
    scores = {"first_action": {"value": action}, "section_top1": {"value": top1},
              "section_top2": {"value": top2}}  # fmt: skip
    paper = {"position": position, "format": "f1", "language": "en"}
    return {"task_id": "t", "domain": "abcd/next-action", "score": {"scores": scores},
            "tags": {"procbench": paper}}  # fmt: skip


def test_procbench_overall_needs_the_action_and_the_section() -> None:
    rows = [
        procbench_row("beginning", 1, 1, 1),
        procbench_row("beginning", 1, 0, 1),  # right action, section second: k=2 only
        procbench_row("end", 0, 1, 1),  # right section, wrong action: not Overall
        {**procbench_row("end", 0, 0, 0), "score": {"scores": {}, "infra_error": "lost"}},
    ]
    found = procbench_figures(rows)
    assert found is not None and found["infra_failed"] == 1
    everything = found["all"]["all"]
    assert everything["tasks"] == 3
    assert (everything["overall_k1"], everything["overall_k2"]) == (1 / 3, 2 / 3)
    assert (everything["retrieval_k1"], everything["action"]) == (2 / 3, 2 / 3)
    assert found["position"]["beginning"]["overall_k1"] == 0.5
    assert found["position"]["end"]["overall_k2"] == 0.0
    assert paper_figures([{"task_id": "a", "domain": "d", "score": {}, "tags": {}}]) is None


def test_the_tod_pack_tags_its_tasks_for_the_papers_breakdowns() -> None:
    data = dataset.load(load_domain("tod/next_action"))
    tagged = [tags(g)["procbench"] for g in data.gold.values()]
    assert {t["position"] for t in tagged} == {"beginning", "middle", "end"}
    assert len({t["format"] for t in tagged}) >= 2 and len({t["language"] for t in tagged}) >= 2
