"""Scorers of the tool calls an episode made: which tools (precision / recall / F1 against the
gold calls), what went wrong with them (the error taxonomy), and in what order (the domain's
dependency graph)."""

from __future__ import annotations

from typing import Any

from sopgym.core.errors import TOOL_FAILURES, TYPE_CODES, VALIDATION_CODES
from sopgym.core.normalized import normalize
from sopgym.core.tasks import Gold, ToolCall
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scorers.base import Case, Score, Scorer, f1, listed, ratio
from sopgym.evaluation.scorers.fields import SCALARS, equal_is_matching
from sopgym.types import JSON

_MALFORMED = VALIDATION_CODES | TYPE_CODES


def tool_match(trajectory: Trajectory, gold: Gold) -> tuple[float, float, float]:
    """Precision/recall/F1 of the multiset of tool names called vs. the gold calls.

    With no gold calls and no calls, the agent was exactly right: 1.0 all round.
    """
    unmatched: dict[str, int] = {}  # gold calls per tool not yet matched by a call made
    for wanted in gold.calls:
        unmatched[wanted.name] = unmatched.get(wanted.name, 0) + 1
    hits = 0
    for call in trajectory.calls:  # (plain counting: Counter's & costs more than the rest)
        left = unmatched.get(call.name)
        if left:
            unmatched[call.name] = left - 1
            hits += 1
    made = len(trajectory.calls)
    precision = hits / made if made else float(not gold.calls)
    recall = ratio(hits, len(gold.calls))
    return precision, recall, f1(precision, recall)


def _tool_calls(case: Case) -> Score:
    made, wanted = len(case.trajectory.calls), len(case.gold.calls)
    if not case.gold.reference_calls:
        return Score(None, {"calls": made}, "no reference calls: tool metrics do not apply")
    precision, recall, score = tool_match(case.trajectory, case.gold)
    metrics: JSON = {"precision": precision, "recall": recall, "f1": score, "calls": made}
    explanation = f"{made} calls vs {wanted} gold: P={precision:.2f} R={recall:.2f}"
    # the viewer and the report name the gold calls never made and the calls beyond the gold
    # (sopgym.evaluation.explain); right tools with wrong arguments are among them
    missing, extra = call_differences(case.trajectory, case.gold)
    metrics |= {"missing": missing, "extra": extra}
    return Score(score, {**metrics, "gold_calls": wanted}, explanation)


def call_differences(trajectory: Trajectory, gold: Gold) -> tuple[list[JSON], list[int]]:
    """The gold calls no call made matches by tool and arguments (normalised as the error
    taxonomy compares them), in gold order, and the indexes of the calls made that match no
    gold call. (Indexes, not the calls: a call scored from a trace may carry only a digest of
    arguments too large for its span, and the score must not depend on where it came from.)

    Calls equal to a gold call as they are pair first; only what that leaves is normalised
    (most calls of most episodes are a gold call exactly)."""
    made, left = trajectory.calls, list(gold.calls)
    extra: list[int] = []
    for index, call in enumerate(made):
        for position, wanted in enumerate(left):
            if wanted.name == call.name and wanted.arguments == call.arguments:
                del left[position]
                break
        else:
            extra.append(index)
    if extra and left:
        normal = _gold_arguments(gold).normalized_call
        pending = [(wanted, normal(wanted)) for wanted in left]
        unpaired = []
        for index in extra:
            call = made[index]
            key = normalize(call.arguments)
            for position, (wanted, normalized) in enumerate(pending):
                if wanted.name == call.name and normalized == key:
                    del pending[position]
                    break
            else:
                unpaired.append(index)
        extra, left = unpaired, [wanted for wanted, _ in pending]
    return [wanted.to_json() for wanted in left], extra


def tool_calls(gates: bool = False) -> Scorer:
    """Tool-call F1 against the gold calls (n/a where no reference policy made them)."""
    return Scorer("tool_calls", _tool_calls, gates, judges_calls=True)


def error_taxonomy(trajectory: Trajectory, gold: Gold) -> dict[str, int]:
    """Counts per error class of one episode's calls.

    blank: the gold needs tool calls and the agent made none. validation / type: calls the
    service rejected by schema. wrong_value: an accepted call to a gold tool whose arguments
    match none of that tool's gold calls. hallucinated: a tool not in the episode's catalog.
    distractor: a call to a distractor tool. tool_error: the tool itself failed (an exception,
    no result, a tool its code lacks: ``internal_error``; a tool that hung: ``tool_timeout``),
    no fault of the agent's but never passed over. (``wrong_final`` and ``incomplete`` are
    about the answer, not the calls: :func:`sopgym.evaluation.scoring.score_episode` adds them.)
    """
    counts: dict[str, int] = {}
    if gold.calls and not trajectory.calls:
        counts["blank"] = 1
    facts = _gold_arguments(gold)
    for call in trajectory.calls:
        code = call.error_code
        kind = None
        if not call.in_catalog:
            kind = "hallucinated"
        elif code is not None:
            if code in TYPE_CODES:
                kind = "type"
            elif code in VALIDATION_CODES:
                kind = "validation"
            elif code in TOOL_FAILURES:
                kind = "tool_error"
        elif call.name in facts.by_tool and not facts.matches(call.name, call.arguments):
            kind = "wrong_value"
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
        if call.distractor:
            counts["distractor"] = counts.get("distractor", 0) + 1
    return counts


class _GoldArguments:
    """A gold's call arguments per tool, as the error taxonomy compares a call's against them:
    built once a gold (:attr:`Gold.memo`), with each tool's arguments normalised when first
    needed."""

    def __init__(self, gold: Gold) -> None:
        self.by_tool: dict[str, list[Any]] = {}
        for wanted in gold.calls:
            self.by_tool.setdefault(wanted.name, []).append(wanted.arguments)
        # per tool, the gold arguments that are flat (an object of scalars and lists of
        # strings): arguments equal to one of them as given are equal to it normalised too
        self.flat = {
            name: [
                args
                for args in golds
                if args.__class__ is dict
                and all(v.__class__ in SCALARS or equal_is_matching(v) for v in args.values())
            ]
            for name, golds in self.by_tool.items()
        }
        self.normalized: dict[str, list[Any]] = {}
        self._normalized_calls: dict[int, Any] = {}  # id of a gold call -> its arguments

    def normalized_call(self, wanted: ToolCall) -> Any:
        """A gold call's arguments normalised (once; the call lives as long as its gold)."""
        key = id(wanted)
        if key not in self._normalized_calls:
            self._normalized_calls[key] = normalize(wanted.arguments)
        return self._normalized_calls[key]

    def matches(self, name: str, arguments: Any) -> bool:
        """Whether ``arguments`` equal one of tool ``name``'s gold arguments once both are
        normalised (the common case, equal to a flat one as given, without normalising)."""
        if arguments.__class__ is dict and arguments in self.flat[name]:
            return True
        normalized = self.normalized.get(name)
        if normalized is None:
            normalized = self.normalized[name] = [normalize(g) for g in self.by_tool[name]]
        return normalize(arguments) in normalized


def _gold_arguments(gold: Gold) -> _GoldArguments:
    facts: _GoldArguments | None = gold.memo.get("calls")
    if facts is None:
        facts = gold.memo["calls"] = _GoldArguments(gold)
    return facts


def _errors(case: Case) -> Score:
    counts = error_taxonomy(case.trajectory, case.gold)
    explanation = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no call errors"
    return Score(float(not counts), counts, explanation)


def errors(gates: bool = False) -> Scorer:
    """The call-level error taxonomy (1.0: no error of any class)."""
    return Scorer("errors", _errors, gates, judges_calls=True)


def order_violations(
    calls: list[CallRecord], dependencies: dict[str, list[str]]
) -> list[tuple[str, list[str]]]:
    """The executed calls that came before a tool they depend on, with those tools.

    ``dependencies[b] = [a, ...]`` is a precedence rule: in an episode that executes ``a``,
    every call of ``b`` must come after ``a`` was first executed. A dependency the episode
    never executes is no order violation: SOPs branch, and a branch may rightly skip ``a``
    (a missing gold call shows in tool recall instead). A call rejected for its arguments
    (validation / type) or outside the catalog neither counts nor satisfies a dependency; a
    refusal about the data (e.g. ``not_found``) did run, and does.
    """
    executed = [c.name for c in calls if c.in_catalog and c.error_code not in _MALFORMED]
    ran = set(executed)
    done: set[str] = set()
    found = []
    for name in executed:
        early = [d for d in dependencies.get(name, ()) if d in ran and d not in done]
        if early:
            found.append((name, early))
        done.add(name)
    return found


def _order(case: Case) -> Score:
    found = order_violations(case.trajectory.calls, case.domain.dependencies)
    made = len(case.trajectory.calls)
    explanation = (
        listed([f"{name} before {' & '.join(early)}" for name, early in found])
        if found
        else "no call before a tool it depends on"
    )
    value = 1.0 - len(found) / made if made else 1.0
    return Score(value, {"violations": len(found), "calls": made}, explanation)


def order(gates: bool = False) -> Scorer:
    """Calls in the order of the domain's dependency graph (1.0: no call came too early)."""
    return Scorer("order", _order, gates, judges_calls=True)
