"""The Python API: ``sopgym.run`` / ``sopgym.score`` / ``sopgym.evaluate`` under the CLI.

``sopgym.run`` runs the oracle end to end through the real stack (gateway, tool services,
worker processes) and returns the summary ``summary.json`` holds; a config that cannot run
raises the exception tree's ``UsageError`` before a folder is written; ``import sopgym`` loads
none of it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import sopgym
from sopgym import RunConfig, UsageError
from sopgym.orchestration.api import validate
from sopgym.runs.records import RunSummary


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunSummary, Path]:
    runs = tmp_path_factory.mktemp("runs")
    seen: list[dict] = []
    config = RunConfig(domains=["patient_intake"], agent="oracle", limit=2, workers=1)
    summary = sopgym.run(config, runs_dir=runs, run_id="api", on_result=seen.append)
    assert [row["task_id"] for row in seen] and len(seen) == 2  # on_result saw each row
    return summary, runs / "api"


def test_run_returns_the_summary_it_writes(oracle_run: tuple[RunSummary, Path]) -> None:
    summary, run_dir = oracle_run
    assert summary.run_dir == str(run_dir)
    assert summary.tasks == 2
    assert summary.tsr == 1.0  # the oracle through the real services
    stored = orjson.loads((run_dir / "summary.json").read_bytes())
    assert summary.to_json() == stored and "run_dir" not in stored
    rows = (run_dir / "results.jsonl").read_bytes().splitlines()
    assert len(rows) == 2 and all(orjson.loads(r)["score"]["success"] for r in rows)
    config = orjson.loads((run_dir / "config.json").read_bytes())
    assert config["domains"] == ["patient_intake"] and config["agent"] == "oracle"


def test_evaluate_reads_the_run_back(oracle_run: tuple[RunSummary, Path]) -> None:
    summary, run_dir = oracle_run
    evaluated = sopgym.evaluate(run_dir)
    assert evaluated["tasks"] == summary.tasks and evaluated["tsr"] == summary.tsr


def test_run_resolves_domain_patterns() -> None:
    config = validate(RunConfig(domains=["patient_*"]))
    assert config.domains == ["patient_intake"]


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"domains": ["no_such_domain"]}, "no_such_domain"),
        ({"domains": []}, "no domains"),
        ({"sop_variant": "no_such_variant"}, "no SOP variant 'no_such_variant'"),
        ({"agent": "no_such_agent"}, "no_such_agent"),
        ({"model": "scripted:no_such_profile"}, "--model"),
        ({"limit": 1, "sample": 1}, "give one"),
        ({"faults": "no_such_tool:503=0.5"}, "no_such_tool"),
        ({"agent": "react", "agent_options": {"tool_retrieval": "bm25:3"}}, "fc and mcp"),
        ({"agent": "react", "agent_options": {"tool_choice": "auto"}}, "not of react"),
        ({"agent": "fc", "agent_options": {"tool_choice": "always"}}, "tool_choice must be"),
    ],
)
def test_a_bad_config_raises_usage_error_and_writes_nothing(
    tmp_path: Path, changes: dict, says: str
) -> None:
    config = RunConfig(**{"domains": ["patient_intake"], "agent": "oracle", **changes})
    with pytest.raises(UsageError) as refused:
        sopgym.run(config, runs_dir=tmp_path, run_id="bad")
    assert says in str(refused.value)
    assert not (tmp_path / "bad").exists()


def test_the_tool_choice_a_native_tools_agent_uses_is_recorded() -> None:
    """config.json says which ``tool_choice`` forced calls, the default included."""
    config = validate(RunConfig(domains=["patient_intake"], agent="fc"))
    assert config.agent_options["tool_choice"] == "required-first"
    given = {"tool_choice": "auto"}
    assert validate(RunConfig(domains=["patient_intake"], agent="plan", agent_options=given)
                    ).agent_options == given  # fmt: skip
    assert "tool_choice" not in validate(RunConfig(domains=["patient_intake"])).agent_options


def test_an_existing_run_is_refused(oracle_run: tuple[RunSummary, Path]) -> None:
    _, run_dir = oracle_run
    config = RunConfig(domains=["patient_intake"], agent="oracle", limit=1)
    with pytest.raises(UsageError, match="exists"):
        sopgym.run(config, runs_dir=run_dir.parent, run_id=run_dir.name)


def test_score_refuses_an_unknown_format(tmp_path: Path) -> None:
    responses = tmp_path / "answers.jsonl"
    responses.write_text("{}\n")
    with pytest.raises(UsageError, match="unknown format"):
        sopgym.score(responses, ["patient_intake"], reader="no_such_format", runs_dir=tmp_path)


def test_import_sopgym_loads_no_api() -> None:
    code = "import sys, sopgym; print(sorted(m for m in sys.modules if m.startswith('sopgym.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr
    with pytest.raises(AttributeError):
        sopgym.no_such_name  # noqa: B018


def test_the_cli_package_keeps_its_modules_reachable() -> None:
    """``sopgym.cli.run`` is the module (a monkeypatch target), the command is registered."""
    import types

    import sopgym.cli
    from sopgym.cli import main

    assert isinstance(sopgym.cli.run, types.ModuleType)
    assert isinstance(sopgym.cli.score, types.ModuleType)
    assert {"run", "score", "list", "serve-tools", "gateway", "env-serve", "agent-worker",
            "model-server", "user-sim"} <= set(main.commands)  # fmt: skip
