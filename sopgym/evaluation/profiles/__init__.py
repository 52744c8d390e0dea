"""Scoring profiles: the papers' own metric definitions, beside our strict ones.

Our strict scoring (:mod:`sopgym.evaluation.scoring`) stays the default and the headline. A
profile re-reads the same episode under one paper's definitions and records its verdict in
the task's score (``TaskScore.paper[<profile>]``), with ``differs`` naming the verdicts that
disagree with ours; :func:`aggregate` turns the verdicts into that paper's run figures
(``paper`` in summary.json and eval.json, and the report's "paper's definitions" section).

- ``sopbench`` (:mod:`.sopbench`): SOP-Bench's answer match, ECR rule and per-SOP mean, for
  every SOP-Bench-style pack (our ten, and imports under ``sopbench/``);
- ``teller`` (:mod:`.teller`): TELLER's Acc., set-based tool precision / recall and error
  percentages, for the banking family's stage-2 packs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sopgym.evaluation.profiles import sopbench, teller
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.tasks import Gold
    from sopgym.core.trajectory import Trajectory
    from sopgym.runs.records import TaskScore

PROFILES = (sopbench.NAME, teller.NAME)


def verdicts(
    domain: str,
    trajectory: Trajectory | None,
    gold: Gold,
    strict: TaskScore,
    agent_error: str | None = None,
) -> dict[str, JSON]:
    """The verdicts of every profile that applies to ``domain`` (none: ``{}``).
    ``agent_error``: what the agent's worker said ended the episode (its error type first)."""
    found: dict[str, JSON] = {}
    if sopbench.applies(domain):
        found[sopbench.NAME] = sopbench.verdict(trajectory, gold, strict, agent_error)
    if teller.applies(domain) and strict.infra_error is None:
        found[teller.NAME] = teller.verdict(trajectory, gold, strict)
    return found


def aggregate(scores: Iterable[TaskScore]) -> JSON:
    """Each profile's run figures over the scores that carry its verdicts (a profile no
    episode has is absent)."""
    per_profile: dict[str, list[tuple[str, JSON]]] = {}
    for score in scores:
        for name, found in score.paper.items():
            per_profile.setdefault(name, []).append((score.domain, found))
    figures: JSON = {}
    if sopbench.NAME in per_profile:
        figures[sopbench.NAME] = sopbench.aggregate(per_profile[sopbench.NAME])
    if teller.NAME in per_profile:
        figures[teller.NAME] = teller.aggregate(per_profile[teller.NAME])
    return figures


def differing(score: JSON) -> dict[str, list[str]]:
    """Per profile, the verdicts of one task's score (as JSON) that differ from ours."""
    return {
        name: found["differs"]
        for name, found in (score.get("paper") or {}).items()
        if found.get("differs")
    }
