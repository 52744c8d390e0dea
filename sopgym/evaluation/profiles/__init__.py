"""Scoring profiles: the papers' own metric definitions, beside our strict ones.

Our strict scoring (:mod:`sopgym.evaluation.scoring`) stays the default and the headline. A
profile re-reads the same episode under one paper's definitions and records its verdict in
the task's score (``TaskScore.paper[<profile>]``), with ``differs`` naming the verdicts that
disagree with ours; :func:`aggregate` turns the verdicts into that paper's run figures
(``paper`` in summary.json and eval.json, and the report's "paper's definitions" section).

A profile belongs to its family, never to a list of names: a pack names the profiles that
re-read its episodes (``DomainPack.paper_profiles``). Profiles are one kind of the plug-in
registry (:mod:`sopgym.core.plugins`): ours register here, a package adds its own under the
entry-point group ``sopgym.profiles``, and a pack may name one by ``module:attr`` (a
:class:`PaperProfile`, or a factory making one with no arguments).

- ``sopbench`` (:mod:`.sopbench`): SOP-Bench's answer match, ECR rule and per-SOP mean,
  declared by every SOP-Bench-style pack (our ten, and the imports under ``sopbench/``);
- ``teller`` (:mod:`.teller`): TELLER's Acc., set-based tool precision / recall and error
  percentages, declared by the banking family's stage-2 packs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sopgym.core.exceptions import UsageError
from sopgym.core.plugins import NotAPlugin, Plugins
from sopgym.evaluation.profiles import sopbench, teller
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.domain import DomainPack
    from sopgym.core.tasks import Gold
    from sopgym.core.trajectory import Trajectory
    from sopgym.runs.records import TaskScore

# One episode's verdict under a paper's definitions (None: the profile does not judge it):
# (trajectory, gold, our strict score, the agent's error as its worker said it)
Verdict = Callable[["Trajectory | None", "Gold", "TaskScore", "str | None"], "JSON | None"]
# A run's figures from its episodes' (domain, verdict) pairs
Aggregate = Callable[[list[tuple[str, JSON]]], "JSON | None"]


@dataclass(frozen=True)
class PaperProfile:
    """A paper's own metric definitions: ``verdict`` re-reads one episode, ``aggregate``
    turns the verdicts into the paper's run figures. Its verdicts and figures are keyed by
    the name the pack gives it (``sopbench``; ``module:attr`` for one named so)."""

    verdict: Verdict
    aggregate: Aggregate


class UnknownProfile(UsageError, ValueError):
    """A pack's ``paper_profiles`` entry that names no profile."""


def _profile(spec: str, loaded: Any) -> PaperProfile:
    made = loaded() if callable(loaded) and not isinstance(loaded, PaperProfile) else loaded
    if not isinstance(made, PaperProfile):
        raise NotAPlugin("not a PaperProfile nor a factory returning one")
    return made


def _teller_verdict(
    trajectory: Trajectory | None, gold: Gold, strict: TaskScore, agent_error: str | None
) -> JSON | None:
    """TELLER judges the agent: an episode the infrastructure failed is not its to judge."""
    return None if strict.infra_error is not None else teller.verdict(trajectory, gold, strict)


PROFILE_PLUGINS: Plugins[PaperProfile] = Plugins(
    "paper profile", "sopgym.profiles", _profile, UnknownProfile
)
PROFILE_PLUGINS.register(sopbench.NAME, PaperProfile(sopbench.verdict, sopbench.aggregate))
PROFILE_PLUGINS.register(teller.NAME, PaperProfile(_teller_verdict, teller.aggregate))
PROFILES = tuple(PROFILE_PLUGINS.registered)  # ours


def verdicts(
    domain: DomainPack,
    trajectory: Trajectory | None,
    gold: Gold,
    strict: TaskScore,
    agent_error: str | None = None,
) -> dict[str, JSON]:
    """The verdicts of every profile ``domain`` declares (none: ``{}``). ``agent_error``:
    what the agent's worker said ended the episode (its error type first)."""
    found: dict[str, JSON] = {}
    for name in domain.paper_profiles:
        verdict = PROFILE_PLUGINS.resolve(name).verdict(trajectory, gold, strict, agent_error)
        if verdict is not None:
            found[name] = verdict
    return found


def aggregate(scores: Iterable[TaskScore]) -> JSON:
    """Each profile's run figures over the scores that carry its verdicts (a profile no
    episode has is absent)."""
    per_profile: dict[str, list[tuple[str, JSON]]] = {}
    for score in scores:
        for name, found in score.paper.items():
            per_profile.setdefault(name, []).append((score.domain, found))
    return {
        name: PROFILE_PLUGINS.resolve(name).aggregate(episodes)
        for name, episodes in sorted(per_profile.items())
    }


def differing(score: JSON) -> dict[str, list[str]]:
    """Per profile, the verdicts of one task's score (as JSON) that differ from ours."""
    return {
        name: found["differs"]
        for name, found in (score.get("paper") or {}).items()
        if found.get("differs")
    }
