"""The evaluator: scores episodes from their traces alone, plus the task set's gold.

Each episode's trajectory is rebuilt from spans (:mod:`.episodes`) and scored by the same
:func:`sopgym.evaluation.scoring.score_episode` the runner applies to the gateway's records, so
the two paths agree task by task. The evaluator computes no score of its own: on top of the
shared score it adds only what the trace alone knows (latency, LLM calls and tokens, whether
the trace is complete).

Episodes are grouped by (run id, agent); in each group every expected (task, trial) gets
exactly one row: its latest episode, or an incomplete row when no trace of it exists. Earlier
attempts of the same trial are listed as superseded, episodes of unknown tasks as unmatched:
nothing is dropped silently.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from sopgym.core import dataset
from sopgym.core.domain import DomainPack
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Gold, Task
from sopgym.evaluation.breakdown import breakdown, tags
from sopgym.evaluation.episodes import EpisodeSpans, assemble
from sopgym.evaluation.paper_figures import paper_figures
from sopgym.evaluation.scoring import TaskScore, aggregate, robustness, score_episode
from sopgym.evaluation.stats import quantile
from sopgym.evaluation.two_stage import two_stage
from sopgym.observability import semconv as sc
from sopgym.observability.otlp import SpanBatch, paused_gc
from sopgym.runs.records import read_config_object, read_results
from sopgym.types import JSON

# (domain, task id, trial): one expected episode of a run
EpisodeKey = tuple[str, str, int]


@dataclass
class DomainTasks:
    domain: DomainPack
    tasks: list[Task]
    gold: dict[str, Gold]

    @cached_property
    def by_id(self) -> dict[str, Task]:
        return {t.id: t for t in self.tasks}


class TaskSet:
    """The gold of the domains being evaluated, loaded on first use (tables are not needed)."""

    def __init__(self, data_root: Path | None = None) -> None:
        self.data_root = data_root
        self._domains: dict[str, DomainTasks | None] = {}

    def get(self, name: str) -> DomainTasks | None:
        if name not in self._domains:
            try:
                domain = load_domain(name)
            except KeyError:
                self._domains[name] = None
                return None
            tasks, gold = dataset.load_tasks(dataset.materialize(domain, self.data_root))
            self._domains[name] = DomainTasks(domain, tasks, gold)
        return self._domains[name]

    def expected(
        self, domains: Iterable[str], limit: int | None = None, trials: int = 1
    ) -> list[EpisodeKey]:
        """(domain, task id, trial) of every episode a run over ``domains`` should have made:
        each task ``trials`` times."""
        keys = []
        for name in domains:
            found = self.get(name)
            tasks = found.tasks if found else []
            for task in tasks[:limit] if limit else tasks:
                keys += [(name, task.id, trial) for trial in range(trials)]
        return keys


def _row(
    key: EpisodeKey,
    group: tuple[str, str],
    episode: EpisodeSpans | None,
    tasks: DomainTasks,
) -> tuple[JSON, TaskScore]:
    """An expected episode's result row, and its score (``episode``: ``None`` when no trace
    of it exists)."""
    domain, task_id, trial = key
    gold = tasks.gold[task_id]
    problems = episode.problems if episode else ["no trace of this task"]
    trajectory = episode.trajectory(gold) if episode and not problems else None
    said = episode.root.attributes.get(sc.ERROR_TYPE) if episode and episode.root else None
    score = score_episode(
        tasks.domain, tasks.by_id[task_id], trajectory, gold, _infra(episode), said
    )
    row: JSON = {
        "task_id": task_id,
        "domain": domain,
        "trial": trial,
        "run_id": group[0],
        "agent": group[1],
        "model": episode.model if episode else None,
        "trace_id": episode.trace_id if episode else None,
        "episode_id": episode.episode_id if episode else None,
        "status": episode.status if episode else None,
        "trace_complete": not problems,
        "problems": problems,
        "score": dict(vars(score)),  # = score.to_json(), without asdict's deep copies
        "latency_s": episode.latency_s if episode else None,
        "tool_latency_ms": [round((s.end_ns - s.start_ns) / 1e6, 3) for s in episode.calls]
        if episode
        else [],
        "calls_made": [[c.name, c.error_code] for c in trajectory.calls] if trajectory else [],
        "tags": tags(gold),
        # what explain's reasons read (the report's "failed because" column): the answer
        # beside the gold's, and for a failure the calls and final state the scorers judged
        "outputs": trajectory.outputs if trajectory else None,
        "gold_outputs": gold.outputs,
    }
    if trajectory is not None and not score.success:
        row["trajectory"] = {
            "calls": [
                {
                    "name": c.name,
                    "arguments": c.arguments,
                    "error_code": c.error_code,
                    "error_field": c.error_field,
                }
                for c in trajectory.calls
            ],
            "final_state": trajectory.final_state,
        }
    usage = episode.llm_usage() if episode else (0, 0, 0)
    row["llm_calls"], row["input_tokens"], row["output_tokens"] = usage
    if not score.completed:
        row["reason"] = _reason(episode, problems, trajectory)
    return row, score


def _infra(episode: EpisodeSpans | None) -> str | None:
    """The cause when the agent's worker said the infrastructure failed the episode."""
    if episode is None or episode.status != INFRA_ERROR:
        return None
    attributes = episode.root.attributes if episode.root else {}
    return str(attributes.get(sc.ERROR_TYPE) or INFRA_ERROR)


def _reason(episode: EpisodeSpans | None, problems: list[str], trajectory: Any) -> str:
    if problems:
        return "; ".join(problems)
    attributes = episode.root.attributes if episode and episode.root else {}
    said = attributes.get(sc.ERROR_TYPE) or attributes.get(sc.TASK_STATUS)
    if trajectory is not None and not trajectory.finished:
        return f"episode not finished (agent: {said or 'no status'})"
    return "outputs missing"


def metrics(rows: list[JSON], scores: list[TaskScore] | None = None) -> JSON:
    """The shared run metrics (``aggregate``: ECR / C-TSR / TSR, tool metrics, errors, order
    violations, per-scorer means), plus call-level error rates and what only traces know:
    incomplete traces, latency, LLM calls and tokens. ``scores``: the rows' scores, where the
    caller has them already (rows may come from eval.json)."""
    if scores is None:
        scores = [TaskScore(**r["score"]) for r in rows]
    base = aggregate(scores)
    errors: Counter[str] = Counter(base["errors"])
    calls = sum(s.calls for s in scores)
    latencies: list[float] = []
    tool_latencies: list[float] = []
    incomplete = llm_calls = input_tokens = output_tokens = 0
    for r in rows:  # one pass (metrics are also taken per domain and per agent)
        if r["latency_s"] is not None:
            latencies.append(r["latency_s"])
        tool_latencies += r["tool_latency_ms"]
        incomplete += not r["trace_complete"]
        llm_calls += r["llm_calls"]
        input_tokens += r["input_tokens"]
        output_tokens += r["output_tokens"]
    n = len(rows)
    latencies.sort()
    tool_latencies.sort()

    def per_call(*keys: str) -> float:
        return sum(errors[k] for k in keys) / calls if calls else 0.0

    return {
        **base,
        "robustness": robustness(scores),
        "calls": calls,
        "wrong_tool_rate": per_call("hallucinated", "distractor"),
        "param_failure_rate": per_call("validation", "type"),
        "wrong_value_rate": per_call("wrong_value"),
        "blank_rate": errors["blank"] / n if n else 0.0,
        "incomplete_traces": incomplete,
        "latency_s": {  # (fmean sums exactly, with fsum: sorted first, no bit changes)
            "mean": statistics.fmean(latencies) if latencies else None,
            "p50": quantile(latencies, 0.5),
            "p95": quantile(latencies, 0.95),
        },
        "tool_latency_ms": {
            "p50": quantile(tool_latencies, 0.5),
            "p99": quantile(tool_latencies, 0.99),
        },
        "llm_calls": llm_calls,
        "llm_calls_per_task": llm_calls / n if n else 0.0,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "tokens_per_task": (input_tokens + output_tokens) / n if n else 0.0,
    }


def _grouped(rows: list[JSON], scores: list[TaskScore], key: str, overall: JSON) -> JSON:
    """The metrics of the rows per value of ``key``; a value every row has gets ``overall``,
    the metrics of the same rows in the same order (a run of one agent, or of one domain)."""
    groups: defaultdict[str, tuple[list[JSON], list[TaskScore]]]
    groups = defaultdict(lambda: ([], []))
    for row, score in zip(rows, scores, strict=True):
        group = groups[row[key]]
        group[0].append(row)
        group[1].append(score)
    if len(groups) == 1:
        return {name: overall for name in groups}
    return {name: metrics(*group) for name, group in sorted(groups.items())}


def evaluate(
    spans: SpanBatch,
    taskset: TaskSet,
    expected: list[EpisodeKey] | None = None,
    run: tuple[str, str] | None = None,
    run_filter: str | None = None,
    source: str = "",
    recorded: dict[EpisodeKey, str] | None = None,
) -> JSON:
    """Score every episode in ``spans``.

    ``expected`` lists the (domain, task id, trial) episodes each (run id, agent) group should
    cover (a run folder's config says which); without it a group covers the episodes it has
    traces of.
    ``run`` (a run folder's (run id, agent)) puts every episode in that one group, which
    exists even when no trace exists at all.
    ``recorded`` (a run folder's results: the episode id its runner was given by the gateway
    for each (domain, task id, trial)) is the only episode scored for that key: spans of
    another episode claiming the task (a forged later attempt) are listed as unmatched.
    """
    with paused_gc():
        return _evaluate(spans, taskset, expected, run, run_filter, source, recorded or {})


def _evaluate(
    spans: SpanBatch,
    taskset: TaskSet,
    expected: list[EpisodeKey] | None,
    run: tuple[str, str] | None,
    run_filter: str | None,
    source: str,
    recorded: dict[EpisodeKey, str],
) -> JSON:
    started = time.perf_counter()
    episodes = assemble(spans.spans)
    # per (run id, agent) group: its episodes, each with its key (read once: spans are
    # searched for them)
    groups: defaultdict[tuple[str, str], list[tuple[int, EpisodeKey, EpisodeSpans]]]
    groups = defaultdict(list)
    unmatched: list[JSON] = []
    for episode in episodes:
        run_id = episode.run_id
        if run_filter is not None and run_id != run_filter:
            continue
        domain, task_id = episode.domain, episode.task_id
        tasks = taskset.get(domain) if domain else None
        if tasks is None or task_id not in tasks.gold:
            unmatched.append(_brief(episode, "task not in the task set"))
            continue
        key = (str(domain), str(task_id), episode.trial)
        if key in recorded and episode.episode_id != recorded[key]:
            unmatched.append(_brief(episode, "not the episode the run recorded for the task"))
            continue
        groups[run or (run_id or "", episode.agent or "")].append(
            (episode.started_ns, key, episode)
        )
    if run is not None:
        groups.setdefault(run, [])
    rows: list[JSON] = []
    scores: list[TaskScore] = []
    superseded: list[JSON] = []
    for group, members in sorted(groups.items()):
        latest: dict[EpisodeKey, EpisodeSpans] = {}
        for _, key, episode in sorted(members, key=lambda m: m[0]):
            if key in latest:
                superseded.append(_brief(latest[key], "a later attempt of the task exists"))
            latest[key] = episode
        wanted = expected if expected is not None else sorted(latest)
        for key in wanted:
            tasks = taskset.get(key[0])
            if tasks is not None and key[1] in tasks.gold:
                row, score = _row(key, group, latest.pop(key, None), tasks)
                rows.append(row)
                scores.append(score)
        unmatched += [_brief(e, "task not expected in this run") for e in latest.values()]
    result = _result(rows, scores, source, superseded, unmatched)
    result.update(spans=spans.total, episodes=len(episodes))
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def _result(
    rows: list[JSON],
    scores: list[TaskScore],
    source: str,
    superseded: list[JSON],
    unmatched: list[JSON],
) -> JSON:
    """The evaluation of scored rows (``scores``: theirs, in the same order): metrics overall,
    per domain and per agent / model, and the lists of incomplete and infrastructure-failed
    episodes."""
    for row in rows:
        row["agent_model"] = f"{row['agent']}/{row['model'] or '?'}"
    overall = metrics(rows, scores)
    # the papers' own tables (sopgym.evaluation.paper_figures), where the rows hold a family,
    # join the profiles' figures (SOP-Bench, TELLER) under "paper", keyed by paper
    if found := paper_figures(rows):
        overall["paper"] = {**overall.get("paper", {}), **found}
    return {
        "source": source,
        "evaluated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "spans": 0,
        "episodes": len(rows),
        **overall,
        "domains": _grouped(rows, scores, "domain", overall),
        "agents": _grouped(rows, scores, "agent_model", overall),
        "per_task": rows,
        "breakdown": breakdown(rows),
        "two_stage": two_stage(rows),
        "incomplete": [
            {k: r.get(k) for k in ("task_id", "domain", "trial", "agent", "trace_id", "reason")}
            for r in rows
            if not r["score"]["completed"] and not r["score"].get("infra_error")
        ],
        "infra_failed": [
            {
                **{k: r.get(k) for k in ("task_id", "domain", "trial", "agent", "trace_id")},
                "cause": r["score"]["infra_error"],
            }
            for r in rows
            if r["score"].get("infra_error")
        ],
        "superseded": superseded,
        "unmatched": unmatched,
    }


def _brief(episode: EpisodeSpans, why: str) -> JSON:
    return {
        "task_id": episode.task_id,
        "domain": episode.domain,
        "trial": episode.trial,
        "episode_id": episode.episode_id,
        "trace_id": episode.trace_id,
        "why": why,
    }


def run_expectation(run_dir: Path, taskset: TaskSet) -> tuple[list[EpisodeKey], tuple[str, str]]:
    """The episodes a run folder's config says were made (every task ``trials`` times), and
    its (run id, agent) group."""
    config = read_config_object(run_dir / "config.json")
    expected = taskset.expected(config["domains"], config.get("limit"), config.get("trials", 1))
    return expected, (run_dir.name, config.get("agent", ""))


def evaluate_path(path: Path, data_root: Path | None = None, run_filter: str | None = None) -> JSON:
    """Evaluate a run folder (its trace store, against its config's task set) or a file or
    folder of OTLP JSON (against the tasks it has traces of)."""
    from sopgym.evaluation.sources import is_run_dir, load_spans, trace_files

    taskset = TaskSet(data_root)
    if is_run_dir(path) and not trace_files(path):  # a --no-trace run
        return evaluate_results(path, taskset)
    spans = load_spans(path, sc.EVALUATED_SCOPES)
    if is_run_dir(path):
        expected, run = run_expectation(path, taskset)
        recorded = recorded_episodes(path)
        return evaluate(spans, taskset, expected, run, run_filter, str(path), recorded)
    return evaluate(spans, taskset, run_filter=run_filter, source=str(path))


def recorded_episodes(run_dir: Path) -> dict[EpisodeKey, str]:
    """The episode id the run's results record for each (domain, task id, trial) that has
    one: the gateway gave it to the runner, which alone writes ``results.jsonl`` (owner-only),
    so spans of any other episode for that task are not the run's."""
    return {
        (r["domain"], r["task_id"], int(r.get("trial") or 0)): r["episode_id"]
        for r in read_results(run_dir / "results.jsonl")
        if isinstance(r.get("episode_id"), str)
    }


def evaluate_results(run_dir: Path, taskset: TaskSet) -> JSON:
    """A run folder without traces (``--no-trace``), evaluated from the scores its runner
    recorded in ``results.jsonl`` (the same scoring): the figures of its summary, with the
    gateway's call latencies; no LLM latency or trace ids. ``untraced`` says so."""
    started = time.perf_counter()
    expected, group = run_expectation(run_dir, taskset)
    recorded = {
        (r["domain"], r["task_id"], int(r.get("trial") or 0)): r
        for r in read_results(run_dir / "results.jsonl")
    }
    rows, scores = [], []
    for key in expected:
        tasks = taskset.get(key[0])
        if tasks is None or key[1] not in tasks.gold:
            continue
        found = recorded.get(key)
        if found is None:  # never recorded (an interrupted run): incomplete, as in its summary
            row, score = _row(key, group, None, tasks)
            row["problems"], row["reason"] = ["no result of this task"], "no result of this task"
        else:
            row = _recorded_row(found, group[0], tasks.gold[key[1]])
            score = TaskScore(**row["score"])
        rows.append(row)
        scores.append(score)
    result = _result(rows, scores, str(run_dir), [], [])
    result["untraced"] = True
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def _recorded_row(found: JSON, run_id: str, gold: Gold) -> JSON:
    """A results.jsonl row in the shape of :func:`_row` (no trace behind it)."""
    calls = (found.get("trajectory") or {}).get("calls", [])
    usage = found.get("llm_calls") or []
    row: JSON = {
        "task_id": found["task_id"],
        "domain": found["domain"],
        "trial": int(found.get("trial") or 0),
        "run_id": run_id,
        "agent": found.get("agent") or "",
        "model": found.get("model"),
        "trace_id": None,
        "episode_id": found.get("episode_id"),
        "status": found.get("status"),
        "trace_complete": False,
        "problems": ["untraced run: scored from results.jsonl"],
        "score": found["score"],
        "latency_s": found.get("elapsed_s"),
        "tool_latency_ms": [c["duration_ms"] for c in calls if c.get("duration_ms") is not None],
        "calls_made": [[c["name"], c.get("error_code")] for c in calls],
        "tags": tags(gold),
        "llm_calls": len(usage),
        "input_tokens": sum(int(u.get("input_tokens") or 0) for u in usage),
        "output_tokens": sum(int(u.get("output_tokens") or 0) for u in usage),
    }
    if not found["score"]["completed"]:
        row["reason"] = found.get("error") or "outputs missing"
    return row
