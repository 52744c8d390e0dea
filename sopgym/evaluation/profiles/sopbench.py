"""SOP-Bench's own definitions (its published evaluation code, read on 2026-11), computed from
the same episodes as our strict scores and reported beside them under the name ``sopbench``.

Where the source differs from our strict view:

- **answer match** (:func:`values_agree`): a predicted value passes when, after case folding
  and trimming, it equals the expected one, or equals it with ``_`` and ``-`` read as spaces,
  or when either string contains the other (``invalid`` passes for ``valid``, ``e`` for
  ``escalate``, an expected value with text appended passes). Null-like values (``none``,
  ``null``, ``na``, ``n/a``, ``nan``, ``unknown``, empty) match each other and nothing else, so
  a row whose expected value is empty matches any null-like answer. Keys are looked up case
  folded (``Final_Decision`` answers ``final_decision``); every expected field must match.
- **ECR** (:func:`completed`): an episode counts as completed when the agent did not crash.
  Reaching its iteration limit still counts (its answer is then judged as it stands); a call to
  a tool name the source does not know raises in its tool manager and fails the episode; an
  infrastructure failure is a crash like any other and counts against ECR (our strict view
  leaves it out of every agent figure).
- **the trace path** (:func:`answer_read`): for a SOP with several output fields, the source's
  Evaluator parses the agent's reasoning trace, not its final answer alone: the final output
  when it names any expected field (those it names), else the fields the trace's **tool
  results** hold (each result object's keys that are exactly an expected column, a later
  result overriding an earlier one), taken when they are at least half the expected fields.
  Reproduced from the episode's recorded calls: an answer that names no expected field (other
  keys, or none at all when the agent stopped at its iteration limit) is judged by what the
  tools returned, so it can be correct there and wrong here. The verdict says which was read
  (``answer_from``: ``final_answer`` or ``tool_results``).
- **the headline** (:func:`headline`): the paper's "Weighted Average" row (Table 4) is the
  mean of the per-SOP percentages weighted by each SOP's task count ``n`` (its FC-Agent row,
  70% / 35% / 27%, is that mean of its SOP rows; their plain mean is 72.0 / 29.3 / 23.8). We
  give it under the paper's name, ``weighted_average``, and the plain mean of the per-SOP
  percentages (what the source's code reports as its "weighted average") beside it as
  ``unweighted_mean``. The n-weighted ECR and TSR equal the pooled ones; its C-TSR does not
  (it weights each SOP's C-TSR by its tasks, not its completed tasks).

C-TSR = correct / completed and TSR = correct / tasks, as in the paper, with a task correct
only when it completed and its answer matches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from statistics import fmean
from typing import TYPE_CHECKING, Any, Final

from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.tasks import Gold
    from sopgym.core.trajectory import Trajectory
    from sopgym.runs.records import TaskScore

NAME = "sopbench"
# The values the source reads as "no value" (after case folding and trimming)
NULL_LIKE = frozenset({"none", "null", "na", "n/a", "nan", "unknown", ""})
# The agent's error type when it stopped at its model-turn limit (agents/graph.py): the source
# returns its last output there, which counts as a completed execution
STEP_LIMIT = "StepLimitExceeded"
UNKNOWN_TOOL = "unknown_tool"
def _text(value: Any) -> str:
    """A value as the source compares it: Python's ``str``, case folded and trimmed (``True``
    reads ``true``, ``None`` reads ``none``, ``5.0`` reads ``5.0``)."""
    if value.__class__ is str:
        return _folded(value)
    return str(value).lower().strip()


# Memoised: answers and gold values repeat (enum values) across every episode scored
@lru_cache(maxsize=1 << 16)
def _folded(text: str) -> str:
    return text.lower().strip()


@lru_cache(maxsize=1 << 12)
def _folded_key(key: str) -> str:
    return key.lower()


def is_null_like(value: Any) -> bool:
    """``None`` reads ``none`` and NaN ``nan``: both are among :data:`NULL_LIKE`."""
    return _text(value) in NULL_LIKE


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _spaced(text: str) -> str:
    return text.replace("_", " ").replace("-", " ")


def values_agree(predicted: Any, expected: Any) -> bool:
    """One field, by the source's rule (see the module docstring)."""
    if predicted.__class__ is expected.__class__ and predicted == expected:
        return True  # equal texts agree, null-like or not
    said, wanted = _text(predicted), _text(expected)
    if said in NULL_LIKE or wanted in NULL_LIKE:
        return said in NULL_LIKE and wanted in NULL_LIKE
    if said == wanted:
        return True
    said, wanted = _spaced(said), _spaced(wanted)
    return said == wanted or said in wanted or wanted in said


def field_verdicts(answer: Any, expected: JSON) -> dict[str, bool]:
    """Per expected field: whether the answer has it (key case folded) and it agrees. A key the
    answer lacks fails; a key present with a JSON ``null`` reads ``none`` (null-like), as the
    source's parser turns every value into text before comparing."""
    if not isinstance(answer, dict):
        given: dict[str, Any] = {}
    elif all(k.__class__ is str and k == _folded_key(k) for k in answer):
        given = answer  # (most answers: keys already folded, the fold would change nothing)
    else:
        given = {str(k).lower(): v for k, v in answer.items()}
    return {
        name: name.lower() in given and values_agree(given[name.lower()], wanted)
        for name, wanted in expected.items()
    }


FINAL_ANSWER: Final = "final_answer"
TOOL_RESULTS: Final = "tool_results"


def answer_read(trajectory: Trajectory | None, expected: JSON) -> tuple[Any, str]:
    """What the source compares with the expected fields, and where it read it: the final
    answer; for several expected fields, the tool results when the answer names none of them
    (the source's trace parser, see the module docstring)."""
    answer = trajectory.outputs if trajectory is not None else None
    if len(expected) < 2 or trajectory is None:
        return answer, FINAL_ANSWER
    wanted = {_folded_key(name) for name in expected}
    if isinstance(answer, dict) and any(
        _folded_key(str(key)) in wanted for key in answer
    ):  # the final output names an expected field: it is what the source reads
        return answer, FINAL_ANSWER
    found: dict[str, Any] = {}
    for call in trajectory.calls:
        if call.error_code is None and isinstance(call.result, dict):
            found.update((key, value) for key, value in call.result.items() if key in expected)
    if found and len(found) >= len(expected) / 2:
        return found, TOOL_RESULTS
    return answer, FINAL_ANSWER


def completed(trajectory: Trajectory | None, infra_error: str | None, agent_error: str | None
              ) -> tuple[bool, str | None]:  # fmt: skip
    """Whether the source would count the episode as executed to completion, and why not."""
    if infra_error:
        return False, f"infrastructure failure ({infra_error}): a crash, counted against ECR"
    if trajectory is None:
        return False, "no episode record: the agent crashed"
    unknown = next((c.name for c in trajectory.calls if c.error_code == UNKNOWN_TOOL), None)
    if unknown is not None:
        return False, f"called unknown tool {unknown!r}: the source's tool manager raises"
    if trajectory.finished:
        return True, None
    # the error's type: all a trace keeps of it (the runner's record has the message too)
    said = agent_error.split(":", 1)[0].strip() if agent_error else None
    if said == STEP_LIMIT:
        return True, None  # the iteration limit is no crash in the source
    return False, f"agent stopped without an answer ({said or 'no status'})"


def verdict(
    trajectory: Trajectory | None,
    gold: Gold,
    strict: TaskScore,
    agent_error: str | None,
) -> JSON:
    """One episode's verdict under SOP-Bench's rules, and where it differs from our strict one."""
    done, why = completed(trajectory, strict.infra_error, agent_error)
    answer, answer_from = answer_read(trajectory, gold.outputs)
    fields = field_verdicts(answer, gold.outputs)
    correct = done and all(fields.values())
    if done and not correct:
        wrong = ", ".join(name for name, ok in fields.items() if not ok)
        read = "tool results differ" if answer_from == TOOL_RESULTS else "answer differs"
        why = f"{read} in {wrong}"
    elif correct and answer_from == TOOL_RESULTS:
        why = "the answer names no expected field; the tool results match"
    # flagged: truly empty expected values (a gold "none" is a value, though null-like)
    empty = gold.memo.get(NAME)
    if empty is None:  # once a gold: every episode of the task has the same
        empty = gold.memo[NAME] = tuple(k for k, value in gold.outputs.items() if _empty(value))
    found: JSON = {"completed": done, "correct": correct, "fields": fields, "why": why,
                   "answer_from": answer_from}  # fmt: skip
    if empty:
        found["empty_expected"] = list(empty)
    found["differs"] = _differs(found, strict)
    return found


def _differs(found: JSON, strict: TaskScore) -> list[str]:
    """Which verdicts disagree with our strict view (``completed``, ``correct``)."""
    differs = []
    if found["completed"] != strict.completed:
        differs.append("completed")
    if found["correct"] != strict.success:
        differs.append("correct")
    return differs


def _rates(verdicts: list[JSON]) -> JSON:
    n = len(verdicts)
    done = sum(v["completed"] for v in verdicts)
    correct = sum(v["correct"] for v in verdicts)
    return {
        "tasks": n,
        "completed": done,
        "correct": correct,
        "ecr": done / n if n else 0.0,
        "c_tsr": correct / done if done else 0.0,
        "tsr": correct / n if n else 0.0,
    }


RATES: Final = ("ecr", "c_tsr", "tsr")


def headline(by_sop: dict[str, JSON]) -> tuple[JSON, JSON]:
    """The per-SOP rates' mean weighted by each SOP's ``tasks`` (the paper's "Weighted
    Average"), and their plain mean, each per rate."""
    total = sum(rates["tasks"] for rates in by_sop.values())
    weighted = {
        key: sum(rates[key] * rates["tasks"] for rates in by_sop.values()) / total
        if total else 0.0
        for key in RATES
    }
    unweighted = {key: fmean(rates[key] for rates in by_sop.values()) for key in RATES}
    return weighted, unweighted


def aggregate(episodes: Iterable[tuple[str, JSON]]) -> JSON | None:
    """Run figures from (domain, verdict) pairs: per SOP, their n-weighted mean (the paper's
    "Weighted Average") and their plain mean, the figures pooled over all tasks (for
    comparison), and how many episodes the two views judge differently. ``None`` when no
    episode is SOP-Bench-style."""
    per_sop: dict[str, list[JSON]] = {}
    for domain, found in episodes:
        per_sop.setdefault(domain, []).append(found)
    if not per_sop:
        return None
    every = [v for verdicts in per_sop.values() for v in verdicts]
    by_sop = {name: _rates(verdicts) for name, verdicts in sorted(per_sop.items())}
    weighted, unweighted = headline(by_sop)
    return {
        "definition": "SOP-Bench's published code: containment match, crash-only ECR; "
        "headline = per-SOP percentages weighted by task count (the paper's Table 4)",
        "per_sop": by_sop,
        "weighted_average": weighted,
        "unweighted_mean": unweighted,
        "pooled": _rates(every),
        "empty_expected_tasks": sum("empty_expected" in v for v in every),
        "differs": sum(bool(v["differs"]) for v in every),
    }
