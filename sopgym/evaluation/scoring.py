"""The one scoring entry: :func:`score_episode` runs a domain's scorers on an episode and
folds their results into a :class:`TaskScore`; :func:`aggregate` and :func:`summarize` turn
task scores into run metrics (SOP-Bench's ECR = completed / all, C-TSR = correct / completed,
TSR = correct / all; TELLER-Bench's tool precision / recall / F1).

Infrastructure errors are their own outcome: an episode that a service, the gateway, the model
endpoint or the agent worker failed (:data:`~sopgym.core.outcomes.INFRA_ERROR`) is left out of
every agent metric (ECR, C-TSR, TSR, tool P/R/F1, the error taxonomy): ``tasks`` counts every
episode, ``scored`` those the agent really played, and ``infra_errors`` the rest. Calls that
never reached a working tool (a service down, an injected fault) are no agent decision: no
scorer sees them; ``faults`` counts the injected ones per episode, and ``robustness`` gives TSR
over the episodes that met a fault beside TSR over those that met none.

The runner (``results.jsonl``), ``sopgym merge``, the trace evaluator and hence the reports all
score through :func:`score_episode`, so they agree task by task.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from sopgym.core.errors import DOWN_CODE, FAULT_CODES, HUNG_CODE, INFRA_CODES
from sopgym.core.ordering import natural_key
from sopgym.core.tasks import Gold, Task
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation import profiles
from sopgym.evaluation.scorers import Case, Score, scorers_for
from sopgym.runs.records import TaskScore
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.domain import DomainPack


def _failed_calls(calls: list[CallRecord]) -> tuple[list[CallRecord], list[CallRecord]]:
    """The calls the infrastructure failed (``INFRA_CODES``), and those our tool service
    answered ``tool_timeout``; one pass, as most calls carry no error code at all."""
    infra: list[CallRecord] = []
    timed_out: list[CallRecord] = []
    for call in calls:
        code = call.error_code
        if code is None:
            continue
        if code in INFRA_CODES:
            infra.append(call)
        if code == HUNG_CODE:
            timed_out.append(call)
    return infra, timed_out


def _hung_calls(domain: DomainPack, timed_out: list[CallRecord]) -> list[CallRecord]:
    """Of the calls our tool service answered ``tool_timeout``, those of tools not documented
    as slow by design: the tool hung, not the agent (an infrastructure failure of the
    episode)."""
    if not timed_out:
        return []
    slow = {t.name for t in domain.all_tools() if getattr(t, "slow_by_design", False)}
    return [c for c in timed_out if c.name not in slow]


def score_episode(
    domain: DomainPack,
    task: Task,
    trajectory: Trajectory | None,
    gold: Gold,
    infra_error: str | None = None,
    agent_error: str | None = None,
) -> TaskScore:
    """Score one episode strictly (:func:`strict_score`), plus the verdicts of the papers'
    own definitions where a profile applies to the domain (``paper``: see
    :mod:`sopgym.evaluation.profiles`; ``agent_error`` is what the agent's worker said ended
    the episode, which SOP-Bench's completion rule reads)."""
    score = strict_score(domain, task, trajectory, gold, infra_error)
    score.paper = profiles.verdicts(domain, trajectory, gold, score, agent_error)
    return score


def strict_score(
    domain: DomainPack,
    task: Task,
    trajectory: Trajectory | None,
    gold: Gold,
    infra_error: str | None = None,
) -> TaskScore:
    """Score one episode with the domain's scorers. ``None`` (no trajectory at all) is an
    incomplete episode: nothing to score, every metric at its worst.

    Success: the episode completed and every gating score passed. The error counts are the
    ``errors`` scorer's call taxonomy plus ``wrong_final`` (completed, a gate on the answer or
    the final state failed), ``wrong_procedure`` (completed, only gates on the calls failed:
    tod/live's ``actions``) or ``incomplete`` (no trajectory). An episode the infrastructure
    failed (``infra_error``, or a call answered ``service_unavailable`` in the trajectory, or
    an episode left unfinished right after a call an injected fault failed, or a scored final
    state its service could not hand over) is no success and no agent error: it carries its
    cause and the metrics leave it out.
    """
    applicable = gold.reference_calls
    faults = 0
    if trajectory is not None:
        infra, timed_out = _failed_calls(trajectory.calls)
        hung = _hung_calls(domain, timed_out)
        if hung and infra_error is None:
            infra_error = f"{hung[0].name}: {HUNG_CODE} (the tool hung past the service's limit)"
        if infra:
            faults = sum(c.error_code in FAULT_CODES for c in infra)
            down = next((c for c in infra if c.error_code == DOWN_CODE), None)
            if infra_error is None and down is not None:
                infra_error = f"{down.name}: {DOWN_CODE}"
        last = trajectory.calls[-1] if trajectory.calls else None
        if (
            infra_error is None
            and not trajectory.finished
            and last is not None
            and last.error_code in INFRA_CODES
        ):
            # the agent stopped with no answer right after a call the infrastructure failed
            # (its retries, where it made any, were spent): no agent decision to score
            tries = sum(c.name == last.name and c.error_code in INFRA_CODES for c in infra)
            infra_error = f"{last.name}: {last.error_code} (given up after {tries} attempt(s))"
        if infra_error is None and trajectory.state_error and gold.final_state is not None:
            # the service that held the scored state failed to hand it over: no verdict on it
            infra_error = f"final state lost: {trajectory.state_error}"
        if infra:
            trajectory = replace(
                trajectory, calls=[c for c in trajectory.calls if c.error_code not in INFRA_CODES]
            )
    if infra_error is not None:
        return TaskScore(
            task_id=gold.task_id,
            domain=task.domain,
            completed=False,
            success=False,
            tool_precision=None,
            tool_recall=None,
            tool_f1=None,
            gold_calls=len(gold.calls) if applicable else None,
            infra_error=infra_error,
            faults=faults,
        )
    if trajectory is None:
        zero = 0.0 if applicable else None
        return TaskScore(
            task_id=gold.task_id,
            domain=task.domain,
            completed=False,
            success=False,
            tool_precision=zero,
            tool_recall=zero,
            tool_f1=zero,
            gold_calls=len(gold.calls) if applicable else None,
            errors={"incomplete": 1},
        )
    case = Case(task, trajectory, gold, domain)
    chosen = scorers_for(domain, task)
    results = {scorer.name: scorer(case) for scorer in chosen}
    unjudged: list[str] = []
    judged_pass = case.completed
    answer_failed = False  # a failed gate judged the answer or the final state
    for scorer in chosen:
        result = results[scorer.name]
        if not result.gates:
            continue
        if result.unjudged:
            unjudged.append(scorer.name)
        elif not result.passed:
            judged_pass = False
            answer_failed = answer_failed or not scorer.judges_calls
    success = judged_pass and not unjudged  # a gate nobody could judge is never passed
    tools = _metrics(results, "tool_calls")
    errors = dict(_metrics(results, "errors"))
    if case.completed and not judged_pass:
        # the answer and the state right, the calls not: the procedure is what failed
        errors["wrong_final" if answer_failed else "wrong_procedure"] = 1
    return TaskScore(
        task_id=gold.task_id,
        domain=task.domain,
        completed=case.completed,
        success=success,
        fields=_metrics(results, "output_fields").get("fields", {}),
        tool_precision=tools.get("precision"),
        tool_recall=tools.get("recall"),
        tool_f1=tools.get("f1"),
        calls=len(trajectory.calls),
        gold_calls=len(gold.calls) if applicable else None,
        errors=errors,
        order_violations=_metrics(results, "order").get("violations", 0),
        scores={name: r.to_json() for name, r in results.items()},
        faults=faults,
        unjudged=unjudged,
        undecided=judged_pass and bool(unjudged),
    )


def _metrics(results: dict[str, Score], name: str) -> JSON:
    score = results.get(name)
    return score.metrics if score is not None else {}


def aggregate(scores: Iterable[TaskScore]) -> JSON:
    """Run-level metrics over task scores (a task never scored must be passed as incomplete);
    episodes the infrastructure failed are counted apart and left out of the rest."""
    every = list(scores)
    scores = [s for s in every if s.infra_error is None]
    n = len(scores)
    # one pass over the tasks (run metrics are also taken per domain and per agent)
    completed = correct = order_violations = answered_without_tools = undecided = 0
    precisions: list[float | None] = []
    recalls: list[float | None] = []
    f1s: list[float | None] = []
    errors: dict[str, int] = {}
    values: defaultdict[str, list[float | None]] = defaultdict(list)  # per scorer
    for s in scores:
        completed += s.completed
        correct += s.success
        order_violations += s.order_violations
        answered_without_tools += s.answered_without_tools
        undecided += s.undecided
        precisions.append(s.tool_precision)
        recalls.append(s.tool_recall)
        f1s.append(s.tool_f1)
        for name, count in s.errors.items():
            errors[name] = errors.get(name, 0) + count
        for name, result in s.scores.items():
            values[name].append(result["value"])
    return {
        "tasks": len(every),
        "scored": n,
        "infra_errors": len(every) - n,
        "completed": completed,
        "correct": correct,
        "ecr": completed / n if n else 0.0,
        "c_tsr": correct / completed if completed else 0.0,
        "tsr": correct / n if n else 0.0,
        "tool_precision": _mean(precisions),
        "tool_recall": _mean(recalls),
        "tool_f1": _mean(f1s),
        "errors": dict(sorted(errors.items())),
        "order_violations": order_violations,
        "answered_without_tools": answered_without_tools,
        # episodes that passed every gate that could be judged, with a gate that could not
        # (TaskScore.unjudged): not in ``tsr``; ``tsr_if_undecided_pass`` is the bound had
        # every one of them passed it
        "undecided": undecided,
        "tsr_if_undecided_pass": (correct + undecided) / n if n else 0.0,
        # per scorer, the mean of its applicable values over the tasks it scored
        "scores": {name: _mean(v) for name, v in sorted(values.items())},
        # the papers' own definitions over the same episodes, infrastructure failures
        # included (SOP-Bench counts them against ECR)
        "paper": profiles.aggregate(every),
    }


def summarize(scores: Iterable[TaskScore]) -> JSON:
    """Overall metrics plus the same metrics per domain."""
    scores = list(scores)
    by_domain: dict[str, list[TaskScore]] = {}
    for s in scores:
        by_domain.setdefault(s.domain, []).append(s)
    return {
        **aggregate(scores),
        "robustness": robustness(scores),
        "domains": {
            d: aggregate(by_domain[d]) for d in sorted(by_domain, key=natural_key)
        },
    }


def robustness(scores: list[TaskScore]) -> JSON:
    """TSR over the played episodes that met at least one injected fault, beside TSR over
    those that met none (``None`` where a side has no episode)."""
    played = [s for s in scores if s.infra_error is None]
    hit = [s for s in played if s.faults]
    clean = [s for s in played if not s.faults]
    return {
        "faults_injected": sum(s.faults for s in scores),
        "episodes_with_faults": len(hit),
        "tsr_with_faults": sum(s.success for s in hit) / len(hit) if hit else None,
        "tsr_without_faults": sum(s.success for s in clean) / len(clean) if clean else None,
    }


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the applicable values; None when there are values but none applies."""
    values = list(values)
    applicable = [v for v in values if v is not None]
    if applicable:
        return sum(applicable) / len(applicable)
    return None if values else 0.0
