"""Scorers: compare an episode's trajectory with the gold, then aggregate a run.

Per task: final outputs field by field (normalised), tool-call precision/recall/F1 against the
gold calls (TELLER-Bench), and a parameter-error taxonomy. Over a run: SOP-Bench's ECR
(completed / all), C-TSR (correct / completed) and TSR (correct / all).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sopgym.core.errors import TYPE_CODES, VALIDATION_CODES
from sopgym.core.tasks import Gold
from sopgym.core.trajectory import Trajectory
from sopgym.types import JSON

_SPACES = re.compile(r"\s+")


def normalize(value: Any) -> Any:
    """Case-, whitespace- and number-format-insensitive form of an output value."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = _SPACES.sub(" ", value.strip()).casefold()
        if text in ("true", "false"):
            return text == "true"
        try:
            number = float(text.replace(",", ""))
        except ValueError:
            return text
        return number if math.isfinite(number) else text
    if isinstance(value, (list, tuple)):
        return sorted((normalize(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k).casefold(): normalize(v) for k, v in value.items()}
    return value


def values_match(predicted: Any, gold: Any, tolerance: float = 0.0) -> bool:
    p, g = normalize(predicted), normalize(gold)
    if isinstance(p, float) and isinstance(g, float):
        return abs(p - g) <= tolerance + 1e-9
    return p == g


@dataclass
class TaskScore:
    task_id: str
    domain: str
    completed: bool
    success: bool
    fields: dict[str, bool] = field(default_factory=dict)
    # None: not applicable, the task has no reference calls (an imported benchmark)
    tool_precision: float | None = 0.0
    tool_recall: float | None = 0.0
    tool_f1: float | None = 0.0
    calls: int = 0
    gold_calls: int | None = 0
    errors: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> JSON:
        return asdict(self)


def score_task(
    domain: str, trajectory: Trajectory | None, gold: Gold, output_schema: JSON
) -> TaskScore:
    """Score one episode. ``None`` (no trajectory at all) is an incomplete episode."""
    if trajectory is None:
        return _applicable(
            gold,
            TaskScore(
                task_id=gold.task_id,
                domain=domain,
                completed=False,
                success=False,
                gold_calls=len(gold.calls),
                errors={"incomplete": 1},
            ),
        )
    completed = trajectory.finished and isinstance(trajectory.outputs, dict)
    outputs = trajectory.outputs if completed and trajectory.outputs is not None else {}
    properties = output_schema.get("properties", {})
    fields = {
        name: name in outputs
        and values_match(outputs[name], expected, properties.get(name, {}).get("x-tolerance", 0.0))
        for name, expected in gold.outputs.items()
    }
    precision, recall, f1 = tool_match(trajectory, gold)
    score = TaskScore(
        task_id=gold.task_id,
        domain=domain,
        completed=completed,
        success=completed and all(fields.values()),
        fields=fields,
        tool_precision=precision,
        tool_recall=recall,
        tool_f1=f1,
        calls=len(trajectory.calls),
        gold_calls=len(gold.calls),
        errors=error_taxonomy(trajectory, gold, wrong_final=completed and not all(fields.values())),
    )
    return _applicable(gold, score)


def _applicable(gold: Gold, score: TaskScore) -> TaskScore:
    """Tool metrics marked not applicable where no reference policy made gold calls."""
    if gold.reference_calls:
        return score
    return replace(score, tool_precision=None, tool_recall=None, tool_f1=None, gold_calls=None)


def tool_match(trajectory: Trajectory, gold: Gold) -> tuple[float, float, float]:
    """Precision/recall/F1 of the multiset of tool names called vs. the gold calls.

    With no gold calls and no calls, the agent was exactly right: 1.0 all round.
    """
    made = Counter(c.name for c in trajectory.calls)
    wanted = Counter(c.name for c in gold.calls)
    hits = sum((made & wanted).values())
    precision = hits / sum(made.values()) if made else float(not wanted)
    recall = hits / sum(wanted.values()) if wanted else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def error_taxonomy(trajectory: Trajectory, gold: Gold, wrong_final: bool) -> dict[str, int]:
    """Counts per error class for one episode.

    blank: the gold needs tool calls and the agent made none. validation / type: calls the
    service rejected by schema. wrong_value: an accepted call to a gold tool whose arguments
    match none of that tool's gold calls. hallucinated: a tool not in the episode's catalog.
    distractor: a call to a distractor tool. wrong_final: completed with a wrong output (decided
    by the caller's field comparison, so output tolerances apply).
    """
    counts: Counter[str] = Counter()
    if gold.calls and not trajectory.calls:
        counts["blank"] += 1
    gold_args: dict[str, list[Any]] = {}
    for gold_call in gold.calls:
        gold_args.setdefault(gold_call.name, []).append(normalize(gold_call.arguments))
    for call in trajectory.calls:
        if not call.in_catalog:
            counts["hallucinated"] += 1
        elif call.error_code in TYPE_CODES:
            counts["type"] += 1
        elif call.error_code in VALIDATION_CODES:
            counts["validation"] += 1
        elif (
            call.error_code is None
            and call.name in gold_args
            and normalize(call.arguments) not in gold_args[call.name]
        ):
            counts["wrong_value"] += 1
        if call.distractor:
            counts["distractor"] += 1
    if wrong_final:
        counts["wrong_final"] += 1
    return dict(counts)


def aggregate(scores: Iterable[TaskScore]) -> JSON:
    """Run-level metrics over task scores (a task never scored must be passed as incomplete)."""
    scores = list(scores)
    n = len(scores)
    completed = sum(s.completed for s in scores)
    correct = sum(s.success for s in scores)
    errors: Counter[str] = Counter()
    for s in scores:
        errors.update(s.errors)
    return {
        "tasks": n,
        "completed": completed,
        "correct": correct,
        "ecr": completed / n if n else 0.0,
        "c_tsr": correct / completed if completed else 0.0,
        "tsr": correct / n if n else 0.0,
        "tool_precision": _mean(s.tool_precision for s in scores),
        "tool_recall": _mean(s.tool_recall for s in scores),
        "tool_f1": _mean(s.tool_f1 for s in scores),
        "errors": dict(sorted(errors.items())),
    }


def summarize(scores: Iterable[TaskScore]) -> JSON:
    """Overall metrics plus the same metrics per domain."""
    scores = list(scores)
    by_domain: dict[str, list[TaskScore]] = {}
    for s in scores:
        by_domain.setdefault(s.domain, []).append(s)
    return {**aggregate(scores), "domains": {d: aggregate(v) for d, v in sorted(by_domain.items())}}


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the applicable values; None when there are values but none applies."""
    values = list(values)
    applicable = [v for v in values if v is not None]
    if applicable:
        return sum(applicable) / len(applicable)
    return None if values else 0.0
