"""``sopgym export RUN --format hf``: a stored real run as a Hugging Face dataset folder, the
parquet split where the card's front matter says it is, one row per episode with the run's
verdicts, and a card that states the run's TSR with its interval."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from click.testing import CliRunner

from sopgym.cli import main as cli
from sopgym.evaluation.stats import interval_text, tsr_intervals

parquet = pytest.importorskip("pyarrow.parquet")  # the parquet extra

RUN = Path(__file__).parent / "fixtures" / "traced_run_latest"


def test_a_run_exports_as_a_dataset_folder_with_its_card(tmp_path: Path) -> None:
    target = tmp_path / "dataset"
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "hf", "--out", str(target)])
    assert done.exit_code == 0, done.output
    card = (target / "README.md").read_text()
    assert card.startswith("---\n")
    front = yaml.safe_load(card.split("---\n")[1])
    (config,) = front["configs"]
    assert config["config_name"] == "default"
    (split,) = config["data_files"]
    assert split["split"] == "train"
    table = parquet.read_table(target / split["path"]).to_pylist()
    rows = [orjson.loads(line) for line in (RUN / "results.jsonl").read_bytes().splitlines()]
    assert front["size_categories"] == ["n<1K"] and "patient_intake" in front["tags"]
    assert sorted((r["task_id"], r["success"]) for r in table) == sorted(
        (r["task_id"], r["score"]["success"]) for r in rows
    )
    assert interval_text(tsr_intervals(rows)["overall"]) in card  # 3 of 4: TSR 75.0%
    assert "TSR 75.0%" in card


def test_hf_export_refuses_stdout() -> None:
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "hf", "--out", "-"])
    assert done.exit_code == 2 and "give --out PATH" in done.output
