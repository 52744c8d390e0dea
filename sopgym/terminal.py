"""The command line's two consoles, set up once for every command.

Emoji codes are off: user text such as a model spec ``openai:x:`` or a path must print as
typed, not as a picture. Off a terminal (piped to a file, a CI log) rich would cut every table
to 80 columns; there the consoles are wider (``COLUMNS`` when it is set), and a table is still
only as wide as its content. Tables go through :func:`print_table`, which never cuts a number
or a state: a table too wide for the console is folded into several.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from sopgym.core.untrusted import printable, printable_lines

PIPED_WIDTH = 160


class SafeConsole(Console):
    """A console that shows control characters as escapes (``\x1b``) in every string it is
    given, table cells included: a task id, file name or answer holding an escape sequence
    cannot colour, move or hide what the terminal shows (a fake green "TSR 100.0%" line).
    Newlines and tabs stay, as our messages use them: a value that must stay on its line goes
    through :func:`~sopgym.core.untrusted.printable` first."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable_lines(text), **options)


def echo(message: str, err: bool = False) -> None:
    """``click.echo`` for the commands that print plain lines: the same escaping."""
    click.echo(printable_lines(message), err=err)


def _console(stderr: bool) -> Console:
    console = SafeConsole(stderr=stderr, emoji=False)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")  # a width asked for: kept off a terminal too
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return SafeConsole(stderr=stderr, emoji=False, width=width)


console = _console(stderr=True)
"""Progress, messages, errors and headline tables: stderr, so that stdout carries only data."""


def stdout() -> Console:
    """Tables that are the command's result (``sopgym list``, the run summary): stdout."""
    return _console(stderr=False)


# what a rich table with its default box spends outside its cells: one border and two
# padding spaces per column, one border at the end
_COLUMN_FRAME, _TABLE_FRAME = 3, 1
FOLDED_WIDTH = 12  # the least width of a foldable column


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def print_table(
    target: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Collection[int] = (),
    foldable: Collection[int] = (),
    title: str | None = None,
    keys: int = 1,
) -> None:
    """A table that never cuts a cell: a number (a ``numeric`` column) or a word (a state, a
    name) is never shortened with ``…``; text wraps at its spaces, headers too, and in the
    ``foldable`` columns (lists of names, free text) a word longer than the column goes on
    over the next line. When the columns do not fit the console's width even so, the table
    is folded: printed as several tables, each repeating the first ``keys`` columns, with as
    many of the others as fit."""
    cells = [[str(row[index]) for row in rows] for index in range(len(headers))]
    natural = [
        max([cell_len(headers[i]), *(cell_len(c) for c in cells[i])]) for i in range(len(headers))
    ]
    needed = [
        natural[i]
        if i in numeric
        else max([1, _longest_word(headers[i]), *(_longest_word(c) for c in cells[i])])
        for i in range(len(headers))
    ]
    needed = [min(w, FOLDED_WIDTH) if i in foldable else w for i, w in enumerate(needed)]
    framed = [width + _COLUMN_FRAME for width in needed]
    room = target.width - _TABLE_FRAME - sum(framed[:keys])
    groups: list[list[int]] = []
    for index in range(keys, len(headers)):
        if groups and sum(framed[i] for i in groups[-1]) + framed[index] <= room:
            groups[-1].append(index)
        else:
            groups.append([index])
    for number, group in enumerate(groups or [[]]):
        shown = [*range(keys), *group]
        space = target.width - _TABLE_FRAME - _COLUMN_FRAME * len(shown)
        widths = _spread([needed[i] for i in shown], [natural[i] for i in shown], space)
        table = Table(
            *(
                Column(
                    headers[i],
                    justify="right" if i in numeric else "left",
                    width=width,
                    overflow="fold",
                )
                for i, width in zip(shown, widths, strict=True)
            ),
            title=title if number == 0 else f"{title or ''} (continued)".lstrip(),
        )
        for row in rows:
            table.add_row(*(Text(str(row[i])) for i in shown))  # as written: no markup
        target.print(table)


def _spread(needed: list[int], natural: list[int], space: int) -> list[int]:
    """Column widths from each one's least (its longest word) towards its natural width,
    the ``space`` left shared evenly, the columns that want least served first."""
    widths = list(needed)
    extra = space - sum(widths)
    wanting = sorted(range(len(widths)), key=lambda i: natural[i] - needed[i])
    for done, index in enumerate(wanting):
        give = max(0, min(natural[index] - widths[index], extra // (len(wanting) - done)))
        widths[index] += give
        extra -= give
    return widths


def print_summary(summary: dict) -> None:
    """A run summary's per-domain table (stdout): the result of ``run`` and ``merge``."""
    figures = ("tasks", "infra err", "completed", "ECR", "C-TSR", "TSR", "tool F1")
    rows = []
    for name, s in [*summary["domains"].items(), ("all", summary)]:
        errors = ", ".join(f"{k}={v}" for k, v in s["errors"].items()) or "-"
        name = printable(name)  # a domain's name may come from an imported file's
        # every episode an infrastructure error: no rate has a denominator, none is 0%
        played = s.get("scored", s["tasks"] - s.get("infra_errors", 0)) > 0
        rows.append([
            name,
            str(s["tasks"]),
            str(s.get("infra_errors", 0)),
            str(s["completed"]),
            f"{s['ecr']:.1%}" if played else "n/a",
            f"{s['c_tsr']:.1%}" if played else "n/a",
            f"{s['tsr']:.1%}" if played else "n/a",
            "n/a" if s["tool_f1"] is None or not played else f"{s['tool_f1']:.3f}",
            errors,
        ])  # fmt: skip
    headers = ["domain", *figures, "errors"]
    numbers = range(1, len(figures) + 1)
    print_table(stdout(), headers, rows, numeric=numbers, foldable=(len(headers) - 1,))
    _print_intervals(summary)
    _print_coverage(summary)
    _print_llm(summary)
    _print_infra(summary)
    trials = summary.get("trials") or {}
    if trials.get("trials", 1) > 1:
        _print_trials(trials)


def _print_intervals(summary: dict) -> None:
    """TSR's confidence interval and noise floor, overall (a summary from before they were
    recorded has none)."""
    from sopgym.evaluation.stats import interval_text

    intervals = summary.get("tsr_intervals")
    if intervals:
        stdout().print(interval_text(intervals["overall"]), markup=False)


def _print_coverage(summary: dict) -> None:
    """Under the table, when the infrastructure failed episodes: what the headline TSR
    covers, and TSR over every planned episode."""
    from sopgym.evaluation.explain import coverage_line

    coverage = coverage_line(summary)
    if coverage:
        stdout().print(f"[bold yellow]coverage[/]: {coverage}")


def _print_llm(summary: dict) -> None:
    """The model's share of the run, per domain: calls, tokens, latency, throughput, cost."""
    llm = summary.get("llm") or {}
    if not llm.get("all", {}).get("calls"):
        return
    # "gen tok/s": the server's own generation speed (its timings); "out tok/s of latency":
    # output tokens over whole call latency, prompt processing included
    figures = ("LLM calls", "errors", "tokens in", "tokens out", "p50 s", "p95 s", "gen tok/s",
               "out tok/s of latency", "cost $")  # fmt: skip
    rows = [
        [
            name,
            str(f["calls"]),
            str(f["errors"]),
            str(f["input_tokens"]),
            str(f["output_tokens"]),
            _number(f["latency_p50_s"]),
            _number(f["latency_p95_s"]),
            _number(f.get("generation_tokens_per_s")),
            _number(f.get("output_tokens_per_s_of_latency", f.get("output_tokens_per_s"))),
            "n/a" if f["cost_usd"] is None else f"{f['cost_usd']:.4f}",
        ]
        for name, f in [*llm["domains"].items(), ("all", llm["all"])]
    ]
    print_table(stdout(), ["domain", *figures], rows, numeric=range(1, len(figures) + 1))
    flagged = summary.get("answered_without_tools")
    if flagged:
        console.print(f"answered without tools (flagged): {flagged} episode(s)")


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _print_infra(summary: dict) -> None:
    """Loudly, apart from the agent's figures: the episodes the infrastructure failed (left
    out of every metric above) and, under fault injection, TSR with and without faults."""
    failed = summary.get("infra_failed") or []
    if failed:
        console.print(
            f"[bold red]INFRASTRUCTURE ERRORS: {len(failed)} episode(s) not scored[/] "
            "(left out of ECR/TSR; rerun them with --resume RUN --retry-infra)"
        )
        for item in failed[:10]:
            console.print(f"  {printable(item['task_id'])} (trial {item.get('trial', 0)}): "
                          f"{printable(item['cause'])}", markup=False, soft_wrap=True)  # fmt: skip
        if len(failed) > 10:
            console.print(f"  ... and {len(failed) - 10} more in summary.json (infra_failed)")
    if summary.get("trace_loss"):
        console.print(
            f"[bold yellow]trace loss[/]: the trace receiver did not confirm the spans of "
            f"{summary['trace_loss']} episode(s) (their results are whole; traces may lack them)"
        )
    robust = summary.get("robustness") or {}
    if robust.get("faults_injected"):
        console.print(fault_split_line(robust), markup=False)


FAULT_SPLIT_CAVEAT = (
    "a split, not the faults' cost: longer episodes meet more faults; for the cost, run the "
    "same seed without --faults and `sopgym compare` the two runs"
)


def fault_split_line(robust: dict) -> str:
    """The robustness figures in one line, saying what the split is not: the episodes that
    met a fault are not a random half (long episodes meet more), so the gap between the two
    TSRs is no measure of what the faults cost."""
    with_, without = robust["tsr_with_faults"], robust["tsr_without_faults"]
    return (
        f"faults injected: {robust['faults_injected']} in "
        f"{robust['episodes_with_faults']} episode(s); TSR "
        f"{'n/a' if with_ is None else f'{with_:.1%}'} over the episodes that met a fault, "
        f"{'n/a' if without is None else f'{without:.1%}'} over those that met none "
        f"({FAULT_SPLIT_CAVEAT})"
    )


def _print_trials(trials: dict) -> None:
    """pass^k per domain for every k, pass@k at the largest, and the per-trial TSR spread."""
    ks = list(trials["pass_hat_k"])
    headers = ["domain", *(f"pass^{k}" for k in ks), f"pass@{ks[-1]}",
               "trial TSR min / max / stdev"]  # fmt: skip
    rows = [
        [
            name,
            *(f"{t['pass_hat_k'][k]:.1%}" for k in ks),
            f"{t['pass_at_k'][ks[-1]]:.1%}",
            f"{t['tsr_min']:.1%} / {t['tsr_max']:.1%} / {t['tsr_stdev']:.3f}",
        ]
        for name, t in [*trials["domains"].items(), ("all", trials)]
    ]
    print_table(stdout(), headers, rows, numeric=range(1, len(ks) + 2))
