"""Reports of an evaluation: a terminal summary, Markdown, and one self-contained HTML file.

Every table is built once as plain data (:class:`Table`) and rendered to each format, so the
Markdown and the HTML report can never disagree. Trace ids link to the Jaeger UI so any task
can be opened from the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from rich.console import Console

from sopgym.core.jsonio import dumps, write_atomic
from sopgym.core.ordering import natural_key
from sopgym.core.untrusted import markdown_code, markdown_text
from sopgym.evaluation.explain import because_line, call_differences, call_text, coverage_line
from sopgym.evaluation.stats import interval_table, interval_text, tsr_intervals
from sopgym.evaluation.svg import bar_chart, percentile_chart
from sopgym.evaluation.two_stage import ERRORS, STAGE_1
from sopgym.terminal import FAULT_SPLIT_CAVEAT, print_table
from sopgym.types import JSON

Cell = str | tuple[str, str]  # text, or (text, link)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _errors(errors: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(errors.items())) or "-"


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[Cell]]


PER_TASK_COLUMNS = [
    "task", "domain", "agent", "ok", "failed because", "wrong fields", "tool F1", "errors",
    "calls", "latency s", "LLM", "trace",
]  # fmt: skip
METRIC_COLUMNS = [
    "tasks", "infra err", "completed", "ECR", "C-TSR", "TSR", "tool P", "tool R", "tool F1",
    "calls", "wrong tool", "param fail", "order viol.", "latency p50 s", "LLM calls/task",
    "tokens/task",
]  # fmt: skip


def metric_cells(m: JSON) -> list[Cell]:
    return [
        str(m["tasks"]),
        str(m.get("infra_errors", 0)),
        str(m["completed"]),
        pct(m["ecr"]),
        pct(m["c_tsr"]),
        pct(m["tsr"]),
        num(m["tool_precision"]),
        num(m["tool_recall"]),
        num(m["tool_f1"]),
        str(m["calls"]),
        pct(m["wrong_tool_rate"]),
        pct(m["param_failure_rate"]),
        str(m["order_violations"]),
        num(m["latency_s"]["p50"]),
        num(m["llm_calls_per_task"], 1),
        num(m["tokens_per_task"], 0),
    ]


def tables(result: JSON, jaeger_ui: str | None = None) -> list[Table]:
    ui = (jaeger_ui or "").rstrip("/")
    groups = [
        ("By domain", "domain", result["domains"]),
        ("By agent / model", "agent / model", result["agents"]),
    ]
    out = [Table("Overall", METRIC_COLUMNS, [metric_cells(result)])]
    out += [
        Table(title, [key, *METRIC_COLUMNS], [[name, *metric_cells(m)] for name, m in ms.items()])
        for title, key, ms in groups
    ]
    out.append(Table(*interval_table(result["per_task"])))
    out.append(
        Table(
            "Error taxonomy (TELLER: blank / validation / type; plus wrong value, wrong tool)",
            ["error", "count"],
            [[k, str(v)] for k, v in sorted(result["errors"].items())],
        )
    )

    out.append(scorer_table(result))
    if result.get("breakdown"):
        out.append(breakdown_table(result["breakdown"]))
    if result.get("two_stage"):
        out.append(two_stage_table(result["two_stage"]))
    # the papers' own figures: the family tables (SOP-Maze, TOD-ProcBench) and the
    # profiles (SOP-Bench, TELLER), all under result["paper"] keyed by paper
    from sopgym.evaluation.paper_tables import paper_tables  # it imports this module
    from sopgym.evaluation.profiles.tables import paper_tables as profile_tables

    out += paper_tables(result.get("paper"))
    out += profile_tables(result)

    def trace_cell(trace_id: str | None) -> Cell:
        if not trace_id:
            return "-"
        return (trace_id, f"{ui}/trace/{trace_id}") if ui else trace_id

    out.append(
        Table(
            "Incomplete episodes (counted against ECR)",
            ["task", "domain", "agent", "reason", "trace"],
            [
                [
                    i["task_id"],
                    i["domain"],
                    i["agent"],
                    i.get("reason") or "",
                    trace_cell(i["trace_id"]),
                ]
                for i in result["incomplete"]
            ],
        )
    )
    out.append(
        Table(
            "Infrastructure errors (left out of every metric above; rerun with --retry-infra)",
            ["task", "domain", "trial", "cause", "trace"],
            [
                [
                    i["task_id"],
                    i["domain"],
                    str(i.get("trial", 0)),
                    i["cause"],
                    trace_cell(i["trace_id"]),
                ]
                for i in result.get("infra_failed", [])
            ],
        )
    )
    out += [t for t in (robustness_table(result), trials_table(result.get("trials") or {})) if t]
    out.append(
        Table(
            "Per task",
            PER_TASK_COLUMNS,
            [
                [
                    r["task_id"],
                    r["domain"],
                    r["agent_model"],
                    "infra"
                    if r["score"].get("infra_error")
                    else "yes"
                    if r["score"]["success"]
                    else ("no" if r["score"]["completed"] else "inc."),
                    because_line(r),
                    ", ".join(k for k, ok in r["score"]["fields"].items() if not ok) or "-",
                    num(r["score"]["tool_f1"], 2),
                    _errors(r["score"]["errors"]),
                    " > ".join(f"{n}!{e}" if e else n for n, e in r["calls_made"]) or "-",
                    num(r["latency_s"]),
                    str(r["llm_calls"]),
                    trace_cell(r["trace_id"]),
                ]
                for r in sorted(result["per_task"], key=task_order)
            ],
        )
    )
    return out


def task_order(row: JSON) -> tuple[tuple[tuple[int, int | str], ...], ...]:
    """Domain, task and trial in natural order (``l2`` before ``l10``)."""
    return natural_key(row["domain"]), natural_key(row["task_id"]), ((1, row.get("trial") or 0),)


def robustness_table(result: JSON) -> Table | None:
    """TSR of the episodes that met an injected fault beside the others' (``--faults``)."""
    robust = result.get("robustness") or {}
    if not robust.get("faults_injected"):
        return None
    return Table(
        "Robustness under injected faults: TSR of the episodes that met a fault beside those "
        f"that met none ({FAULT_SPLIT_CAVEAT})",
        ["faults injected", "episodes that met a fault", "TSR of those", "TSR of the others"],
        [[str(robust["faults_injected"]), str(robust["episodes_with_faults"]),
          pct(robust["tsr_with_faults"]), pct(robust["tsr_without_faults"])]],
    )  # fmt: skip


def trials_table(trials: JSON) -> Table | None:
    """pass^k for every k, pass@k at the largest, the TSR of each trial and their spread,
    per domain (``--trials K``, K > 1)."""
    if trials.get("trials", 1) < 2:
        return None
    ks = list(trials["pass_hat_k"])
    rows: list[list[Cell]] = [
        [name, *(pct(t["pass_hat_k"][k]) for k in ks), pct(t["pass_at_k"][ks[-1]]),
         " / ".join(pct(v) for v in t.get("trial_tsr", [])),
         f"{pct(t['tsr_min'])} / {pct(t['tsr_max'])} / {t['tsr_stdev']:.3f}"]
        for name, t in [*trials.get("domains", {}).items(), ("all", trials)]
    ]  # fmt: skip
    return Table(
        f"Trials: pass^k (every one of k trials solved) and pass@k over {trials['trials']}",
        ["domain", *(f"pass^{k}" for k in ks), f"pass@{ks[-1]}", "TSR per trial",
         "trial TSR min / max / stdev"],
        rows,
    )  # fmt: skip


def scorer_table(result: JSON) -> Table:
    """Each scorer's mean value overall and per domain (n/a: it applied to no task)."""
    domains = result["domains"]
    return Table(
        "Scorers (mean value over the scored tasks)",
        ["scorer", "overall", *domains],
        [
            [name, num(value), *(num(m["scores"].get(name)) for m in domains.values())]
            for name, value in result["scores"].items()
        ],
    )


def breakdown_table(found: JSON) -> Table:
    """SOP-Maze's view (:mod:`sopgym.evaluation.breakdown`): the graded answer score by
    scenario, LRS / HRS and difficulty source, and the SOP-Maze score."""
    rows: list[list[Cell]] = [
        [group, key, str(m["tasks"]), num(m["mean"])]
        for group in ("scenario", "shape", "source")
        for key, m in found[group].items()
    ]
    shapes = " and ".join(found["sop_maze_score_shapes"]) or "no shape"
    rows.append(["SOP-Maze score", f"mean of {shapes}", "", num(found["sop_maze_score"])])
    if found["unscorable"]:
        rows.append(["unscorable (excluded)", ", ".join(found["unscorable"][:10]),
                     str(len(found["unscorable"])), "n/a"])  # fmt: skip
    return Table(
        "SOP-Maze breakdown (answer_schema: 1.0 exact / 0.2 valid but wrong / 0 invalid)",
        ["by", "group", "tasks", "mean"],
        rows,
    )


TWO_STAGE_COLUMNS = [
    "agent / model", "scenario",
    "S1 tasks", "node ov.", "edge ov.", "path ov.", "node P", "node R", "node F1", "edge P",
    "edge R", "edge F1",
    "S2 tasks", "decision acc.", "tool P", "tool R", "tool F1", "blank", "validation", "type",
    "order viol.", "final state", "harmless diffs", "TSR",
]  # fmt: skip
TWO_STAGE_TERMINAL = ["scenario", "node F1", "edge F1", "path ov.", "decision acc.", "tool F1",
                      "order viol.", "final state"]  # fmt: skip


def two_stage_table(found: JSON) -> Table:
    """TELLER's Table 2 view (:mod:`sopgym.evaluation.two_stage`): stage 1 (graph
    reconstruction) and stage 2 (execution) side by side, per agent / model and scenario."""
    rows: list[list[Cell]] = []
    # no graph pack ran: stage 1's columns would be a row of n/a each, so they go
    graphs = any(s["stage_1"] for sc in found["by_agent"].values() for s in sc.values())
    for agent_model, scenarios in found["by_agent"].items():
        for scenario, stages in scenarios.items():
            one, two = stages["stage_1"], stages["stage_2"]
            stage_1 = [str(one["tasks"]), *(num(one[m]) for m in STAGE_1)] if one else \
                ["0", *("n/a" for _ in STAGE_1)]  # fmt: skip
            if not graphs:
                stage_1 = []
            stage_2 = [
                str(two["tasks"]), pct(two["decision_accuracy"]), num(two["tool_precision"]),
                num(two["tool_recall"]), num(two["tool_f1"]), *(str(two[e]) for e in ERRORS),
                str(two["order_violations"]), pct(two["final_state"]),
                str(two["harmless_differences"]), pct(two["tsr"]),
            ] if two else ["0", *("n/a" for _ in range(10))]  # fmt: skip
            rows.append([agent_model, scenario, *stage_1, *stage_2])
    title = "TELLER two-stage view (Table 2): stage 1 graph reconstruction, stage 2 execution"
    columns = TWO_STAGE_COLUMNS
    if not graphs:
        title += " (stage 1 not run: no graph pack in this run)"
        columns = [c for i, c in enumerate(columns) if not 2 <= i < 2 + 1 + len(STAGE_1)]
    if found["infra_errors"]:
        title += f"; {found['infra_errors']} infrastructure errors left out"
    return Table(title, columns, rows)


# ---- renderers ----
HEADLINE = 2  # the tables a report opens with (overall, by domain); the drill-down follows
RUN_CONFIG_LABEL = "Run config"


def _text(cell: Cell) -> str:
    return cell[0] if isinstance(cell, tuple) else cell


def _md_cell(cell: Cell) -> str:
    # cells hold task ids, reasons and answers: text only, never HTML, a link or a cell's end
    if isinstance(cell, tuple):
        return f"[{markdown_text(cell[0])}]({cell[1].replace(')', '%29')})"
    return markdown_text(cell.replace("\n", " "))


def markdown(
    result: JSON,
    jaeger_ui: str | None = None,
    recorded: Sequence[JSON] = (),
    run_config: str | None = None,
) -> str:
    head = [f"# sopgym evaluation: {markdown_text(result['source'])}", ""]
    if run_config is not None:
        head += [f"{RUN_CONFIG_LABEL}: {markdown_code(run_config)}", ""]
    head += [_provenance(result), ""]
    coverage = coverage_line(result)
    if coverage:
        head += [f"**Coverage: {coverage}**", ""]
    found = tables(result, jaeger_ui)
    # the headline tables, then why each failed task failed, then everything else
    body = [*map(markdown_table, found[:HEADLINE]), drilldown_markdown(recorded),
            *map(markdown_table, found[HEADLINE:])]  # fmt: skip
    return "\n".join([*head, *body])


def markdown_table(table: Table) -> str:
    """A titled Markdown section: the table, or "none" when it has no rows."""
    lines = [f"## {table.title}", ""]
    if not table.rows:
        return "\n".join([*lines, "none", ""])
    lines.append("| " + " | ".join(table.headers) + " |")
    lines.append("|" + "---|" * len(table.headers))
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join([*lines, ""])


def _html_cell(cell: Cell) -> str:
    if isinstance(cell, tuple):
        return f'<a href="{escape(cell[1])}">{escape(cell[0])}</a>'
    return escape(cell)


def html_table(table: Table) -> str:
    if not table.rows:
        return f"<h2>{escape(table.title)}</h2><p>none</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html_cell(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    return f"<h2>{escape(table.title)}</h2><table><tr>{head}</tr>{body}</table>"


_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin-bottom:16px;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0} .plots{display:flex;flex-wrap:wrap;gap:16px}
"""


def html(
    result: JSON,
    jaeger_ui: str | None = None,
    recorded: Sequence[JSON] = (),
    run_config: str | None = None,
) -> str:
    latencies = [v for r in result["per_task"] for v in r["tool_latency_ms"]]
    plots = [
        bar_chart(
            [(d, m["tsr"]) for d, m in result["domains"].items()], "TSR per domain", maximum=1
        ),
        bar_chart(
            sorted(result["errors"].items(), key=lambda kv: -kv[1]),
            "Error taxonomy (count)",
            fmt=lambda v: f"{v:.0f}",
        ),
        percentile_chart(latencies, "Tool-call latency at the gateway"),
    ]
    found = tables(result, jaeger_ui)
    headline = "".join(html_table(t) for t in found[:HEADLINE])
    body = "".join(html_table(t) for t in found[HEADLINE:])
    config = (
        f"<p id='run-config'>{RUN_CONFIG_LABEL}: <code>{escape(run_config)}</code></p>"
        if run_config is not None
        else ""
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>sopgym evaluation</title><style>{_STYLE}</style></head><body>"
        f"<h1>sopgym evaluation: {escape(str(result['source']))}</h1>{config}"
        f"<p>{escape(_provenance(result))}</p>{_coverage_html(result)}"
        f"{headline}{drilldown_html(recorded)}<div class='plots'>{''.join(plots)}</div>{body}"
        "</body></html>"
    )


def _coverage_html(result: JSON) -> str:
    coverage = coverage_line(result)
    return f"<p id='coverage'><b>Coverage: {escape(coverage)}</b></p>" if coverage else ""


def _provenance(result: JSON) -> str:
    if result.get("untraced"):
        return (
            f"Scored from the run's results.jsonl ({result['episodes']} episodes; a --no-trace "
            f"run: no trace links, LLM latency unknown) at {result['evaluated_at']}."
        )
    return (
        f"Scored from {result['spans']} spans ({result['episodes']} episodes) "
        f"at {result['evaluated_at']}; superseded attempts: {len(result['superseded'])}, "
        f"unmatched episodes: {len(result['unmatched'])}."
    )


def write_reports(
    result: JSON,
    folder: Path,
    jaeger_ui: str | None = None,
    recorded: Sequence[JSON] = (),
    run_config: str | None = None,
) -> list[Path]:
    """report.md and report.html; ``recorded``: the run's results rows, for the drill-down
    into its failed tasks; ``run_config``: the run's whole config in one line
    (:func:`sopgym.orchestration.runs.describe_config`), stated in the header."""
    paths = [folder / "report.md", folder / "report.html"]
    write_atomic(paths[0], markdown(result, jaeger_ui, recorded, run_config).encode())
    write_atomic(paths[1], html(result, jaeger_ui, recorded, run_config).encode())
    return paths



# ---- the failed tasks, one by one ----
DRILLDOWN_TITLE = "Failed tasks: wrong fields and calls"
ARGUMENTS_SHOWN = 300  # characters of a call's arguments in the drill-down


def _failures(recorded: Sequence[JSON]) -> list[JSON]:
    return [r for r in recorded if not r["score"]["success"]]


def _wrong(row: JSON) -> list[tuple[str, str, str]]:
    """(field, expected, given) of every wrong or missing output field, as JSON text."""
    given, expected = row.get("outputs") or {}, row.get("gold_outputs") or {}
    return [
        (name, _short(expected.get(name)), _short(given[name]) if name in given else "(missing)")
        for name, ok in row["score"].get("fields", {}).items()
        if not ok
    ]


def _short(value: object) -> str:
    text = dumps(value).decode()
    return text if len(text) <= ARGUMENTS_SHOWN else text[:ARGUMENTS_SHOWN] + "…"


def _call_lines(row: JSON) -> list[str]:
    lines = []
    for call in (row.get("trajectory") or {}).get("calls", []):
        refused = call.get("error_code")
        verdict = f" → {refused}" + (f" ({call['error_field']})" if call.get("error_field") else "")
        lines.append(f"{call['name']}({_short(call.get('arguments'))}){verdict if refused else ''}")
    return lines


def _heading(row: JSON) -> str:
    return f"{row['task_id']} ({row['domain']}, trial {row.get('trial') or 0}): {because_line(row)}"


def _call_gaps(row: JSON) -> list[str]:
    """The gold calls not made and the calls beyond the gold, one line each."""
    found = call_differences(row) or ([], [])
    return [f"gold call not made: {call_text(c)}" for c in found[0]] + [
        f"call beyond the gold: {call_text(c)}" for c in found[1]
    ]


def drilldown_markdown(recorded: Sequence[JSON]) -> str:
    failed = _failures(recorded)
    if not recorded:
        return ""
    lines = [f"## {DRILLDOWN_TITLE}", ""]
    if not failed:
        return "\n".join([*lines, "none", ""])
    for row in failed:
        lines += [f"### {markdown_text(_heading(row))}", ""]
        lines += [
            f"- wrong {markdown_code(f)}: expected {markdown_code(e)}, given {markdown_code(g)}"
            for f, e, g in _wrong(row)
        ]
        lines += [f"- {markdown_text(gap)}" for gap in _call_gaps(row)]
        lines += [
            f"{i}. {markdown_code(line)}" for i, line in enumerate(_call_lines(row), 1)
        ] or ["no call"]
        lines.append("")
    return "\n".join(lines)


def drilldown_html(recorded: Sequence[JSON]) -> str:
    failed = _failures(recorded)
    if not recorded:
        return ""
    if not failed:
        return f"<h2>{escape(DRILLDOWN_TITLE)}</h2><p>none</p>"
    items = []
    for row in failed:
        fields = "".join(
            f"<tr><td>{escape(f)}</td><td>{escape(e)}</td><td>{escape(g)}</td></tr>"
            for f, e, g in _wrong(row)
        )
        table = (
            f"<table><tr><th>field</th><th>expected</th><th>given</th></tr>{fields}</table>"
            if fields
            else ""
        )
        calls = "".join(f"<li><code>{escape(line)}</code></li>" for line in _call_lines(row))
        gaps = "".join(f"<li>{escape(gap)}</li>" for gap in _call_gaps(row))
        table += f"<ul class='gaps'>{gaps}</ul>" if gaps else ""
        items.append(
            f"<details><summary>{escape(_heading(row))}</summary>{table}"
            f"<ol>{calls or '<li>no call</li>'}</ol></details>"
        )
    return f"<h2>{escape(DRILLDOWN_TITLE)}</h2>{''.join(items)}"


TERMINAL_COLUMNS = ["tasks", "completed", "ECR", "C-TSR", "TSR", "tool F1", "calls",
                    "wrong tool", "param fail", "order viol."]  # fmt: skip


def _print_table(table: Table, columns: list[str], console: Console) -> None:
    """``table`` in the terminal with its first column and the ``columns`` named."""
    keep = [i for i, h in enumerate(table.headers) if h in columns or i == 0]
    rows = [[_text(row[i]) for i in keep] for row in table.rows]
    numeric = [n for n in range(1, len(keep)) if all(_FIGURE.match(r[n]) for r in rows)]
    print_table(console, [table.headers[i] for i in keep], rows, numeric=numeric,
                title=table.title)  # fmt: skip


_FIGURE = re.compile(r"^([-+]?[\d.,]+%?|n/a|-)$")  # a cell that is a number (never folded)


def print_two_stage(found: JSON, console: Console) -> None:
    """TELLER's two-stage table in the terminal (its headline columns)."""
    _print_table(two_stage_table(found), TWO_STAGE_TERMINAL, console)


def print_summary(result: JSON, console: Console) -> None:
    """The headline tables (fewer columns) in the terminal; incomplete episodes (first 20)."""
    for table in tables(result)[:3]:
        _print_table(table, TERMINAL_COLUMNS, console)
    console.print(f"errors: {_errors(result['errors'])}")
    console.print(interval_text(tsr_intervals(result["per_task"])["overall"]), markup=False)
    coverage = coverage_line(result)
    if coverage:
        console.print(f"[bold yellow]coverage[/]: {coverage}", soft_wrap=True)
    found = result.get("breakdown")
    if found:
        shapes = ", ".join(f"{k} {num(m['mean'])}" for k, m in found["shape"].items())
        console.print(f"SOP-Maze score: {num(found['sop_maze_score'])} ({shapes})")
    from sopgym.evaluation.paper_tables import paper_lines  # it imports this module

    for line in paper_lines(result.get("paper")):
        console.print(line, markup=False)
    if result.get("two_stage"):
        print_two_stage(result["two_stage"], console)
    from sopgym.evaluation.profiles.tables import paper_lines as profile_lines

    for line in profile_lines(result):
        console.print(line, markup=False)
    incomplete: Iterable[JSON] = result["incomplete"]
    for item in list(incomplete)[:20]:
        line = f"incomplete: {item['task_id']} ({item['domain']}): {item.get('reason')}"
        console.print(line, markup=False)  # a reason is free text: brackets are not markup
    if len(result["incomplete"]) > 20:
        console.print(f"... and {len(result['incomplete']) - 20} more incomplete")
