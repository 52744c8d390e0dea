"""The project's statistics, in one place: percentiles, confidence intervals of TSR, paired
tests between two runs, and the noise floor every summary states.

Percentiles
    :func:`quantile` is the one definition every figure uses: the value at index
    ``round(q * (n - 1))`` of the sorted values, ties to even (numpy's ``method="nearest"``).

TSR intervals (:func:`tsr_interval`)
    TSR is a proportion of episodes. Episodes of one task are not independent (a task an agent
    fails it tends to fail in every trial), so with several trials the standard error is
    clustered by task (the cluster-robust "sandwich" estimate, with the G/(G-1) small-sample
    factor). The interval is Wilson's score interval at the *effective* sample size
    n / design effect, where the design effect is the clustered variance over the
    independent one (at least 1). Wilson's interval keeps its coverage near 0% and 100%, where
    a run's TSR often sits; when TSR is exactly 0 or 1 the design effect cannot be estimated
    and the number of tasks is used as the effective size (every trial of a task counted as
    one, the cautious choice).

Noise floor (``noise_floor``)
    The smallest TSR difference a comparison of this size would detect with 80% power at a
    two-sided 5% level: ``(z(0.975) + z(0.80)) * SE`` of the difference. A run's summary
    states it against an independent run of the same size (SE of the difference =
    sqrt(2) x the run's SE, at the run's TSR shrunk towards 50% by two successes and two
    failures so that a run at 0% or 100% still states a floor); a comparison states its own
    (see below).

Paired comparison (:func:`paired_comparison`)
    Over the episodes both runs scored (task and trial; an episode the infrastructure failed
    in either run is left out of the pair and counted), each task contributes
    ``s = successes in B - successes in A``. The p-value is the exact sign-flip (permutation)
    test of "B and A are exchangeable within each task": under it every task's ``s`` is as
    likely positive as negative, and the distribution of the sum over all sign patterns is
    computed exactly by convolution (with one trial per task it is McNemar's exact test). The
    difference B - A is reported with a clustered normal interval. The exact test decides the
    sentence; the interval can, at the margin, disagree with it (a few discordant tasks all
    one way): the sentence then still follows the exact test, which holds its level at any
    size. The comparison's noise floor uses the null variance of the sum, sum(s^2), taken as at
    least one discordant pair so that two identical runs still state one.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import NormalDist
from typing import Any

from sopgym.types import JSON

CONFIDENCE = 0.95
POWER = 0.80
ALPHA = 1 - CONFIDENCE
_NORMAL = NormalDist()
Z = _NORMAL.inv_cdf(1 - ALPHA / 2)
Z_POWER = _NORMAL.inv_cdf(POWER)
DETECTABLE = Z + Z_POWER  # standard errors between 0 and the smallest detectable difference


# ---- percentiles ----
def quantile(ordered: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of values sorted already: the value at index
    ``round(q * (n - 1))`` (ties to even, numpy's "nearest"); None for no values."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def percentiles(values: Iterable[float], scale: float = 1.0) -> JSON:
    """n, p50/p95/p99 (:func:`quantile`), mean and max of ``values`` times ``scale``, rounded
    to 3 decimals."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "mean": None, "max": None}

    def at(q: float) -> float:
        return round(float(quantile(ordered, q) or 0.0) * scale, 3)

    return {
        "n": len(ordered),
        "p50": at(0.50),
        "p95": at(0.95),
        "p99": at(0.99),
        "mean": round(sum(ordered) / len(ordered) * scale, 3),
        "max": round(ordered[-1] * scale, 3),
    }


# ---- TSR with its interval ----
Outcome = tuple[str, bool]  # (task key: the cluster, success)


def _clustered_variance(by_task: dict[str, list[bool]], n: int, mean: float) -> float | None:
    """The cluster-robust variance of the mean of the outcomes (None under two clusters)."""
    g = len(by_task)
    if g < 2:
        return None
    spread = sum((sum(v) - len(v) * mean) ** 2 for v in by_task.values())
    return g / (g - 1) * spread / n**2


def tsr_interval(outcomes: Sequence[Outcome]) -> JSON:
    """TSR of ``outcomes`` with its 95% interval (see the module's docstring), its standard
    error, the design effect of clustering by task, and the noise floor against an
    independent run of the same size. Figures are fractions (0..1)."""
    n = len(outcomes)
    by_task: defaultdict[str, list[bool]] = defaultdict(list)
    for task, success in outcomes:
        by_task[task].append(success)
    successes = sum(success for _, success in outcomes)
    if n == 0:
        return {"tsr": None, "episodes": 0, "tasks": 0, "low": None, "high": None, "se": None,
                "design_effect": None, "noise_floor": None}  # fmt: skip
    p = successes / n
    independent = p * (1 - p) / n
    clustered = _clustered_variance(by_task, n, p)
    if independent > 0 and clustered is not None:
        design_effect = max(1.0, clustered / independent)
    else:  # 0% or 100% (or one task): count each task once
        design_effect = n / len(by_task)
    effective = n / design_effect
    low, high = wilson(p, effective)
    shrunk = (p * effective + 2) / (effective + 4)
    floor = DETECTABLE * math.sqrt(2 * shrunk * (1 - shrunk) / effective)
    return {
        "tsr": p,
        "episodes": n,
        "tasks": len(by_task),
        "low": low,
        "high": high,
        "se": math.sqrt(clustered if clustered is not None else independent),
        "design_effect": design_effect,
        "noise_floor": floor,
    }


def wilson(p: float, n: float, z: float = Z) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` observed over ``n`` (effective) trials."""
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _scored(row: JSON) -> bool:
    return row["score"].get("infra_error") is None


def _task(row: JSON) -> str:
    return f"{row['domain']}/{row['task_id']}"


def tsr_intervals(rows: Iterable[JSON]) -> JSON:
    """:func:`tsr_interval` overall and per domain of result rows (``per_task`` rows of an
    evaluation, or a run's results: ``domain``, ``task_id``, ``score``); episodes the
    infrastructure failed are left out, as TSR leaves them out."""
    by_domain: defaultdict[str, list[Outcome]] = defaultdict(list)
    for row in rows:
        if _scored(row):
            by_domain[row["domain"]].append((_task(row), bool(row["score"]["success"])))
    every = [o for outcomes in by_domain.values() for o in outcomes]
    return {
        "confidence": CONFIDENCE,
        "overall": tsr_interval(every),
        "domains": {d: tsr_interval(o) for d, o in sorted(by_domain.items())},
    }


def points(value: float | None) -> str:
    """A fraction as percentage points with one decimal."""
    return "n/a" if value is None else f"{value * 100:.1f}"


def floor_text(floor: float | None) -> str:
    """A noise floor in words; one of 100 points or more means no difference is detectable."""
    if floor is None:
        return "n/a"
    if floor >= 1.0:
        return "over 100 points (too few episodes to detect any difference)"
    return f"{points(floor)} points"


def interval_text(interval: JSON) -> str:
    """One line: TSR, its interval, what it is over, and its noise floor."""
    if interval["tsr"] is None:
        return "TSR n/a (no scored episodes)"
    clustered = interval["episodes"] > interval["tasks"]
    return (
        f"TSR {points(interval['tsr'])}% (95% CI {points(interval['low'])}-"
        f"{points(interval['high'])}%, {counted(interval['episodes'], 'episode')} over "
        f"{counted(interval['tasks'], 'task')}{', clustered by task' if clustered else ''}); "
        "noise floor "
        f"{floor_text(interval['noise_floor'])} (the smallest TSR difference from an "
        f"independent run of this size that would be detected)"
    )


def counted(number: int, noun: str) -> str:
    """``1 episode``, ``2 episodes``: a count with its noun in the right number."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


# ---- two runs, paired ----
Pair = tuple[str, bool, bool]  # (task key, success in A, success in B)


def sign_flip_p(differences: Iterable[int]) -> float:
    """Two-sided exact p-value of the sum of integer per-task differences under the null
    that each is as likely positive as negative (every sign pattern equally likely).

    Tasks of one size ``s`` (``k`` of them) add ``s * (2j - k)`` with probability
    ``C(k, j) / 2^k``; the sizes' distributions are convolved in plain Python (no numpy: the
    agents image, which reaches this module through ``sopgym.cli``, carries none). A size
    rarely exceeds the trial count, so there are few of them and the convolution stays small."""
    differences = list(differences)
    observed = abs(sum(differences))
    tasks_by_size = Counter(abs(d) for d in differences if d)
    if not tasks_by_size:
        return 1.0
    chance_of_sum: dict[int, float] = {0: 1.0}
    for size, count in sorted(tasks_by_size.items()):
        size_sums = {size * (2 * plus - count): chance
                     for plus, chance in enumerate(_half_binomial(count))}  # fmt: skip
        combined: defaultdict[int, float] = defaultdict(float)
        for total, chance in chance_of_sum.items():
            for added, added_chance in size_sums.items():
                combined[total + added] += chance * added_chance
        chance_of_sum = combined
    return float(min(1.0, sum(c for total, c in chance_of_sum.items() if abs(total) >= observed)))


def _half_binomial(count: int) -> list[float]:
    """P(j of ``count`` fair coins land heads) for j = 0..count: C(count, j) / 2^count, each a
    correctly rounded float (exact integers divided once; no underflow on the way)."""
    patterns = 2**count
    ways = 1
    chances = []
    for heads in range(count + 1):
        chances.append(ways / patterns)
        ways = ways * (count - heads) // (heads + 1)
    return chances


def paired_difference(pairs: Sequence[Pair]) -> JSON:
    """B - A in TSR over paired episodes: the difference, its clustered 95% interval, the
    exact sign-flip p-value, whether it is significant at 5%, and the noise floor of this
    comparison (fractions 0..1)."""
    n = len(pairs)
    by_task: defaultdict[str, list[int]] = defaultdict(list)
    for task, a, b in pairs:
        by_task[task].append(int(b) - int(a))
    if n == 0:
        return {"episodes": 0, "tasks": 0, "a": None, "b": None, "difference": None,
                "low": None, "high": None, "p_value": None, "significant": False,
                "noise_floor": None}  # fmt: skip
    sums = [sum(v) for v in by_task.values()]
    total = sum(sums)
    difference = total / n
    g = len(by_task)
    low: float | None = None
    high: float | None = None
    if g >= 2:
        sizes = [len(v) for v in by_task.values()]
        spread = sum((s - k * difference) ** 2 for s, k in zip(sums, sizes, strict=True))
        se = math.sqrt(g / (g - 1) * spread) / n
        low, high = difference - Z * se, difference + Z * se
    p_value = sign_flip_p(sums)
    null_sd = math.sqrt(max(sum(s * s for s in sums), 1)) / n
    return {
        "episodes": n,
        "tasks": g,
        "a": sum(a for _, a, _ in pairs) / n,
        "b": sum(b for _, _, b in pairs) / n,
        "difference": difference,
        "low": low,
        "high": high,
        "p_value": p_value,
        "significant": p_value < ALPHA,
        "noise_floor": DETECTABLE * null_sd,
        "discordant_tasks": sum(1 for s in sums if s),
    }


def paired_comparison(rows_a: Sequence[JSON], rows_b: Sequence[JSON]) -> JSON:
    """:func:`paired_difference` overall and per domain of two runs' rows for the same
    episodes, in the same order (``compare`` pairs them by domain, task and trial); pairs
    with an infrastructure failure on either side are left out and counted; ``sentence``
    says the overall result in words."""
    by_domain: defaultdict[str, list[Pair]] = defaultdict(list)
    left_out = 0
    for a, b in zip(rows_a, rows_b, strict=True):
        if not (_scored(a) and _scored(b)):
            left_out += 1
            continue
        by_domain[a["domain"]].append((_task(a), bool(a["score"]["success"]),
                                       bool(b["score"]["success"])))  # fmt: skip
    overall = paired_difference([p for pairs in by_domain.values() for p in pairs])
    return {
        "confidence": CONFIDENCE,
        "test": "exact sign-flip test over tasks (McNemar's exact test at one trial)",
        "infra_left_out": left_out,
        "overall": overall,
        "domains": {d: paired_difference(p) for d, p in sorted(by_domain.items())},
        "sentence": sentence(overall),
    }


def sentence(result: JSON) -> str:
    """The comparison in one plain sentence."""
    if not result["episodes"]:
        return "no shared scored episodes: nothing to compare"
    difference = result["difference"]
    interval = (
        f"95% CI {points(result['low'])} to {points(result['high'])}"
        if result["low"] is not None
        else "no interval (one task)"
    )
    detail = (
        f"{interval}, p = {result['p_value']:.3g}; TSR A {points(result['a'])}%, "
        f"B {points(result['b'])}% over {result['episodes']} paired episodes of "
        f"{result['tasks']} tasks"
    )
    if result["significant"]:
        better = "better" if difference > 0 else "worse"
        return f"B is {better} than A by {points(abs(difference))} points ({detail})"
    return (
        f"no detectable difference: B - A = {difference * 100:+.1f} points ({detail}); this "
        f"comparison detects differences from about {floor_text(result['noise_floor'])}"
    )


COMPARISON_TITLE = "Is the difference real? (TSR, paired over shared episodes)"
COMPARISON_HEADERS = ["scope", "A", "B", "B - A (points)", "95% CI", "p", "noise floor",
                      "verdict"]  # fmt: skip


def comparison_rows(result: JSON) -> list[list[str]]:
    """The paired comparison's rows, overall then per domain: one table for every renderer."""
    rows = []
    for name, r in [("overall", result["overall"]), *result["domains"].items()]:
        if not r["episodes"]:
            continue
        ci = "n/a" if r["low"] is None else f"{points(r['low'])} to {points(r['high'])}"
        verdict = "no detectable difference"
        if r["significant"]:
            verdict = "B better" if r["difference"] > 0 else "B worse"
        rows.append([name, f"{points(r['a'])}%", f"{points(r['b'])}%",
                     f"{r['difference'] * 100:+.1f}", ci, f"{r['p_value']:.3g}",
                     points(r["noise_floor"]), verdict])  # fmt: skip
    return rows


def comparison_note(result: JSON) -> str:
    """What the paired comparison's test, interval and noise floor are."""
    note = (
        f"Test: {result['test']}; interval: clustered by task (normal); noise floor: the "
        f"smallest difference this comparison detects with 80% power at the 5% level."
    )
    if result["infra_left_out"]:
        note += (
            f" Pairs left out (infrastructure failure in either run): {result['infra_left_out']}."
        )
    return note


def comparison_markdown(result: JSON) -> list[str]:
    """The paired comparison as a Markdown section."""
    lines = [f"## {COMPARISON_TITLE}", "", result["sentence"] + ".", "",
             "| " + " | ".join(COMPARISON_HEADERS) + " |",
             "|" + "---|" * len(COMPARISON_HEADERS)]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in comparison_rows(result)]
    return [*lines, "", comparison_note(result)]


INTERVAL_TITLE = "TSR with its 95% confidence interval and noise floor"
INTERVAL_HEADERS = ["scope", "episodes", "tasks", "TSR", "95% CI", "design effect",
                    "noise floor (points)"]  # fmt: skip


def interval_table(rows: Iterable[JSON]) -> tuple[str, list[str], list[list[Any]]]:
    """The report's table of :func:`tsr_intervals`: (title, headers, rows), overall first."""
    found = tsr_intervals(rows)
    out = []
    for name, i in [("overall", found["overall"]), *found["domains"].items()]:
        if i["tsr"] is None:
            continue
        out.append([
            name, str(i["episodes"]), str(i["tasks"]), f"{points(i['tsr'])}%",
            f"{points(i['low'])}-{points(i['high'])}%", f"{i['design_effect']:.2f}",
            points(i["noise_floor"]),
        ])  # fmt: skip
    return INTERVAL_TITLE, INTERVAL_HEADERS, out
