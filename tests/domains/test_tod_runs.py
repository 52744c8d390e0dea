"""TOD end to end with an LLM agent on the scripted model, through real processes (gateway,
tool services, user simulator, agent workers): the perfect model passes every task, and a
perturbed profile fails exactly the tasks it injected a mistake into, on the ``actions``
scorer, with the injected error classes."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from sopgym.domains.tod.report import breakdown
from tests.helpers import DATA_ROOT, domain_data

pytestmark = pytest.mark.slow
DOMAINS = ("tod/next_action", "tod/live")
LIMIT = 20


def run(tmp_path: Path, model: str) -> tuple[dict, list[dict], list[dict]]:
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", *DOMAINS, "--agent", "fc", "--model", model,
         "--limit", str(LIMIT), "--workers", "2", "--runs-dir", str(tmp_path), "--run-id", "r",
         "--data-root", str(DATA_ROOT), "--no-trace"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    folder = tmp_path / "r"
    rows = [orjson.loads(line) for line in (folder / "results.jsonl").read_bytes().splitlines()]
    injections = folder / "injections.jsonl"
    injected = ([orjson.loads(line) for line in injections.read_bytes().splitlines()]
                if injections.exists() else [])  # fmt: skip
    return orjson.loads((folder / "summary.json").read_bytes()), rows, injected


def test_the_perfect_model_passes_and_a_perturbed_one_is_attributed(tmp_path: Path) -> None:
    summary, _, _ = run(tmp_path / "clean", "scripted")
    assert summary["tsr"] == 1.0 and summary["tasks"] == LIMIT * len(DOMAINS), summary

    summary, rows, injected = run(tmp_path / "noisy", "scripted:wrong_tool=0.3")
    assert summary["tsr"] < 1.0
    by_task: dict[str, Counter] = {}
    for record in injected:
        by_task.setdefault(record["task_id"], Counter()).update(record["expected"])
    for row in rows:
        score = row["score"]
        attributed = Counter(score["errors"]) - Counter({"wrong_final": 1, "wrong_procedure": 1})
        assert attributed == by_task.get(row["task_id"], Counter()), row["task_id"]
        assert score["success"] == (row["task_id"] not in by_task), row["task_id"]
        if not score["success"]:
            assert score["scores"]["actions"]["value"] == 0.0
            assert score["scores"]["final_state"]["value"] == 1.0  # refused calls change nothing
            answer = score["scores"].get("output_fields")  # next_action answers by actions
            if answer is not None and answer["value"] == 1.0:  # answer and state right
                assert "wrong_final" not in score["errors"], row["task_id"]

    tasks = {t.id: t for t in domain_data("tod/next_action").tasks}
    table = breakdown(tasks, [r for r in rows if r["domain"] == "tod/next_action"])
    assert table["overall"]["all"]["tasks"] == LIMIT
    assert table["overall"]["all"]["success"] < 1.0
