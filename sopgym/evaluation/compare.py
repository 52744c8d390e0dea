"""``sopgym compare``: what changed between two evaluations (B minus A), overall, per domain,
and task by task (which tasks were fixed, which broke), over the episodes both scored."""

from __future__ import annotations

from rich.console import Console

from sopgym.core.ordering import natural_key
from sopgym.core.untrusted import markdown_text
from sopgym.evaluation.evaluator import metrics
from sopgym.evaluation.report import num, pct
from sopgym.evaluation.stats import (
    COMPARISON_HEADERS,
    COMPARISON_TITLE,
    comparison_markdown,
    comparison_rows,
    paired_comparison,
)
from sopgym.terminal import print_table
from sopgym.types import JSON

# (key, label, is a rate) of the metrics compared; latency is looked up as latency_s.p50.
METRICS = [
    ("ecr", "ECR", True),
    ("c_tsr", "C-TSR", True),
    ("tsr", "TSR", True),
    ("tool_precision", "tool precision", False),
    ("tool_recall", "tool recall", False),
    ("tool_f1", "tool F1", False),
    ("wrong_tool_rate", "wrong-tool rate", True),
    ("param_failure_rate", "parameter-failure rate", True),
    ("wrong_value_rate", "wrong-value rate", True),
    ("blank_rate", "blank rate", True),
    ("order_violations", "order violations", False),
    ("incomplete_traces", "incomplete traces", False),
    ("latency_p50", "latency p50 (s)", False),
    ("llm_calls_per_task", "LLM calls / task", False),
    ("tokens_per_task", "tokens / task", False),
]


def _value(figures: JSON | None, key: str) -> float | None:
    if figures is None:
        return None
    if key == "latency_p50":
        return figures["latency_s"]["p50"]
    return figures.get(key)


def deltas(a: JSON | None, b: JSON | None) -> JSON:
    out = {}
    for key, _, _ in METRICS:
        va, vb = _value(a, key), _value(b, key)
        out[key] = {
            "a": va,
            "b": vb,
            "delta": vb - va if va is not None and vb is not None else None,
        }
    return out


def compare(a: JSON, b: JSON) -> JSON:
    """Deltas of two evaluation results over the episodes both scored (per trial where a run
    made several: ``domain/task#trial``), overall and per domain, plus per-task success
    flips; the episodes only one run has are listed, and ``warning`` says so (None when
    both scored the same episodes)."""
    rows_a = {_key(r): r for r in a["per_task"]}
    rows_b = {_key(r): r for r in b["per_task"]}
    common = sorted(set(rows_a) & set(rows_b))
    only_a, only_b = sorted(set(rows_a) - set(rows_b)), sorted(set(rows_b) - set(rows_a))
    shared_a, shared_b = [rows_a[k] for k in common], [rows_b[k] for k in common]
    domains = sorted({row["domain"] for row in shared_a}, key=natural_key)

    def of(rows: list[JSON], domain: str) -> list[JSON]:
        return [row for row in rows if row["domain"] == domain]

    def success(row: JSON) -> bool:
        return bool(row["score"]["success"])

    return {
        "a": a["source"],
        "b": b["source"],
        "agents": {"a": sorted(a.get("agents") or {}), "b": sorted(b.get("agents") or {})},
        # each run's figures over all its own episodes: what there is to say when they
        # share none (then every delta above is over nothing)
        "own": {"a": own_figures(a), "b": own_figures(b)},
        "shared": len(common),
        "warning": _different_tasks(len(common), len(only_a), len(only_b)),
        "overall": deltas(metrics(shared_a), metrics(shared_b)),
        "domains": {d: deltas(metrics(of(shared_a, d)), metrics(of(shared_b, d))) for d in domains},
        "fixed": [k for k in common if success(rows_b[k]) and not success(rows_a[k])],
        "broken": [k for k in common if success(rows_a[k]) and not success(rows_b[k])],
        "only_a": only_a,
        "only_b": only_b,
        "significance": paired_comparison(shared_a, shared_b),
    }


def own_figures(result: JSON) -> JSON:
    """A run's own headline figures (over every episode it scored)."""
    return {key: _value(result, key) for key, _, _ in METRICS} | {"episodes": len(
        result["per_task"])}  # fmt: skip


def _different_tasks(shared: int, only_a: int, only_b: int) -> str | None:
    if not only_a and not only_b:
        return None
    if not shared:
        return (
            f"the runs share no tasks ({only_a} episodes only in A, {only_b} only in B): "
            "nothing to compare; each run's own figures are shown instead"
        )
    return (
        f"the runs scored different tasks: {shared} episodes in both, {only_a} only in A, "
        f"{only_b} only in B; every delta is over the {shared} shared episodes only"
    )


def _key(row: JSON) -> str:
    trial = row.get("trial") or 0
    return f"{row['domain']}/{row['task_id']}" + (f"#{trial}" if trial else "")


# the digits a figure that is not a rate is shown with (3 otherwise): tokens are whole
DIGITS = {"tokens_per_task": 0, "llm_calls_per_task": 1}
DELTA_HEADERS = ["metric", "A", "B", "B - A"]
FLIPS = (("fixed", "fixed in B"), ("broken", "broken in B"), ("only_a", "only in A"),
         ("only_b", "only in B"))  # fmt: skip


def _fmt(value: float | None, rate: bool, signed: bool = False, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    text = pct(value) if rate else num(value, digits)
    return f"+{text}" if signed and value > 0 else text


def delta_sections(result: JSON) -> list[tuple[str, list[list[str]]]]:
    """(title, rows of :data:`DELTA_HEADERS`) overall and per domain: what every renderer
    of a comparison shows."""
    sections = []
    for title, figures in [("overall", result["overall"]), *result["domains"].items()]:
        rows = []
        for key, label, rate in METRICS:
            m, digits = figures[key], DIGITS.get(key, 3)
            rows.append([label, _fmt(m["a"], rate, digits=digits),
                         _fmt(m["b"], rate, digits=digits),
                         _fmt(m["delta"], rate, signed=True, digits=digits)])  # fmt: skip
        sections.append((title, rows))
    return sections


def own_rows(own: JSON) -> tuple[list[str], list[list[str]]]:
    """Each run's own figures side by side (no delta: they share no episode)."""
    a, b = own["a"], own["b"]
    headers = ["metric", f"A ({a['episodes']} episodes)", f"B ({b['episodes']} episodes)"]
    rows = [
        [label, _fmt(a[key], rate, digits=DIGITS.get(key, 3)),
         _fmt(b[key], rate, digits=DIGITS.get(key, 3))]
        for key, label, rate in METRICS
    ]  # fmt: skip
    return headers, rows


def _flip_line(result: JSON, key: str) -> tuple[str, str]:
    items = result[key]
    text = ", ".join(items[:50]) or "-"
    return f"{len(items)}", text + (f", ... (+{len(items) - 50})" if len(items) > 50 else "")


def to_markdown(result: JSON, name_a: str, name_b: str, warned: bool = False) -> str:
    """The comparison as Markdown (``warned``: the warning was said already, elsewhere)."""
    agents = result.get("agents") or {}
    # run names, agent/model names, domains and task ids are the runs' text: shown as text
    lines = [f"# compare: A = {markdown_text(name_a)}, B = {markdown_text(name_b)}", ""]
    if agents:
        a, b = (", ".join(map(markdown_text, agents[side])) or "?" for side in ("a", "b"))
        lines += [f"A: {a}; B: {b}", ""]
    if result["warning"]:
        lines += [] if warned else [f"> **Warning**: {result['warning']}.", ""]
    else:
        lines += [f"Both runs scored the same {result['shared']} episodes.", ""]
    if result.get("significance"):
        lines += [*comparison_markdown(result["significance"]), ""]
    if not result["shared"] and result.get("own"):
        headers, rows = own_rows(result["own"])
        lines += ["## each run's own figures", "", *_markdown(headers, rows)]
        return "\n".join(lines) + "\n"
    for title, rows in delta_sections(result):
        lines += [f"## {markdown_text(title)}", "", *_markdown(DELTA_HEADERS, rows), ""]
    for key, label in FLIPS:  # task ids are the runs' text: shown as text
        items = [markdown_text(item) for item in result[key]]
        count, text = _flip_line({key: items}, key)
        lines.append(f"**{label}** ({count}): {text}")
    return "\n".join(lines) + "\n"


def _markdown(headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(row) + " |" for row in rows)]  # fmt: skip


def print_comparison(result: JSON, name_a: str, name_b: str, target: Console) -> None:
    """The comparison in the terminal, as tables that never cut a number (the warning is
    the caller's to print, once): the paired verdict first, then the deltas overall and per
    domain, then the tasks that flipped."""
    agents = result.get("agents") or {}
    target.print(f"compare: A = {name_a}, B = {name_b}", markup=False)
    if agents:
        target.print(f"A: {', '.join(agents['a']) or '?'}; B: {', '.join(agents['b']) or '?'}",
                     markup=False)  # fmt: skip
    if not result["warning"]:
        target.print(f"Both runs scored the same {result['shared']} episodes.")
    significance = result.get("significance")
    if significance:
        target.print(significance["sentence"] + ".", markup=False)
        rows = comparison_rows(significance)
        print_table(target, COMPARISON_HEADERS, rows, numeric=range(1, 7),
                    title=COMPARISON_TITLE)  # fmt: skip
    if not result["shared"] and result.get("own"):
        headers, rows = own_rows(result["own"])
        print_table(target, headers, rows, numeric=(1, 2), title="each run's own figures")
        return
    for title, rows in delta_sections(result):
        print_table(target, DELTA_HEADERS, rows, numeric=(1, 2, 3), title=title)
    for key, label in FLIPS:
        count, text = _flip_line(result, key)
        target.print(f"{label} ({count}): {text}", markup=False)
