"""TELLER's stage-2 setting gives the agent the user data (paper §4.1): the banking packs'
``abstract_user_data`` SOP variant serves the abstract SOP and puts the customer's application
record in the task input; every other variant gives the id alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core import dataset
from sopgym.core.tasks import Task
from sopgym.domains.banking._engine.generator import USER_DATA, USER_DATA_VARIANT
from sopgym.domains.banking.loans import DOMAIN as LOANS
from sopgym.domains.banking.loans.scenario import SCENARIO
from sopgym.domains.banking.loans_graph import DOMAIN as LOANS_GRAPH
from sopgym.evaluation.sources import load_spans
from sopgym.observability import semconv as sc
from sopgym.runs.records import Job


def _first_task(tmp_path: Path) -> Task:
    return LOANS.generate(3, tmp_path).tasks[0]


def test_the_user_data_variant_adds_the_application_record(tmp_path: Path) -> None:
    data = LOANS.generate(3, tmp_path)
    task, applications = data.tasks[0], data.tables["applications"]
    given = task.inputs_for(USER_DATA_VARIANT)
    record = applications[applications["application_id"] == task.inputs["application_id"]]
    row = record.iloc[0].to_dict()
    assert set(given[USER_DATA]) == {"application_id", *SCENARIO.given}
    assert all(given[USER_DATA][f] == row[f] for f in SCENARIO.given)
    assert given["instruction"] == task.inputs["instruction"]
    # the facts the bank's APIs look up stay behind the tools
    assert SCENARIO.limit_field not in given[USER_DATA]
    for variant in ("clean", "noisy", "abstract"):
        assert USER_DATA not in task.inputs_for(variant)


def test_a_job_hands_the_worker_its_variants_inputs_alone(tmp_path: Path) -> None:
    task = _first_task(tmp_path)
    for variant, with_data in (("abstract", False), (USER_DATA_VARIANT, True)):
        job = Job(task.to_json(), "run", sop_variant=variant).to_json()
        assert "input_variants" not in job["task"]  # never another variant's inputs
        assert (USER_DATA in job["task"]["inputs"]) is with_data
    assert Task.from_json(task.to_json()) == task  # the task line keeps the variants


def test_the_variant_reads_the_abstract_sop_in_both_stages() -> None:
    assert LOANS.sop(USER_DATA_VARIANT) == LOANS.sop("abstract")
    assert LOANS_GRAPH.sop(USER_DATA_VARIANT) == LOANS_GRAPH.sop("abstract")
    assert USER_DATA in LOANS.input_schema["properties"]
    assert USER_DATA not in LOANS.input_schema["required"]


def _sopgym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sopgym", *args],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.slow  # two stack starts, four loans episodes: ~60 s
def test_a_run_in_the_papers_setting_shows_the_data_and_the_oracle_scores_one(
    tmp_path: Path,
) -> None:
    runs, data = tmp_path / "runs", tmp_path / "data"
    common = ("--sop", USER_DATA_VARIANT, "--limit", "2", "--runs-dir", str(runs),
              "--data-root", str(data))  # fmt: skip
    done = _sopgym("run", "banking/loans", "--agent", "oracle", "--run-id", "oracle", *common)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = orjson.loads((runs / "oracle" / "summary.json").read_bytes())
    assert summary["domains"]["banking/loans"]["tsr"] == 1.0
    config = orjson.loads((runs / "oracle" / "config.json").read_bytes())
    assert config["sop_variant"] == USER_DATA_VARIANT

    done = _sopgym("run", "banking/loans", "--agent", "fc", "--model", "scripted:perfect",
                   "--capture-messages", "--run-id", "fc", *common)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    prompts = [
        str(s.attributes[sc.GEN_AI_INPUT_MESSAGES])
        for s in load_spans(runs / "fc").spans
        if s.scope == sc.SCOPE_AGENT_LLM and sc.GEN_AI_INPUT_MESSAGES in s.attributes
    ]
    assert prompts
    tasks = dataset.load(LOANS, data).tasks  # the data the run served
    for task in tasks[:2]:
        name = task.inputs_for(USER_DATA_VARIANT)[USER_DATA]["full_name"]
        assert any(name in prompt for prompt in prompts), name
