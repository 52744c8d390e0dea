"""The viewer's pages, rendered on the server as plain HTML (every value escaped here); the
one script (``static/viewer.js``) only filters and sorts tables and polls a running run.

Elements the browser tests look for carry stable ids or ``data-`` attributes (``#tasks``,
``data-outcome``, ``#answer``, ``#steps``), so a page that loses its content fails them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson

from sopgym.core.jsonio import CorruptRow
from sopgym.core.outcomes import OUTCOMES, SUCCESS
from sopgym.evaluation.explain import because_line, coverage_line, failed_in_all_trials
from sopgym.evaluation.report import num, pct
from sopgym.evaluation.scoring import TaskScore, summarize
from sopgym.evaluation.stats import (
    COMPARISON_HEADERS,
    COMPARISON_TITLE,
    comparison_note,
    comparison_rows,
    paired_comparison,
)
from sopgym.evaluation.svg import bar_chart
from sopgym.orchestration.runs import (
    INTERRUPTED,
    RUNNING,
    RunReader,
    episode_tokens,
    outcome,
    task_key,
    total_tokens,
)
from sopgym.types import JSON
from sopgym.viewer import live, why
from sopgym.viewer.families import family_figures
from sopgym.viewer.traces import ChatTurn, EpisodeTrace

Cell = str | tuple[str, str]  # text, or (text, link)
PLOT_WIDTH = 420  # three plots side by side on a laptop screen


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def _json_line(value: Any, css: str) -> str:
    """A payload on one (wrapped) line: tool arguments and results stay compact."""
    return f'<pre class="{css}">{escape(orjson.dumps(value, default=str).decode())}</pre>'


def _cell(cell: Cell) -> str:
    if isinstance(cell, tuple):
        return f'<a href="{escape(cell[1])}">{escape(cell[0])}</a>'
    return escape(cell)


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], table_id: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(title: str, body: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    trail = " / ".join(f'<a href="{escape(link)}">{escape(text)}</a>' for text, link in crumbs)
    nav = f'<nav><a href="/">runs</a>{" / " + trail if trail else ""}</nav>'
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)} · sopgym</title>"
        "<link rel='icon' href='/static/favicon.svg' type='image/svg+xml'>"
        "<link rel='stylesheet' href='/static/viewer.css'></head><body>"
        f"{nav}<h1>{escape(title)}</h1>{body}"
        "<script src='/static/viewer.js'></script></body></html>"
    )


def run_link(run: RunReader) -> str:
    return f"/runs/{run.id}"


def task_link(run: RunReader, row: JSON) -> str:
    domain, task_id, trial = task_key(row)
    query = urlencode({"domain": domain, "task": task_id, "trial": trial})
    return f"/runs/{run.id}/task?{query}"


def _when(run: RunReader) -> str:
    return run.created()[:16].replace("T", " ") + " UTC"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


# ---- the runs list ----
def _tsr_cell(summary: JSON) -> str:
    """TSR, and when the infrastructure failed episodes, over how many of the planned."""
    tsr = pct(summary.get("tsr"))
    if not summary.get("infra_errors"):
        return tsr
    return f"{tsr} over {summary.get('scored', '?')} of {summary['tasks']} planned"


def runs_page(runs: list[RunReader], sources: Sequence[Path] = ()) -> str:
    rows: list[list[Cell]] = []
    for run in runs:
        config = run.config()
        try:
            summary, recorded = run.summary(), run.rows()
        except CorruptRow as error:  # this run only: the others are still listed
            rows.append([(run.id, run_link(run)), _when(run), ", ".join(config.get("domains", [])),
                         "", "", "", "", "", "", "", f"unreadable: {error}"])  # fmt: skip
            continue
        rows.append(
            [
                (run.id, run_link(run)),
                _when(run),
                ", ".join(config.get("domains", [])),
                str(config.get("agent", "?")),
                str(config.get("model", "?")),
                str(config.get("faults") or "-"),
                str(config.get("seed", "?")),
                f"{len(recorded)}" + ("" if summary.get("partial") else f" / {summary['tasks']}"),
                _tsr_cell(summary),
                _count(total_tokens(recorded)),
                run.state(),
            ]
        )
    headers = ["run", "date", "domains", "agent", "model", "faults", "seed", "episodes", "TSR",
               "tokens", "status"]  # fmt: skip
    where = ", ".join(str(source.resolve()) for source in sources) or "the folders given"
    empty = (  # where it looked, and how a run gets there
        f"<p id='runs'>No run folders in {escape(where)}. Start one with "
        "<code>sopgym run</code> (it writes <code>runs/&lt;run-id&gt;/</code>), or name a "
        "runs folder: <code>sopgym view --runs-dir DIR</code>.</p>"
    )
    listing = table(headers, rows, "runs") if rows else empty

    pair = comparable_pair(runs)
    newer, older = (None, None) if pair is None else pair

    def options(chosen: int | None) -> str:
        blank = "" if chosen is not None else "<option value='' selected>(pick a run)</option>"
        return blank + "".join(
            f"<option{' selected' if i == chosen else ''}>{escape(r.id)}</option>"
            for i, r in enumerate(runs)
        )

    compare = (  # the latest two runs that share a task, preselected; none if no two do
        "<form action='/compare' class='compare' id='compare-form'>compare "
        f"<select name='a' required>{options(older)}</select> with "
        f"<select name='b' required>{options(newer)}</select> "
        "<button>compare</button></form>"
        if len(runs) > 1
        else ""
    )
    return page("sopgym runs", listing + compare)


PAIR_SEARCHED = 8  # the newest runs searched for two that share a task


def comparable_pair(runs: list[RunReader]) -> tuple[int, int] | None:
    """The newest run and the next newest that shares a task with it (indexes into
    ``runs``, newest first), among the first :data:`PAIR_SEARCHED`; None when no two do."""
    keys = [_task_keys(run) for run in runs[:PAIR_SEARCHED]]
    for newer in range(len(keys)):
        for older in range(newer + 1, len(keys)):
            if keys[newer] & keys[older]:
                return newer, older
    return None


def _task_keys(run: RunReader) -> set[tuple[str, str]]:
    """The (domain, task) pairs a run recorded; none for an unreadable run (listed as such)."""
    try:
        return {(r["domain"], r["task_id"]) for r in run.rows()}
    except CorruptRow:
        return set()


# ---- a run ----
def _figures(summary: JSON, recorded: list[JSON]) -> str:
    items = [
        ("episodes", str(summary["tasks"])),
        ("completed", str(summary["completed"])),
        ("ECR", pct(summary["ecr"])),
        ("C-TSR", pct(summary["c_tsr"])),
        ("TSR", pct(summary["tsr"])),
        ("tool F1", num(summary["tool_f1"])),
        ("infra errors", str(summary.get("infra_errors", 0))),
        ("tokens", _count(total_tokens(recorded))),
    ]
    sopbench = (summary.get("paper") or {}).get("sopbench")
    if sopbench:  # SOP-Bench's own headline beside ours (sopgym.evaluation.profiles)
        items.append(("TSR, SOP-Bench's def.", pct(sopbench["weighted_average"]["tsr"])))
    coverage = coverage_line(summary)
    if coverage:  # the headline TSR covers only the episodes played: say so beside it
        planned = summary["tasks"]
        items.insert(5, ("TSR over all planned", pct(summary.get("correct", 0) / planned)))
    trials = summary.get("trials") or {}
    if trials.get("trials", 1) > 1:
        last = list(trials["pass_hat_k"])[-1]
        items += [(f"pass^{last}", pct(trials["pass_hat_k"][last])),
                  (f"pass@{last}", pct(trials["pass_at_k"][last]))]  # fmt: skip
    cells = "".join(
        f"<div class='figure' data-figure='{escape(k)}'><b>{escape(v)}</b>{escape(k)}</div>"
        for k, v in items
    )
    note = f"<p class='note' id='coverage'>{escape(coverage)}</p>" if coverage else ""
    return f"{note}<div class='figures' id='figures'>{cells}</div>"


def _error_classes(row: JSON) -> list[str]:
    return sorted(k for k, v in row["score"].get("errors", {}).items() if v)


def _wrong_fields(row: JSON) -> list[str]:
    return [k for k, ok in row["score"].get("fields", {}).items() if not ok]


def _calls_text(row: JSON) -> str:
    calls = (row.get("trajectory") or {}).get("calls", [])
    return " > ".join(
        f"{c['name']}!{c['error_code']}" if c.get("error_code") else c["name"] for c in calls
    )


def _paper_note(score: JSON) -> str:
    """Where a paper's definitions judge the task otherwise than ours: which, and in what
    (sopgym.evaluation.profiles)."""
    from sopgym.evaluation.profiles import differing

    said = "; ".join(f"{name}: {', '.join(what)}" for name, what in differing(score).items())
    if not said:
        return ""
    return f" <span class='badge paper' title='judged differently by'>{escape(said)}</span>"


def _select(name: str, label: str, values: Iterable[str]) -> str:
    options = "".join(f"<option value='{escape(v)}'>{escape(v)}</option>" for v in values)
    return (
        f"<label>{escape(label)} <select id='f-{name}' data-filter='{name}'>"
        f"<option value=''>all</option>{options}</select></label>"
    )


def task_table(run: RunReader, recorded: list[JSON]) -> str:
    domains = sorted({r["domain"] for r in recorded})
    errors = sorted({e for r in recorded for e in _error_classes(r)})
    all_failed = failed_in_all_trials(recorded)
    filters = (
        "<div class='filters'>"
        + _select("domain", "domain", domains)
        + _select("outcome", "outcome", OUTCOMES)
        + _select("error", "error class", errors)
        + (_select("trials", "trials", ["failed in all trials"]) if all_failed else "")
        + "<label>search <input id='f-search' type='search' placeholder='task, tool, field'>"
        "</label> <span id='shown'></span></div>"
    )
    headers = [("task", "text"), ("domain", "text"), ("trial", "num"), ("outcome", "text"),
               ("failed because", "text"), ("wrong fields", "text"), ("errors", "text"),
               ("calls", "num"),
               ("tool F1", "num"), ("latency s", "num"), ("tokens", "num")]  # fmt: skip
    head = "".join(
        f"<th data-sort='{kind}' title='sort'>{escape(name)}</th>" for name, kind in headers
    )
    body = []
    for row in sorted(recorded, key=task_key):
        score, result = row["score"], outcome(row)
        wrong, errors_of = _wrong_fields(row), _error_classes(row)
        cells = [
            f"<a class='task' href='{escape(task_link(run, row))}'>{escape(row['task_id'])}</a>",
            escape(row["domain"]),
            str(row.get("trial") or 0),
            f"<span class='badge {result}'>{result}</span>" + _paper_note(score),
            escape(because_line(row)),
            escape(", ".join(wrong) or "-"),
            escape(", ".join(f"{k}={score['errors'][k]}" for k in errors_of) or "-"),
            str(score.get("calls", 0)),
            num(score.get("tool_f1"), 2),
            num(row.get("elapsed_s"), 2),
            _count(episode_tokens(row)),
        ]
        search = " ".join(
            [row["task_id"], row["domain"], _calls_text(row), *wrong, because_line(row)]
        ).lower()
        every = (row["domain"], row["task_id"]) in all_failed
        body.append(
            f"<tr data-key='{escape('/'.join(map(str, task_key(row))))}' "
            f"data-domain='{escape(row['domain'])}' data-outcome='{result}' "
            f"data-trials='{'failed in all trials' if every else ''}'"
            f"{' class=all-failed' if every else ''} "
            f"data-errors='{escape(' '.join(errors_of))}' data-search='{escape(search)}'>"
            + "".join(f"<td>{c}</td>" for c in cells)
            + "</tr>"
        )
    return (
        f"<h2>Tasks</h2>{filters}<table id='tasks' class='sortable'><thead><tr>{head}</tr>"
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def paper_sections(found: JSON | None) -> str:
    """The papers' own tables of the run (``summary.json``'s ``paper``), if it has any."""
    from sopgym.evaluation.paper_tables import paper_tables

    tables = paper_tables(found)
    return "".join(f"<h2>{escape(t.title)}</h2>" + table(t.headers, t.rows) for t in tables)


def _breakdowns(summary: JSON, recorded: list[JSON]) -> str:
    domains = summary.get("domains", {})
    domain_rows: list[list[Cell]] = [
        [d, str(m["tasks"]), str(m["completed"]), pct(m["ecr"]), pct(m["c_tsr"]), pct(m["tsr"]),
         num(m["tool_f1"]), ", ".join(f"{k}={v}" for k, v in sorted(m["errors"].items())) or "-"]
        for d, m in domains.items()
    ]  # fmt: skip
    tasks_with = Counter(e for r in recorded for e in _error_classes(r))
    error_rows: list[list[Cell]] = [
        [(k, f"?{urlencode({'error': k})}#tasks"), str(v), str(tasks_with.get(k, 0))]
        for k, v in sorted(summary.get("errors", {}).items(), key=lambda kv: -kv[1])
    ]
    outcomes = Counter(outcome(r) for r in recorded)
    plots = [
        bar_chart(
            [(d, m["tsr"] or 0.0) for d, m in domains.items()],
            "TSR per domain",
            maximum=1,
            width=PLOT_WIDTH,
        ),
        bar_chart(
            sorted(summary.get("errors", {}).items(), key=lambda kv: -kv[1]),
            "Errors by class (count)",
            fmt=lambda v: f"{v:.0f}",
            width=PLOT_WIDTH,
        ),
        bar_chart(
            [(o, float(outcomes.get(o, 0))) for o in OUTCOMES],
            "Episodes by outcome",
            fmt=lambda v: f"{v:.0f}",
            width=PLOT_WIDTH,
        ),
    ]
    return (
        f"<div class='plots'>{''.join(plots)}</div>"
        "<h2>By domain</h2>"
        + table(
            ["domain", "episodes", "completed", "ECR", "C-TSR", "TSR", "tool F1", "errors"],
            domain_rows,
            "domains",
        )
        + "<h2>By error class</h2>"
        + (
            table(["error class", "count", "episodes with it"], error_rows, "errors")
            if error_rows
            else "<p>no errors</p>"
        )
    )


def run_page(run: RunReader) -> str:
    summary, recorded = run.summary(), run.rows()
    state = run.state()
    if state == RUNNING:
        so_far = live.progress_text(len(recorded), live.progress(run, len(recorded)))
        progress = (
            f"<p id='progress' data-run='{escape(run.id)}' data-count='{len(recorded)}' "
            f"data-state='{state}' class='live'>running: {escape(so_far)} (updates live)</p>"
        )
    elif state == INTERRUPTED:
        progress = (
            f"<p id='progress' data-state='{state}' class='note'>interrupted: "
            f"{len(recorded)} episodes recorded, no runner holds the run and its summary "
            "does not cover them (figures over the recorded episodes; continue it with "
            f"<code>sopgym run --resume {escape(run.id)}</code>)</p>"
        )
    else:
        progress = (
            f"<p id='progress' data-state='{state}'>finished: {len(recorded)} episodes recorded</p>"
        )
    infra = summary.get("infra_failed") or []
    notes = (
        f"<p class='note'>{len(infra)} episodes failed by the infrastructure: left out of "
        "ECR, C-TSR and TSR (rerun them with <code>sopgym run --resume RUN --retry-infra</code>)"
        "</p>"
        if infra
        else ""
    )
    body = (
        f"<p class='config'>{escape(run.describe())} · started {escape(_when(run))}</p>"
        + progress
        + notes
        + _figures(summary, recorded)
        # what a reader comes for first: the tasks, right under the headline figures; the
        # family tables, charts and per-domain breakdowns after them
        + task_table(run, recorded)
        + family_figures(summary, recorded)
        + _breakdowns(summary, recorded)
        + paper_sections(summary.get("paper"))
    )
    return page(f"run {run.id}", body)


# ---- one task ----
def _message_text(message: Any) -> str:
    """A GenAI-convention message (role + parts) as readable text; anything else as JSON."""
    if not isinstance(message, dict):
        return _pretty(message)
    parts = message.get("parts")
    if not isinstance(parts, list):
        return _pretty(message)
    lines = []
    for part in parts:
        if not isinstance(part, dict):
            lines.append(_pretty(part))
        elif part.get("type") == "text":
            lines.append(str(part.get("content", "")))
        elif part.get("type") == "tool_call":
            lines.append(f"→ {part.get('name')}({_pretty(part.get('arguments'))})")
        elif part.get("type") == "tool_call_response":
            lines.append(f"← {_pretty(part.get('response'))}")
        else:
            lines.append(_pretty(part))
    return "\n".join(lines)


def _messages(messages: Any, css: str) -> str:
    if not isinstance(messages, list):
        return f"<pre class='{css}'>{escape(str(messages))}</pre>"
    return "".join(
        f"<div class='message {css}'><span class='role'>"
        f"{escape(str(m.get('role', '?')) if isinstance(m, dict) else '?')}</span>"
        f"<pre>{escape(_message_text(m))}</pre></div>"
        for m in messages
    )


def _chat_step(number: int, turn: ChatTurn, first: bool) -> str:
    usage = f"{turn.input_tokens or 0} in / {turn.output_tokens or 0} out tokens"
    head = (
        f"<div class='step-head'>{number}. model call <b>{escape(turn.model)}</b> · {usage} · "
        f"{turn.duration_ms:.1f} ms</div>"
    )
    if turn.input_messages is None and turn.output_messages is None:
        return (
            f"<li class='step chat'>{head}<p class='muted'>messages not captured "
            "(run with <code>--capture-messages</code>)</p></li>"
        )
    # each call's input repeats the conversation so far: the first shows it, later ones
    # only what the model answered
    count = len(turn.input_messages) if isinstance(turn.input_messages, list) else "?"
    shown = (
        f"<details class='input'><summary>the messages sent ({count})</summary>"
        f"{_messages(turn.input_messages, 'input')}</details>"
        if first
        else ""
    )
    return f"<li class='step chat'>{head}{shown}{_messages(turn.output_messages, 'output')}</li>"


def _call_step(number: int, index: int, call: JSON) -> str:
    failed = bool(call.get("error_code"))
    flags = []
    if not call.get("in_catalog", True):
        flags.append("not in the catalog")
    if call.get("distractor"):
        flags.append("distractor")
    verdict = (
        f"<div class='verdict error'>refused {escape(str(call.get('status')))}: "
        f"<code class='error-code'>{escape(str(call['error_code']))}</code>"
        + (
            f" on field <code class='error-field'>{escape(str(call['error_field']))}</code>"
            if call.get("error_field")
            else ""
        )
        + "</div>"
        if failed
        else f"<div class='verdict'>result</div>{_json_line(call.get('result'), 'result')}"
    )
    latency = call.get("duration_ms")
    head = (
        f"<div class='step-head'>{number}. tool call #{index} <b>{escape(call['name'])}</b>"
        + (f" · {latency:.2f} ms" if isinstance(latency, int | float) else "")
        + (f" · {escape(', '.join(flags))}" if flags else "")
        + "</div>"
    )
    return (
        f"<li class='step call{' failed' if failed else ''}' data-tool='{escape(call['name'])}'>"
        f"{head}<div class='verdict'>arguments</div>"
        f"{_json_line(call.get('arguments'), 'arguments')}{verdict}</li>"
    )


def _steps(row: JSON, trace: EpisodeTrace | None) -> str:
    """Every step in order: the model's calls (from the trace) and the tool calls (the
    gateway's record), interleaved by when they began when the trace says so."""
    calls = (row.get("trajectory") or {}).get("calls", [])
    timeline: list[tuple[int, int, str, Any]] = []
    chats = trace.chats if trace else []
    for order, turn in enumerate(chats):
        timeline.append((turn.start_ns, order, "chat", turn))
    starts = trace.call_starts if trace else {}
    last = 0
    for index, call in enumerate(calls):
        last = starts.get(index, last)  # a call the trace lacks keeps its recorded order
        timeline.append((last, len(chats) + index, "call", (index, call)))
    if not chats or len(starts) < len(calls):  # no times: model calls first, then the calls
        timeline.sort(key=lambda item: (item[2] != "chat", item[1]))
    else:
        timeline.sort(key=lambda item: (item[0], item[1]))
    items = []
    first_chat = True
    for number, (_, _, kind, value) in enumerate(timeline, 1):
        if kind == "chat":
            items.append(_chat_step(number, value, first_chat))
            first_chat = False
        else:
            items.append(_call_step(number, *value))
    if not items:
        return "<ol id='steps'><li class='muted'>no step recorded</li></ol>"
    note = (
        ""
        if chats
        else "<p class='muted'>model calls: "
        + escape(
            "; ".join(
                f"{c.get('input_tokens', 0)} in / {c.get('output_tokens', 0)} out tokens, "
                f"{1000 * float(c.get('latency_s') or 0):.1f} ms"
                for c in row.get("llm_calls") or []
            )
            or "none"
        )
        + " (no trace of this episode: messages and their order are not known)</p>"
    )
    return f"{note}<ol id='steps'>{''.join(items)}</ol>"


def _scores(row: JSON) -> str:
    rows = [
        [name, num(s.get("value")), "yes" if s.get("gates") else "no", s.get("explanation") or ""]
        for name, s in row["score"].get("scores", {}).items()
    ]
    return table(["scorer", "value", "gates success", "explanation"], rows, "scores")


def _task_nav(run: RunReader, row: JSON, back: str) -> str:
    """Links to the previous and the next failed task (in the run's task-table order), to
    this task's other trials, and back to the run's table with its filters (``back``: the
    run page's query, carried along)."""
    carried = {"from": back} if back else {}

    def link(other: JSON, text: str, css: str) -> str:
        href = task_link(run, other) + (f"&{urlencode(carried)}" if carried else "")
        return f"<a class='{css}' href='{escape(href)}'>{escape(text)}</a>"

    rows = sorted(run.rows(), key=task_key)
    here = task_key(row)
    failed = [r for r in rows if outcome(r) in ("failed", "incomplete") or task_key(r) == here]
    at = next(i for i, r in enumerate(failed) if task_key(r) == here)
    parts = []
    if at > 0:
        before = failed[at - 1]
        parts.append(link(before, f"← previous failed: {before['task_id']}", "prev-failed"))
    if at + 1 < len(failed):
        after = failed[at + 1]
        parts.append(link(after, f"next failed: {after['task_id']} →", "next-failed"))
    trials = [r for r in rows if task_key(r)[:2] == here[:2] and task_key(r) != here]
    if trials:
        others = ", ".join(
            link(r, f"trial {task_key(r)[2]} ({outcome(r)})", "other-trial") for r in trials
        )
        parts.append(f"<span id='other-trials'>other trials: {others}</span>")
    return f"<p class='task-nav' id='task-nav'>{' · '.join(parts)}</p>" if parts else ""


def task_page(
    run: RunReader, row: JSON, trace: EpisodeTrace | None, jaeger_ui: str | None, back: str = ""
) -> str:
    result, config = outcome(row), run.config()
    trajectory = row.get("trajectory") or {}
    trace_id = trace.trace_id if trace else None
    facts = [
        ("outcome", f"<span class='badge {result}' id='outcome'>{result}</span>"),
        ("domain", escape(row["domain"])),
        ("trial", str(row.get("trial") or 0)),
        ("agent / model", escape(f"{row.get('agent')} / {row.get('model')}")),
        ("SOP variant", escape(str(config.get("sop_variant", "?")))),
        ("episode", escape(str(row.get("episode_id")))),
        ("status", escape(str(row.get("status")))),
        ("latency", f"{num(row.get('elapsed_s'), 2)} s"),
    ]
    if row.get("error"):
        facts.append(("error", f"<code>{escape(str(row['error']))}</code>"))
    if trace_id:
        link = (
            f"<a href='{escape(jaeger_ui.rstrip('/'))}/trace/{trace_id}'>{trace_id} in Jaeger</a>"
            if jaeger_ui
            else escape(trace_id)
        )
        facts.append(("trace", link))
    if trajectory.get("catalog"):
        facts.append(("catalog", escape(", ".join(trajectory["catalog"]))))
    fact_rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    inputs = (
        why.inputs(row["inputs"])
        if "inputs" in row
        else "<p class='muted'>this run did not record task inputs (older sopgym)</p>"
    )
    body = (
        f"{_task_nav(run, row, back)}"
        f"<table class='facts'>{fact_rows}</table>"
        f"{why.because(row)}"
        f"<h2>Final answer against the gold</h2>{why.answer(row)}"
        f"{why.sop_steps(row, str(config.get('sop_variant', 'clean')))}"
        f"{why.actions_diff(row)}"
        f"{why.state_diff(row)}"
        f"{why.calls_against_gold(row)}"
        f"{why.dialogue(row)}"
        f"{why.injections(run.path, row, config)}"
        f"<h2>Scores</h2>{_scores(row)}"
        f"<h2>Steps</h2>{_steps(row, trace)}"
        f"<h2>Task input</h2>{inputs}"
    )
    table_link = run_link(run) + (f"?{back}" if back else "") + "#tasks"
    return page(f"{row['task_id']} ({result})", body, crumbs=[(f"run {run.id}", table_link)])


# ---- two runs ----
def _summary_of(rows: list[JSON]) -> JSON:
    return summarize(TaskScore(**r["score"]) for r in rows)


def compare_page(a: RunReader, b: RunReader) -> str:
    rows_a = {task_key(r): r for r in a.rows()}
    rows_b = {task_key(r): r for r in b.rows()}
    shared = sorted(set(rows_a) & set(rows_b))
    only_a, only_b = sorted(set(rows_a) - set(rows_b)), sorted(set(rows_b) - set(rows_a))
    sum_a = _summary_of([rows_a[k] for k in shared])
    sum_b = _summary_of([rows_b[k] for k in shared])
    metrics = [("ECR", "ecr", True), ("C-TSR", "c_tsr", True), ("TSR", "tsr", True),
               ("tool precision", "tool_precision", False), ("tool recall", "tool_recall", False),
               ("tool F1", "tool_f1", False)]  # fmt: skip

    def shown(value: float | None, rate: bool, signed: bool = False) -> str:
        if value is None:
            return "n/a"
        text = pct(value) if rate else num(value)
        return f"+{text}" if signed and value > 0 else text

    metric_rows: list[list[Cell]] = []
    for label, key, rate in metrics:
        va, vb = sum_a.get(key), sum_b.get(key)
        delta = vb - va if va is not None and vb is not None else None
        metric_rows.append([label, shown(va, rate), shown(vb, rate), shown(delta, rate, True)])
    task_rows: list[list[Cell]] = []
    for pair in shared:
        ra, rb = rows_a[pair], rows_b[pair]
        oa, ob = outcome(ra), outcome(rb)
        change = ("fixed" if ob == SUCCESS else "broken" if oa == SUCCESS else "changed"
                  ) if oa != ob else "same"  # fmt: skip
        task_rows.append([(pair[1], task_link(a, ra)), pair[0], str(pair[2]), oa,
                          (ob, task_link(b, rb)), change])  # fmt: skip
    changes = Counter(r[5] for r in task_rows)

    def listed(keys: list[tuple[str, str, int]]) -> str:
        return escape(", ".join(f"{d}/{t}#{n}" for d, t, n in keys)) or "none"

    head = (
        f"<p id='sides'>A = <a href='{run_link(a)}'>{escape(a.id)}</a> "
        f"({escape(a.describe())})<br>"
        f"B = <a href='{run_link(b)}'>{escape(b.id)}</a> "
        f"({escape(b.describe())})</p>"
    )
    if not shared:
        return page(f"compare {a.id} and {b.id}", head + _disjoint(a, b))
    significance = paired_comparison([rows_a[k] for k in shared], [rows_b[k] for k in shared])
    verdict = (  # the paired test `sopgym compare` prints, first: is the difference real?
        f"<h2>{escape(COMPARISON_TITLE)}</h2>"
        f"<p id='verdict' class='figure'>{escape(significance['sentence'])}.</p>"
        + table(COMPARISON_HEADERS, comparison_rows(significance), "significance")
        + f"<p class='muted'>{escape(comparison_note(significance))}</p>"
    )
    body = (
        head
        + _config_differences(a, b)
        + f"<p id='shared'>Deltas over the {len(shared)} episodes both runs recorded; "
        f"{len(only_a)} only in A and {len(only_b)} only in B are listed below, not compared. "
        f"fixed in B: {changes['fixed']}, broken in B: {changes['broken']}.</p>"
        + verdict
        + "<h2>Overall</h2>"
        + table(["metric", "A", "B", "B - A"], metric_rows, "deltas")
        + "<h2>Task by task</h2>"
        + "<label><input type='checkbox' id='changed-only'> changed tasks only</label>"
        + _pairs_table(task_rows)
        + f"<h2>Only in A ({len(only_a)})</h2><p id='only-a'>{listed(only_a)}</p>"
        + f"<h2>Only in B ({len(only_b)})</h2><p id='only-b'>{listed(only_b)}</p>"
    )
    return page(f"compare {a.id} and {b.id}", body)


# config keys that differ between any two runs and say nothing of what was measured
_BOOKKEEPING = frozenset({"created", "provenance", "run_id", "task_count"})


def _config_differences(a: RunReader, b: RunReader) -> str:
    """The two runs' configs key by key, the keys whose values differ first and marked
    (``#config-diff``): what the comparison is a comparison of."""
    config_a, config_b = a.config(), b.config()
    keys = [k for k in dict.fromkeys([*config_a, *config_b]) if k not in _BOOKKEEPING]
    differing = [k for k in keys if config_a.get(k) != config_b.get(k)]
    rows = "".join(
        f"<tr{' class=differs' if k in differing else ''} data-key='{escape(k)}'>"
        f"<th>{escape(k)}</th><td>{escape(_pretty(config_a.get(k)))}</td>"
        f"<td>{escape(_pretty(config_b.get(k)))}</td></tr>"
        for k in [*differing, *(k for k in keys if k not in differing)]
    )
    said = ", ".join(differing) or "none: the same config"
    return (
        f"<p id='differs'>config keys that differ: <b>{escape(said)}</b></p>"
        f"<details><summary>both configs</summary><table id='config-diff'><thead><tr>"
        f"<th>key</th><th>A</th><th>B</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _pairs_table(rows: list[list[Cell]]) -> str:
    """Task by task, a changed task's row marked (``data-change``) and highlighted."""
    head = "".join(f"<th>{h}</th>" for h in ("task", "domain", "trial", "A", "B", "change"))
    body = "".join(
        f"<tr data-change='{escape(str(r[5]))}'"
        f"{' class=changed' if r[5] != 'same' else ''}>"
        + "".join(f"<td>{_cell(c)}</td>" for c in r)
        + "</tr>"
        for r in rows
    )
    return f"<table id='pairs'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _disjoint(a: RunReader, b: RunReader) -> str:
    """Two runs with no episode in common: said plainly, and each run's own figures."""
    figures = [("episodes", "tasks", False), ("ECR", "ecr", True), ("C-TSR", "c_tsr", True),
               ("TSR", "tsr", True), ("tool F1", "tool_f1", False),
               ("infra errors", "infra_errors", False)]  # fmt: skip
    sum_a, sum_b = a.summary(), b.summary()

    def shown(summary: JSON, key: str, rate: bool) -> str:
        value = summary.get(key)
        if value is None:
            return "n/a"
        return pct(value) if rate else (str(value) if isinstance(value, int) else num(value))

    rows: list[list[Cell]] = [
        [label, shown(sum_a, key, rate), shown(sum_b, key, rate)] for label, key, rate in figures
    ]
    domains = ", ".join(a.config().get("domains", [])), ", ".join(b.config().get("domains", []))
    return (
        "<p id='shared' class='note'>These runs share no tasks (A ran "
        f"{escape(domains[0])}; B ran {escape(domains[1])}): there is nothing to compare "
        "task by task, and no delta. Each run's own figures:</p>"
        + table(["figure", f"A ({a.id})", f"B ({b.id})"], rows, "own")
    )


def error_page(title: str, message: str) -> str:
    return page(title, f"<p class='note' id='error'>{escape(message)}</p>")
