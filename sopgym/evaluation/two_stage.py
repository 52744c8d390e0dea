"""TELLER's two-stage view of the banking family (the paper's Table 2), per agent / model and
scenario.

Stage 1 is graph reconstruction (the ``banking/<scenario>_graph`` packs): the ``graph``
scorer's node / edge / path overlap and node and edge precision, recall and F1, averaged over
the tasks. Stage 2 is execution (``banking/<scenario>``): exact match of the ``decision``
field, tool-call precision / recall / F1, the Blank / Validation / Type error counts, order
violations against the dependency graph, the final database state against gold, and how many
episodes left only harmless differences in it.

Every task counts: an episode with no answer scores 0 on every stage-1 metric and fails the
decision and the final state. Episodes the infrastructure failed are no agent's result and are
left out (counted under ``infra_errors``), as in every other figure of a run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import fmean

from sopgym.core.ordering import natural_key
from sopgym.types import JSON

FAMILY = "banking/"
GRAPH_SUFFIX = "_graph"  # the stage-1 pack of scenario S is S + this
ALL = "all"  # the row pooling every scenario's tasks
STAGE_1 = (
    "node_overlap",
    "edge_overlap",
    "path_overlap",
    "node_precision",
    "node_recall",
    "node_f1",
    "edge_precision",
    "edge_recall",
    "edge_f1",
)
ERRORS = ("blank", "validation", "type")


def _stage_1(rows: list[JSON]) -> JSON:
    measured = [(row["score"]["scores"].get("graph") or {}).get("metrics") or {} for row in rows]
    means = {m: fmean(float(found.get(m, 0.0)) for found in measured) for m in STAGE_1}
    return {"tasks": len(rows), **means}


def _stage_2(rows: list[JSON]) -> JSON:
    scores = [row["score"] for row in rows]
    states = [s["scores"].get("final_state") or {} for s in scores]

    def mean(key: str) -> float | None:
        values = [s[key] for s in scores if s[key] is not None]
        return fmean(values) if values else None

    return {
        "tasks": len(rows),
        "decision_accuracy": fmean(s["fields"].get("decision") is True for s in scores),
        "tool_precision": mean("tool_precision"),
        "tool_recall": mean("tool_recall"),
        "tool_f1": mean("tool_f1"),
        **{e: sum(s["errors"].get(e, 0) for s in scores) for e in ERRORS},
        "order_violations": sum(s["order_violations"] for s in scores),
        "final_state": fmean(state.get("value") == 1.0 for state in states),
        "harmless_differences": sum(
            bool((state.get("metrics") or {}).get("harmless")) for state in states
        ),
        "tsr": fmean(s["success"] for s in scores),
    }


def two_stage(rows: Iterable[JSON]) -> JSON | None:
    """``{agent_model: {scenario: {"stage_1": ..., "stage_2": ...}}}`` plus ``infra_errors``;
    ``None`` when no row is of the banking family. A stage a scenario has no tasks of is
    ``None``; the scenario ``all`` pools every task of the agent / model."""
    groups: defaultdict[tuple[str, str, int], list[JSON]] = defaultdict(list)
    infra_errors = 0
    for row in rows:
        domain = row["domain"]
        if not domain.startswith(FAMILY):
            continue
        if row["score"].get("infra_error"):
            infra_errors += 1
            continue
        stage = 1 if domain.endswith(GRAPH_SUFFIX) else 2
        scenario = domain.removeprefix(FAMILY).removesuffix(GRAPH_SUFFIX)
        for name in (scenario, ALL):
            groups[(row["agent_model"], name, stage)].append(row)
    if not groups and not infra_errors:
        return None
    view: dict[str, dict[str, JSON]] = {}
    for agent_model, scenario in sorted({(a, s) for a, s, _ in groups}, key=_order):
        graphs = groups.get((agent_model, scenario, 1))
        episodes = groups.get((agent_model, scenario, 2))
        view.setdefault(agent_model, {})[scenario] = {
            "stage_1": _stage_1(graphs) if graphs else None,
            "stage_2": _stage_2(episodes) if episodes else None,
        }
    return {"by_agent": view, "infra_errors": infra_errors}


def _order(key: tuple[str, str]) -> tuple[str, bool, tuple[tuple[int, int | str], ...]]:
    agent_model, scenario = key
    return agent_model, scenario == ALL, natural_key(scenario)  # each agent's "all" row last
