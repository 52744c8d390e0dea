"""Why an episode failed, worked out once from its result row, for every place that says so
(the viewer, the report, ``sopgym show``, the run's terminal summary).

A task succeeds when it completed and every gating scorer passed; :func:`failed_because`
names each gating scorer that did not, with a one-line reason built from what the scorer
recorded: the wrong fields with expected and given values, the final-state paths with the
gold's value beside the episode's, the first place the action sequence departs from the
procedure. The scorers record what these need in their metrics (``tool_calls``: ``missing``
and ``extra`` calls; ``final_state``: ``expected`` values; TOD ``actions``: both sequences),
so no dataset is read here; a row from an older run lacks them and falls back on the
scorer's own explanation.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from sopgym.evaluation.scorers.answers import value_at
from sopgym.types import JSON

LINE = 220  # characters of one reason: a table cell, a terminal line
VALUE = 60  # characters of one value inside a reason
NOT_RECORDED = "(not recorded)"  # an expected value the run did not keep (older runs)


@dataclass(frozen=True)
class Reason:
    """One gating scorer that failed (or ``completion`` / ``infrastructure``), and why."""

    scorer: str
    text: str

    def line(self) -> str:
        return f"{self.scorer}: {self.text}"


def short(value: Any, limit: int = VALUE) -> str:
    """A value as compact JSON text, cut at ``limit`` characters (``0``: whole)."""
    text = orjson.dumps(value, default=str).decode()
    return text if not limit or len(text) <= limit else text[: limit - 1] + "…"


def call_text(call: JSON, limit: int = VALUE) -> str:
    """A call as ``name(key=value, ...)``, each value as JSON (cut at ``limit``; 0: whole),
    with `` → CODE`` when the service refused it."""
    arguments = call.get("arguments")
    if isinstance(arguments, dict):
        inside = ", ".join(f"{k}={short(v, limit)}" for k, v in arguments.items())
    else:
        inside = short(arguments, limit)
    refused = f" → {call['error_code']}" if call.get("error_code") else ""
    return f"{call.get('name')}({inside}){refused}"


def _cut(text: str, limit: int = LINE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listed(items: list[str], limit: int = 3) -> str:
    head = ", ".join(items[:limit])
    return head + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


# ---- the parts a reason is made of ----
def wrong_fields(row: JSON) -> list[tuple[str, Any, Any]]:
    """(field, expected, given) of every output field scored wrong; a field the answer
    lacks is given as the string ``(missing)``."""
    given, expected = row.get("outputs") or {}, row.get("gold_outputs") or {}
    return [
        (name, expected.get(name), given.get(name, "(missing)"))
        for name, ok in (row.get("score") or {}).get("fields", {}).items()
        if not ok
    ]


def call_differences(row: JSON) -> tuple[list[JSON], list[JSON]] | None:
    """(gold calls not made, calls beyond the gold) by tool and arguments, as the
    ``tool_calls`` scorer recorded them; ``([], [])`` when the calls were the gold's; None
    when the row does not say (no reference calls, or a run scored before it recorded them)."""
    scored = _scores(row).get("tool_calls") or {}
    metrics = scored.get("metrics") or {}
    if "missing" in metrics:
        calls = _calls(row)  # the scorer names the extra calls by their index among these
        extra = [
            calls[i] if i < len(calls) else {"name": f"call #{i + 1}", "arguments": {}}
            for i in metrics["extra"]
        ]
        return list(metrics["missing"]), extra
    return None


def state_differences(row: JSON) -> list[tuple[str, Any, Any]]:
    """(path, the gold's value, the episode's value) of every failing final-state path; the
    gold's value is :data:`NOT_RECORDED` where the run did not keep it."""
    metrics = (_scores(row).get("final_state") or {}).get("metrics") or {}
    expected = metrics.get("expected") or {}
    state = (row.get("trajectory") or {}).get("final_state")
    return [
        (path, expected.get(path, NOT_RECORDED), value_at(state, path))
        for path in metrics.get("differences") or []
    ]


Aligned = tuple[str, JSON | None, JSON | None]  # (same|wrong|missing|extra, gold, made)


def align_actions(made: list[JSON], gold: list[JSON]) -> list[Aligned]:
    """The made and gold action sequences aligned step by step (a longest-matching-blocks
    diff): ``same``, ``wrong`` (a made action in a gold action's place), ``missing`` (a gold
    action with none made), ``extra`` (an action the procedure does not take)."""
    texts_made = [call_text(c, 0) for c in made]
    texts_gold = [call_text(c, 0) for c in gold]
    aligned: list[Aligned] = []
    matcher = difflib.SequenceMatcher(a=texts_gold, b=texts_made, autojunk=False)
    for op, g1, g2, m1, m2 in matcher.get_opcodes():
        if op == "equal":
            aligned += [("same", gold[g1 + i], made[m1 + i]) for i in range(g2 - g1)]
            continue
        paired = min(g2 - g1, m2 - m1)
        aligned += [("wrong", gold[g1 + i], made[m1 + i]) for i in range(paired)]
        aligned += [("missing", gold[i], None) for i in range(g1 + paired, g2)]
        aligned += [("extra", None, made[i]) for i in range(m1 + paired, m2)]
    return aligned


def action_mismatch(made: list[JSON], gold: list[JSON]) -> str:
    """Where ``made`` first departs from ``gold``, in one line (and how many more steps do)."""
    steps = align_actions(made, gold)
    departures = [(n, s) for n, s in enumerate(steps, 1) if s[0] != "same"]
    if not departures:
        return "the actions match"
    number, (kind, wanted, did) = departures[0]
    if kind == "wrong":
        made_text = call_text(did or {}) + refusal_note(did)
        text = f"step {number}: made {made_text}, expected {call_text(wanted or {})}"
    elif kind == "missing":
        text = f"step {number}: {call_text(wanted or {})} not made"
    else:
        text = f"step {number}: extra {call_text(did or {})}{refusal_note(did)}"
    more = len(departures) - 1
    plural = "difference" if more == 1 else "differences"
    return text + (f" (+{more} more {plural})" if more else "")


def aligned_actions(row: JSON) -> list[Aligned] | None:
    """The TOD ``actions`` scorer's sequences aligned, when it failed and kept them."""
    metrics = (_scores(row).get("actions") or {}).get("metrics") or {}
    if "gold" not in metrics:
        return None
    return align_actions(made_with_outcomes(row, list(metrics["made"])), list(metrics["gold"]))


def made_with_outcomes(row: JSON, made: list[JSON]) -> list[JSON]:
    """The ``actions`` scorer's made actions (names and arguments only), each with its
    call's status and error code where the trajectory holds them, call for call: an extra
    action the service refused reads "→ type_mismatch (refused 422)", not as one that ran."""
    calls = _calls(row)
    if len(calls) != len(made):
        return made
    return [
        {**action, "status": call.get("status"), "error_code": call.get("error_code")}
        if call.get("error_code") and call.get("name") == action.get("name")
        else action
        for action, call in zip(made, calls, strict=True)
    ]


def refusal_note(call: JSON | None) -> str:
    """`` (refused 422)`` for a call the service refused with that status (its error code
    :func:`call_text` gives), else nothing."""
    if not call or not call.get("error_code") or not call.get("status"):
        return ""
    return f" (refused {call['status']})"


def field_verdicts(row: JSON) -> dict[str, str]:
    """Each answer field's verdict: ``ok`` / ``wrong`` from the field scorer, else from the
    scorer that judges the field (``sections`` by ``section_top1``, ``actions`` by
    ``declared_actions``, ``message`` by ``message_rules``), named in brackets; else
    ``not scored``."""
    score = row.get("score") or {}
    fields = score.get("fields", {})
    names = list(dict.fromkeys([*(row.get("gold_outputs") or {}), *fields,
                                *(row.get("outputs") or {})]))  # fmt: skip
    verdicts = {}
    for name in names:
        if name in fields:
            verdicts[name] = "ok" if fields[name] else "wrong"
            continue
        judge = _judge_of(name, _scores(row))
        if judge is None:
            verdicts[name] = "not scored"
        else:
            scorer, value = judge
            verdicts[name] = f"{'ok' if value >= 1 else 'wrong'} ({scorer})"
    return verdicts


def _judge_of(field: str, scores: JSON) -> tuple[str, float] | None:
    """The scorer named after ``field`` (``section_top1`` for ``sections``), gating ones
    first, that gave the task a value."""
    stem = field[:-1] if field.endswith("s") else field
    found = [
        (not s.get("gates"), name, s["value"])
        for name, s in scores.items()
        if s.get("value") is not None
        and name not in ("output_fields", "schema_valid")
        and any(part in (field, stem) for part in name.split("_"))
    ]
    if not found:
        return None
    _, name, value = min(found)
    return name, float(value)


# ---- the reasons ----
def failed_because(row: JSON) -> list[Reason]:
    """Each gating scorer that failed, with a one-line reason; an episode that did not
    complete or that the infrastructure failed says so first. Empty for a success."""
    score = row.get("score") or {}
    if score.get("infra_error"):
        return [Reason("infrastructure", _cut(f"not the agent's: {score['infra_error']}"))]
    if score.get("success"):
        return []
    reasons = []
    if not score.get("completed"):
        why = row.get("error") or f"status {row.get('status')}"
        reasons.append(Reason("completion", _cut(f"not completed: {why}")))
    for name, scored in _scores(row).items():
        value = scored.get("value")
        if scored.get("gates") and value is not None and value < 1:
            reasons.append(Reason(name, _cut(_reason(name, scored, row))))
    if score.get("completed") and len(reasons) == 0:  # scored before scorers were recorded
        reasons.append(Reason("answer", "wrong answer"))
    return reasons


def because_line(row: JSON, separator: str = "; ") -> str:
    """:func:`failed_because` in one line (``-`` for a success)."""
    return separator.join(r.line() for r in failed_because(row)) or "-"


def _reason(name: str, scored: JSON, row: JSON) -> str:
    if name == "output_fields":
        wrong = wrong_fields(row)
        if wrong:
            return "wrong " + _listed(
                [f"{f} (expected {short(e, 30)}, given {short(g, 30)})" for f, e, g in wrong]
            )
    elif name == "final_state":
        found = state_differences(row)
        if found:
            shown = [
                f"{p.split(' ')[0]} expected {short(e, 24)}, got {short(a, 24)}"
                for p, e, a in found
                if e != NOT_RECORDED
            ] or [p for p, _, _ in found]
            text = f"{len(found)} state path(s) differ: " + _listed(shown, 2)
            # the calls that would have written the state, first: they are the cause
            missing = (call_differences(row) or ([], []))[0]
            if missing:
                names = list(dict.fromkeys(str(c["name"]) for c in missing))
                text = f"gold call(s) not made: {_listed(names)}; {text}"
            return text
    elif name == "actions":
        aligned = (scored.get("metrics") or {}).get("gold")
        if aligned is not None:
            made = made_with_outcomes(row, list(scored["metrics"]["made"]))
            return action_mismatch(made, list(aligned))
    return str(scored.get("explanation") or f"{name} = {scored.get('value')}")


def _scores(row: JSON) -> JSON:
    return (row.get("score") or {}).get("scores") or {}


def _calls(row: JSON) -> list[JSON]:
    return list((row.get("trajectory") or {}).get("calls") or [])


def failed_task_ids(rows: Iterable[JSON], limit: int = 5) -> tuple[list[str], int]:
    """The first ``limit`` failed (or incomplete) task ids, in task order, and how many
    failed in all (infrastructure errors are not the agent's and are not listed)."""
    failed = sorted(
        {
            str(r["task_id"])
            for r in rows
            if not r["score"].get("success") and not r["score"].get("infra_error")
        }
    )
    return failed[:limit], len(failed)


def coverage_line(summary: JSON) -> str | None:
    """When the infrastructure failed episodes, or some never ran (``never_run``: a partial
    merge's unfinished shards, which the summary counts as incomplete), the TSR over the
    episodes played with how many of the planned it covers, and TSR over every planned episode
    beside it (an episode not played counts as not solved there); None when every episode was
    played."""
    planned, infra = int(summary.get("tasks") or 0), int(summary.get("infra_errors") or 0)
    never_run = int(summary.get("never_run") or 0)
    if not (infra or never_run) or not planned:
        return None
    scored = int(summary.get("scored", planned - infra))
    played = scored - never_run
    not_played = f"{infra} infra errors" + (f"; {never_run} never run" if never_run else "")
    if played <= 0:  # nothing to judge the agent by: no figure at all, not 0%
        return f"TSR n/a: none of {planned} planned episodes played; {not_played}"
    correct = int(summary.get("correct", round(float(summary.get("tsr") or 0) * scored)))
    return (
        f"TSR {correct / played:.1%} over {played} of {planned} planned; "
        f"{not_played}; TSR over all planned {correct / planned:.1%}"
    )


def failed_in_all_trials(rows: Iterable[JSON]) -> set[tuple[str, str]]:
    """(domain, task id) of the tasks run in more than one trial whose every played trial
    failed (infrastructure errors are not the agent's: left out)."""
    trials: dict[tuple[str, str], list[bool]] = {}
    for row in rows:
        if row["score"].get("infra_error"):
            continue
        trials.setdefault((row["domain"], row["task_id"]), []).append(
            bool(row["score"].get("success"))
        )
    return {key for key, results in trials.items() if len(results) > 1 and not any(results)}
