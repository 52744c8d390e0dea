"""The scorer interface: a scorer is a small factory's product, a named callable that turns one
:class:`Case` into one :class:`Score`. (Re-exported by :mod:`sopgym.evaluation.scorers.base`.)

Scorers are independent of each other and of where the episode came from (the gateway's
records or the trace store), so one set of scorers gives the same answer on every path. A
scorer never decides success alone: :func:`sopgym.evaluation.scoring.score_episode` calls a
task a success when it completed and every *gating* score passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from sopgym.core.tasks import Gold, Task
from sopgym.core.trajectory import Trajectory
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.domain import DomainPack


# the gold-decisions key of a task's own output schema (see Case.output_schema)
TASK_SCHEMA = "output_schema"
# the metrics key of a Score whose scorer applies to the task but had no evidence to judge it
# by (a final state an episode played elsewhere never had): value None, yet never a pass
UNJUDGED = "unjudged"


@dataclass(frozen=True)
class Case:
    """What a scorer scores: one task's episode beside the gold, in its domain (schemas,
    dependency graph)."""

    task: Task
    trajectory: Trajectory
    gold: Gold
    domain: DomainPack
    # The episode finished with a final answer (a JSON object). Set once: every scorer asks.
    completed: bool = field(init=False)

    def __post_init__(self) -> None:
        completed = self.trajectory.finished and isinstance(self.trajectory.outputs, dict)
        object.__setattr__(self, "completed", completed)

    @property
    def answer(self) -> JSON:
        """The final answer; an empty one when the episode did not complete."""
        outputs = self.trajectory.outputs
        return outputs if self.completed and outputs is not None else {}

    @property
    def output_schema(self) -> JSON:
        """The answer's JSON Schema: the task's own where its gold carries one (imported items
        that each bring a schema, :data:`TASK_SCHEMA`), else the domain's."""
        own = self.gold.decisions.get(TASK_SCHEMA)
        return own if isinstance(own, dict) else self.domain.output_schema


class Score(msgspec.Struct, frozen=True):
    """One scorer's verdict. ``value`` is in [0, 1], or ``None`` where the scorer does not
    apply to the task (no gold for it); 1.0 is a pass. (A msgspec struct: every episode makes
    one per scorer, and a frozen dataclass costs ten times as much to build.)"""

    value: float | None
    metrics: JSON = msgspec.field(default_factory=dict)
    explanation: str = ""
    gates: bool = False

    @property
    def passed(self) -> bool:
        return self.value is None or self.value >= 1.0

    @property
    def unjudged(self) -> bool:
        """The scorer applies but could not judge (``metrics["unjudged"]`` says why)."""
        return self.value is None and UNJUDGED in self.metrics

    def to_json(self) -> JSON:
        """``value``, ``metrics``, ``explanation`` and ``gates``, in that order."""
        return msgspec.structs.asdict(self)


@dataclass(frozen=True)
class Scorer:
    """A named measure; ``gates`` says whether a task's success requires it to pass;
    ``judges_calls``: it judges the calls the agent made (the procedure), not its answer or
    the final state, so an episode it alone fails is ``wrong_procedure``, never
    ``wrong_final``."""

    name: str
    measure: Callable[[Case], Score]
    gates: bool = False
    judges_calls: bool = False

    def __call__(self, case: Case) -> Score:
        score = self.measure(case)
        if score.gates == self.gates:  # (most scorers gate nothing: no copy to make)
            return score
        return Score(score.value, score.metrics, score.explanation, self.gates)


def ratio(part: int, whole: int) -> float:
    """``part / whole``, and 1.0 for nothing out of nothing (nothing was missed)."""
    return part / whole if whole else 1.0


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def listed(items: list[str], limit: int = 5) -> str:
    """A short comma list for an explanation: the first ``limit`` items and how many more."""
    head = ", ".join(items[:limit])
    return head + (f" (+{len(items) - limit} more)" if len(items) > limit else "")
