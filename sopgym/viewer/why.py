"""The task page's answers to "why did it fail": the failing gating scorers with their
reasons, the gold calls not made and the calls beyond the gold, the final state expected
beside actual, the TOD action sequences aligned, the dialogue with the simulated customer,
the scripted model's own record of the mistakes it injected, and the task's input with its
text shown as text. Everything comes from :mod:`sopgym.evaluation.explain` and the row.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

import orjson

from sopgym.core.errors import UnknownDomainError
from sopgym.core.registry import load_domain
from sopgym.evaluation.explain import (
    NOT_RECORDED,
    aligned_actions,
    call_differences,
    call_text,
    failed_because,
    field_verdicts,
    refusal_note,
    state_differences,
)
from sopgym.runs.records import trial_seed
from sopgym.types import JSON


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value  # text as text: an SOP, an instruction, a message
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def because(row: JSON) -> str:
    """The failing gating scorers, one line each (``#because``); nothing for a success."""
    reasons = failed_because(row)
    if not reasons:
        return ""
    items = "".join(
        f"<li data-scorer='{escape(r.scorer)}'><b>{escape(r.scorer)}</b>: {escape(r.text)}</li>"
        for r in reasons
    )
    return f"<h2>Failed because</h2><ul id='because'>{items}</ul>"


def answer(row: JSON) -> str:
    """The answer field by field against the gold, with each field's verdict (a field the
    field scorer leaves to another scorer is judged by it, named in brackets)."""
    given = row.get("outputs") or {}
    expected = row.get("gold_outputs") or {}
    body = []
    for name, verdict in field_verdicts(row).items():
        css = verdict.split(" ")[0] if verdict != "not scored" else "not-scored"
        got = _json(given[name]) if name in given else "(missing)"
        body.append(
            f"<tr class='{css}' data-field='{escape(name)}'>"
            f"<td>{escape(name)}</td><td class='expected'>{escape(_json(expected.get(name)))}"
            f"</td><td class='given'>{escape(got)}</td><td>{escape(verdict)}</td></tr>"
        )
    if not body:
        return "<p id='answer'>no answer recorded</p>"
    return (
        "<table id='answer'><thead><tr><th>field</th><th>expected</th><th>given</th>"
        f"<th>verdict</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def calls_against_gold(row: JSON) -> str:
    """Gold calls not made (``#missing-calls``) and calls beyond the gold (``#extra-calls``),
    by tool and arguments."""
    found = call_differences(row)
    head = "<h2>Calls against the gold</h2>"
    if found is None:
        return head + (
            "<p id='call-diff' class='muted'>not recorded: the task has no reference calls, "
            "or the run predates this record</p>"
        )
    missing, extra = found
    if not missing and not extra:
        return head + "<p id='call-diff'>every gold call made, none beyond them</p>"

    def listing(calls: list[JSON], ident: str, empty: str) -> str:
        if not calls:
            return f"<p id='{ident}' class='muted'>{empty}</p>"
        items = "".join(
            f"<li data-tool='{escape(str(c.get('name')))}'><code>{escape(call_text(c, 0))}"
            "</code></li>"
            for c in calls
        )
        return f"<ol id='{ident}'>{items}</ol>"

    return (
        head
        + "<div id='call-diff' class='side'>"
        + f"<div><h3>gold calls not made ({len(missing)})</h3>"
        + listing(missing, "missing-calls", "none")
        + f"</div><div><h3>calls beyond the gold ({len(extra)})</h3>"
        + listing(extra, "extra-calls", "none")
        + "</div></div>"
    )


def state_diff(row: JSON) -> str:
    """The failing final-state paths: the gold's value beside the episode's."""
    found = state_differences(row)
    if not found:
        return ""
    rows = "".join(
        f"<tr data-path='{escape(path)}'><td><code>{escape(path)}</code></td>"
        f"<td class='expected'><pre>{escape(_shown(exp))}</pre></td>"
        f"<td class='actual'><pre>{escape(_json(act))}</pre></td></tr>"
        for path, exp, act in found
    )
    return (
        "<h2>Final state: expected and actual where they differ</h2>"
        "<table id='state-diff'><thead><tr><th>path</th><th>expected (gold)</th>"
        f"<th>actual (the episode)</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _shown(value: Any) -> str:
    return NOT_RECORDED if value == NOT_RECORDED else _json(value)


def actions_diff(row: JSON) -> str:
    """The TOD action sequences aligned step by step (``#actions-diff``)."""
    aligned = aligned_actions(row)
    if aligned is None:
        return ""
    rows = "".join(
        f"<tr class='{kind}' data-kind='{kind}'><td>{n}</td><td>{kind}</td>"
        f"<td class='expected'><code>{escape(call_text(gold, 0)) if gold else ''}</code></td>"
        f"<td class='made'><code>{escape(call_text(made, 0)) if made else ''}</code>"
        f"{escape(refusal_note(made))}</td></tr>"
        for n, (kind, gold, made) in enumerate(aligned, 1)
    )
    return (
        "<h2>Actions: the procedure's and the agent's, aligned</h2>"
        "<table id='actions-diff'><thead><tr><th>step</th><th></th><th>procedure (gold)</th>"
        f"<th>agent</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def sop_steps(row: JSON, sop_variant: str) -> str:
    """For an answer that names an SOP step (SOP-Maze's ``step``): the SOP's text of the
    step the gold names and, when the answer named another, of that one (``#sop-step``), so
    the page shows what the step numbers stand for."""
    expected = (row.get("gold_outputs") or {}).get("step")
    given = (row.get("outputs") or {}).get("step")
    if not isinstance(expected, str):
        return ""
    try:
        sop = load_domain(row["domain"]).sop(sop_variant)
    except (UnknownDomainError, KeyError, OSError, ValueError):
        return ""  # a domain this install cannot load: the answer table still shows the ids
    shown = [("the step the answer should have named", expected)]
    if isinstance(given, str) and given != expected:
        shown.append(("the step the answer named", given))
    parts = []
    for label, step in shown:
        text = _step_section(sop, step)
        body = f"<pre class='text'>{escape(text)}</pre>" if text else "<p>not in the SOP</p>"
        parts.append(f"<h3>{escape(label)}: {escape(step)}</h3>{body}")
    return f"<div id='sop-step'>{''.join(parts)}</div>"


def _step_section(sop: str, step: str) -> str | None:
    """The SOP's section headed ``## Step <step>:`` (to the next heading), or None."""
    heading = re.compile(rf"^#+ *Step {re.escape(step)}\b.*$", re.MULTILINE)
    found = heading.search(sop)
    if found is None:
        return None
    following = re.compile(r"^#+ ", re.MULTILINE).search(sop, found.end())
    return sop[found.start() : following.start() if following else len(sop)].strip()


def dialogue(row: JSON) -> str:
    """The conversation of a dialogue episode (``#dialogue``): the agent and the simulated
    customer, turn by turn."""
    messages = (row.get("trajectory") or {}).get("messages") or []
    if not messages:
        return ""
    turns = "".join(
        f"<div class='turn {escape(str(m.get('role')))}'><span class='role'>"
        f"{escape(str(m.get('role')))}</span><pre>{escape(str(m.get('content', '')))}</pre></div>"
        for m in messages
        if isinstance(m, dict)
    )
    return f"<h2>Dialogue</h2><div id='dialogue'>{turns}</div>"


def injections(run_path: Path, row: JSON, config: JSON) -> str:
    """The scripted model's record of the mistakes it injected into this episode
    (``injections.jsonl`` in the run folder), one line each (``#injections``).

    A task's trials share its id: a line belongs to this row's trial when its ``trial_seed``
    (the seed the trial's requests carried) is the trial's own seed under the run's
    ``config`` seed. A log written before it recorded that cannot say which trial: its lines
    are shown only for a run of one trial, or else under a warning that they are every
    trial's."""
    path = run_path / "injections.jsonl"
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return ""
    run_seed, trials = config.get("seed"), config.get("trials")
    wanted = trial_seed(run_seed, int(row.get("trial") or 0)) if isinstance(run_seed, int) else None
    found, unplaced = [], 0
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a line cut by a crash: the others still say what happened
        if not isinstance(record, dict) or record.get("task_id") != row.get("task_id"):
            continue
        if record.get("domain") not in (None, row.get("domain")):
            continue
        if "trial_seed" not in record:
            unplaced += 1
        elif wanted is None or record["trial_seed"] != wanted:
            continue
        found.append(record)
    if not found:
        return ""
    note = ""
    if unplaced and trials != 1:
        note = (
            "<p class='warn' id='injections-trials'>this log does not say which trial each "
            "mistake was played in (written before sopgym recorded it): these lines are every "
            "trial's of this task</p>"
        )
    trial = escape(str(row.get("trial") or 0))
    rows = "".join(
        f"<tr><td>{escape(str(r.get('kind')))}</td><td>{escape(_step(r.get('step')))}</td>"
        f"<td><code>{escape(call_text(r['call'], 0) if r.get('call') else '-')}</code></td>"
        f"<td>{escape(', '.join(map(str, r.get('expected') or [])) or '-')}</td></tr>"
        for r in found
    )
    return (
        f"<h2>Mistakes the scripted model injected in trial {trial}</h2><p class='muted'>its own "
        "record (injections.jsonl): what it did on purpose, and the error class each should "
        f"show</p>{note}<table id='injections'><thead><tr><th>mistake</th><th>step</th>"
        f"<th>call</th><th>expected error</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _step(step: Any) -> str:
    return "answer" if step is None else str(step)


def inputs(value: Any) -> str:
    """The task's input: an object as a field list, each text shown as text (an SOP's
    lines as lines, not a JSON string of ``\\n``), anything else as indented JSON."""
    return f"<div id='inputs' class='inputs'>{_field(value)}</div>"


def _field(value: Any) -> str:
    if isinstance(value, dict) and value:
        items = "".join(
            f"<dt>{escape(str(key))}</dt><dd>{_field(item)}</dd>" for key, item in value.items()
        )
        return f"<dl>{items}</dl>"
    if isinstance(value, str):
        return f"<pre class='text'>{escape(value)}</pre>"
    if isinstance(value, list) and value and all(_turn_text(v) is not None for v in value):
        return "".join(  # a conversation so far, turn by turn
            f"<div class='turn {escape(str(v['role']))}'><span class='role'>"
            f"{escape(str(v['role']))}</span><pre>{escape(str(_turn_text(v)))}</pre></div>"
            for v in value
        )
    return f"<pre class='json'>{escape(_pretty(value))}</pre>"


def _turn_text(value: Any) -> str | None:
    """A conversation turn's text (``content``, or SOP-Maze's ``text``), None if not one."""
    if not isinstance(value, dict) or "role" not in value:
        return None
    text = value.get("content", value.get("text"))
    return text if isinstance(text, str) else None
