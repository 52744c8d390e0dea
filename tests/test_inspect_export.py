"""``sopgym export RUN --format inspect``: a stored real run (4 patient-intake tasks, the ReAct
agent on the scripted model's noisy profile) as an Inspect eval log, read back with Inspect's
own reader: every episode's scores are the run's, exactly, with their explanations; every
recorded tool call is a tool event."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main as cli

inspect_log = pytest.importorskip("inspect_ai.log")  # optional: pip install inspect-ai

RUN = Path(__file__).parent / "fixtures" / "traced_run_latest"


def _rows() -> dict[tuple[str, int], dict]:
    rows = map(orjson.loads, (RUN / "results.jsonl").read_bytes().splitlines())
    return {(f"{r['domain']}/{r['task_id']}", r["trial"] + 1): r for r in rows}


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_inspect_log_reads_back_with_the_runs_scores(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"run{suffix}"
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "inspect", "--out",
                                    str(target)])  # fmt: skip
    assert done.exit_code == 0, done.output
    log = inspect_log.read_eval_log(str(target))
    rows = _rows()
    assert log.status == "success" and log.samples is not None
    assert len(log.samples) == len(rows) == 4
    successes = 0
    for sample in log.samples:
        row = rows[(str(sample.id), sample.epoch)]
        score = row["score"]
        applicable = {n: r for n, r in score["scores"].items() if r["value"] is not None}
        assert sample.scores is not None
        assert {n: s.value for n, s in sample.scores.items()} == {
            "success": float(score["success"]),
            **{n: r["value"] for n, r in applicable.items()},
        }
        for name, result in applicable.items():
            assert sample.scores[name].explanation == (result["explanation"] or None)
        assert sample.metadata["not_applicable"] == [
            n for n, r in score["scores"].items() if r["value"] is None
        ]
        calls = row["trajectory"]["calls"]
        tools = [e for e in sample.events if e.event == "tool"]
        assert [(e.function, e.error is not None) for e in tools] == [
            (c["name"], c["error_code"] is not None) for c in calls
        ]
        assert isinstance(sample.target, str)
        assert orjson.loads(sample.target) == row["gold_outputs"]
        successes += score["success"]
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == successes / 4


def test_inspect_export_refuses_stdout(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "inspect", "--out", "-"])
    assert done.exit_code == 2 and "give --out PATH" in done.output
