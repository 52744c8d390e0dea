"""A run page's family figures, where a run has them: pass^k / pass@k and the per-trial
spread (``--trials``), TSR with and without injected faults (``--faults``), and TELLER's
two-stage table (banking). Built from the run's summary and rows with the report's own
functions, so the viewer and the report show the same numbers."""

from __future__ import annotations

from sopgym.evaluation.report import Table, html_table, pct, two_stage_table
from sopgym.evaluation.two_stage import two_stage
from sopgym.types import JSON


def trials_table(trials: JSON) -> Table | None:
    """pass^k for every k, pass@k at the largest, the per-trial TSR spread; per domain."""
    if trials.get("trials", 1) < 2:
        return None
    ks = list(trials["pass_hat_k"])
    rows = [
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


def robustness_table(summary: JSON) -> Table | None:
    robust = summary.get("robustness") or {}
    if not robust.get("faults_injected"):
        return None
    return Table(
        "Fault robustness (TSR of the episodes that met an injected fault, and of the others)",
        ["faults injected", "episodes with faults", "TSR with faults", "TSR without faults"],
        [[str(robust["faults_injected"]), str(robust["episodes_with_faults"]),
          pct(robust["tsr_with_faults"]), pct(robust["tsr_without_faults"])]],
    )  # fmt: skip


def family_tables(summary: JSON, rows: list[JSON]) -> list[Table]:
    found = [trials_table(summary.get("trials") or {}), robustness_table(summary)]
    banking = [r for r in rows if str(r.get("domain", "")).startswith("banking/")]
    teller = two_stage([{**r, "agent_model": f"{r.get('agent')}/{r.get('model') or '?'}"}
                        for r in banking])  # fmt: skip
    if teller:
        found.append(two_stage_table(teller))
    return [t for t in found if t is not None]


def family_figures(summary: JSON, rows: list[JSON]) -> str:
    """The family tables as HTML (``#family``), or nothing."""
    tables = family_tables(summary, rows)
    if not tables:
        return ""
    return f"<div id='family'>{''.join(html_table(t) for t in tables)}</div>"
