"""A run page's family figures, where a run has them: pass^k / pass@k and the per-trial
spread (``--trials``), TSR with and without injected faults (``--faults``), and TELLER's
two-stage table (banking). Built from the run's summary and rows with the report's own
functions, so the viewer and the report show the same numbers."""

from __future__ import annotations

from sopgym.evaluation.report import (
    Table,
    html_table,
    robustness_table,
    trials_table,
    two_stage_table,
)
from sopgym.evaluation.run_figures import teller_view
from sopgym.types import JSON


def family_tables(summary: JSON, rows: list[JSON]) -> list[Table]:
    found = [trials_table(summary.get("trials") or {}), robustness_table(summary)]
    teller = teller_view(rows)
    if teller:
        found.append(two_stage_table(teller))
    return [t for t in found if t is not None]


def family_figures(summary: JSON, rows: list[JSON]) -> str:
    """The family tables as HTML (``#family``), or nothing."""
    tables = family_tables(summary, rows)
    if not tables:
        return ""
    return f"<div id='family'>{''.join(html_table(t) for t in tables)}</div>"
