"""A run's summary in the terminal (``sopgym run``, ``score``, ``merge``, ``merge-leases``):
the figures per domain, TSR's interval, what the headline covers, the model's share, the
infrastructure's failures, the robustness split and the trials."""

from __future__ import annotations

from sopgym.core.untrusted import printable
from sopgym.terminal import FAULT_SPLIT_CAVEAT, console, print_table, stdout


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
