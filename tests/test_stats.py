"""The statistics module: one percentile definition, TSR intervals clustered by task, the exact
paired test of ``compare``, and the noise floor; checked against closed forms and against
seeded simulations whose truth is known (coverage of the intervals, level of the test)."""

from __future__ import annotations

import random
from math import comb
from typing import Any

import numpy as np
import pytest

from sopgym.evaluation import compare, stats
from tests.test_report import DOMAIN, _solved, untraced_run


def test_quantile_is_numpys_nearest_and_percentiles_use_it() -> None:
    rng = random.Random(7)
    for n in (1, 2, 3, 4, 10, 40, 101):
        values = sorted(rng.random() for _ in range(n))
        for q in (0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0):
            assert stats.quantile(values, q) == np.percentile(values, q * 100, method="nearest")
    assert stats.quantile([], 0.5) is None
    assert stats.percentiles([]) == {
        "n": 0, "p50": None, "p95": None, "p99": None, "mean": None, "max": None
    }  # fmt: skip
    # the list the evaluator and the load test used to disagree on: both read 3.0 now
    assert stats.percentiles([1.0, 2.0, 3.0, 4.0])["p50"] == 3.0
    assert stats.percentiles([0.001, 0.002], scale=1000)["max"] == 2.0


def test_wilson_matches_its_closed_form() -> None:
    low, high = stats.wilson(0.5, 100)
    assert (round(low, 4), round(high, 4)) == (0.4038, 0.5962)
    low, high = stats.wilson(1.0, 10)
    assert high == 1.0 and round(low, 4) == 0.7225


def _outcomes(successes: list[list[bool]]) -> list[tuple[str, bool]]:
    return [(f"t{i}", s) for i, trials in enumerate(successes) for s in trials]


def test_one_trial_per_task_is_plain_wilson() -> None:
    outcomes = _outcomes([[i % 3 != 0] for i in range(30)])  # 20 of 30
    found = stats.tsr_interval(outcomes)
    assert found["tsr"] == pytest.approx(2 / 3) and found["tasks"] == 30
    assert found["design_effect"] == pytest.approx(1.0, abs=0.05)
    low, high = stats.wilson(2 / 3, 30 / found["design_effect"])
    assert (found["low"], found["high"]) == (low, high)


def test_trials_of_one_task_are_clustered() -> None:
    """Three trials that always agree carry the information of one: the interval is as wide
    as one trial per task, not 1/sqrt(3) of it."""
    per_task = [i % 2 == 0 for i in range(20)]
    once = stats.tsr_interval(_outcomes([[s] for s in per_task]))
    thrice = stats.tsr_interval(_outcomes([[s] * 3 for s in per_task]))
    naive = stats.wilson(0.5, 60)
    assert thrice["design_effect"] == pytest.approx(3.0, rel=0.1)
    assert thrice["high"] - thrice["low"] == pytest.approx(once["high"] - once["low"], rel=0.05)
    assert thrice["high"] - thrice["low"] > 1.5 * (naive[1] - naive[0])


def test_a_perfect_run_still_has_an_interval_and_a_noise_floor() -> None:
    found = stats.tsr_interval(_outcomes([[True, True]] * 10))
    assert found["tsr"] == 1.0 and found["high"] == 1.0 and found["low"] < 0.8
    assert found["noise_floor"] > 0
    assert stats.tsr_interval([])["tsr"] is None


def test_intervals_leave_infrastructure_failures_out_like_tsr() -> None:
    rows = [
        {"domain": "d", "task_id": "a", "score": {"success": True, "infra_error": None}},
        {"domain": "d", "task_id": "b", "score": {"success": False, "infra_error": "down"}},
        {"domain": "e", "task_id": "a", "score": {"success": False}},
    ]
    found = stats.tsr_intervals(rows)
    assert found["overall"]["episodes"] == 2 and found["overall"]["tsr"] == 0.5
    assert found["domains"]["d"]["episodes"] == 1 and found["domains"]["e"]["tsr"] == 0.0
    assert "TSR 50.0% (95% CI" in stats.interval_text(found["overall"])
    # two episodes cannot tell any difference: the floor says so instead of a figure > 100
    assert "too few episodes to detect any difference" in stats.interval_text(found["overall"])
    assert stats.floor_text(0.052) == "5.2 points"


def test_sign_flip_is_mcnemars_exact_test_at_one_trial() -> None:
    assert stats.sign_flip_p([1, 1, 1, 1]) == pytest.approx(2 / 16)
    # 9 discordant pairs for B, 1 for A: two-sided binomial(10, 1/2)
    expected = 2 * sum(comb(10, k) for k in (0, 1)) / 2**10
    assert stats.sign_flip_p([1] * 9 + [-1] + [0] * 50) == pytest.approx(expected)
    assert stats.sign_flip_p([0, 0]) == 1.0
    # clustered: a task of 3 trials moves the sum by up to 3 (sizes 3 and 1: sums +-4, +-2)
    assert stats.sign_flip_p([3, 1]) == pytest.approx(0.5)
    assert stats.sign_flip_p([3, -1]) == pytest.approx(1.0)


def _pairs(a: list[bool], b: list[bool], trials: int = 1) -> list[tuple[str, bool, bool]]:
    return [(f"t{i // trials}", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))]


def test_identical_runs_show_no_difference_and_state_a_floor() -> None:
    same = [i % 2 == 0 for i in range(40)]
    found = stats.paired_difference(_pairs(same, same))
    assert found["difference"] == 0 and found["p_value"] == 1.0 and not found["significant"]
    assert found["noise_floor"] > 0
    assert stats.sentence(found).startswith("no detectable difference: B - A = +0.0 points")


def test_a_clear_improvement_is_said_in_words() -> None:
    a = [i % 2 == 0 for i in range(100)]
    b = [x or i % 4 == 1 for i, x in enumerate(a)]  # 25 tasks fixed, none broken
    found = stats.paired_difference(_pairs(a, b))
    assert found["difference"] == pytest.approx(0.25) and found["significant"]
    assert found["low"] > 0 and found["high"] < 0.4
    text = stats.sentence(found)
    assert text.startswith("B is better than A by 25.0 points (95% CI ")
    worse = stats.paired_difference(_pairs(b, a))
    assert stats.sentence(worse).startswith("B is worse than A by 25.0 points")


def _simulate(rng: np.random.Generator, tasks: int, trials: int, shift: float = 0.0) -> Any:
    """One A/B pair over ``tasks`` tasks of varied difficulty, ``trials`` each; B's success
    chance is A's plus ``shift``."""
    chance = rng.beta(2, 1.2, size=tasks)
    a = rng.random((tasks, trials)) < chance[:, None]
    b = rng.random((tasks, trials)) < np.clip(chance + shift, 0, 1)[:, None]
    return [(f"t{t}", bool(a[t, k]), bool(b[t, k])) for t in range(tasks) for k in range(trials)]


@pytest.mark.parametrize("trials", [1, 3])
def test_the_paired_test_holds_its_level_over_seeded_a_a_comparisons(trials: int) -> None:
    rng = np.random.default_rng(2026 + trials)
    flagged = sum(
        stats.paired_difference(_simulate(rng, 60, trials))["significant"] for _ in range(400)
    )
    assert flagged / 400 < 0.05


def test_a_difference_above_the_noise_floor_is_found_as_often_as_the_floor_promises() -> None:
    """The floor is the difference found with 80% power: a true difference above it (B's
    chance 20 points higher, 17 after clipping at 100%) is found at least 80% of the time."""
    rng = np.random.default_rng(11)
    found = [stats.paired_difference(_simulate(rng, 120, 1, shift=0.2)) for _ in range(200)]
    floor = float(np.mean([f["noise_floor"] for f in found]))
    assert float(np.mean([f["difference"] for f in found])) > floor
    assert sum(f["significant"] and f["difference"] > 0 for f in found) >= 160


def test_clustered_intervals_cover_the_truth_where_naive_ones_do_not() -> None:
    """Tasks that are all-or-nothing over 4 trials: the clustered interval still covers the
    true TSR about 95% of the time; Wilson over the raw episode count covers far less."""
    rng = np.random.default_rng(5)
    covered = naive_covered = 0
    runs = 300
    for _ in range(runs):
        solvable = rng.random(40) < 0.6
        outcomes = [(f"t{t}", bool(solvable[t])) for t in range(40) for _ in range(4)]
        found = stats.tsr_interval(outcomes)
        covered += found["low"] <= 0.6 <= found["high"]
        low, high = stats.wilson(found["tsr"], len(outcomes))
        naive_covered += low <= 0.6 <= high
    assert covered / runs >= 0.92 and naive_covered / runs < 0.8


def test_compare_reports_the_paired_test_in_one_block() -> None:
    before = untraced_run()
    after = _solved(before, 1)
    result = compare.compare(before, after)
    significance = result["significance"]
    assert significance["overall"]["episodes"] == 3
    assert significance["overall"]["difference"] == pytest.approx(1 / 3)
    assert not significance["overall"]["significant"]  # one fixed task of three proves nothing
    text = compare.to_markdown(result, "A", "B")
    assert "## Is the difference real? (TSR, paired over shared episodes)" in text
    assert "no detectable difference: B - A = +33.3 points" in text
    assert f"| {DOMAIN} | 0.0% | 33.3% | +33.3 |" in text
