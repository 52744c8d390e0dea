"""Repeated trials: how reliably an agent solves a task, not only whether it can.

A run with ``--trials K`` works every task K times. For a task with n trials of which c
succeeded (tau2-bench's definitions, averaged over tasks):

- ``pass^k = C(c, k) / C(n, k)``: the chance that k trials drawn from the n all succeed. It
  falls with k unless the agent is consistent; pass^1 is the plain success rate.
- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of them succeeds.

The per-trial spread (each trial's TSR, their min, max and population standard deviation)
shows how far a single run's headline figure can move from one repeat to the next.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from math import comb

from sopgym.types import JSON


@dataclass(frozen=True)
class TrialOutcome:
    """One episode of a repeated run: a task, which trial, and whether it succeeded (an
    episode that never ran counts as a failure)."""

    task_id: str
    domain: str
    trial: int
    success: bool


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: all of k trials drawn from n (c successful) succeed."""
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of one task: at least one of k trials drawn from n (c successful) succeeds."""
    return 1.0 - comb(n - c, k) / comb(n, k)


def trial_metrics(outcomes: Iterable[TrialOutcome], trials: int) -> JSON:
    """pass^k and pass@k for k = 1..``trials`` (keys are k as text), and each trial's TSR
    with its spread. Every task is expected to have ``trials`` outcomes."""
    by_task: dict[tuple[str, str], list[bool]] = {}
    by_trial: dict[int, list[bool]] = {t: [] for t in range(trials)}
    for outcome in outcomes:
        by_task.setdefault((outcome.domain, outcome.task_id), []).append(outcome.success)
        by_trial.setdefault(outcome.trial, []).append(outcome.success)
    counts = [(len(results), sum(results)) for results in by_task.values()]
    ks = range(1, trials + 1)
    tsr = [
        sum(results) / len(results) if results else 0.0 for _, results in sorted(by_trial.items())
    ]
    return {
        "trials": trials,
        "pass_hat_k": {str(k): _mean(pass_hat_k(n, c, k) for n, c in counts) for k in ks},
        "pass_at_k": {str(k): _mean(pass_at_k(n, c, k) for n, c in counts) for k in ks},
        "trial_tsr": tsr,
        "tsr_min": min(tsr, default=0.0),
        "tsr_max": max(tsr, default=0.0),
        "tsr_stdev": statistics.pstdev(tsr) if tsr else 0.0,
    }


def summarize_trials(outcomes: Iterable[TrialOutcome], trials: int) -> JSON:
    """:func:`trial_metrics` over the whole run, and per domain under ``"domains"``."""
    outcomes = list(outcomes)
    by_domain: dict[str, list[TrialOutcome]] = {}
    for outcome in outcomes:
        by_domain.setdefault(outcome.domain, []).append(outcome)
    return {
        **trial_metrics(outcomes, trials),
        "domains": {d: trial_metrics(v, trials) for d, v in sorted(by_domain.items())},
    }


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0
