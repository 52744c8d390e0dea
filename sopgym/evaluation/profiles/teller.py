"""TELLER's own definitions (the paper's §4, Tables 2, 4 and 5), computed from the same
stage-2 banking episodes as our strict figures and reported beside them as ``teller``.

Where the paper differs from our strict view (``sopgym/evaluation/two_stage.py``):

- **Acc.**: the exact match of the final decision outcomes, every output field together (six
  for Loans and Account Management, three elsewhere), each compared as our ``output_fields``
  scorer compares it; our Table-2 column checks ``decision`` alone.
- **tool precision / recall**: over the *set* of APIs invoked against the set the reference
  policy invoked, so calling one API twice (a retry) does not lower precision; ours matches
  calls one for one (a multiset).
- **Validation / Type errors**: the paper's Validation errors are calls refused by schema
  validation: our ``validation`` and ``type`` codes (``type_mismatch`` is a schema refusal).
  Its Type errors are calls that passed the schema and failed at run time on a type mismatch:
  here, a call the tool refused (``invalid_value``) or failed on (``internal_error``) whose
  refused argument has another JSON type than the reference policy's calls of that tool give
  it (a ``true`` where the records hold ``1``).
- **error figures**: percentages of episodes (Table 5; every cell of it is a multiple of 0.2%,
  one episode in 500): Blank, an episode with no tool call; Valid. and Type, an episode with
  at least one call of that kind (the paper adds the three into a "total error rate",
  ``total_error_pct``). The per-call percentages are kept beside them, labelled
  (``validation_per_call_pct``, ``type_per_call_pct``).
- **the "all" row** (Table 2): the mean of the five scenario rows (it reproduces
  Claude-Sonnet-4.5's .344 / .9638 / .7974 / .8628), F1 included (the mean of the scenarios'
  F1, not the F1 of the mean P and R); Table 5's percentages over all the episodes. The figures
  pooled over every episode are kept beside it as ``pooled``.

Episodes the infrastructure failed are left out here as in our figures (the paper says nothing
about them); the graph packs (stage 1) are scored alike in both views and are not repeated.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean
from typing import TYPE_CHECKING, Any, Final

from sopgym.core.errors import INFRA_CODES, TYPE_CODES, VALIDATION_CODES
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.tasks import Gold
    from sopgym.core.trajectory import CallRecord, Trajectory
    from sopgym.runs.records import TaskScore

NAME = "teller"
FAMILY = "banking/"
GRAPH_SUFFIX = "_graph"
ALL = "all"
SCHEMA_REFUSALS = (VALIDATION_CODES | TYPE_CODES) - {"invalid_value"}
RUN_TIME_REFUSALS = frozenset({"invalid_value", "internal_error"})
_CLOSE = 1e-9


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def run_time_type_error(call: CallRecord, gold: Gold) -> bool:
    """A call past the schema that failed at run time on its refused argument's type."""
    if call.error_code not in RUN_TIME_REFUSALS or not call.error_field:
        return False
    if not isinstance(call.arguments, dict) or call.error_field not in call.arguments:
        return False
    given = _json_type(call.arguments[call.error_field])
    wanted = {
        _json_type(c.arguments[call.error_field])
        for c in gold.calls
        if c.name == call.name and call.error_field in c.arguments
    }
    return bool(wanted) and given not in wanted


def set_precision_recall(called: Iterable[str], gold: Gold) -> tuple[float, float]:
    """Precision and recall of the set of APIs invoked against the gold's set."""
    invoked, wanted = set(called), {c.name for c in gold.calls}
    hits = len(invoked & wanted)
    precision = hits / len(invoked) if invoked else float(not wanted)
    recall = hits / len(wanted) if wanted else 1.0
    return precision, recall


def verdict(trajectory: Trajectory | None, gold: Gold, strict: TaskScore) -> JSON:
    """One stage-2 episode under the paper's definitions, and where they differ from ours."""
    calls = [c for c in trajectory.calls if c.error_code not in INFRA_CODES] if trajectory else []
    precision, recall = set_precision_recall((c.name for c in calls), gold)
    type_errors = sum(run_time_type_error(c, gold) for c in calls)
    validation = sum(c.error_code in SCHEMA_REFUSALS for c in calls)
    validation += sum(
        c.error_code == "invalid_value" and not run_time_type_error(c, gold) for c in calls
    )
    fields = strict.fields
    found: JSON = {
        "acc": bool(strict.completed and fields and all(fields.values())),
        "tool_precision": precision,
        "tool_recall": recall,
        "calls": len(calls),
        "blank": bool(gold.calls) and not calls,
        "validation": validation,
        "type": type_errors,
    }
    differs = []
    if found["acc"] != (strict.completed and fields.get("decision") is True):
        differs.append("acc")
    for key in ("tool_precision", "tool_recall"):
        ours = getattr(strict, key)
        if ours is None or abs(ours - found[key]) > _CLOSE:
            differs.append(key)
    if type_errors != strict.errors.get("type", 0):
        differs.append("type")
    found["differs"] = differs
    return found


TABLE_2: Final = ("acc", "tool_precision", "tool_recall", "tool_f1")


def _stage_2(verdicts: list[JSON]) -> JSON:
    calls = sum(v["calls"] for v in verdicts)
    precision = fmean(v["tool_precision"] for v in verdicts)
    recall = fmean(v["tool_recall"] for v in verdicts)
    found = {
        "tasks": len(verdicts),
        "acc": fmean(v["acc"] for v in verdicts),
        "tool_precision": precision,
        "tool_recall": recall,
        "tool_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "calls": calls,
        # Table 5: the share of episodes with each kind of error
        "blank_pct": 100.0 * fmean(v["blank"] for v in verdicts),
        "validation_pct": 100.0 * fmean(v["validation"] > 0 for v in verdicts),
        "type_pct": 100.0 * fmean(v["type"] > 0 for v in verdicts),
        # the same errors per call made (not the paper's unit)
        "validation_per_call_pct": _per_call(sum(v["validation"] for v in verdicts), calls),
        "type_per_call_pct": _per_call(sum(v["type"] for v in verdicts), calls),
        "differs": sum(bool(v["differs"]) for v in verdicts),
    }
    found["total_error_pct"] = found["blank_pct"] + found["validation_pct"] + found["type_pct"]
    return found


def _per_call(errors: int, calls: int) -> float:
    return 100.0 * errors / calls if calls else 0.0


def all_row(scenario_rows: Iterable[JSON]) -> JSON:
    """Table 2's "all" row: each of Acc., P, R and F1 the mean of the scenario rows."""
    rows = list(scenario_rows)
    return {key: fmean(row[key] for row in rows) for key in TABLE_2}


def aggregate(episodes: Iterable[tuple[str, JSON]]) -> JSON | None:
    """Stage-2 figures per scenario and over all (``all``) from (domain, verdict) pairs;
    ``None`` when no episode is a banking scenario's."""
    per_scenario: dict[str, list[JSON]] = {}
    for domain, found in episodes:
        per_scenario.setdefault(domain.removeprefix(FAMILY), []).append(found)
    if not per_scenario:
        return None
    scenarios = {name: _stage_2(found) for name, found in sorted(per_scenario.items())}
    pooled = _stage_2([v for found in per_scenario.values() for v in found])
    # the paper's "all": Table 2's columns the mean of the scenario rows, Table 5's over
    # every episode (the paper gives one Table 5 row per model)
    scenarios[ALL] = {**pooled, **all_row(scenarios.values()), "mean_of": len(scenarios)}
    return {
        "definition": "TELLER §4 / Tables 2, 5: Acc. = every outcome field, tool P/R over "
        "the set of APIs; \"all\" = mean of the scenario rows; errors as % of episodes "
        "(Blank, Valid., Type; their sum the total error rate)",
        "scenarios": scenarios,
        "pooled": pooled,
    }


def graph_properties(scenarios: Iterable[str]) -> dict[str, JSON]:
    """Table 4's graph columns for each banking scenario: nodes (the SOP's APIs), edges (the
    derived dependencies) and density E / (N (N - 1)) of the directed graph."""
    from sopgym.core.registry import load_domain

    properties = {}
    for scenario in scenarios:
        try:
            pack = load_domain(FAMILY + scenario)
        except KeyError:
            continue
        nodes = len(pack.tools)
        edges = sum(len(needs) for needs in pack.dependencies.values())
        density = edges / (nodes * (nodes - 1)) if nodes > 1 else 0.0
        properties[scenario] = {"nodes": nodes, "edges": edges, "density": density}
    return properties
