"""``sopgym show``'s answers to "why did it fail", from :mod:`sopgym.evaluation.explain`:
the failing gating scorers with their reasons, the gold calls not made and the calls beyond
the gold, the final state expected beside actual, and the TOD actions aligned."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from sopgym.evaluation.explain import (
    NOT_RECORDED,
    aligned_actions,
    call_differences,
    call_text,
    failed_because,
    short,
    state_differences,
)
from sopgym.types import JSON


def print_why(out: Any, row: JSON, cut: int | None) -> None:
    """Everything that says why ``row`` failed (nothing for a success)."""
    reasons = failed_because(row)
    if reasons:
        out.print("[bold red]failed because[/]")
        for reason in reasons:
            out.print(f"  [bold]{escape(reason.scorer)}[/]: {escape(reason.text)}", soft_wrap=True)
    limit = cut or 0
    found = call_differences(row)
    if found and (found[0] or found[1]):
        missing, extra = found
        out.print("[bold]calls against the gold[/]")
        for call in missing:
            out.print(f"  [red]not made[/]: {escape(call_text(call, limit))}", soft_wrap=True)
        for call in extra:
            out.print(f"  [yellow]beyond the gold[/]: {escape(call_text(call, limit))}",
                      soft_wrap=True)  # fmt: skip
    states = state_differences(row)
    if states:
        table = Table("path", "expected (gold)", "actual", title="final state where it differs",
                      title_justify="left")  # fmt: skip
        for path, expected, actual in states:
            shown = NOT_RECORDED if expected == NOT_RECORDED else short(expected, limit)
            table.add_row(escape(path), escape(shown), escape(short(actual, limit)))
        out.print(table)
    aligned = aligned_actions(row)
    if aligned:
        table = Table("#", "", "procedure (gold)", "agent", title="actions aligned",
                      title_justify="left")  # fmt: skip
        for number, (kind, gold, made) in enumerate(aligned, 1):
            mark = kind if kind == "same" else f"[red]{kind}[/]"
            table.add_row(str(number), mark, escape(call_text(gold, limit) if gold else ""),
                          escape(call_text(made, limit) if made else ""))  # fmt: skip
        out.print(table)
